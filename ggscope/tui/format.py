"""Short text forms of values for the browser's labels and tables."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["short_value", "human_bytes"]


def short_value(value: Any, width: int = 60) -> str:
    """One line, at most ``width`` characters; arrays show their count and first items."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value[:16])
        text = b.hex(" ") + (" …" if len(value) > 16 else "")
    elif isinstance(value, str):
        text = repr(value)
    elif isinstance(value, np.ndarray) or (isinstance(value, Sequence) and hasattr(value, "__len__")):
        n = len(value)
        head = ", ".join(repr(x) if isinstance(x, str) else _num(x) for x in list(value[:8]))
        text = f"[{n}] {head}" + (", …" if n > 8 else "")
    else:
        text = _num(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def _num(x: Any) -> str:
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    if isinstance(x, np.generic):
        return str(x.item())
    return str(x)


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
