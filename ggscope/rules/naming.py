"""Key naming rules (GG4xx): what the GGUF spec demands of every metadata key.

Why: the spec (``gguf_metadata_kv_t`` in the GGUF spec (ggml docs/gguf.md), "File Structure") says a key "must be a valid
ASCII string", "a hierarchical key, where each segment is ``lower_snake_case`` and
separated by a ``.``" and "at most 2^16-1/65535 bytes long"; "any keys that do not follow
these rules are invalid".  Its "Standardized key-value pairs" adds that community keys "should be namespaced".  ggml's
reader accepts such keys, so only the ASCII and length rules are errors; the
case rule warns and the namespace rule informs.

Contract: each rule reads ``mf.metadata`` keys and points at the key's string node
(``metadata_kv[i]/key``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import per_file

__all__ = ["RULES", "KeyNotAscii", "KeyNotSnakeCase", "KeyTooLong", "KeyNotNamespaced"]

MAX_KEY_BYTES = 65535
_SEGMENT = re.compile(r"[a-z0-9_]+")
_KEY = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*")          # every segment a _SEGMENT
_KEYS = re.compile(r"[a-z0-9_]+(?:\.[a-z0-9_]+)*(?:\n[a-z0-9_]+(?:\.[a-z0-9_]+)*)*")   # _KEYs, one a line


def _joined(ctx: CheckContext) -> str | None:
    """The file's keys, one a line, once per file - when that text is exact: every key a
    str and none holding a newline (else None, and each rule walks the keys).  A verdict
    on the whole text that finds nothing stands for every key: the rules of this family
    walk the keys only where one of them may be named."""
    def make() -> str | None:
        keys = list(ctx.mf.metadata)
        try:
            text = "\n".join(keys)
        except TypeError:                   # a key that is no str
            return None
        return text if text.count("\n") == len(keys) - 1 else None
    return per_file(ctx.mf, "naming_joined_keys", make)


def _key_node(ctx: CheckContext, key: str):
    path = ctx.mf.metadata_nodes.get(key)
    if not path:
        return None
    base = path.rsplit("/", 1)[0] if path.endswith("/value") else path
    return ctx.node(base + "/key") or ctx.node(path)


class KeyNotAscii(Rule):
    """What it checks: every metadata key is pure ASCII.

    Why it matters: the spec says a key "must be a valid ASCII string"; tools that look
    keys up by their ASCII spelling never find a key with look-alike Unicode letters.

    Example: ``général.name``.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure", ``gguf_metadata_kv_t.key``.
    """
    code, name, severity, family = "GG401", "key-not-ascii", Severity.ERROR, "naming"
    summary = "A metadata key contains non-ASCII characters."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        joined = _joined(ctx)
        if joined is not None and joined.isascii():
            return
        for key in ctx.mf.metadata:
            if not key.isascii():
                yield ctx.at(_key_node(ctx, key), f"key {quoted(key)} contains non-ASCII characters")


class KeyNotSnakeCase(Rule):
    """What it checks: each dot-separated segment of a key is non-empty ``lower_snake_case``,
    but for a first segment that is an architecture llama.cpp knows (``command-r``,
    ``gpt-oss``: llama.cpp reads its keys under that name, hyphens and all).

    Why it matters: the spec calls keys that break this "invalid"; ``General.Name`` is a
    different key from ``general.name`` and every reader misses it.

    Example: ``llama.RopeFreqBase``, ``general..name``.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure", ``gguf_metadata_kv_t.key``.
    """
    code, name, severity, family = "GG402", "key-not-snake-case", Severity.WARNING, "naming"
    summary = "A metadata key is not dot-separated lower_snake_case segments."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        joined = _joined(ctx)
        if joined is not None and ctx.mf.metadata and _KEYS.fullmatch(joined):
            return                  # every key lower_snake_case
        for key in ctx.mf.metadata:
            if not key.isascii():
                continue            # GG401 says it
            if isinstance(key, str) and _KEY.fullmatch(key):
                continue            # every segment at once; the bad one only for a finding
            segments = key.split(".")
            bad = [s for s in segments if not _SEGMENT.fullmatch(s)]
            if bad == segments[:1] and len(segments) > 1 and _llama_arch(bad[0]):
                continue            # llama.cpp's own prefix (command-r., gpt-oss.): what it reads
            if bad:
                yield ctx.at(_key_node(ctx, key), f"key {quoted(key)} has segment {quoted(bad[0])} that is not "
                             "lower_snake_case (a-z, 0-9, _)")


def _llama_arch(name: str) -> bool:
    """Whether ``name`` is an architecture llama.cpp knows: its keys carry the name as their
    first segment, hyphens and all (``command-r.context_length``, ``gpt-oss.expert_count``),
    and llama.cpp reads nothing else."""
    from ggscope.facts.llama_arch import ARCHS  # start-up: only for a key that is not snake case
    return name in ARCHS


class KeyTooLong(Rule):
    """What it checks: a key is at most 65535 bytes long.

    Why it matters: the spec bounds keys to 2^16-1 bytes; a longer key is invalid and is
    usually a corrupted length field.

    Example: a key of 70000 ``a`` characters.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure", ``gguf_metadata_kv_t.key``.
    """
    code, name, severity, family = "GG403", "key-too-long", Severity.ERROR, "naming"
    summary = "A metadata key is longer than 65535 bytes."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        joined = _joined(ctx)
        if joined is not None and len(joined) * 4 <= MAX_KEY_BYTES:
            return                  # no key of the text can take more bytes (four at most a character)
        for key in ctx.mf.metadata:
            n = len(key.encode("utf-8", "surrogateescape"))
            if n > MAX_KEY_BYTES:
                yield ctx.at(_key_node(ctx, key), f"key {quoted(key[:40])}... is {n} bytes long, "
                             f"more than {MAX_KEY_BYTES}")


class KeyNotNamespaced(Rule):
    """What it checks: every key has a namespace (at least one ``.``).

    Why it matters: the spec asks community keys to be "namespaced with the relevant
    community name to avoid collisions" (``rustformers.``); a bare key collides.

    Example: ``temperature`` instead of ``myapp.temperature``.

    Reference: the GGUF spec (ggml docs/gguf.md), "Standardized key-value pairs" (introduction).
    """
    code, name, severity, family = "GG404", "key-not-namespaced", Severity.INFO, "naming"
    summary = "A metadata key has no namespace prefix."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for key in ctx.mf.metadata:
            if "." not in key:
                yield ctx.at(_key_node(ctx, key), f"key {quoted(key)} has no namespace (e.g. {quoted('myapp.' + key)})")


RULES = [KeyNotAscii, KeyNotSnakeCase, KeyTooLong, KeyNotNamespaced]
