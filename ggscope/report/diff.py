"""``ggscope diff``: three renderings of one ``DiffResult``.

``as_json`` is for scripts (one object: "identical", "header", "metadata" {"added",
"removed", "changed"}, "tensors" [{"name", "status", "max_abs", "rmse", "rel_rmse",
"cosine", "snr_db", ...}]); ``plain`` is for pipes (tab-free aligned text, no colour);
``report.diff_rich.rich_renderables`` for a terminal.  Identical tensors are counted, not listed, in the
text renderings; JSON lists every tensor.  Added/removed arrays show their length and
first items, never a whole vocabulary.  Each takes an optional ``LogitsDiff``
(``ggscope diff --logits``): JSON gains a "logits" object, the text renderings a
per-position table and a summary line.

The text renderings open with what each file is (format, file type, size, bits per
weight: ``ggscope.model.summary``), the tensor counts and the worst error; a tensor whose
only change is its offset is *moved*; ``general.file_type`` values carry llama.cpp's
names (Q8_0 (7) → Q4_K_S (14)); a legacy header word compared under its GGUF key
shows both names.  On a terminal the tensor table keeps to the console's width by
dropping the least important columns first (``diff_rich.TENSOR_COLUMNS``).  Every
string from a file is escaped once by ``core.escape`` (``escape_text``; a token's text
by ``escape_label``); JSON carries file text losslessly (``json_text``:
text that is not UTF-8 as ``{"bytes": hex}``) and is written by ``jsonable.dumps``.
"""
from __future__ import annotations

import math
from typing import Any

from ggscope import __version__
from ggscope.diff.compare import DiffResult, MetaChange, MetaEntry, TensorDiff
from ggscope.forward.logits import LogitsDiff
from ggscope.core.escape import escape_label, json_text
from ggscope.core.escape import escape_text as _text
from ggscope.report.info import summarize_value, summary_json
from ggscope.report.jsonable import jsonable
from ggscope.model.summary import file_type_name
from ggscope.report.info import human_bytes
from ggscope.model.summary import human_count

__all__ = ["as_json", "plain", "summary_line", "logits_json", "logits_summary",
           "METRICS", "STATUS_STYLE", "number", "shape_text", "display_status", "summary_rows", "worst_line",
           "value_text", "counts_line", "change_lines", "logits_rows", "LOGITS_HEAD"]

STATUS_STYLE = {"identical": "green", "equal": "green", "moved": "green", "changed": "yellow",
                "shape-changed": "red", "added": "cyan", "removed": "magenta", "error": "bold red"}



def display_status(t: TensorDiff) -> str:
    """The status as shown: "moved" for a tensor whose only change is its offset."""
    if t.status == "identical" and t.changes == ("offset",):
        return "moved"
    return t.status

PREVIEW = 8
METRICS = ("max_abs", "rmse", "rel_rmse", "cosine", "snr_db")


def _entry_json(e: MetaEntry) -> dict[str, Any]:
    v = e.value
    if isinstance(v, (str, bytes)) or not hasattr(v, "__len__"):
        return {"key": json_text(e.key), "type": e.type, "value": jsonable(v)}
    return {"key": json_text(e.key), "type": e.type, "n_items": len(v),
            "first": jsonable([v[i] for i in range(min(len(v), PREVIEW))])}


def _change_json(c: MetaChange) -> dict[str, Any]:
    out: dict[str, Any] = {"key": json_text(c.key), "type_a": c.type_a, "type_b": c.type_b}
    if c.is_array:
        out.update(len_a=c.len_a, len_b=c.len_b, n_differing=c.n_differing,
                   first=[{"index": d.index, "a": jsonable(d.a), "b": jsonable(d.b)} for d in c.first])
    else:
        out.update(a=jsonable(c.a), b=jsonable(c.b))
    return out


def _tensor_json(t: TensorDiff) -> dict[str, Any]:
    return {"name": json_text(t.name), "status": t.status, "shown_as": display_status(t), "changes": list(t.changes),
            "shape_a": list(t.shape_a) if t.shape_a is not None else None,
            "shape_b": list(t.shape_b) if t.shape_b is not None else None,
            "type_a": t.type_a, "type_b": t.type_b, "offset_a": t.offset_a, "offset_b": t.offset_b,
            "n_elements": t.n_elements,
            **{m: jsonable(getattr(t, m)) for m in METRICS},
            "n_nonfinite": t.n_nonfinite, "error": jsonable(t.error)}


