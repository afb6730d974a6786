"""Structure rules (GG1xx) on the tensor infos and the data section ggml derives from them.

Why: part of the structure family (see ``structure``): what ggml's ``gguf_init_from_file``
refuses in a tensor info - its name, rank, shape, type and offset - and in the data
section those infos lay out.  Contract: each rule reads the infos that parsed completely
as columns (``common.tensor_rows``: no node per tensor, so a rule costs the same for
100k tensors as one pass over a list) and ggml's layout (``common.ggml_layout``), and
builds only the node a finding points at; none decides on damage.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import (GGML_MAX_DIMS, GGML_MAX_NAME, INT64_MAX, SIZE_MAX, ggml_layout, tensor_field,
                                  tensor_rows, type_facts)

# dimensions up to this size can be neither negative as int64 nor overflow it in a product of 4
_SMALL = 1 << 15

__all__ = ["TensorNameTooLong", "DuplicateTensorName", "TooManyDims", "BadDimension", "UnknownTensorType",
           "RowNotBlockMultiple", "UnexpectedTensorOffset", "DataSectionPastEnd", "TruncatedTensorData"]


class TensorNameTooLong(Rule):
    """What it checks: every tensor name is shorter than 64 bytes.

    Why it matters: ggml stores names in ``char name[GGML_MAX_NAME]`` (64, with the NUL)
    and refuses a name of 64 bytes or more ("tensor name N is too long").

    Example: ggml test-gguf's TENSORS_BAD_NAME_SIZE files (87 bytes).

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.name``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG108", "tensor-name-too-long", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "A tensor name is 64 bytes or longer."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for i, (start, end) in enumerate(tensor_rows(ctx.mf).name_spans):
            ln = end - start
            if ln >= GGML_MAX_NAME:
                yield ctx.at(tensor_field(ctx.mf, i, "name"),
                             f"tensor name is {ln} bytes; ggml allows at most {GGML_MAX_NAME - 1}")


class DuplicateTensorName(Rule):
    """What it checks: no two tensors have the same name.

    Why it matters: ggml refuses the file ("duplicate tensor name"); a loader looking a
    weight up by name would get one of them at random.

    Example: ggml test-gguf's TENSORS_DUPLICATE_NAME files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.name``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG109", "duplicate-tensor-name", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "Two tensors have the same name."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        seen: dict[bytes, int] = {}
        rows = tensor_rows(ctx.mf)
        read = ctx.mf.source.read
        for i, (start, end) in enumerate(rows.name_spans):
            raw = bytes(read(start, end)).split(b"\0", 1)[0]   # ggml compares C strings
            if raw in seen:
                yield ctx.at(tensor_field(ctx.mf, i, "name"),
                             f"tensor name {quoted(rows.names[i])} repeats tensor {seen[raw]}")
            else:
                seen[raw] = i


class TooManyDims(Rule):
    """What it checks: every tensor has at most 4 dimensions.

    Why it matters: ggml tensors have ``GGML_MAX_DIMS`` = 4 dimensions; ggml refuses more.

    Example: ggml test-gguf's TENSORS_BAD_N_DIMS files (5).

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.n_dimensions``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG110", "too-many-dims", Severity.ERROR, "structure"
    summary = "A tensor has more than 4 dimensions."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        rows = tensor_rows(ctx.mf)
        for i, nd in enumerate(rows.n_dims):
            if nd > GGML_MAX_DIMS:
                yield ctx.at(tensor_field(ctx.mf, i, "n_dims"), f"{nd} dimensions; ggml allows at most {GGML_MAX_DIMS}")
        infos = ctx.mf.root.child("tensor_infos")
        if infos is not None and len(infos.children) > len(rows):      # the record the parse stopped in
            nd = infos.children[len(rows)].child("n_dims")
            if nd is not None and nd.value is not None and int(nd.value) > GGML_MAX_DIMS:
                yield ctx.at(nd, f"{int(nd.value)} dimensions; ggml allows at most {GGML_MAX_DIMS}")


