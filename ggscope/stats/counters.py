"""Zeroed counting tables for the statistics, lent per call and taken back zeroed.

Why: every call of ``tensor_stats`` counts into tables of 65,536 counters per thread
(histogram bin pairs, f16 block-scale codes, one-element codes): 512 KiB to 1 MiB each,
almost all of it never touched.  A fresh ``numpy.zeros`` per call and thread is fresh
pages -- mapped, faulted in when read (the scale summary scans its whole table) and
unmapped again; in a profile of a 160 Ki-element Q5_0 tensor of gemma-3-270m, making
and scanning those tables took twice the time of its decoding passes.  A table given
back is cleared where the call could have counted (the caller says where) and lent
again, its pages already in place.

Contract: ``lend(shape, dtype)`` -> a zeroed C-contiguous array, taken from the tables
given back or new; ``give_back(tables, clear)`` calls ``clear(table)`` on each -- it must
leave every counter zero, knowing where the call counted -- and keeps at most ``KEEP`` of
one shape and dtype (the rest are freed).  A table lent and never given back (an error,
a cancelled call) is simply freed.  Thread-safe; a forked child starts with none.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from ggscope.core.perprocess import PerProcess

__all__ = ["lend", "give_back", "KEEP"]

KEEP = 4                # tables kept per (shape, dtype): two threads, two kinds of route at once

# (shape, dtype) -> the tables given back; fresh in a forked child
_FREE: PerProcess[dict[tuple[tuple[int, ...], str], list[np.ndarray]]] = PerProcess(dict)


def _key(shape: tuple[int, ...], dtype: np.dtype) -> tuple[tuple[int, ...], str]:
    return shape, dtype.str


def lend(shape: int | tuple[int, ...], dtype: object) -> np.ndarray:
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    dt = np.dtype(dtype)
    with _FREE.lock:
        free = _FREE.value.get(_key(shape, dt))
        if free:
            return free.pop()
    return np.zeros(shape, dt)


def give_back(tables: Iterable[np.ndarray], clear: Callable[[np.ndarray], None]) -> None:
    for table in tables:
        clear(table)
        with _FREE.lock:
            free = _FREE.value.setdefault(_key(table.shape, table.dtype), [])
            if len(free) < KEEP:
                free.append(table)