def logits_json(d: LogitsDiff) -> dict[str, Any]:
    return {"architecture_a": json_text(d.architecture_a), "architecture_b": json_text(d.architecture_b),
            "n_vocab": d.n_vocab, "tokens": list(d.tokens), "notes": [json_text(n) for n in d.notes],
            "kl_mean": d.kl_mean, "kl_max": d.kl_max, "top1_agreement": d.top1_agreement,
            "max_abs_logit": d.max_abs_logit, "n_nonfinite": d.n_nonfinite,
            "positions": [{"index": p.index, "token": p.token, "kl": p.kl, "top1_a": p.top1_a,
                           "top1_b": p.top1_b, "max_abs_logit": p.max_abs_logit,
                           **({"token_text": _piece_text(d, p.token), "top1_a_text": _piece_text(d, p.top1_a),
                               "top1_b_text": _piece_text(d, p.top1_b)} if d.pieces else {})}
                          for p in d.positions]}


def _piece_text(d: LogitsDiff, tid: int) -> Any:
    """A token's exact text: a string, or ``{"bytes": hex}`` when it is not UTF-8."""
    return json_text(d.pieces.get(tid, b"").decode("utf-8", "surrogateescape"))


def _label(d: LogitsDiff, tid: int) -> str:
    """``id "text"`` with the text escaped for a terminal, or the id alone."""
    if tid not in d.pieces:
        return str(tid)
    return f'{tid} "{escape_label(d.pieces[tid])}"'


def as_json(r: DiffResult, logits: LogitsDiff | None = None) -> dict[str, Any]:
    out = _result_json(r)
    if logits is not None:
        out["logits"] = logits_json(logits)
    return out


