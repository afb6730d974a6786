"""``ggscope diff``: three renderings of one ``DiffResult``.

``as_json`` is for scripts (one object: "identical", "header", "metadata" {"added",
"removed", "changed"}, "tensors" [{"name", "status", "max_abs", "rmse", "rel_rmse",
"cosine", "snr_db", ...}]); ``plain`` is for pipes (tab-free aligned text, no colour);
``rich_renderables`` for a terminal.  Identical tensors are counted, not listed, in the
text renderings; JSON lists every tensor.  Added/removed arrays show their length and
first items, never a whole vocabulary.  Each takes an optional ``LogitsDiff``
(``ggscope diff --logits``): JSON gains a "logits" object, the text renderings a
per-position table and a summary line.
"""
from __future__ import annotations

import math
from typing import Any

from .. import __version__
from ..diff import DiffResult, MetaChange, MetaEntry, TensorDiff
from ..forward.logits import LogitsDiff
from ..tokenizer import escape_text
from .info import summarize_value
from .jsonable import jsonable

__all__ = ["as_json", "plain", "rich_renderables", "summary_line", "logits_json", "logits_summary",
           "METRICS", "STATUS_STYLE", "number", "shape_text"]

PREVIEW = 8
METRICS = ("max_abs", "rmse", "rel_rmse", "cosine", "snr_db")


def _entry_json(e: MetaEntry) -> dict[str, Any]:
    v = e.value
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        return {"key": e.key, "type": e.type, "value": jsonable(v)}
    return {"key": e.key, "type": e.type, "n_items": len(v),
            "first": jsonable([v[i] for i in range(min(len(v), PREVIEW))])}


def _change_json(c: MetaChange) -> dict[str, Any]:
    out: dict[str, Any] = {"key": c.key, "type_a": c.type_a, "type_b": c.type_b}
    if c.is_array:
        out.update(len_a=c.len_a, len_b=c.len_b, n_differing=c.n_differing,
                   first=[{"index": d.index, "a": jsonable(d.a), "b": jsonable(d.b)} for d in c.first])
    else:
        out.update(a=jsonable(c.a), b=jsonable(c.b))
    return out


def _tensor_json(t: TensorDiff) -> dict[str, Any]:
    return {"name": t.name, "status": t.status, "changes": list(t.changes),
            "shape_a": list(t.shape_a) if t.shape_a is not None else None,
            "shape_b": list(t.shape_b) if t.shape_b is not None else None,
            "type_a": t.type_a, "type_b": t.type_b, "offset_a": t.offset_a, "offset_b": t.offset_b,
            "n_elements": t.n_elements,
            **{m: jsonable(getattr(t, m)) for m in METRICS},
            "n_nonfinite": t.n_nonfinite, "error": t.error}


def logits_json(d: LogitsDiff) -> dict[str, Any]:
    return {"architecture_a": d.architecture_a, "architecture_b": d.architecture_b,
            "n_vocab": d.n_vocab, "tokens": list(d.tokens), "notes": list(d.notes),
            "kl_mean": d.kl_mean, "kl_max": d.kl_max, "top1_agreement": d.top1_agreement,
            "max_abs_logit": d.max_abs_logit, "n_nonfinite": d.n_nonfinite,
            "positions": [{"index": p.index, "token": p.token, "kl": p.kl, "top1_a": p.top1_a,
                           "top1_b": p.top1_b, "max_abs_logit": p.max_abs_logit,
                           **({"token_text": _text(d, p.token), "top1_a_text": _text(d, p.top1_a),
                               "top1_b_text": _text(d, p.top1_b)} if d.pieces else {})}
                          for p in d.positions]}


def _text(d: LogitsDiff, tid: int) -> str:
    return d.pieces.get(tid, b"").decode("utf-8", "replace")


def _label(d: LogitsDiff, tid: int) -> str:
    """``id "text"`` with the text escaped for a terminal, or the id alone."""
    if tid not in d.pieces:
        return str(tid)
    return f'{tid} "{escape_text(d.pieces[tid])}"'


