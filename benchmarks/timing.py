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


def medians_s(cases: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Each case run once to warm up (imports, compiled specs), then ``runs`` interleaved
    rounds: the median seconds per case.  Interleaving puts a change in the machine's load
    on every case alike."""
    for f in cases.values():
        f()
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(max(1, runs)):
        for k, f in cases.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def load_average() -> str:
    """The 1, 5 and 15 minute load averages as /proc/loadavg gives them, or "unknown"."""
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "unknown"
