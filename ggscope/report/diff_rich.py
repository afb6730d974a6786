"""``ggscope diff`` on a terminal: the renderables of one ``DiffResult`` for Rich.

Why apart from ``report.diff``: the text rendering is for pipes and files, this one
for a console of a known width.  The tensor table keeps to that width by dropping the
least telling columns first (``TENSOR_COLUMNS``' priorities) and says which it left
out.  Every cell is a ``rich.text.Text`` of text ``report.diff`` already escaped
(``core.escape``): file text never reaches Rich as markup.
"""
from __future__ import annotations

from typing import Any

from ggscope.diff.compare import DiffResult
from ggscope.forward.logits import LogitsDiff
from ggscope.report.diff import (LOGITS_HEAD, METRICS, STATUS_STYLE, change_lines, counts_line, display_status,
                                 logits_rows, logits_summary, number, shape_text, summary_line, summary_rows,
                                 worst_line)
from ggscope.core.escape import escape_text as _text

__all__ = ["rich_renderables", "TENSOR_COLUMNS"]

# (heading, right-aligned, priority: lower survives a narrow terminal longer)
TENSOR_COLUMNS = (("tensor", False, 0), ("status", False, 1), ("type", False, 2), ("shape", False, 6),
                  ("max|Δ|", True, 5), ("rmse", True, 7), ("rel rmse", True, 3), ("cosine", True, 4),
                  ("snr dB", True, 8), ("note", False, 9))


def _pair(a: Any, b: Any, status: str) -> str:
    if status == "added":
        return str(b)
    if status == "removed" or a == b:
        return str(a)
    return f"{a} → {b}"


def _rich_rows(r: DiffResult) -> list[list[str]]:
    return [[_text(t.name), display_status(t), _pair(t.type_a, t.type_b, t.status),
             _pair(shape_text(t.shape_a), shape_text(t.shape_b), t.status),
             *(number(getattr(t, m), m) for m in METRICS), _text(t.error or "")]
            for t in r.tensors if not t.same]


class _FittingTable:
    """A rich renderable: the tensor table with as many columns as the width allows,
    dropped in ``TENSOR_COLUMNS`` priority order; long names and notes fold."""

    def __init__(self, rows: list[list[str]], title: str) -> None:
        self.rows, self.title = rows, title

    def __rich_console__(self, console, options):
        from rich.table import Table
        from rich.text import Text
        widths = [max(len(h), *(len(row[i]) for row in self.rows)) for i, (h, _, _) in enumerate(TENSOR_COLUMNS)]
        widths[0] = min(widths[0], 24)           # a name may fold; keep room for numbers
        keep = sorted(range(len(TENSOR_COLUMNS)), key=lambda i: TENSOR_COLUMNS[i][2])
        chosen: list[int] = []
        used = 4                                   # the table's outer border
        for i in keep:
            if not any(row[i] for row in self.rows) and TENSOR_COLUMNS[i][0] == "note":
                continue
            if used + widths[i] + 3 <= options.max_width or not chosen:
                chosen.append(i)
                used += widths[i] + 3
        chosen.sort()
        dropped = [TENSOR_COLUMNS[i][0] for i in range(len(TENSOR_COLUMNS))
                   if i not in chosen and any(row[i] for row in self.rows)]
        table = Table(title=self.title, caption=("left out for width: " + ", ".join(dropped)
                                                 + "; --json has every column") if dropped else None,
                      caption_justify="left")
        for i in chosen:
            h, right, _ = TENSOR_COLUMNS[i]
            table.add_column(h, justify="right" if right else "left",
                             overflow="fold", no_wrap=right, min_width=min(widths[i], 10) if i == 0 else None)
        for row in self.rows:
            cells = [Text(row[i], style=STATUS_STYLE.get(row[i], "") if i == 1 else "") for i in chosen]
            table.add_row(*cells)
        yield table


def rich_renderables(r: DiffResult, logits: LogitsDiff | None = None) -> list[Any]:
    from rich.table import Table
    from rich.text import Text
    out: list[Any] = [Text(f"--- {_text(r.path_a)}\n+++ {_text(r.path_b)}", style="bold")]
    srows = summary_rows(r)
    if srows:
        summ = Table(box=None, pad_edge=False, header_style="bold")
        summ.add_column("", style="bold cyan", no_wrap=True)
        summ.add_column("A", overflow="fold")
        summ.add_column("B", overflow="fold")
        for what, a, b in srows:
            summ.add_row(Text(what), Text(a), Text(b, style="yellow" if a != b else ""))
        out.append(summ)
        if r.tensors:
            out.append(Text(counts_line(r)))
        if worst_line(r):
            out.append(Text(worst_line(r), style="yellow"))
    lines = change_lines(r)
    if lines:
        meta = Table(title="metadata and header", show_header=False, box=None)
        meta.add_column(overflow="fold")
        style = {"+": "cyan", "-": "magenta", "~": "yellow", "h": "yellow"}
        for ln in lines:
            meta.add_row(Text(ln, style=style.get(ln[:1], "")))
        out.append(meta)
    rows = _rich_rows(r)
    if rows:
        out.append(_FittingTable(rows, "tensors (B relative to A)"))
    n_same = sum(t.same for t in r.tensors)
    if n_same and not r.identical:
        out.append(Text(f"({n_same} identical tensors not shown)", style="dim"))
    out.append(Text(summary_line(r), style="green" if r.identical else "yellow"))
    if logits is not None:
        table = Table(title=Text(f"next-token distributions ({_text(logits.architecture_a)} vs "
                                 f"{_text(logits.architecture_b)}; position i predicts after tokens 0..i)"))
        for h in LOGITS_HEAD:
            table.add_column(h, justify="right")
        for p, row in zip(logits.positions, logits_rows(logits)):
            table.add_row(*(Text(c) for c in row), style="" if p.agree else "yellow")  # token text is not markup
        out.append(table)
        out += [Text(f"note: {_text(n)}", style="dim") for n in logits.notes]
        out.append(Text(logits_summary(logits), style="green" if logits.same else "yellow"))
    return out
