"""Fast scanning of arrays of length-prefixed strings into a compact ``StringArray``.

A Llama-3 header holds 408,000 length-prefixed strings (tokens and merges).  Walking
them one at a time in Python costs ~30 ms; this scanner does it with numpy in a few ms
and creates no per-string object.

How: in a window of the file, every byte position ``c`` whose would-be length prefix
holds a value in ``[1, 255]`` is a *candidate* (low byte non-zero, the other ``W-1``
bytes zero; mirrored for big-endian).  Every true prefix with such a length is a
candidate, so the chain ``c -> c + W + len(c)`` walked from the first element visits
only candidates; where consecutive candidates chain into each other the whole run is
verified at once.  A string of length 0 or >= 256, or a spurious candidate inside
string bytes, breaks the run: the scanner then takes one exact step and resumes.  The
result is exactly what a one-by-one walk gives; correctness never rests on a guess.

With the compiled walker (``ksy._cscan``, built at install like the other extensions)
the scan is one exact C loop that counts and measures, then one that writes each length
into the narrowest dtype: n bytes for n short strings, no int64 array of the array's
size, and no numba.  What follows is the route when that extension is missing.

Arrays the candidate trick cannot speed up - empty strings (a zero prefix is no
candidate), strings of 256 bytes or more, or any mix that breaks runs often - would
fall back to one Python step per element (~4 us: 65 s for 16 M empty strings).  After
``_EXACT_STEPS_BEFORE_WALK`` exact steps in one array the rest is walked by a compiled
loop (numba, a dependency already; compiled once and cached on disk), which does the
same exact walk at a few ns per element.  Typical arrays never import numba here.
"""
from __future__ import annotations

import numpy as np

from ggscope.ksy.strings import StringArray, narrow_unsigned

try:
    from ggscope.ksy import _cscan            # compiled at install (setup.py); else numpy below
except ImportError:
    _cscan = None

__all__ = ["scan_length_prefixed", "StringArray", "ScanStop"]

_WINDOW = 1 << 20
_EXACT_STEPS_BEFORE_WALK = 4096
_walker = None


def _compiled_walker():
    """The exact element-by-element walk, compiled (built on first use)."""
    global _walker
    if _walker is None:
        from ggscope.core.jit import njit  # numba with its cache in the user cache directory

        @njit(cache=True, nogil=True)
        def walk(arr, starts, lens, i, n, p, width, le, limit, tail):  # pragma: no cover - compiled
            while i < n:
                rem = limit - p - width - tail
                if rem < 0:
                    return i, p
                length = np.uint64(0)
                if le:
                    for k in range(width - 1, -1, -1):
                        length = (length << np.uint64(8)) | np.uint64(arr[p + k])
                else:
                    for k in range(width):
                        length = (length << np.uint64(8)) | np.uint64(arr[p + k])
                if length > np.uint64(rem):
                    return i, p
                starts[i] = p
                lens[i] = np.int64(length)
                i += 1
                p = p + width + np.int64(length) + tail
            return i, p
        _walker = walk
    return _walker


def _walk_rest(arr, starts, lens, i, n, p, width, le, limit, tail):
    """Walk elements ``i..n-1`` exactly with the compiled loop (filling their starts and
    lengths); ScanStop where one does not fit."""
    i, p = _compiled_walker()(arr, starts, lens, np.int64(i), np.int64(n), np.int64(p), np.int64(width),
                              bool(le), np.int64(limit), np.int64(tail))
    i, p = int(i), int(p)
    if i < n:
        raise ScanStop(i, p)
    return i, p


class ScanStop(Exception):
    """Element ``index`` (prefix at absolute ``offset``) does not fit in the stream."""

    def __init__(self, index: int, offset: int) -> None:
        super().__init__(index, offset)
        self.index = index
        self.offset = offset


def _read_len(arr: np.ndarray, p: int, width: int, le: bool) -> int:
    return int.from_bytes(arr[p:p + width].tobytes(), "little" if le else "big")