def as_json(r: DiffResult, logits: LogitsDiff | None = None) -> dict[str, Any]:
    out = _result_json(r)
    if logits is not None:
        out["logits"] = logits_json(logits)
    return out


def _result_json(r: DiffResult) -> dict[str, Any]:
    return {"version": __version__, "a": r.path_a, "b": r.path_b, "identical": r.identical,
            "header": [{"field": h.field, "a": jsonable(h.a), "b": jsonable(h.b)} for h in r.header],
            "metadata": {"added": [_entry_json(e) for e in r.metadata.added],
                         "removed": [_entry_json(e) for e in r.metadata.removed],
                         "changed": [_change_json(c) for c in r.metadata.changed]},
            "metadata_only": r.metadata_only,
            "counts": r.counts(),
            "tensors": [_tensor_json(t) for t in r.tensors]}


# ------------------------------------------------------------------------ text

def number(x: float | None, kind: str) -> str:
    if x is None:
        return "-"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if kind == "cosine":
        return f"{x:.6f}"
    if kind == "snr_db":
        return f"{x:.1f}"
    return f"{x:.3e}"


def shape_text(s: tuple[int, ...] | None) -> str:
    return "-" if s is None else "×".join(map(str, s))


def _what(t: TensorDiff) -> str:
    """Shape/type/offset of a tensor, with ``a → b`` where they changed."""
    parts = []
    for label, a, b in (("", shape_text(t.shape_a), shape_text(t.shape_b)), ("", t.type_a, t.type_b)):
        if t.status == "added":
            parts.append(str(b))
        elif t.status == "removed" or a == b:
            parts.append(str(a))
        else:
            parts.append(f"{a} → {b}")
    if "offset" in t.changes:
        parts.append(f"@{t.offset_a:#x} → {t.offset_b:#x}")
    return " ".join(parts)


def change_lines(r: DiffResult) -> list[str]:
    lines = [f"header {h.field}: {h.a} → {h.b}" for h in r.header]
    lines += [f"+ {e.key} ({e.type}) = {summarize_value(e.value)}" for e in r.metadata.added]
    lines += [f"- {e.key} ({e.type}) = {summarize_value(e.value)}" for e in r.metadata.removed]
    for c in r.metadata.changed:
        types = c.type_a if not c.type_changed else f"{c.type_a} → {c.type_b}"
        if c.is_array:
            lens = f"{c.len_a}" if c.len_a == c.len_b else f"{c.len_a} → {c.len_b} items"
            first = ", ".join(f"[{d.index}] {summarize_value(d.a, 24)} → {summarize_value(d.b, 24)}"
                              for d in c.first)
            lines.append(f"~ {c.key} ({types}): {lens} items, {c.n_differing} differ"
                         + (f": {first}" if first else ""))
        else:
            lines.append(f"~ {c.key} ({types}): {summarize_value(c.a)} → {summarize_value(c.b)}")
    return lines


def summary_line(r: DiffResult) -> str:
    if r.identical:
        return "files are identical" if not r.metadata_only else "metadata is identical"
    m = r.metadata
    parts = [f"metadata: {len(m.added)} added, {len(m.removed)} removed, {len(m.changed)} changed"]
    if not r.metadata_only:
        c = r.counts()
        parts.append("tensors: " + ", ".join(f"{n} {s}" for s, n in c.items() if n))
    return "; ".join(parts)


def _rows(r: DiffResult) -> list[list[str]]:
    return [[t.name, t.status, _what(t), *(number(getattr(t, m), m) for m in METRICS),
             t.error or ""] for t in r.tensors if not t.same]


HEAD = ["tensor", "status", "shape / type", "max|Δ|", "rmse", "rel rmse", "cosine", "snr dB", "note"]
LOGITS_HEAD = ["pos", "token", "KL(A‖B) nats", "top-1 A", "top-1 B", "max|Δlogit|"]