def _result_json(r: DiffResult) -> dict[str, Any]:
    return {"version": __version__, "a": json_text(r.path_a), "b": json_text(r.path_b), "identical": r.identical,
            "summary": {"a": summary_json(r.summary_a), "b": summary_json(r.summary_b)},
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
    if "offset" in t.changes and t.offset_a is not None and t.offset_b is not None:
        parts.append(f"@{t.offset_a} → {t.offset_b}")            # offsets decimal, as everywhere (info --hex)
    return " ".join(parts)


def value_text(key: str, v: Any, limit: int = 120) -> str:
    """A metadata value as shown: file types by name, file text escaped."""
    if key == "general.file_type" and isinstance(v, int) and not isinstance(v, bool):
        return f"{file_type_name(v)} ({v})"
    return summarize_value(v, limit)          # escaped there, once


def _key(key: str, *own: str) -> str:
    names = [n for n in own if n and n != key]
    return _text(key) + (f" ({' / '.join(dict.fromkeys(names))})" if names else "")


def change_lines(r: DiffResult) -> list[str]:
    lines = [f"header {h.field}: {_header_value(h.a)} → {_header_value(h.b)}" for h in r.header]
    lines += [f"+ {_key(e.key, e.source_key)} ({e.type}) = {value_text(e.key, e.value)}" for e in r.metadata.added]
    lines += [f"- {_key(e.key, e.source_key)} ({e.type}) = {value_text(e.key, e.value)}" for e in r.metadata.removed]
    for c in r.metadata.changed:
        types = c.type_a if not c.type_changed else f"{c.type_a} → {c.type_b}"
        key = _key(c.key, c.key_a, c.key_b)
        if c.is_array:
            lens = f"{c.len_a}" if c.len_a == c.len_b else f"{c.len_a} → {c.len_b}"
            first = ", ".join(f"[{d.index}] {value_text(c.key, d.a, 24)} → {value_text(c.key, d.b, 24)}"
                              for d in c.first)
            lines.append(f"~ {key} ({types}): {lens} items, {c.n_differing} differ"
                         + (f": {first}" if first else ""))
        else:
            lines.append(f"~ {key} ({types}): {value_text(c.key, c.a)} → {value_text(c.key, c.b)}")
    return lines


def _header_value(v: Any) -> str:
    return "not set" if v is None else _text(v)


def _bpw(sm: Any) -> str:
    return "-" if sm is None or sm.bpw is None else f"{sm.bpw:.2f}"


def summary_rows(r: DiffResult) -> list[tuple[str, str, str]]:
    """(what, A, B) for the summary that opens the report; empty without summaries."""
    a, b = r.summary_a, r.summary_b
    if a is None or b is None:
        return []

    def size(sm: Any) -> str:
        return f"{human_bytes(sm.file_size)}"
    return [("format", f"{a.format} v{a.version}", f"{b.format} v{b.version}"),
            ("architecture", _text(a.architecture or "-"), _text(b.architecture or "-")),
            ("file type", a.file_type or "-", b.file_type or "-"),
            ("parameters", human_count(a.n_params), human_count(b.n_params)),
            ("size", size(a), size(b)),
            ("bits/weight", _bpw(a), _bpw(b))]


def _compared(r: DiffResult) -> list[TensorDiff]:
    return [t for t in r.tensors if t.rel_rmse is not None and not math.isnan(t.rel_rmse)]


def worst_line(r: DiffResult) -> str:
    """The tensor with the largest relative error, or "" when none was compared."""
    compared = [t for t in _compared(r) if t.rel_rmse > 0]
    if not compared:
        return ""
    t = max(compared, key=lambda t: t.rel_rmse)
    return (f"worst: {_text(t.name)}: rel RMSE {number(t.rel_rmse, 'rel_rmse')}, "
            f"cosine {number(t.cosine, 'cosine')}")


def counts_line(r: DiffResult) -> str:
    counts: dict[str, int] = {}
    for t in r.tensors:
        s = display_status(t)
        counts[s] = counts.get(s, 0) + 1
    order = ("changed", "shape-changed", "added", "removed", "moved", "equal", "identical", "error")
    return "tensors: " + ", ".join(f"{counts[s]} {s}" for s in order if counts.get(s))


def summary_line(r: DiffResult) -> str:
    if r.identical:
        return "files are identical" if not r.metadata_only else "metadata is identical"
    m = r.metadata
    parts = [f"metadata: {len(m.added)} added, {len(m.removed)} removed, {len(m.changed)} changed"]
    if not r.metadata_only and r.tensors:
        parts.append(counts_line(r))
    return "; ".join(parts)


def _rows(r: DiffResult) -> list[list[str]]:
    return [[_text(t.name), display_status(t), _what(t), *(number(getattr(t, m), m) for m in METRICS),
             _text(t.error or "")] for t in r.tensors if not t.same]


HEAD = ["tensor", "status", "shape / type", "max|Δ|", "rmse", "rel rmse", "cosine", "snr dB", "note"]
LOGITS_HEAD = ["pos", "token", "KL(A‖B) nats", "top-1 A", "top-1 B", "max|Δlogit|"]


def logits_summary(d: LogitsDiff) -> str:
    kl = "-" if d.kl_mean is None else f"mean {d.kl_mean:.3e}, max {d.kl_max:.3e}"
    text = (f"logits over {len(d.tokens)} positions: KL(A‖B) {kl} nats; "
            f"top-1 agreement {d.top1_agreement:.1%}")
    if d.n_nonfinite:
        text += f"; {d.n_nonfinite} positions with NaN/Inf logits"
    return text


def logits_rows(d: LogitsDiff) -> list[list[str]]:
    return [[str(p.index), _label(d, p.token), number(p.kl, "kl"), _label(d, p.top1_a),
             _label(d, p.top1_b) + ("" if p.agree else " ≠"), number(p.max_abs_logit, "max_abs")]
            for p in d.positions]


def _logits_plain(d: LogitsDiff) -> list[str]:
    out = [f"logits: {_text(d.architecture_a)} vs {_text(d.architecture_b)}, {d.n_vocab} tokens in the vocabulary"]
    out += [f"note: {_text(n)}" for n in d.notes]
    rows = logits_rows(d)
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(LOGITS_HEAD)]
    out.append("  ".join(h.rjust(w) for h, w in zip(LOGITS_HEAD, widths)))
    out += ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in rows]
    out.append(logits_summary(d))
    return out


def _summary_plain(r: DiffResult) -> list[str]:
    rows = summary_rows(r)
    if not rows:
        return []
    w0 = max(len(x) for x, _, _ in rows)
    w1 = max(len("A"), *(len(a) for _, a, _ in rows))
    out = [f"{'':<{w0}}  {'A':<{w1}}  B"]
    out += [f"{x:<{w0}}  {a:<{w1}}  {b}" + ("" if a == b else "  *") for x, a, b in rows]
    if r.tensors:
        out.append(counts_line(r))
    if worst_line(r):
        out.append(worst_line(r))
    return out


def plain(r: DiffResult, logits: LogitsDiff | None = None) -> str:
    out = [f"--- {_text(r.path_a)}", f"+++ {_text(r.path_b)}"]
    out += _summary_plain(r)
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
