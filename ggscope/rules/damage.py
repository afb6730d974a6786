"""The damage rules of the structure family: one rule per kind of stopped parse.

Why: ``common.damage_kind`` gives every damaged parse exactly one owner, for every
format, so ``validate`` calls a file damaged exactly when ``ggscope.open`` and ``info``
do.  These rules word the finding; they decide nothing themselves.
"""
from __future__ import annotations

from collections.abc import Iterator

from ggscope.rules.base import CheckContext, Finding, Rule, Severity, quoted
from ggscope.rules.common import GGUF_TYPE_ARRAY, INT64_MAX, damage_kind, kv_rows

__all__ = ["RULES", "BadMagic", "CountCannotFit", "InvalidValueType", "TruncatedFile", "UnreadableField",
           "reader_name"]


class _DamageRule(Rule):
    kind: str = ""
    formats = ("*",)
    only_if = "damaged"          # damage_kind names no owner on a file that parsed whole

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if damage_kind(ctx.mf) == self.name:
            d = ctx.mf.damage
            yield ctx.at(d, self.message(d, ctx.mf), start=d.start, end=d.start)

    def message(self, d, mf) -> str:
        return f"{reader_name(mf)} refuses this file: {d.path or 'the file'}: {d.error}"


_READERS = {"gguf": "ggml", "ggml": "the GGML loader", "ggmf": "llama.cpp's legacy loader",
            "ggjt": "llama.cpp's legacy loader", "rwkv.cpp": "rwkv.cpp", "chatglm.cpp": "chatglm.cpp",
            "bit1": "the BIT1 reader"}


def reader_name(mf) -> str:
    return _READERS.get(mf.format, "its reader")


class BadMagic(_DamageRule):
    """What it checks: the file starts with the four bytes ``GGUF``.

    Why it matters: ggml's reader compares the magic first and refuses anything else
    ("invalid magic characters"); a ``.gguf`` file without it is not GGUF at all.

    Example: ggml test-gguf's HEADER_BAD_MAGIC file (``FUGG``).

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_header_t.magic``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG101", "bad-magic", Severity.ERROR, "structure"
    summary = "The file does not start with the GGUF magic."
    formats = ("gguf",)   # other formats are told by their magic: a wrong one is no known format

    @classmethod
    def finding_for(cls, path: str, first: bytes) -> Finding:
        return Finding(cls.code, cls.severity, path,
                       f"ggml refuses this file: magic {quoted(first[:4])}, expected \"GGUF\"", "magic",
                       0, min(4, len(first)), "/seq/0", cls.name)


class CountCannotFit(_DamageRule):
    """What it checks: every count and length (tensors, entries, array elements, string
    bytes) fits in the file, and the header counts are non-negative as int64.

    Why it matters: ggml reads ``n_tensors`` and ``n_kv`` as int64 and refuses negative
    ones, and refuses any string or array longer than the bytes left.  Such a value is a
    corrupt or hostile header, not a big model.

    Example: ggml test-gguf's HEADER_BAD_N_KV (n_kv = -1) and KV_BAD_KEY_SIZE files.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_header_t``, ``gguf_string_t``;
    ggml src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG103", "count-cannot-fit", Severity.ERROR, "structure"
    only_if = None               # a negative header count is judged on a whole file too
    summary = "A count or length is negative or larger than the file."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        for field in ("num_tensors", "num_kv"):
            node = ctx.node(f"header/{field}")
            if node is not None and node.value is not None and int(node.value) > INT64_MAX:
                yield ctx.at(node, f"{field} = {int(node.value) - (1 << 64)} as int64; ggml refuses a "
                             "negative count")
                return
        yield from super().check(ctx)

    def message(self, d, mf) -> str:
        return (f"{d.path}: {d.error}; the count or length cannot fit the {mf.source.size}-byte file, "
                f"{reader_name(mf)} refuses it")


