"""``ggscope info``: the overview's facts, header, metadata and tensor table of one file.

The facts are the browser's overview and ``diff``'s summary (``model.summary``: file type
by name, parameters, bits per weight, the tensor-type table); a split model is named by
the shard given and its set.  Numbers read the same everywhere: floats as stored
(``float_text``), offsets decimal unless ``--hex`` (``offset_text``).  Tables fit the
terminal (``report.fit``).  Three renderings of one summary: ``as_json`` (complete: every array in full), ``plain``
(for pipes and files: no colour, long arrays summarised) and ``rich_renderables`` (for a
terminal).  Long arrays are summarised as their count and first items.
"""
from __future__ import annotations

from typing import Any, TextIO

import numpy as np

from ggscope.model.modelfile import ModelFile
from ggscope.model.summary import chat_templates
from ggscope.core.escape import escape_text, is_valid_utf8, json_key, json_text, raw_bytes
from ggscope.report.fit import Column, FittingTable
from ggscope.report.jsonable import dumps, jsonable, value_json, write_value_json

__all__ = ["as_json", "write_json", "plain", "rich_renderables", "summarize_value", "human_bytes", "float_text",
           "offset_text", "header_facts", "summary_json", "type_rows", "tensor_rows", "PUBLIC_EXTRA", "public_extra"]

