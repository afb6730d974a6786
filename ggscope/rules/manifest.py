"""Manifest rules (GG12xx): the file's tensor data against a ``llama-gguf-hash`` manifest.

Why: a manifest (``ggscope hash`` or ``llama-gguf-hash`` output) says what a published
file's tensors hash to; ``validate --manifest MANIFEST`` puts its verdict beside every
other finding, in every output format.  Without ``--manifest`` these rules find nothing.
They read all tensor data (hashing is the point), so they run only when a manifest is
given, with or without ``--deep``.

Contract: the manifest's path is ``ctx.options["manifest"]``; the file is hashed once
(``ggscope.hash.verdict.judge``) and the verdict shared by the four rules through
``ctx.options`` (one options dict serves one file's rules).  An unreadable manifest is
the command's usage error, checked before any file.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted

__all__ = ["RULES", "ManifestTensorChanged", "ManifestTensorMissing", "ManifestTensorExtra",
           "ManifestDataMismatch"]

_CACHE = "_manifest_verdict"


def _verdict(ctx: CheckContext):
    path = ctx.options.get("manifest")
    if not path:
        return None
    cached = ctx.options.get(_CACHE)
    if cached is not None and cached[0] == (path, ctx.mf.path):
        return cached[1]
    from ggscope.hash.manifest import Manifest  # the hashing engine: only when a manifest is given
    from ggscope.hash.verdict import judge  # the hashing engine: only when a manifest is given
    v = judge(ctx.mf, Manifest.read(path))
    ctx.options[_CACHE] = ((path, ctx.mf.path), v)
    return v


def _tensor_at(ctx: CheckContext, name: str, message: str) -> Finding:
    t = ctx.mf.tensor(name)
    node = ctx.node(t.node_path) if t.node_path else None
    return ctx.at(node, message, start=t.offset, end=t.offset + t.nbytes)


class ManifestTensorChanged(Rule):
    """What it checks: every tensor's digest equals the one the manifest lists for it
    (each algorithm the manifest holds: xxh64, sha1, sha256, ggscope's xxh3).

    Why it matters: a tensor whose bytes differ from the published ones is a corrupted
    download, a bad mirror or a tampered file, even when the file still parses and loads.

    Example: a manifest made by ``ggscope hash --sha256 model.gguf`` and one flipped bit in
    ``blk.0.attn_q.weight``'s data.

    Reference: llama.cpp as vendored in llama-cpp-python 0.3.36,
    examples/gguf-hash/gguf-hash.cpp (per tensor hash of ``ggml_nbytes`` bytes).
    """
    code, name, severity, family = "GG1201", "manifest-tensor-changed", Severity.ERROR, "manifest"
    only_if = "manifest"
    summary = "A tensor's data does not hash to the manifest's digest."
    formats = ("*",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        v = _verdict(ctx)
        for tname, algos in (v.changed if v else ()):
            yield _tensor_at(ctx, tname, f"tensor {quoted(tname)}: its data does not match the manifest's "
                             f"{', '.join(algos)} digest")


class ManifestTensorMissing(Rule):
    """What it checks: every tensor the manifest lists for this file is in the file.

    Why it matters: a tensor that was published but is not here is a file cut short by
    a re-export, a different model under the same name, or a tampered file.

    Example: the manifest of a model checked against the same model with
    ``output.weight`` removed.

    Reference: llama.cpp as vendored in llama-cpp-python 0.3.36,
    examples/gguf-hash/gguf-hash.cpp (manifest lines ``TYPE  DIGEST  FILE:TENSOR``).
    """
    code, name, severity, family = "GG1202", "manifest-tensor-missing", Severity.ERROR, "manifest"
    only_if = "manifest"
    summary = "The manifest lists a tensor the file does not have."
    formats = ("*",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        v = _verdict(ctx)
        for tname in (v.missing if v else ()):
            yield ctx.at(None, f"the manifest lists tensor {quoted(tname)}, which the file does not have")


class ManifestTensorExtra(Rule):
    """What it checks: every tensor of the file is listed in the manifest (when the
    manifest lists this file's tensors at all).

    Why it matters: a tensor nobody published was added after the fact: an injected
    tensor, or a manifest of another version of the model.

    Example: the manifest of a model checked against the same model with an added
    ``extra.weight``.

    Reference: llama.cpp as vendored in llama-cpp-python 0.3.36,
    examples/gguf-hash/gguf-hash.cpp (its check prints such a tensor as "Not Found").
    """
    code, name, severity, family = "GG1203", "manifest-tensor-extra", Severity.ERROR, "manifest"
    only_if = "manifest"
    summary = "The file has a tensor the manifest does not list."
    formats = ("*",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        v = _verdict(ctx)
        for tname in (v.extra if v else ()):
            yield _tensor_at(ctx, tname, f"tensor {quoted(tname)} is not in the manifest")


class ManifestDataMismatch(Rule):
    """What it checks: the digest of all tensor data equals the manifest's entry for the
    file, and the manifest has an entry for the file at all.

    Why it matters: the whole-data digest is what a publisher usually lists (``--no-layer``);
    a mismatch means some tensor data differs.  A manifest with no entry for the file
    (llama-gguf-hash's exit status 3) was made for another file: nothing was verified.

    Example: ``ggscope hash --no-layer --sha256 model.gguf`` as the manifest, checked
    against a re-quantized ``model.gguf``.

    Reference: llama.cpp as vendored in llama-cpp-python 0.3.36,
    examples/gguf-hash/gguf-hash.cpp (the "Overall Model Hash" and HASH_EXIT_MANIFEST_MISSING_ENTRY).
    """
    code, name, severity, family = "GG1204", "manifest-data-mismatch", Severity.ERROR, "manifest"
    only_if = "manifest"
    summary = "All tensor data together does not hash to the manifest's digest (or it has no entry)."
    formats = ("*",)

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        v = _verdict(ctx)
        if v is None:
            return
        if v.name is None:
            yield ctx.at(None, f"the manifest {quoted(ctx.options['manifest'])} has no entry for this file: "
                         "nothing was verified", severity=Severity.WARNING)
        elif v.whole_changed:
            yield ctx.at(None, f"all tensor data does not match the manifest's {', '.join(v.whole_changed)} "
                         f"digest for {quoted(v.name)}")


RULES = [ManifestTensorChanged, ManifestTensorMissing, ManifestTensorExtra, ManifestDataMismatch]
