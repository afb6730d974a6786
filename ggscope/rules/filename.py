"""File naming rules (GG8xx): the GGUF naming convention, and split models as a whole.

Why: the file name is what people read first; the spec's convention
``<BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf`` should
agree with the metadata it is derived from.  A split model (``-00001-of-00003``,
``split.*`` keys, written by llama.cpp's gguf-split) only loads when every shard is
there and the shards agree; given one shard, the set is checked.

Contract: ``GGUF_FILENAME_RE`` is the convention's regular expression (ggml docs/gguf.md
§"Validating Above Naming Convention"), translated from JavaScript (``(?<n>`` ->
``(?P<n>``, ASCII classes), with the optional Sidecar prefix (``mmproj-``, ``mtp-``) from
``ggscope.facts.upstream_overlay``; ``parse_filename(name)`` returns the named parts (Version
defaults to "v1.0", as the spec's reference code does) or None.  The shard rule opens sibling files header-only (never tensor data).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator

from ggscope.facts import upstream
from ggscope.facts.upstream_overlay import FILENAME_PREFIXES
from ggscope.model.open import open as open_file
from ggscope.model.split import SHARD_RE, shard_paths
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import per_file
from ggscope.source.local import is_remote

__all__ = ["RULES", "GGUF_FILENAME_RE", "PUBLISHER_FILENAME_RE", "SHARD_RE", "parse_filename",
           "parse_publisher_filename", "FilenameConvention",
           "FilenameMetadataMismatch", "SplitSetIncomplete"]

# ggml docs/gguf.md "Validating Above Naming Convention" (the Node.js ggufRegex)
_SIDECAR = "|".join(re.escape(p.rstrip("-")) for p in FILENAME_PREFIXES)
GGUF_FILENAME_RE = re.compile(
    rf"^(?:(?P<Sidecar>{_SIDECAR})-)?"
    r"(?P<BaseName>[A-Za-z0-9\s]*(?:(?:-(?:(?:[A-Za-z\s][A-Za-z0-9\s]*)|(?:[0-9\s]*)))*))"
    r"-(?:(?P<SizeLabel>(?:\d+x)?(?:\d+\.)?\d+[A-Za-z](?:-[A-Za-z]+(\d+\.)?\d+[A-Za-z]+)?)"
    r"(?:-(?P<FineTune>[A-Za-z0-9\s-]+))?)?"
    r"-(?:(?P<Version>v\d+(?:\.\d+)*))"
    r"(?:-(?P<Encoding>(?!LoRA|vocab)[\w_]+))?"
    r"(?:-(?P<Type>LoRA|vocab))?"
    r"(?:-(?P<Shard>\d{5}-of-\d{5}))?\.gguf$", re.ASCII)
# The names converters and publishers write, which the spec's expression (Version
# required) refuses: llama.cpp's convert_hf_to_gguf.py via gguf-py
# ``utility.naming_convention`` ("{basename}-{size}-{finetune}-{version}-{ftype}", each
# part only when known: ``Gemma-3-270M-F16.gguf``), GGUF-my-repo
# (``gemma-3-270m-q4_k_m.gguf``, ``-imat``), bartowski (``Model-Q4_K_M.gguf``), unsloth
# (``Model-UD-Q4_K_XL.gguf``), TheBloke (``model.Q4_K_M.gguf``): a name, then "-" or
# ".", then a quantisation label, optionally an imatrix mark and a shard number.
PUBLISHER_FILENAME_RE = re.compile(
    rf"^(?:(?:{_SIDECAR})-)?(?P<BaseName>.+?)[-.](?:UD-)?"
    r"(?P<Encoding>(?:[A-Z]{0,2}Q\d(?:_[A-Z0-9]+)*)|(?:B?F(?:16|32|64))|(?:MXFP4(?:_MOE)?)|(?:NVFP4))"
    r"(?:-(?:imat|imatrix|i1))?"
    r"(?:-(?P<Shard>\d{5}-of-\d{5}))?\.gguf$", re.ASCII | re.IGNORECASE)
_PARTS = ("Sidecar", "BaseName", "SizeLabel", "FineTune", "Version", "Encoding", "Type", "Shard")
MAX_SHARDS_OPENED = 256          # bound the work a claimed split.count can cause


def parse_filename(name: str) -> dict[str, str | None] | None:
    """The spec's ``parseGGUFFilename``: the named parts of ``name``, or None."""
    m = GGUF_FILENAME_RE.match(os.path.basename(name))
    if m is None:
        return None
    parts = {k: m.group(k) for k in _PARTS}
    if parts["Version"] is None:
        parts["Version"] = "v1.0"
    return parts