ARRAY_PREVIEW = 6


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def summarize_value(v: Any, limit: int = 120) -> str:
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        hexed = b[:limit // 3].hex(" ")
        return f"{len(b)} bytes: {hexed}" + (" …" if len(b) > limit // 3 else "") if b else "0 bytes"
    if isinstance(v, str):              # quoted and escaped once (core.escape), never a repr
        return '"' + escape_text(v if len(v) <= limit else v[:limit]) + ('"' if len(v) <= limit else '…"')
    if isinstance(v, (np.ndarray, list)) or (hasattr(v, "tolist") and hasattr(v, "__len__")):
        n = len(v)
        head = [v[i] for i in range(min(n, ARRAY_PREVIEW))]
        items = ", ".join(summarize_value(x.item() if isinstance(x, np.generic) else x, 24) for x in head)
        more = ", …" if n > ARRAY_PREVIEW else ""
        return f"[{n} items] [{items}{more}]" if n > ARRAY_PREVIEW else f"[{items}]"
    if isinstance(v, float):
        return float_text(v)
    return str(v)


def float_text(v: float) -> str:
    """A float as written: the shortest text that reads back as the same value at the
    precision it was stored in (``1e-05`` for the float32 ``9.999999747378752e-06``;
    a float64 keeps every digit it needs)."""
    if v == v and abs(v) != float("inf") and float(np.float32(v)) == v:
        text = np.format_float_positional(np.float32(v), unique=True, trim="0") \
            if 1e-4 <= abs(v) < 1e16 or v == 0 else np.format_float_scientific(np.float32(v), unique=True, trim="-")
        return text
    return repr(v)


def offset_text(n: int, hex_offsets: bool = False) -> str:
    """An offset in the one base every output uses (decimal), hex on request (``--hex``)."""
    return f"{n:#x}" if hex_offsets else str(n)


def _extra_text(v: Any) -> str:
    """A format-specific fact as a phrase: nothing for an empty one, no Python reprs."""
    if v is None or (hasattr(v, "__len__") and not isinstance(v, (str, bytes)) and len(v) == 0) or v == "":
        return ""
    if isinstance(v, str):
        return escape_text(v)
    if isinstance(v, dict):
        return "; ".join(f"{escape_text(k)}: {_extra_text(x) or 'none'}" for k, x in v.items())  # type_errors: name -> why
    if isinstance(v, (list, tuple)) and all(isinstance(x, (bytes, bytearray)) for x in v):
        return f"{len(v)} entries (exact bytes; --json lists them)"
    return summarize_value(v)


SPLIT_KEYS = ("shards", "shard_given", "shard_sizes")      # split.open_model's facts, laid out by header_facts

# The facts of ``mf.extra`` an output may show: the format views' (model/views/*, whose
# docstrings list them) and split.open_model's.  The one place that decides, and an
# allow-list: whatever else a layer keeps in ``mf.extra`` -- a validate run's cache
# (``rules.common.file_cache``), any state added later -- never reaches ``info`` (text or
# JSON) nor the browser's overview; a new fact shows once it is named here
# (tests/commands/test_info_extra.py holds every view's keys to this list).
PUBLIC_EXTRA = frozenset({"layout_era", "hparams_style", "token_bytes", "type_errors", "damage_type_error",
                          "arch_version", "data_type_name", "model_type_name", "config_record", "tokenizer_kind",
                          "tokenizer_error", *SPLIT_KEYS})


def public_extra(mf: ModelFile) -> dict[str, Any]:
    """``mf.extra``'s public facts (``PUBLIC_EXTRA``), in the order the view set them."""
    return {k: v for k, v in mf.extra.items() if k in PUBLIC_EXTRA}


def header_facts(mf: ModelFile, hex_offsets: bool = False) -> list[tuple[str, str]]:
    """(what, text) of the header and the overview's facts (``model.summary``): the file
    given (for a split model: which shard of how many), format, architecture, name, file
    type by name, parameters, bits per weight, size, layout."""
    from ggscope.model.summary import human_count, summarize  # lazy: loaded only on the path that needs it
    sm = summarize(mf)
    shards = mf.extra.get("shards")
    if shards:
        k = mf.extra.get("shard_given", 1)
        facts = [("file", f"{escape_text(shards[k - 1])} (shard {k} of {len(shards)})"),
                 ("split model", f"{len(shards)} shards: " + ", ".join(escape_text(p.rsplit('/', 1)[-1])
                                                                        for p in shards[:4])
                  + (f", … {escape_text(shards[-1].rsplit('/', 1)[-1])}" if len(shards) > 4 else ""))]
    else:
        facts = [("file", escape_text(mf.path))]
    facts += [("format", f"{mf.format} v{mf.version}, {mf.endian} endian")]
    if sm.architecture is not None:
        facts.append(("architecture", escape_text(sm.architecture)))
    if sm.name is not None:
        facts.append(("name", escape_text(sm.name)))
    if sm.file_type is not None:
        code = mf.metadata.get("general.file_type", mf.metadata.get(f"{mf.format}.ftype"))
        facts.append(("file type", sm.file_type + (f" ({code})" if isinstance(code, int) else "")))
    facts.append(("parameters", f"{human_count(sm.n_params)} ({sm.n_params:,})"))
    if sm.bpw is not None:
        facts.append(("bits per weight", f"{sm.bpw:.2f}"))
    facts.append(("size", f"{sm.file_size:,} bytes ({human_bytes(sm.file_size)})"
                  + (" in all shards" if shards else "")))
    if mf.alignment is not None:
        facts.append(("alignment", str(mf.alignment)))
    if mf.data_offset is not None:
        facts.append(("data offset", offset_text(mf.data_offset, hex_offsets)))
    for k, v in public_extra(mf).items():
        text = "" if k in SPLIT_KEYS else _extra_text(v)
        if text:
            facts.append((k.replace("_", " "), text))
    facts.append(("metadata", f"{len(mf.metadata)} keys"))
    facts.append(("chat templates", ", ".join(escape_text(n) for n, _ in chat_templates(mf.metadata)) or "none"))
    facts.append(("tensors", f"{len(mf.tensors)} ({human_bytes(sm.tensor_bytes)})"))
    from ggscope.memory import default_plan           # llama.cpp's buffers at context 4096 (ggscope fit)
    from ggscope.memory.describe import one_line  # lazy: 6 more modules only when used
    if (p := default_plan(mf)) is not None:
        facts.append(("llama.cpp memory", one_line(p)))
    return facts


def type_rows(mf: ModelFile) -> list[list[str]]:
    """The tensor-type table: type, tensors, bytes, share of the tensor bytes, most bytes first."""
    from ggscope.model.summary import summarize  # lazy: loaded only on the path that needs it
    sm = summarize(mf)
    total = sm.tensor_bytes or 1
    return [[escape_text(t), str(n), human_bytes(b), f"{100 * b / total:.1f}%"] for t, n, b in sm.census]


def summary_json(sm: Any) -> dict[str, Any] | None:
    """The overview's facts (``model.summary.Summary``) as JSON: ``info`` and ``diff`` alike."""
    if sm is None:
        return None
    return {"format": sm.format, "version": sm.version, "architecture": jsonable(sm.architecture),
            "name": jsonable(sm.name),
            "file_type": sm.file_type, "n_params": sm.n_params, "file_size": sm.file_size,
            "tensor_bytes": sm.tensor_bytes, "bits_per_weight": sm.bpw,
            "tensor_types": [{"type": t, "tensors": n, "bytes": b} for t, n, b in sm.census]}


def as_json(mf: ModelFile) -> dict[str, Any]:
    """Everything, as valid UTF-8 JSON: file text that is not valid UTF-8 is written as
    ``{"bytes": hex}``; a metadata key that is not is escaped and its exact bytes are
    listed under ``metadata_key_bytes`` (see ``core.escape``)."""
    out = _summary(mf)
    out["metadata"] = {json_key(k): jsonable(v) for k, v in mf.metadata.items()}
    return out


def write_json(mf: ModelFile, out: TextIO) -> None:
    """Write ``jsonable.dumps(as_json(mf))`` to ``out``, character for character, in
    pieces: string arrays go straight from their bytes (``jsonable.value_json``) and no
    one string of the whole document is built."""
    sep = "{"
    for key, value in _summary(mf).items():
        out.write(f"{sep}{dumps(key, converted=True)}: ")
        sep = ", "
        if key != "metadata":
            out.write(dumps(value, converted=True))
            continue
        inner = "{"
        for k, v in mf.metadata.items():
            out.write(f"{inner}{dumps(json_key(str(k)), converted=True)}: ")
            write_value_json(v, out)
            inner = ", "
        out.write("{}" if inner == "{" else "}")
    out.write("}")


def _summary(mf: ModelFile) -> dict[str, Any]:
    """Everything of ``as_json`` except converted metadata values (a placeholder keeps the key order)."""
    from ggscope.model.summary import summarize  # lazy: loaded only on the path that needs it
    bad_keys = {json_key(k): raw_bytes(k).hex() for k in mf.metadata if not is_valid_utf8(k)}
    shards = mf.extra.get("shards")
    extra = public_extra(mf)
    return {
        **({"metadata_key_bytes": bad_keys} if bad_keys else {}),
        "file": json_text(shards[mf.extra.get("shard_given", 1) - 1] if shards else mf.path),
        "summary": summary_json(summarize(mf)),
        "format": mf.format,
        "version": mf.version,
        "endian": mf.endian,
        "alignment": mf.alignment,
        "data_offset": mf.data_offset,
        **({"extra": jsonable(extra)} if extra else {}),
        **_memory(mf),
        "metadata": None,
        "metadata_types": {json_key(k): v for k, v in mf.metadata_types.items()},
        "tensors": [{"name": json_text(t.name), "shape": list(t.shape), "type": t.type, "offset": t.offset,
                     "nbytes": t.nbytes, **({"layout": t.layout} if t.layout != t.type else {}),
                     **({"shard": _shard(mf, t)} if "shards" in mf.extra else {})}
                    for t in mf.tensors],
    }


def _memory(mf: ModelFile) -> dict[str, Any]:
    """``memory``: llama.cpp's buffers at context 4096 (``ggscope fit --json``'s object)."""
    from ggscope.memory import default_plan  # lazy: 5 more modules only when used
    p = default_plan(mf)
    return {"memory": p.as_dict()} if p is not None else {}


def _shard(mf: ModelFile, t) -> int | None:
    """1-based shard number of ``t`` in a split model (``split.open_model``)."""
    path = t.file.path if t.file is not None else None
    return mf.extra["shards"].index(path) + 1 if path in mf.extra["shards"] else None


# the tensor table's columns (``report.fit``): what survives a narrow terminal longest first
TENSOR_COLUMNS = (Column("name", False, 0), Column("shape", False, 2), Column("type", False, 1),
                  Column("offset", True, 4), Column("bytes", True, 3), Column("shard", True, 5))
TYPE_COLUMNS = (Column("type", False, 0), Column("tensors", True, 2), Column("bytes", True, 1),
                Column("share", True, 3))


def tensor_rows(mf: ModelFile, hex_offsets: bool = False) -> list[list[str]]:
    """One row of ``TENSOR_COLUMNS`` per tensor (the shard column empty unless split)."""
    split = "shards" in mf.extra
    return [[escape_text(t.name), "×".join(str(d) for d in t.shape),
             escape_text(t.type if t.layout == t.type else f"{t.type} ({t.layout})"),
             offset_text(t.offset, hex_offsets), f"{t.nbytes:,}", str(_shard(mf, t)) if split else ""]
            for t in mf.tensors]


def _aligned(columns, rows: list[list[str]], indent: str = "  ") -> list[str]:
    """Text columns for pipes and files: every column kept, aligned; empty columns left out."""
    keep = [i for i in range(len(columns)) if any(r[i] for r in rows)]
    table = [[columns[i].heading for i in keep]] + [[r[i] for i in keep] for r in rows]
    widths = [max(len(r[j]) for r in table) for j in range(len(keep))]
    return [indent + "  ".join(c.rjust(w) if columns[keep[j]].right else c.ljust(w)
                               for j, (c, w) in enumerate(zip(r, widths))).rstrip() for r in table]


def plain(mf: ModelFile, hex_offsets: bool = False) -> str:
    lines = [f"{k}: {v}" for k, v in header_facts(mf, hex_offsets)]
    if mf.tensors:
        lines += ["", "tensor types:", *_aligned(TYPE_COLUMNS, type_rows(mf))]
    lines.append("")
    lines.append("metadata:")
    keys = {k: escape_text(k) for k in mf.metadata}
    width = max((len(k) for k in keys.values()), default=0)
    for k, v in mf.metadata.items():
        lines.append(f"  {keys[k]:<{width}}  {mf.metadata_types.get(k, ''):<14} {_value(k, v)}")
    lines.append("")
    lines.append("tensors:")
    if mf.tensors:
        lines += _aligned(TENSOR_COLUMNS, tensor_rows(mf, hex_offsets))
    return "\n".join(lines)


def _value(key: str, v: Any) -> str:
    """A metadata value as text; ``general.file_type`` with llama.cpp's name."""
    if key == "general.file_type" and isinstance(v, int) and not isinstance(v, bool):
        from ggscope.model.summary import file_type_name  # lazy: loaded only on the path that needs it
        return f"{file_type_name(v)} ({v})"
    return summarize_value(v)


def rich_renderables(mf: ModelFile, hex_offsets: bool = False) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold cyan", no_wrap=True)
    head.add_column(overflow="fold")
    for k, v in header_facts(mf, hex_offsets):
        head.add_row(Text(k), Text(v))
    out: list[Any] = [head]
    if mf.tensors:
        out.append(FittingTable(TYPE_COLUMNS, type_rows(mf), "tensor types"))
    meta = Table(title="metadata", title_justify="left", expand=False, show_lines=False)
    meta.add_column("key", style="cyan", overflow="fold", ratio=None)
    meta.add_column("type", style="magenta", no_wrap=True)
    meta.add_column("value", overflow="fold")
    for k, v in mf.metadata.items():
        meta.add_row(Text(escape_text(k)), Text(mf.metadata_types.get(k, "")), Text(_value(k, v)))
    out.append(meta)
    if mf.tensors:
        out.append(FittingTable(TENSOR_COLUMNS, tensor_rows(mf, hex_offsets), "tensors"))
    return out
