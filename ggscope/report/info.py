"""``ggscope info``: the header, metadata and tensor table of one file.

Three renderings of one summary: ``as_json`` (complete: every array in full), ``plain``
(for pipes and files: no colour, long arrays summarised) and ``rich_renderables`` (for a
terminal).  Long arrays are summarised as their count and first items.
"""
from __future__ import annotations

from typing import Any, TextIO

import numpy as np

from ggscope.model.modelfile import ModelFile
from ggscope.model.summary import chat_templates
from ggscope.core.escape import escape_text, is_valid_utf8, json_key, json_text, raw_bytes
from ggscope.report.jsonable import dumps, jsonable, value_json

__all__ = ["as_json", "write_json", "plain", "rich_renderables", "summarize_value", "human_bytes"]

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
        return repr(v)
    return str(v)


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


def header_facts(mf: ModelFile) -> list[tuple[str, str]]:
    facts = [("file", escape_text(mf.path)), ("format", mf.format), ("version", str(mf.version)),
             ("endian", mf.endian), ("size", f"{mf.file_size} bytes ({human_bytes(mf.file_size)})")]
    if mf.alignment is not None:
        facts.append(("alignment", str(mf.alignment)))
    if mf.data_offset is not None:
        facts.append(("data offset", f"{mf.data_offset} ({mf.data_offset:#x})"))
    for k, v in mf.extra.items():
        text = _extra_text(v)
        if text:
            facts.append((k.replace("_", " "), text))
    facts.append(("metadata", f"{len(mf.metadata)} keys"))
    facts.append(("chat templates", ", ".join(escape_text(n) for n, _ in chat_templates(mf.metadata)) or "none"))
    n_params = sum(t.n_elements for t in mf.tensors)
    facts.append(("tensors", f"{len(mf.tensors)} ({n_params:,} elements, "
                             f"{human_bytes(sum(t.nbytes for t in mf.tensors))})"))
    from ggscope.memory import default_plan           # llama.cpp's buffers at context 4096 (ggscope fit)
    from ggscope.memory.describe import one_line  # lazy: 6 more modules only when used
    if (p := default_plan(mf)) is not None:
        facts.append(("llama.cpp memory", one_line(p)))
    return facts


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
            out.write(value_json(v))
            inner = ", "
        out.write("{}" if inner == "{" else "}")
    out.write("}")


def _summary(mf: ModelFile) -> dict[str, Any]:
    """Everything of ``as_json`` except converted metadata values (a placeholder keeps the key order)."""
    bad_keys = {json_key(k): raw_bytes(k).hex() for k in mf.metadata if not is_valid_utf8(k)}
    return {
        **({"metadata_key_bytes": bad_keys} if bad_keys else {}),
        "file": json_text(mf.path),
        "format": mf.format,
        "version": mf.version,
        "endian": mf.endian,
        "alignment": mf.alignment,
        "data_offset": mf.data_offset,
        **({"extra": jsonable(mf.extra)} if mf.extra else {}),
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


def plain(mf: ModelFile) -> str:
    lines = [f"{k}: {v}" for k, v in header_facts(mf)]
    lines.append("")
    lines.append("metadata:")
    keys = {k: escape_text(k) for k in mf.metadata}
    width = max((len(k) for k in keys.values()), default=0)
    for k, v in mf.metadata.items():
        lines.append(f"  {keys[k]:<{width}}  {mf.metadata_types.get(k, ''):<14} {summarize_value(v)}")
    lines.append("")
    lines.append("tensors:")
    if mf.tensors:
        names = [escape_text(t.name) for t in mf.tensors]
        nw = max(len(n) for n in names)
        lines.append(f"  {'name':<{nw}}  {'shape':<22} {'type':<10} {'offset':>14} {'bytes':>14}")
        for t, name in zip(mf.tensors, names):
            shape = "×".join(str(d) for d in t.shape)
            typ = t.type if t.layout == t.type else f"{t.type} ({t.layout})"
            shard = f"  shard {_shard(mf, t)}" if "shards" in mf.extra else ""
            lines.append(f"  {name:<{nw}}  {shape:<22} {typ:<10} {t.offset:>14} {t.nbytes:>14}{shard}")
    return "\n".join(lines)


def rich_renderables(mf: ModelFile) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold cyan")
    head.add_column()
    for k, v in header_facts(mf):
        head.add_row(Text(k), Text(v))
    meta = Table(title="metadata", title_justify="left", expand=False, show_lines=False)
    meta.add_column("key", style="cyan", no_wrap=True)
    meta.add_column("type", style="magenta", no_wrap=True)
    meta.add_column("value", overflow="fold")
    for k, v in mf.metadata.items():
        meta.add_row(Text(escape_text(k)), Text(mf.metadata_types.get(k, "")), Text(summarize_value(v)))
    tens = Table(title="tensors", title_justify="left")
    tens.add_column("name", style="cyan", no_wrap=True)
    tens.add_column("shape", no_wrap=True)
    tens.add_column("type", style="magenta", no_wrap=True)
    tens.add_column("offset", justify="right")
    tens.add_column("bytes", justify="right")
    for t in mf.tensors:
        typ = t.type if t.layout == t.type else f"{t.type} ({t.layout})"
        tens.add_row(Text(escape_text(t.name)), "×".join(str(d) for d in t.shape), Text(typ), f"{t.offset:#x}",
                     f"{t.nbytes:,}")
    return [head, meta, tens]