class InvalidValueType(Rule):
    """What it checks: every metadata value type is one of the 13 GGUF types, and no
    array holds arrays.

    Why it matters: ggml refuses an unknown type code ("invalid GGUF type") and refuses
    an array whose element type is array: it has no reader for nested arrays.

    Example: ggml test-gguf's KV_BAD_TYPE files (type 13).

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_metadata_value_type``; ggml
    src/gguf.cpp, gguf_init_from_file.
    """
    code, name, severity, family = "GG104", "invalid-value-type", Severity.ERROR, "structure"
    summary = "A metadata value type is unknown, or an array holds arrays."

    def check(self, ctx: CheckContext) -> Iterator[Finding]:
        if damage_kind(ctx.mf) == self.name:
            d = ctx.mf.damage
            if d.damage is not None and d.damage.kind == "too-deep":
                kv = ctx.node(d.path.split("/", 1)[0])      # the entry, not a path 64 levels long
                key = kv.child("key") if kv is not None else None
                name = key.child("data") if key is not None else None
                what = f"key {quoted(name.value)}" if name is not None and name.value is not None else "an entry"
                yield ctx.at(kv if kv is not None else d,
                             f"{what} holds arrays nested {d.path.count('elems[')} levels deep and more "
                             f"(parsing stops at offset {d.start}: {d.error}); ggml refuses nested arrays",
                             start=d.start, end=d.start)
                return
            t = ctx.node(d.path.rsplit("/", 1)[0] + "/type") if "/" in d.path else None
            code = f" {t.value}" if t is not None and t.value is not None else ""
            yield ctx.at(d, f"unknown GGUF value type{code}; ggml refuses it", start=d.start, end=d.start)
        for kv in kv_rows(ctx.mf):
            if kv.type == GGUF_TYPE_ARRAY and kv.elem_type == GGUF_TYPE_ARRAY:
                yield ctx.at(kv.value["type"], f"key {quoted(kv.key)}: an array of arrays; "
                             "ggml refuses nested arrays")


class TruncatedFile(_DamageRule):
    """What it checks: the file holds every field its header and records announce - in
    GGUF the header, metadata and tensor infos; in the formats before GGUF every
    hyper-parameter, vocabulary entry and tensor record, data included.

    Why it matters: a file cut short - an interrupted download or copy - cannot be read
    past the cut.  ggml refuses it ("failed to read ..."); llama.cpp's legacy loader
    (``llama_file::read_raw``: "unexpectedly reached end of file"), rwkv.cpp
    (``rwkv_fread_*`` fail, "Failed to read ...") and chatglm.cpp's loader
    (``ModelLoader::read_*``) stop the same way.

    Example: any GGUF file truncated inside its metadata; an rwkv.cpp file cut inside
    the data of its last parameter.

    Reference: the GGUF spec (ggml docs/gguf.md), "File Structure" ``gguf_file_t``; ggml src/gguf.cpp,
    gguf_init_from_file;
    llama.cpp's pre-GGUF loader (llama.cpp before GGUF landed, 2023-08-21); ggml's examples/gpt-2/main.cpp;
    rwkv.cpp's rwkv_file_format.inc and rwkv_model_loading.inc; chatglm.cpp's chatglm.cpp (ModelLoader); the
    BIT1 exporter (the v18 BitLM checkpoint export script).
    """
    code, name, severity, family = "GG117", "truncated-file", Severity.ERROR, "structure"
    summary = "The file ends inside a field its header or records announce."

    def message(self, d, mf) -> str:
        return f"the file ends inside {d.path or 'the header'} at offset {d.start}: {d.error}"


class UnreadableField(_DamageRule):
    """What it checks: every field the format's layout defines can be read - its value
    decides the next field's place, size or type in a way the format allows.

    Why it matters: when a field cannot be interpreted (a byte-order word that is
    neither byte order, a size expression that cannot be evaluated), the format's own
    reader cannot go on either, and everything after that field is unreadable.

    Example: a GGUF file whose version word reads as neither little- nor big-endian.

    Reference: the format's Kaitai spec in ggscope/formats/*.ksy; ggscope.ksy.engine (damage is a node).
    """
    code, name, severity, family = "GG118", "unreadable-field", Severity.ERROR, "structure"
    summary = "Parsing stops at a field that cannot be interpreted."

    def message(self, d, mf) -> str:
        return f"parsing stops at {d.path or 'the file'} (offset {d.start}): {d.error}"


RULES = [BadMagic, CountCannotFit, InvalidValueType, TruncatedFile, UnreadableField]
