"""One conversion of ggscope values to JSON-compatible Python values, and their JSON text.

numpy arrays and StringArrays become lists, bytes become hex strings, and non-finite
floats become the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers,
and silently writing ``NaN`` makes output that strict parsers reject).  Text that is not
valid UTF-8 becomes ``{"bytes": "<hex>"}`` and such a key is escaped
(``core.escape.json_text``/``json_key``), so the output is always valid UTF-8 JSON.
``dumps`` is how every command writes JSON: ``json.dumps`` of ``jsonable`` through
``core.escape.json_safe``, so controls, C1, bidi and zero-width characters inside
strings are ``\\u`` escapes (lossless; ``cat`` of the output cannot drive a terminal);
``value_json`` writes one value the same way.

Why the bulk paths: a Llama-3 header holds 408,000 strings and 256,000 numbers in
arrays; converting a column at once (``tolist()`` of a numpy array, one decode and one
UTF-8 check of a ``StringArray``) costs a few milliseconds where one Python call per
element costs ten times that, and ``value_json`` writes a string array that needs no
escaping straight from its bytes, and an array of integers (or of floats that are all
whole numbers below 1e16: token scores) as digits computed column by column in numpy,
without a Python int or float per element (issue 18, item 5).  ``write_value_json``
writes a string array a part at a time, so 16 M strings never hold their whole text and
its encoded copy at once (issue 23, item 6).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ggscope.ksy.scan import StringArray
from ggscope.core.escape import json_key, json_safe, json_text

try:
    from ggscope.report import _cjson            # compiled at install (setup.py); else the numpy route below
except ImportError:
    _cjson = None

__all__ = ["jsonable", "value_json", "write_value_json", "dumps"]

_PART = 1 << 18          # strings per piece of a string array's JSON text


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _strings(v: StringArray) -> list:
    items = v.tolist()
    if v.encoding is None:
        return [bytes(x).hex() for x in items]
    if not v.invalid_utf8():               # one strict decode of all the bytes
        return items
    return [json_text(x) for x in items]


def jsonable(v: Any) -> Any:
    if isinstance(v, str):
        return json_text(v)
    if v is None or isinstance(v, (bool, int)):
        return v
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, StringArray):
        return _strings(v)
    if isinstance(v, np.ndarray):
        if v.dtype.kind == "f":
            return [_float(float(x)) for x in v.tolist()] if not np.isfinite(v).all() else v.tolist()
        return v.tolist()
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, Mapping):
        return {json_key(str(k)): jsonable(x) for k, x in v.items()}
    if hasattr(v, "tolist"):
        return [jsonable(x) for x in v.tolist()]
    if isinstance(v, Sequence):
        return [jsonable(x) for x in v]
    return str(v)


def _string_array_text(v: StringArray) -> str | None:
    """The JSON text of a string array straight from its bytes, or None when a string
    needs escaping (a quote, a backslash, a control character) or is not UTF-8."""
    if v.encoding is None or v.encoding.lower().replace("-", "") != "utf8":
        return None
    if len(v) == 0:
        return "[]"
    if _cjson is not None and v._arr.flags.c_contiguous:
        rel = v.rel if v.rel is not None else b""                     # one copy, checked as it goes
        text = _cjson.join_json(v._arr, v.first, np.ascontiguousarray(v.lens), v.lens.itemsize,
                                rel, v.rel.itemsize if v.rel is not None else 0, v.width, v.tail)
        if text is None:
            return None
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError:
            return None
    body = v.joined_with(b'", "')
    if body is not None:
        if (np.count_nonzero(body < 0x20) or np.count_nonzero(body == 0x22) != 2 * len(v)
                or np.count_nonzero(body == 0x5C)):
            return None
        try:
            return "[" + body[3:].tobytes().decode("utf-8") + '"]'
        except UnicodeDecodeError:
            return None
    joined = v.joined()
    if (np.count_nonzero(joined < 0x20) != len(v) or np.count_nonzero(joined == 0x22)
            or np.count_nonzero(joined == 0x5C)):
        return None
    try:
        return '["' + joined[1:].tobytes().replace(b"\0", b'", "').decode("utf-8") + '"]'
    except UnicodeDecodeError:
        return None


def _digits_text(neg: np.ndarray, mag: np.ndarray, suffix: bytes) -> str:
    """``[x, y, ...]`` with each item its sign, the decimal digits of ``mag`` (uint64) and
    ``suffix``: what ``repr`` writes for an int (suffix ``b""``) or for a whole float
    below 1e16 (suffix ``b".0"``; ``repr`` uses no exponent there)."""
    n = len(mag)
    top = int(mag.max())
    width = len(str(top))
    if top < 2 ** 32:
        mag = mag.astype(np.uint32)            # division is twice as fast
    ten = mag.dtype.type(10)
    cols = 1 + width + len(suffix) + 2
    buf = np.empty((cols, n), dtype=np.uint8)  # one row per column of text: contiguous writes
    buf[0] = ord("-")
    buf[width + 1:] = np.frombuffer(suffix + b", ", dtype=np.uint8)[:, None]
    keep = np.empty((cols, n), dtype=bool)
    keep[0] = neg
    keep[width:] = True                        # the last digit (also of zero), suffix, separator
    d = mag
    for j in range(width, 0, -1):
        d, r = np.divmod(d, ten)
        np.add(r, ord("0"), out=buf[j], casting="unsafe")
        if j > 1:
            np.not_equal(d, 0, out=keep[j - 1])   # a leading digit while anything is left
    keep[-2:, -1] = False                      # no separator after the last item
    return "[" + buf.T[keep.T].tobytes().decode("ascii") + "]"


def _number_array_text(v: np.ndarray) -> str | None:
    """The JSON text of an integer array, or of a float array of whole numbers below
    1e16, character for character as ``json.dumps`` writes it; None otherwise."""
    if v.ndim != 1 or len(v) == 0:
        return None
    if v.dtype.kind == "u":
        return _digits_text(np.zeros(len(v), dtype=bool), v.astype(np.uint64), b"")
    if v.dtype.kind == "i":
        w = v.astype(np.int64)
        neg = w < 0
        mag = w.view(np.uint64).copy()
        np.negative(mag, out=mag, where=neg)   # two's complement: exact even for int64's minimum
        return _digits_text(neg, mag, b"")
    if v.dtype.kind == "f" and v.dtype.itemsize <= 8:
        v = v.astype(np.float64, copy=False)    # exact; what tolist() gives json.dumps
        with np.errstate(invalid="ignore"):
            whole = np.abs(v) < 1e16
            whole &= np.trunc(v) == v
        if not whole.all():                     # NaN and infinities fail too
            return None
        return _digits_text(np.signbit(v), np.abs(v).astype(np.uint64), b".0")
    return None


def dumps(v: Any, indent: int | None = None, *, converted: bool = False) -> str:
    """The JSON text of ``v`` as every command writes it: ``json.dumps(jsonable(v),
    ensure_ascii=False, allow_nan=False)`` through ``json_safe``; ``converted`` says
    ``v`` is ``jsonable``'s output already."""
    doc = v if converted else jsonable(v)
    return json_safe(json.dumps(doc, ensure_ascii=False, allow_nan=False, indent=indent))


