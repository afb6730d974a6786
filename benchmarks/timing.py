"""The one timing helper the in-process benchmarks share.

Why: each benchmark times a callable a few times and reports the median - a number
that one slow round on a shared, noisy machine does not move.  Benchmarks that time
whole processes keep their own ``wall`` (each prepares a different environment).
"""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_s(fn: Callable[[], object], runs: int) -> float:
    """The median wall-clock seconds of ``runs`` calls of ``fn``."""
    times = []
    for _ in range(max(1, runs)):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def median_ms(fn: Callable[[], object], runs: int) -> float:
    """The same in milliseconds."""
    return median_s(fn, runs) * 1e3
