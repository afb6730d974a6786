"""Deep rules (GG10xx, ``--deep`` only): what is wrong inside the tensor data.

Why: a file can be structurally valid and still hold NaN weights (a diverged training
run, a broken conversion) or quantized blocks whose scale is NaN, Inf or zero (a
quantizer bug: every weight of the block becomes NaN or 0).  Finding those needs the
data itself, so these rules read it - streamed in bounded chunks on both cores by the
one streaming engine (``ggscope.source.stream``: ``readinto`` per thread, never the
file's memory map, whose pages would pile up in the process), so peak memory does not
grow with tensor or file size (a sparse 20 GB file: benchmarks/deep_memory.py), and a
file that shrinks meanwhile is ``FileChanged`` (one line, exit 2), not SIGBUS.  GG1001
tests the exponent bits of float elements, no decoding; GG1002 reads the block scales.

Progress: each rule is one ``ggscope.core.progress`` task counted in elements, its
description the rule and the tensor being read (``validate --deep`` draws it on a
terminal).

Contract: ``needs_tensor_data = True``; tensors whose data lies past the end of the
file or whose layout ggscope cannot decode are skipped (other rules report those).
One finding per tensor, with the count and the first element or block index.
GG1003 is the exception to streaming: it runs the reference forward pass, which holds
every weight as float32, so it runs only when that fits ``FORWARD_BUDGET_BYTES`` and
otherwise says it skipped (an info finding); it is silent for architectures without
a forward pass and for damaged files.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ggscope.core import progress
from ggscope.core.errors import FileChanged, GGScopeError
from ggscope.facts.ggml_types import LAYOUTS
from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.source.stream import Stream

__all__ = ["RULES", "NonFiniteValues", "BadBlockScales", "ForwardCheck", "scale_field",
           "FORWARD_BUDGET_BYTES", "probe_tokens"]

CHUNK_ELEMS = 1 << 20           # elements per chunk: at most 8 MiB read per thread
CHUNK_BLOCKS = 1 << 15
FORWARD_BUDGET_BYTES = 1 << 30  # GG1003 runs only if all weights as float32 fit in this


def scale_field(layout: str) -> tuple[int, str] | None:
    """(byte offset in the block, "f16"/"f32") of a layout's super-scale ``d``, if it has one."""
    lay = LAYOUTS.get(layout)
    if lay is None:
        return None
    return lay.scale


def _readable(ctx: CheckContext, t) -> bool:
    return (t.layout in LAYOUTS and t.nbytes > 0 and t.offset >= 0
            and t.offset + t.nbytes <= ctx.mf.source.size)


def _tnode(ctx: CheckContext, t):
    return ctx.node(t.node_path) if t.node_path else None