def scan_length_prefixed(arr: np.ndarray, start: int, n: int, width: int, le: bool,
                         limit: int, tail: int = 0) -> tuple[np.ndarray, int]:
    """Walk ``n`` strings with ``width``-byte length prefixes from ``start``.

    Each element may carry ``tail`` more bytes of fixed-size fields after its string (a
    vocabulary entry's score).  Returns (string lengths in the narrowest unsigned dtype
    that holds them, end offset); the elements lie back to back from ``start``, which is
    what ``StringArray(arr, start, lens, width, encoding, tail=tail)`` takes.  Raises
    ``ScanStop`` at the first element that would pass ``limit``.
    """
    limit = min(limit, arr.size)          # no element lies past the buffer, whatever was claimed
    if _cscan is not None and arr.flags.c_contiguous and 0 <= start:
        done, end, top = _cscan.scan(arr, start, n, width, le, limit, tail)
        if done < n:
            raise ScanStop(done, end)
        lens = np.empty(n, dtype=narrow_unsigned(top))
        _cscan.lengths(arr, start, n, width, le, tail, lens)
        return lens, end
    starts, lens, end = _scan_numpy(arr, start, n, width, le, limit, tail)
    return lens.astype(narrow_unsigned(int(lens.max()) if n else 0)), end


def _scan_numpy(arr: np.ndarray, start: int, n: int, width: int, le: bool,
                limit: int, tail: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """The scan without the compiled walker: (int64 prefix offsets, int64 lengths, end)."""
    starts = np.empty(n, dtype=np.int64)
    lens = np.empty(n, dtype=np.int64)
    i = 0
    p = start
    steps = 0
    walked_from = n                      # elements from here on were walked (lengths filled)
    while i < n:
        if steps > _EXACT_STEPS_BEFORE_WALK:
            walked_from = i
            i, p = _walk_rest(arr, starts, lens, i, n, p, width, le, limit, tail)
            break
        win_end = min(limit, p + min(max((n - i) * (width + 24), 4096), _WINDOW))
        seg = arr[p:win_end]
        L = len(seg) - width + 1
        if L <= 0:
            i, p = _step(arr, starts, i, p, width, le, limit, tail)
            steps += 1
            continue
        z = seg == 0
        if le:
            m = ~z[:L]
            for k in range(1, width):
                m &= z[k:L + k]
            cand = np.flatnonzero(m)
            nxt = cand + width + tail + seg[cand]
        else:
            m = ~z[width - 1:L + width - 1]
            for k in range(width - 1):
                m &= z[k:L + k]
            cand = np.flatnonzero(m)
            nxt = cand + width + tail + seg[cand + width - 1]
        # chain[j]: candidate j leads straight to candidate j+1
        chain = nxt[:-1] == cand[1:]
        breaks = np.flatnonzero(~chain)
        base = p
        rel = 0                                   # current position relative to base
        while i < n and rel < len(seg) - width - 255 and steps <= _EXACT_STEPS_BEFORE_WALK:
            j = int(np.searchsorted(cand, rel))
            if j < len(cand) and cand[j] == rel:
                b = int(np.searchsorted(breaks, j))
                stop = int(breaks[b]) + 1 if b < len(breaks) else len(cand)
                run = min(stop - j, n - i)
                while run > 0 and nxt[j + run - 1] > len(seg):
                    run -= 1
                if run > 0:
                    starts[i:i + run] = cand[j:j + run] + base
                    i += run
                    rel = int(nxt[j + run - 1])
                    continue
            i, q = _step(arr, starts, i, base + rel, width, le, limit, tail)
            steps += 1
            rel = q - base
        p = base + rel
        if steps > _EXACT_STEPS_BEFORE_WALK:
            continue
        if win_end >= limit and i < n:
            # the last bytes of the stream: finish exactly
            while i < n:
                i, p = _step(arr, starts, i, p, width, le, limit, tail)
    k = walked_from
    if k:
        lens[:k - 1] = starts[1:k] - starts[:k - 1] - width - tail
        lens[k - 1] = (int(starts[k]) if k < n else p) - int(starts[k - 1]) - width - tail
    return starts, lens, p


def _step(arr, starts, i, p, width, le, limit, tail=0):
    """One exact element: the prefix at ``p``."""
    if p + width > limit:
        raise ScanStop(i, p)
    length = _read_len(arr, p, width, le)
    if length > limit - p - width - tail:
        raise ScanStop(i, p)
    starts[i] = p
    return i + 1, p + width + length + tail