def parse_publisher_filename(name: str) -> dict[str, str | None] | None:
    """The base name, quantisation label and shard of a name as converters and publishers
    write it (``PUBLISHER_FILENAME_RE``), or None."""
    m = PUBLISHER_FILENAME_RE.match(os.path.basename(name))
    return None if m is None else {"BaseName": m.group("BaseName"), "Encoding": m.group("Encoding"),
                                   "Shard": m.group("Shard")}


def _parsed(ctx: CheckContext) -> tuple[dict | None, dict | None]:
    """``parse_filename`` of the file's name and, when that fails,
    ``parse_publisher_filename``: once per file (GG801 and GG802 read both)."""
    def make():
        path = ctx.mf.path or ""
        strict = parse_filename(path)
        return strict, (parse_publisher_filename(path) if strict is None else None)
    return per_file(ctx.mf, "file_name_parts", make)


def _node(ctx: CheckContext, key: str):
    p = ctx.mf.metadata_nodes.get(key)
    return ctx.node(p) if p else None


def _on_disk(ctx: CheckContext) -> bool:
    return bool(ctx.mf.path) and (os.path.isfile(ctx.mf.path) or is_remote(ctx.mf.path))


class FilenameConvention(Rule):
    """What it checks: the file name matches the spec's naming-convention expression.

    Why it matters: the convention puts base name, size label and version first so a
    person can tell models apart at a glance; the spec asks for "at least BaseName,
    SizeLabel, Version".

    Names as converters and publishers write them pass too: a name, then "-" or ".",
    then a quantisation label (``gemma-3-270m-q4_k_m.gguf`` from GGUF-my-repo,
    ``Model-Q4_K_M.gguf`` from bartowski or llama.cpp's converter,
    ``model.Q4_K_M.gguf`` from TheBloke, ``Model-UD-Q4_K_XL-00001-of-00002.gguf`` from
    unsloth).

    Example: ``model.gguf``; ``Mixtral-8x7B-v0.1-KQ2.gguf`` and ``Model-Q4_K_M.gguf`` pass.

    Reference: the GGUF spec (ggml docs/gguf.md), "GGUF Naming Convention", "Validating Above Naming
    Convention"; ggml docs/gguf.md Sidecar prefix (ggml a7b74205, 2026-05-21).
    """
    code, name, severity, family = "GG801", "filename-convention", Severity.INFO, "filename"
    summary = "The file name does not follow the GGUF naming convention."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        base = os.path.basename(ctx.mf.path or "")
        if base.endswith(".gguf") and _parsed(ctx) == (None, None):
            yield ctx.at(None, f"file name {quoted(base)} does not match <BaseName>-<SizeLabel>-<Version>"
                         "[-<Encoding>][-<Type>][-<Shard>].gguf")


def _norm_version(v: str) -> str:
    return v[1:] if v[:1] in ("v", "V") else v