def logits_summary(d: LogitsDiff) -> str:
    kl = "-" if d.kl_mean is None else f"mean {d.kl_mean:.3e}, max {d.kl_max:.3e}"
    text = (f"logits over {len(d.tokens)} positions: KL(A‖B) {kl} nats; "
            f"top-1 agreement {d.top1_agreement:.1%}")
    if d.n_nonfinite:
        text += f"; {d.n_nonfinite} positions with NaN/Inf logits"
    return text


def _logits_rows(d: LogitsDiff) -> list[list[str]]:
    return [[str(p.index), _label(d, p.token), number(p.kl, "kl"), _label(d, p.top1_a),
             _label(d, p.top1_b) + ("" if p.agree else " ≠"), number(p.max_abs_logit, "max_abs")]
            for p in d.positions]


def _logits_plain(d: LogitsDiff) -> list[str]:
    out = [f"logits: {d.architecture_a} vs {d.architecture_b}, {d.n_vocab} tokens in the vocabulary"]
    out += [f"note: {n}" for n in d.notes]
    rows = _logits_rows(d)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(LOGITS_HEAD)]
    out.append("  ".join(h.rjust(w) for h, w in zip(LOGITS_HEAD, widths)))
    out += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    out.append(logits_summary(d))
    return out


def plain(r: DiffResult, logits: LogitsDiff | None = None) -> str:
    out = [f"--- {r.path_a}", f"+++ {r.path_b}"]
    out += change_lines(r)
    rows = _rows(r)
    if rows:
        widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(HEAD)]
        out.append("  ".join(h.ljust(w) for h, w in zip(HEAD, widths)).rstrip())
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    n_same = sum(t.same for t in r.tensors)
    if n_same and not r.identical:
        out.append(f"({n_same} identical tensors not shown)")
    out.append(summary_line(r))
    if logits is not None:
        out += _logits_plain(logits)
    return "\n".join(out)


STATUS_STYLE = {"identical": "green", "equal": "green", "changed": "yellow", "shape-changed": "red",
          "added": "cyan", "removed": "magenta", "error": "bold red"}


def rich_renderables(r: DiffResult, logits: LogitsDiff | None = None) -> list[Any]:
    from rich.table import Table
    from rich.text import Text
    out: list[Any] = [Text(f"--- {r.path_a}\n+++ {r.path_b}", style="bold")]
    lines = change_lines(r)
    if lines:
        meta = Table(title="metadata and header", show_header=False, box=None)
        meta.add_column()
        style = {"+": "cyan", "-": "magenta", "~": "yellow", "h": "yellow"}
        for ln in lines:
            meta.add_row(Text(ln, style=style.get(ln[:1], "")))
        out.append(meta)
    rows = _rows(r)
    if rows:
        table = Table(title="tensors (b relative to a)")
        for h in HEAD:
            table.add_column(h, justify="right" if h in ("max|Δ|", "rmse", "rel rmse", "cosine", "snr dB")
                             else "left", overflow="fold")
        for row in rows:
            table.add_row(row[0], Text(row[1], style=STATUS_STYLE.get(row[1], "")), *row[2:])
        out.append(table)
    n_same = sum(t.same for t in r.tensors)
    if n_same and not r.identical:
        out.append(Text(f"({n_same} identical tensors not shown)", style="dim"))
    out.append(Text(summary_line(r), style="green" if r.identical else "yellow"))
    if logits is not None:
        table = Table(title=f"next-token distributions ({logits.architecture_a} vs "
                            f"{logits.architecture_b}; position i predicts after tokens 0..i)")
        for h in LOGITS_HEAD:
            table.add_column(h, justify="right")
        for p, row in zip(logits.positions, _logits_rows(logits)):
            table.add_row(*(Text(c) for c in row), style="" if p.agree else "yellow")  # token text is not markup
        out.append(table)
        out += [Text(f"note: {n}", style="dim") for n in logits.notes]
        out.append(Text(logits_summary(logits), style="green" if logits.same else "yellow"))
    return out
