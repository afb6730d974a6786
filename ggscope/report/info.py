"""``ggscope info``: the header, metadata and tensor table of one file.

Three renderings of one summary: ``as_json`` (complete: every array in full), ``plain``
(for pipes and files: no colour, long arrays summarised) and ``rich_renderables`` (for a
terminal).  Long arrays are summarised as their count and first items.
"""
from __future__ import annotations

import json
from typing import Any, TextIO

import numpy as np

from ..modelfile import ModelFile
from .jsonable import json_text, jsonable

__all__ = ["as_json", "write_json", "plain", "rich_renderables", "summarize_value", "human_bytes"]

ARRAY_PREVIEW = 6


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def summarize_value(v: Any, limit: int = 120) -> str:
    if isinstance(v, str):
        s = v.encode("utf-8", "backslashreplace").decode("utf-8")
        s = s.replace("\n", "\\n")
        return repr(s if len(s) <= limit else s[:limit] + "…")
    if isinstance(v, (np.ndarray, list)) or (hasattr(v, "tolist") and hasattr(v, "__len__")):
        n = len(v)
        head = [v[i] for i in range(min(n, ARRAY_PREVIEW))]
        items = ", ".join(summarize_value(x.item() if isinstance(x, np.generic) else x, 24) for x in head)
        more = ", …" if n > ARRAY_PREVIEW else ""
        return f"[{n} items] [{items}{more}]" if n > ARRAY_PREVIEW else f"[{items}]"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def header_facts(mf: ModelFile) -> list[tuple[str, str]]:
    facts = [("file", mf.path), ("format", mf.format), ("version", str(mf.version)),
             ("endian", mf.endian), ("size", f"{mf.file_size} bytes ({human_bytes(mf.file_size)})")]
    if mf.alignment is not None:
        facts.append(("alignment", str(mf.alignment)))
    if mf.data_offset is not None:
        facts.append(("data offset", f"{mf.data_offset} ({mf.data_offset:#x})"))
    for k, v in mf.extra.items():
        facts.append((k.replace("_", " "), summarize_value(v)))
    facts.append(("metadata", f"{len(mf.metadata)} keys"))
    n_params = sum(t.n_elements for t in mf.tensors)
    facts.append(("tensors", f"{len(mf.tensors)} ({n_params:,} elements, "
                             f"{human_bytes(sum(t.nbytes for t in mf.tensors))})"))
    return facts


def as_json(mf: ModelFile) -> dict[str, Any]:
    out = _summary(mf)
    out["metadata"] = {k: jsonable(v) for k, v in mf.metadata.items()}
    return out


def write_json(mf: ModelFile, out: TextIO) -> None:
    """Write ``json.dumps(as_json(mf), ensure_ascii=False, allow_nan=False)`` to ``out``,
    character for character, in pieces: string arrays go straight from their bytes
    (``jsonable.json_text``) and no one string of the whole document is built."""
    def dumps(x: Any) -> str:
        return json.dumps(x, ensure_ascii=False, allow_nan=False)

    sep = "{"
    for key, value in _summary(mf).items():
        out.write(f"{sep}{dumps(key)}: ")
        sep = ", "
        if key != "metadata":
            out.write(dumps(value))
            continue
        inner = "{"
        for k, v in mf.metadata.items():
            out.write(f"{inner}{dumps(str(k))}: ")
            out.write(json_text(v))
            inner = ", "
        out.write("{}" if inner == "{" else "}")
    out.write("}")


def _summary(mf: ModelFile) -> dict[str, Any]:
    """Everything of ``as_json`` except converted metadata values (a placeholder keeps the key order)."""
    return {
        "file": mf.path,
        "format": mf.format,
        "version": mf.version,
        "endian": mf.endian,
        "alignment": mf.alignment,
        "data_offset": mf.data_offset,
        **({"extra": jsonable(mf.extra)} if mf.extra else {}),
        "metadata": None,
        "metadata_types": dict(mf.metadata_types),
        "tensors": [{"name": t.name, "shape": list(t.shape), "type": t.type, "offset": t.offset,
                     "nbytes": t.nbytes, **({"layout": t.layout} if t.layout != t.type else {})}
                    for t in mf.tensors],
    }


def plain(mf: ModelFile) -> str:
    lines = [f"{k}: {v}" for k, v in header_facts(mf)]
    lines.append("")
    lines.append("metadata:")
    width = max((len(k) for k in mf.metadata), default=0)
    for k, v in mf.metadata.items():
        lines.append(f"  {k:<{width}}  {mf.metadata_types.get(k, ''):<14} {summarize_value(v)}")
    lines.append("")
    lines.append("tensors:")
    if mf.tensors:
        nw = max(len(t.name) for t in mf.tensors)
        lines.append(f"  {'name':<{nw}}  {'shape':<22} {'type':<10} {'offset':>14} {'bytes':>14}")
        for t in mf.tensors:
            shape = "×".join(str(d) for d in t.shape)
            typ = t.type if t.layout == t.type else f"{t.type} ({t.layout})"
            lines.append(f"  {t.name:<{nw}}  {shape:<22} {typ:<10} {t.offset:>14} {t.nbytes:>14}")
    return "\n".join(lines)


def rich_renderables(mf: ModelFile) -> list[Any]:
    from rich.table import Table
    from rich.text import Text

    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold cyan")
    head.add_column()
    for k, v in header_facts(mf):
        head.add_row(k, v)
    meta = Table(title="metadata", title_justify="left", expand=False, show_lines=False)
    meta.add_column("key", style="cyan", no_wrap=True)
    meta.add_column("type", style="magenta", no_wrap=True)
    meta.add_column("value", overflow="fold")
    for k, v in mf.metadata.items():
        meta.add_row(k, mf.metadata_types.get(k, ""), Text(summarize_value(v)))
    tens = Table(title="tensors", title_justify="left")
    tens.add_column("name", style="cyan", no_wrap=True)
    tens.add_column("shape", no_wrap=True)
    tens.add_column("type", style="magenta", no_wrap=True)
    tens.add_column("offset", justify="right")
    tens.add_column("bytes", justify="right")
    for t in mf.tensors:
        typ = t.type if t.layout == t.type else f"{t.type} ({t.layout})"
        tens.add_row(t.name, "×".join(str(d) for d in t.shape), typ, f"{t.offset:#x}", f"{t.nbytes:,}")
    return [head, meta, tens]