class FilenameMetadataMismatch(Rule):
    """What it checks: the parts of a conventional file name agree with the metadata.

    Why it matters: the name is derived from ``general.basename`` (spaces as dashes),
    ``general.size_label``, ``general.version`` and ``general.file_type``; a shard's
    number and total are ``split.no + 1`` and ``split.count``.  A disagreement means a
    renamed or mislabelled file.

    Example: ``Llama-7B-v1.0-Q4_0.gguf`` whose ``general.file_type`` is MOSTLY_Q8_0.

    Reference: the GGUF spec (ggml docs/gguf.md), "GGUF Naming Convention" (components and where each is
    derived from); file
    types from gguf-py ``LlamaFileType``.
    """
    code, name, severity, family = "GG802", "filename-metadata-mismatch", Severity.WARNING, "filename"
    summary = "A part of the file name disagrees with the metadata."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        parts, loose = _parsed(ctx)
        md = ctx.mf.metadata
        if parts is None:
            if loose is not None:        # a publisher's free-form name: only its quantisation and shard
                yield from self._encoding_and_shard(ctx, loose)
            return
        base = md.get("general.basename")
        if isinstance(base, str) and parts["BaseName"] != base.replace(" ", "-"):
            yield ctx.at(_node(ctx, "general.basename"),
                         f"file name base {quoted(parts['BaseName'])}, general.basename {quoted(base)}")
        size = md.get("general.size_label")
        if isinstance(size, str) and parts["SizeLabel"] and not parts["SizeLabel"].startswith(size):
            yield ctx.at(_node(ctx, "general.size_label"),
                         f"file name size {quoted(parts['SizeLabel'])}, general.size_label {quoted(size)}")
        ver = md.get("general.version")
        if isinstance(ver, str) and _norm_version(parts["Version"]) != _norm_version(ver):
            yield ctx.at(_node(ctx, "general.version"),
                         f"file name version {quoted(parts['Version'])}, general.version {quoted(ver)}")
        yield from self._encoding_and_shard(ctx, parts, strict=True)

    def _encoding_and_shard(self, ctx: CheckContext, parts: dict, strict: bool = False) -> Iterator[Finding]:
        """The encoding against ``general.file_type`` (a publisher's label that names no
        llama.cpp file type, such as ``Q4_K_XL`` or ``Q4_K_L``, contradicts nothing unless
        ``strict``: the spec's Encoding), the shard against ``split.*``."""
        md = ctx.mf.metadata
        ft = md.get("general.file_type")
        enc = parts["Encoding"]
        ftypes = upstream.file_types()
        known = {v.split("_", 1)[1].upper() for v in ftypes.values() if "_" in v}
        if enc and isinstance(ft, int) and not isinstance(ft, bool) and ft in ftypes \
                and (strict or enc.upper() in known):
            ftname = ftypes[ft].split("_", 1)[1]           # MOSTLY_Q4_K_S -> Q4_K_S, ALL_F32 -> F32
            if ftname != "SOME_F16" and enc.upper() != ftname.upper():
                yield ctx.at(_node(ctx, "general.file_type"),
                             f"file name encoding {quoted(enc)}, general.file_type {ft} ({ftypes[ft]})")
        if parts["Shard"]:
            no, count = (int(x) for x in parts["Shard"].split("-of-"))
            sno, scount = md.get("split.no"), md.get("split.count")
            if isinstance(sno, int) and sno + 1 != no:
                yield ctx.at(_node(ctx, "split.no"), f"file name shard {no}, split.no {sno} (shard {sno + 1})")
            if isinstance(scount, int) and scount != count:
                yield ctx.at(_node(ctx, "split.count"), f"file name says {count} shards, split.count {scount}")


