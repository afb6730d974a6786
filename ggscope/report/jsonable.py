"""One conversion of ggscope values to JSON-compatible Python values.

numpy arrays and StringArrays become lists, bytes become hex strings, and non-finite
floats become the strings "NaN", "Infinity" and "-Infinity" (JSON has no such numbers,
and silently writing ``NaN`` makes output that strict parsers reject).  Text that is not
valid UTF-8 becomes ``{"bytes": "<hex>"}`` and such a key is escaped
(``report.escape``), so the output is always valid UTF-8 JSON.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .escape import json_key, json_text

__all__ = ["jsonable"]


def _float(x: float) -> Any:
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def jsonable(v: Any) -> Any:
    if isinstance(v, str):
        return json_text(v)
    if v is None or isinstance(v, (bool, int)):
        return v
    if isinstance(v, float):
        return _float(v)
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