class _Progress:
    """One rule's progress over its tensors, in elements: a ``core.progress`` task."""

    def __init__(self, ctx: CheckContext, tensors: list) -> None:
        self.label = f"{ctx.rule.code} {ctx.rule.name}"
        self.total = sum(int(t.n_elements) for t in tensors)
        self.base = 0
        self.task = progress.task(self.label, self.total)

    def __enter__(self) -> "_Progress":
        self.task.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.task.__exit__(*exc)

    def tensor(self, t):
        """A ``(done, total)`` callback for the work on tensor ``t`` (its own counts)."""
        base, n = self.base, int(t.n_elements)
        self.base += n
        desc = f"{self.label}: {t.name}"          # file-provided text: the reporter escapes it
        return lambda done, total: self.task.update(base + (n * done // total if total else n), self.total, desc)


# the exponent field of each float layout: all ones is NaN or +-Inf (IEEE 754; bf16 is
# the upper half of an f32)
_EXPONENT = {"F16": (np.uint16, 0x7C00), "BF16": (np.uint16, 0x7F80),
             "F32": (np.uint32, 0x7F800000), "F64": (np.uint64, 0x7FF0000000000000)}


def _nonfinite(ctx: CheckContext, t, stream: Stream, report) -> tuple[int, int]:
    """(count, first index) of the NaN/Inf elements of float tensor ``t``.

    Read in chunks of ``CHUNK_ELEMS`` on the stream's threads and tested on the exponent
    bits, so nothing is decoded: exact for these layouts and several times faster than
    the statistics' code counts, whose one hot counter crawls on constant data
    (benchmarks/deep_memory.py).
    """
    kind, mask = _EXPONENT[t.type]
    dt = np.dtype(kind).newbyteorder("<" if ctx.mf.endian == "little" else ">")
    size, n = dt.itemsize, int(t.n_elements)

    def chunk(e: int) -> tuple[int, int]:
        bits = stream.scratch(f"bits{kind}", lambda: np.empty(CHUNK_ELEMS, kind))
        hit = stream.scratch("hit", lambda: np.empty(CHUNK_ELEMS, bool))
        k = min(CHUNK_ELEMS, n - e)
        v = stream.reader(ctx.mf).read(t.offset + e * size, k * size).view(dt)
        bits, hit = bits[:k], hit[:k]
        np.bitwise_and(v, mask, out=bits)
        np.equal(bits, mask, out=hit)
        c = int(np.count_nonzero(hit))
        return c, (e + int(np.argmax(hit)) if c else -1)

    def done(e: int, _: object) -> None:
        report(min(n, e + CHUNK_ELEMS), n)

    found = stream.map(chunk, range(0, n, CHUNK_ELEMS), done)
    bad = sum(c for c, _ in found)
    first = next((f for _, f in found if f >= 0), -1)
    return bad, first


class NonFiniteValues(Rule):
    """What it checks: no float tensor (F32, F16, BF16, F64) holds NaN or infinity.

    Why it matters: one NaN weight turns every activation it touches into NaN; the model
    produces garbage or a single repeated token.

    Example: an F16 ``output_norm.weight`` with ``0x7e00`` (NaN) at element 17.

    Reference: IEEE 754; ggml's ``ggml_validate_row_data`` rejects the same rows.
    """
    code, name, severity, family = "GG1001", "non-finite-values", Severity.ERROR, "deep"
    summary = "A float tensor contains NaN or Inf."
    formats = ("*",)
    needs_tensor_data = True

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        todo = [t for t in ctx.mf.tensors if t.type in _EXPONENT and t.layout == t.type and _readable(ctx, t)]
        found = []
        with _Progress(ctx, todo) as bar, Stream(remote=ctx.mf.source.remote) as stream:
            for t in todo:
                found.append((t, *_nonfinite(ctx, t, stream, bar.tensor(t))))
        for t, bad, first in found:
            if bad:
                yield ctx.at(_tnode(ctx, t), f"tensor {quoted(t.name)} ({t.type}) has {bad} NaN/Inf values, "
                             f"the first at element {first}")


class BadBlockScales(Rule):
    """What it checks: the scale ``d`` of every quantized block is finite, and not zero in every block.

    Why it matters: a NaN/Inf scale makes the whole block NaN/Inf; a zero scale makes
    it zero.  A few zero blocks happen (all-zero weights), so zero scales are reported
    only as a warning with their count; non-finite ones are errors.

    Example: a Q4_0 block whose f16 ``d`` is ``0x7c00`` (Inf).

    Reference: ggml ``block_q4_0`` and siblings (ggml-common.h); ggml-types.md §2.
    """
    code, name, severity, family = "GG1002", "bad-block-scales", Severity.ERROR, "deep"
    summary = "A quantized block has a non-finite (or zero) scale."
    formats = ("*",)
    needs_tensor_data = True

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        order = "<" if ctx.mf.endian == "little" else ">"
        todo = [t for t in ctx.mf.tensors if scale_field(t.layout) is not None and _readable(ctx, t)]
        found = []
        with _Progress(ctx, todo) as bar, Stream(remote=ctx.mf.source.remote) as stream:
            for t in todo:
                found.append((t, *_scales(ctx, t, order, stream, bar.tensor(t))))
        for t, n_blocks, nonfinite, first_nf, zero in found:
            if nonfinite:
                yield ctx.at(_tnode(ctx, t), f"tensor {quoted(t.name)} ({t.type}): {nonfinite} of {n_blocks} "
                             f"block scales are NaN/Inf, the first in block {first_nf}")
            if zero and n_blocks and zero == n_blocks:
                yield ctx.at(_tnode(ctx, t), f"tensor {quoted(t.name)} ({t.type}): all {n_blocks} block scales "
                             "are zero (the tensor is all zeros)", severity=Severity.WARNING)


def _scales(ctx: CheckContext, t, order: str, stream: Stream, report) -> tuple[int, int, int | None, int]:
    """(blocks, non-finite scales, first such block, zero scales) of quantized tensor ``t``,
    read ``CHUNK_BLOCKS`` blocks at a time on the stream's threads."""
    off, kind = scale_field(t.layout)           # type: ignore[misc]
    lay = LAYOUTS[t.layout]
    n_blocks = t.nbytes // lay.block_bytes
    dt = np.dtype(order + ("f2" if kind == "f16" else "f4"))

    def chunk(b0: int) -> tuple[int, int, int]:
        b1 = min(n_blocks, b0 + CHUNK_BLOCKS)
        raw = stream.reader(ctx.mf).read(t.offset + b0 * lay.block_bytes, (b1 - b0) * lay.block_bytes)
        blocks = raw.reshape(b1 - b0, lay.block_bytes)
        d = np.ascontiguousarray(blocks[:, off:off + dt.itemsize]).view(dt).reshape(-1)
        nf = ~np.isfinite(d)
        count = int(nf.sum())
        return count, (b0 + int(np.argmax(nf)) if count else -1), int((d == 0).sum())

    def done(b0: int, _: object) -> None:
        report(min(n_blocks, b0 + CHUNK_BLOCKS), n_blocks)

    found = stream.map(chunk, range(0, n_blocks, CHUNK_BLOCKS), done)
    nonfinite = sum(c for c, _, _ in found)
    first = next((f for _, f, _ in found if f >= 0), None)
    return n_blocks, nonfinite, first, sum(z for _, _, z in found)


def probe_tokens(mf) -> list[int]:
    """GG1003's fixed two-token input: the file's BOS id (else 0), then the next id.

    Two positions, so the pass also carries state (attention cache, RWKV state) once.
    """
    bos = mf.metadata.get("tokenizer.ggml.bos_token_id")
    first = int(bos) if isinstance(bos, (int, np.integer)) and not isinstance(bos, bool) and bos >= 0 else 0
    return [first, first + 1]


class ForwardCheck(Rule):
    """What it checks: the reference forward pass (``ggscope run``) gives finite logits.

    The file's BOS token (or token 0) and the id after it go through the numpy reference
    forward pass of its architecture (any that ``ggscope run`` supports); every logit after
    them must be finite.  Files of other architectures, and damaged files, are not
    checked.  The pass holds all weights as float32, so a file whose weights would need
    more than 1 GiB that way is skipped with an info finding; a weight the pass cannot
    load (missing, misshapen, undecodable) is a warning, and so is a file llama.cpp's
    loader refuses (the GG11xx rules): the pass is then not started, since the counts
    it would build layers from are the ones nothing backs.

    Why it matters: NaN/Inf weights and broken block scales end in NaN logits: the
    model emits one repeated token or garbage.  GG1001/GG1002 name the tensor; this
    rule says the damage reaches what the model computes.

    Example: a tiny llama GGUF whose ``blk.0.attn_q.weight`` holds one NaN: every
    logit after the first token is NaN (tests/rules/test_forward_check.py).

    Reference: ``ggscope run --check`` (the same check, ``ggscope.forward.logits``);
    llama.cpp's ``llama_decode`` output for the same file.
    """
    code, name, severity, family = "GG1003", "forward-check", Severity.ERROR, "deep"
    summary = "The reference forward pass gives NaN/Inf logits."
    formats = ("*",)
    needs_tensor_data = True

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        # the forward pass (its numpy kernels per architecture) loads only for --deep's check;
        # rules.refusal imports the loader rules of this registry (a cycle at import time)
        from ggscope.forward import TokenError, UnsupportedArchitecture, architecture, module_for
        from ggscope.forward.logits import check
        from ggscope.rules.refusal import loader_refusal
        mf = ctx.mf
        if mf.damage is not None or not mf.tensors:
            return
        try:
            module_for(mf)
        except UnsupportedArchitecture:
            return
        arch = architecture(mf)
        refused = loader_refusal(mf)
        if refused is not None:     # its claims are what llama.cpp refuses: nothing is built on them
            yield ctx.at(None, f"reference forward pass ({arch}) could not run: {refused}",
                         severity=Severity.WARNING)
            return
        need = 4 * sum(int(t.n_elements) for t in mf.tensors)
        if need > FORWARD_BUDGET_BYTES:
            yield ctx.at(None, f"reference forward pass ({arch}) not run: its float32 weights would "
                         f"need {need / 2**20:.0f} MiB, over the {FORWARD_BUDGET_BYTES / 2**20:.0f} MiB "
                         "budget of validate --deep", severity=Severity.INFO)
            return
        tokens = probe_tokens(mf)
        report = ctx.options.get("progress")
        if report is not None:          # the bar names this step, not the last tensor read before it
            report(0, 1, f"{self.code} {self.name}: reference forward pass ({arch}), {len(tokens)} tokens")
        try:
            try:
                result = check(mf, tokens)
            except TokenError:           # BOS outside the vocabulary: the tokenizer rules say so
                tokens = [0, 1]
                result = check(mf, tokens)
        except FileChanged:
            raise                       # the file changed under the pass: the runner stops, exit 2
        except MemoryError:
            yield ctx.at(None, f"reference forward pass ({arch}) not run: out of memory",
                         severity=Severity.INFO)
            return
        except GGScopeError as exc:
            yield ctx.at(None, f"reference forward pass ({arch}) could not run: {exc}",
                         severity=Severity.WARNING)
            return
        if not result.finite:
            yield ctx.at(None, f"reference forward pass ({arch}) on tokens {list(tokens)} gave "
                         f"{result.n_nonfinite} NaN/Inf logits of {result.n_vocab}; a weight it "
                         "reads is non-finite or overflows (see GG1001/GG1002 for the tensor)")


RULES = [NonFiniteValues, BadBlockScales, ForwardCheck]