class SplitSetIncomplete(Rule):
    """What it checks: given one shard of a split model, the whole set.

    Every shard ``<prefix>-0000i-of-0000n.gguf`` exists next to it (a sibling file, or
    the sibling URL for a remote shard), each says the same ``split.count`` and its own
    ``split.no`` (which every shard after the first must have), the tensor counts add up
    to the first shard's ``split.tensors.count``, no tensor name appears in two shards,
    and shards that name an architecture name the same one.

    Why it matters: llama.cpp's model loader starts from the first shard, derives the
    others' names, refuses a shard whose ``split.no`` is missing or wrong ("invalid
    split file idx"), a tensor in two shards ("tensor is duplicated") and a total that
    differs from ``split.tensors.count`` ("corrupted model"); it reads metadata only
    from the first shard, so a shard of another model (another architecture) is a mix-up.

    Example: ``m-00001-of-00003.gguf`` and ``m-00003-of-00003.gguf`` without the second.

    Reference: llama.cpp ``gguf-split`` (keys ``split.no``, ``split.count``,
    ``split.tensors.count``); the GGUF spec (ggml docs/gguf.md), "GGUF Naming Convention" Shard.
    """
    code, name, severity, family = "GG803", "split-set", Severity.ERROR, "filename"
    summary = "A shard of the split model is missing or the shards disagree."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        paths = shard_paths(ctx.mf.path or "")
        if paths is None or not _on_disk(ctx):
            return
        count = len(paths)
        md = ctx.mf.metadata
        scount = md.get("split.count")
        if isinstance(scount, int) and not isinstance(scount, bool) and scount != count:
            return          # GG802 reports the disagreement; the set is ambiguous
        if count == 0:
            yield ctx.at(None, "shard total is 0")
            return
        seen: dict[str, int] = {}
        n_tensors = 0
        missing: list[int] = []
        arch: tuple[int, str] | None = None
        first_total = None
        for i, path in enumerate(paths, 1):
            if not is_remote(path) and not os.path.isfile(path):
                missing.append(i)
                continue
            if len(seen) > 10**7 or i > MAX_SHARDS_OPENED:
                continue
            try:
                shard = ctx.mf if path == ctx.mf.path or (not is_remote(path) and os.path.abspath(path)
                                                          == os.path.abspath(ctx.mf.path)) else open_file(path)
            except Exception as exc:  # noqa: BLE001 - an unreadable sibling is a finding
                from ggscope.source.remote import RemoteError  # start-up: the network module only after a failed open
                if not isinstance(exc, RemoteError):
                    yield ctx.at(None, f"shard {i} ({_base(path)}) could not be opened: {exc}")
                elif "not found" in str(exc):
                    missing.append(i)
                else:
                    yield ctx.at(None, f"shard {i} ({_base(path)}) could not be read: {exc}")
                continue
            sc, sn = shard.metadata.get("split.count"), shard.metadata.get("split.no")
            if sc is not None and sc != count:
                yield ctx.at(None, f"shard {i} says split.count = {sc}, the set has {count}")
            if sn is not None and sn != i - 1:
                yield ctx.at(None, f"shard {i} says split.no = {sn}, expected {i - 1}")
            elif sn is None and count > 1:      # llama.cpp: "missing key split.no in GGUF split"
                yield ctx.at(None, f"shard {i} ({_base(path)}) has no split.no; llama.cpp refuses the set")
            if i == 1:
                first_total = shard.metadata.get("split.tensors.count")
            a = shard.metadata.get("general.architecture")
            if isinstance(a, str):
                if arch is None:
                    arch = (i, a)
                elif a != arch[1]:
                    yield ctx.at(None, f"shard {i} says general.architecture = {quoted(a)}, shard {arch[0]} "
                                       f"says {quoted(arch[1])}")
            n_tensors += len(shard.tensors)
            for t in shard.tensors:
                if t.name in seen:
                    yield ctx.at(None, f"tensor {quoted(t.name)} is in shard {seen[t.name]} and shard {i}")
                else:
                    seen[t.name] = i
        if missing:
            shown = ", ".join(f"{i} ({_base(paths[i - 1])})" for i in missing[:10]) \
                + (" ..." if len(missing) > 10 else "")
            yield ctx.at(None, f"{len(missing)} of {count} shards missing: {shown}")
            return
        # llama.cpp reads split.tensors.count from the first shard (the one it loads from)
        total = md.get("split.tensors.count") if first_total is None else first_total
        if isinstance(total, int) and count <= MAX_SHARDS_OPENED and total != n_tensors:
            where = _node(ctx, "split.tensors.count") if md.get("split.tensors.count") == total else None
            yield ctx.at(where, f"split.tensors.count = {total}, the shards hold {n_tensors} tensors")


def _base(path: str) -> str:
    return path.rsplit("/", 1)[-1]


RULES = [FilenameConvention, FilenameMetadataMismatch, SplitSetIncomplete]