class BadDimension(Rule):
    """What it checks: every dimension is non-negative as int64 and the element count is
    representable (ggml's ``INT64_MAX`` overflow test).

    Why it matters: ggml reads dimensions as int64 and refuses negative ones and shapes
    whose element count overflows int64; sizes computed from them would wrap around.

    Example: ggml test-gguf's TENSORS_BAD_SHAPE (-1) and TENSORS_NE_TOO_BIG files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.dimensions``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG111", "bad-dimension", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "A tensor dimension is negative or the element count overflows int64."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        rows = tensor_rows(ctx.mf)
        for i, (nd, dims) in enumerate(zip(rows.n_dims, rows.dims)):
            if nd > GGML_MAX_DIMS:
                continue
            ne = dims + [1] * GGML_MAX_DIMS
            ne = ne[:GGML_MAX_DIMS]
            if max(ne) <= _SMALL:            # no dimension negative, no product near INT64_MAX
                continue
            neg = [j for j, d in enumerate(ne) if d > INT64_MAX]
            if neg:
                yield ctx.at(tensor_field(ctx.mf, i, "dims"),
                             f"dimension {neg[0]} is {ne[neg[0]] - (1 << 64)} as int64; "
                             "ggml refuses negative dimensions")
                continue
            prod = ne[0]
            for j in range(1, GGML_MAX_DIMS):
                if ne[j] != 0 and INT64_MAX // ne[j] <= prod:
                    yield ctx.at(tensor_field(ctx.mf, i, "dims"), f"shape {tuple(ne)} has at least INT64_MAX elements")
                    break
                prod *= ne[j]


class UnknownTensorType(Rule):
    """What it checks: every tensor type is a ggml type that still has a block size.

    Why it matters: ggml refuses type ids at or above ``GGML_TYPE_COUNT`` and cannot size
    removed types (Q4_2, Q4_3, the Q4_0_4_4 family); their data cannot be located.

    Example: ggml test-gguf's TENSORS_BAD_TYPE files (43).

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``ggml_type``; ggml src/gguf.cpp,
    gguf_init_from_file.
    """
    code, name, severity, family = "GG112", "unknown-tensor-type", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "A tensor has an unknown or removed ggml type."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for i, code in enumerate(tensor_rows(ctx.mf).types):
            if type_facts(code) is None:
                yield ctx.at(tensor_field(ctx.mf, i, "type"), f"ggml type {code} is unknown or removed")


class RowNotBlockMultiple(Rule):
    """What it checks: each tensor's row length ne[0] is a multiple of its type's block
    size, and its byte size fits in size_t.

    Why it matters: quantized rows are whole blocks; ggml refuses a row that is not
    ("not a multiple of block size") and a byte size above SIZE_MAX.

    Example: ggml test-gguf's TENSORS_NE_TOO_BIG and TENSORS_NBYTES_TOO_BIG files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure"; ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG113", "row-not-block-multiple", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "A row is not whole blocks of the type, or the byte size overflows."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        rows = tensor_rows(ctx.mf)
        for i, (code, ne) in enumerate(zip(rows.types, rows.dims)):
            facts = type_facts(code)
            if facts is None or any(d > INT64_MAX for d in ne):
                continue
            tname, be, bb = facts
            ne0 = ne[0] if ne else 1
            if ne0 % be:
                yield ctx.at(tensor_field(ctx.mf, i, "dims"),
                             f"ne[0] = {ne0} is not a multiple of {tname}'s block size {be}")
                continue
            n = 1
            for d in ne:
                n *= d
            if n // be > SIZE_MAX // bb:
                yield ctx.at(tensor_field(ctx.mf, i, "dims"), f"{n} elements of {tname} need more than SIZE_MAX bytes")


class UnexpectedTensorOffset(Rule):
    """What it checks: each tensor's offset is exactly where the previous tensor ends,
    padded to the alignment (the first at 0).

    Why it matters: ggml lays tensors out back to back and refuses any other offset
    ("has offset X, expected Y"), so gaps, reordering and overlaps all fail to load.

    Example: ggml test-gguf's TENSORS_BAD_OFFSET and DATA_INCONSISTENT_ALIGN files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_tensor_info_t.offset``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG114", "unexpected-tensor-offset", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "A tensor does not start where the previous one ends (padded)."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        rows = tensor_rows(ctx.mf)
        for i, (got, exp) in enumerate(zip(rows.offsets, lay.expected)):
            if got != exp:
                yield ctx.at(tensor_field(ctx.mf, i, "offset"), f"tensor {quoted(rows.names[i])} has offset {got}, "
                             f"expected {exp} (previous tensor's end padded to {lay.alignment})")
                return      # ggml stops at the first; every later one would repeat it


class DataSectionPastEnd(Rule):
    """What it checks: a file with tensors reaches at least the start of its data
    section (the tensor infos' end padded to the alignment).

    Why it matters: ggml seeks there before anything else and refuses the file when it
    cannot ("failed to seek to beginning of data section"): the header is not padded.

    Example: ggml test-gguf's TENSORS_INCONSISTENT_ALIGN files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_file_t._padding``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG115", "data-section-past-end", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "The file ends before its data section starts."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        if not len(tensor_rows(ctx.mf)) or lay.data_start is None or lay.header_end is None:
            return
        if ctx.mf.source.size < lay.data_start:
            yield ctx.at(None, f"the data section starts at {lay.data_start} (header end {lay.header_end} "
                         f"padded to {lay.alignment}) but the file has {ctx.mf.source.size} bytes",
                         start=lay.header_end, end=ctx.mf.source.size)


class TruncatedTensorData(Rule):
    """What it checks: when a file has a data section, it holds every tensor, each
    padded to the alignment, and the padded total fits in size_t.

    Why it matters: ggml reads the data section as one blob of that padded size and
    refuses a file one byte short ("failed to read tensor data binary blob").  A file
    that ends exactly where its data section starts is a header-only file, which ggml's
    metadata reads accept; the tensors family reports its missing data instead.

    Example: ggml test-gguf's DATA_NOT_ENOUGH_DATA files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_file_t.tensor_data``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG116", "truncated-tensor-data", Severity.ERROR, "structure"
    only_if = "tensors"
    summary = "The data section is shorter than its tensors need."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        lay = ggml_layout(ctx.mf)
        size = ctx.mf.source.size
        if not lay.expected or lay.data_start is None or size <= lay.data_start:
            return
        if lay.data_size is None:
            yield ctx.at(None, "the tensors' padded sizes add up to more than SIZE_MAX bytes",
                         start=lay.data_start, end=size)
        elif lay.data_start + lay.data_size > size:
            yield ctx.at(None, f"the data section needs {lay.data_size} bytes (tensors padded to "
                         f"{lay.alignment}) but only {size - lay.data_start} remain",
                         start=lay.data_start, end=size)
