"""Renderers of ``ggscope stats``: plain text (piped), rich table (terminal), JSON.

Why: statistics are read by people scanning for broken tensors (NaN/Inf, zero scales)
and by scripts; the text form is one aligned row per tensor, the JSON form carries the
whole mapping from ``ggscope.stats.tensors.tensor_stats`` (histogram included).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ggscope.core.escape import escape_text
from ggscope.report.jsonable import jsonable
from ggscope import __version__

__all__ = ["COLUMNS", "row", "plain", "as_json", "rich_table"]

COLUMNS = ("name", "type", "count", "min", "max", "mean", "std", "abs_mean", "zeros", "nan", "inf", "d_min", "d_max")
# how long each column survives a narrow terminal (``report.fit``): the name, then what
# finds a broken tensor (NaN/Inf, range, spread, the block scales), then the rest
PRIORITY = {"name": 0, "nan": 1, "inf": 2, "min": 3, "max": 4, "std": 5, "type": 6, "d_min": 7, "mean": 8,
            "d_max": 9, "zeros": 10, "count": 11, "abs_mean": 12}


def _num(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def row(s: Mapping[str, Any]) -> list[str]:
    """One tensor's statistics as the strings of ``COLUMNS``."""
    bs = s.get("block_scales") or {}
    return [escape_text(s["name"]), str(s["type"]), *(_num(s[k]) for k in COLUMNS[2:11]),
            _num(bs.get("min")), _num(bs.get("max"))]


def plain(stats: Sequence[Mapping[str, Any]], errors: Sequence[tuple[str, str]] = ()) -> str:
    rows = [list(COLUMNS)] + [row(s) for s in stats]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in rows]
    lines += [f"{escape_text(name)}: {escape_text(msg)}" for name, msg in errors]
    return "\n".join(lines)


def as_json(path: str, stats: Sequence[Mapping[str, Any]], errors: Sequence[tuple[str, str]] = ()) -> dict:
    return {"version": __version__, "file": jsonable(path), "tensors": [jsonable(dict(s)) for s in stats],
            "errors": [{"name": jsonable(n), "error": jsonable(m)} for n, m in errors]}


def rich_table(stats: Sequence[Mapping[str, Any]]):
    """The table for a terminal: as many columns as fit its width (``report.fit``), a
    row with NaN/Inf values or non-finite block scales in bold red."""
    from ggscope.report.fit import Column, FittingTable  # lazy: loaded only on the path that needs it

    def bad(n: int) -> str | None:
        s = stats[n]
        return "bold red" if (s.get("nan") or 0) + (s.get("inf") or 0) or \
            (s.get("block_scales") or {}).get("nonfinite") else None
    columns = [Column(c, i >= 2, PRIORITY[c]) for i, c in enumerate(COLUMNS)]
    return FittingTable(columns, [row(s) for s in stats], "tensor statistics", row_style=bad)
