"""One conversion of ggscope values to JSON-compatible Python values.

numpy arrays and StringArrays become lists, bytes become hex strings, and non-finite
floats become the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers,
and silently writing ``NaN`` makes output that strict parsers reject).

Why the bulk paths: a Llama-3 header holds 408,000 strings and 256,000 numbers in
arrays; converting a column at once (``tolist()`` of a numpy array, one decode of a
``StringArray``) costs a few milliseconds where one Python call per element costs ten
times that (issue 18, item 5).
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..spec.scan import StringArray

__all__ = ["jsonable", "json_text"]


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _array(v: np.ndarray) -> list:
    if v.dtype.kind == "f" and not np.isfinite(v).all():
        return [_float(x) for x in v.tolist()]
    return v.tolist()


def jsonable(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, StringArray):
        items = v.tolist()
        return items if v.encoding is not None else [bytes(x).hex() for x in items]
    if isinstance(v, np.ndarray):
        return _array(v)
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, Mapping):
        return {str(k): jsonable(x) for k, x in v.items()}
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
    joined = v.joined()
    if (np.count_nonzero(joined < 0x20) != len(v) or np.count_nonzero(joined == 0x22)
            or np.count_nonzero(joined == 0x5C)):
        return None
    try:
        return '["' + joined[1:].tobytes().replace(b"\0", b'", "').decode("utf-8") + '"]'
    except UnicodeDecodeError:
        return None


def json_text(v: Any) -> str:
    """``json.dumps(jsonable(v), ensure_ascii=False, allow_nan=False)``, character for
    character; string arrays that need no escaping are written from their bytes without
    a Python string per element."""
    if isinstance(v, StringArray):
        text = _string_array_text(v)
        if text is not None:
            return text
    return json.dumps(jsonable(v), ensure_ascii=False, allow_nan=False)