def value_json(v: Any) -> str:
    """``dumps(v)``, character for character; string arrays that need no escaping are
    written from their bytes without a Python string per element."""
    if isinstance(v, StringArray):
        return "".join(_string_array_pieces(v))
    if isinstance(v, np.ndarray):
        text = _number_array_text(v)
        if text is not None:
            return text
    return dumps(v)


def write_value_json(v: Any, out) -> None:
    """``out.write(value_json(v))`` in pieces: a string array's text is made and written
    ``_PART`` strings at a time, so 16 M strings never hold their whole text (and its
    encoded copy) at once - memory stays near the file's size (issue 23, item 6)."""
    if isinstance(v, StringArray):
        for piece in _string_array_pieces(v):
            out.write(piece)
    else:
        out.write(value_json(v))


def _string_array_pieces(v: StringArray):
    """The pieces of ``dumps(v)``: each part of ``_PART`` strings written from its bytes
    when it needs no escaping, else by ``dumps``; JSON's list text is the parts' items
    joined by ", ", so the pieces join to exactly the text of the whole array."""
    n = len(v)
    if n == 0:
        yield "[]"
        return
    for lo in range(0, n, _PART):
        part = v.part(lo, lo + _PART) if n > _PART else v
        text = _string_array_text(part)
        text = json_safe(text) if text is not None else dumps(part)
        yield ("[" if lo == 0 else ", ") + text[1:-1] + ("]" if lo + _PART >= n else "")
