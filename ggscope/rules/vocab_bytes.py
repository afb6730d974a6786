"""Whole-array checks of a string array on its bytes: the first duplicate, the strings that are not UTF-8.

Why: the loader rules ask whether two tokens have the same text (llama.cpp's vocabulary
loader fills ``token_to_id`` in id order and asserts ``id_to_token.size() ==
token_to_id.size()``), the values rules whether every string is UTF-8.  Decoding every
token into a Python str and hashing it was 57 % of ``validate`` on the 12 real
vocabulary files (issue 27, item 3).  Here both run over the bytes the parser already
located: the compiled scan (``ggscope.rules._cvocab``, csrc/_cvocab.c) in one walk, else
numpy over blocks of the array - no step per token in Python either way.

Contract: ``first_duplicate(strings)`` is ``(i, j)`` - the smallest index whose bytes
equal an earlier string's, and that earlier string's index - or None; bytes are compared,
as llama.cpp's ``std::string`` keys are.  ``invalid_utf8(strings)`` is the increasing
indices of the strings Python's strict UTF-8 codec refuses.  Given a memo (``memo_of(mf)``),
``first_duplicate`` leaves the UTF-8 verdicts of the same pass there for ``invalid_utf8``.  Both take a
``ggscope.ksy.strings.StringArray`` or any sequence of str/bytes (encoded UTF-8 with
surrogateescape, which maps the bytes the parser read back exactly).  ``texts(strings,
ids)`` is the strings at the given indices, decoded as indexing decodes one - a
StringArray's batched read (``take``, positions from ``starts``), shared with
``ggscope.model.vocab``; ``joined_texts``
the same strings as one newline-joined text, decoded once (no str per string);
``is_token(strings, needles)`` whether each needle is one string, compared only with
the strings of its length.  Work and memory grow with the strings' bytes and count,
both backed by the file.
"""
from __future__ import annotations

import codecs
import threading
from collections.abc import Sequence

import numpy as np

from ggscope.ksy.strings import StringArray, is_utf8
from ggscope.rules.common import file_cache

try:
    from ggscope.rules import _cvocab        # compiled at install (setup.py); else numpy below
except ImportError:                          # pragma: no cover - depends on the build
    _cvocab = None

__all__ = ["first_duplicate", "invalid_utf8", "is_token", "joined_texts", "memo_of", "texts"]

_CHUNK = 1 << 16                             # strings per block of the numpy route
_BUDGET = 1 << 20                            # string bytes per block of the numpy route
_LONG = 1 << 12                              # longer strings: hashed one by one
_P = np.uint64(0x100000001B3)                # a 64-bit multiplier (FNV's prime) for the block hash
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _compiled(strings: StringArray) -> bool:
    return (_cvocab is not None and isinstance(strings._arr, np.ndarray) and strings._arr.flags.c_contiguous
            and strings._arr.dtype == np.uint8)


def _scan(strings: StringArray, dups: bool, utf8: bool) -> tuple[int, int, bytes]:
    rel = strings.rel
    return _cvocab.scan(strings._arr, strings.first, np.ascontiguousarray(strings.lens), strings.lens.itemsize,
                        np.ascontiguousarray(rel) if rel is not None else b"",
                        rel.itemsize if rel is not None else 0, strings.width, strings.tail, dups, utf8)


def _as_bytes(s) -> bytes:
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s)


# --- the first duplicate ------------------------------------------------------------

def memo_of(mf) -> dict:
    """The place a validate run of ``mf`` keeps one scan's results for the next rule."""
    return file_cache(mf).setdefault("vocab_bytes", {})


def first_duplicate(strings: Sequence, memo: dict | None = None) -> tuple[int, int] | None:
    """With a ``memo`` (``memo_of(mf)``) the compiled pass also finds the strings that are
    not UTF-8 and leaves them there for ``invalid_utf8``: one walk over a vocabulary for
    the loader's check and GG202's instead of two."""
    if len(strings) < 2:
        return None
    if not isinstance(strings, StringArray):
        return _exact(list(strings))
    if _compiled(strings) and len(strings) < 0xFFFFFFFF:
        dup, of, bad = _scan(strings, True, memo is not None)
        if memo is not None:
            memo[id(strings)] = (strings, bad)          # the array itself: its id is not reused meanwhile
        return (dup, of) if dup >= 0 else None
    return _first_duplicate_numpy(strings)


def _exact(raws: list) -> tuple[int, int] | None:
    """The definition, with a dict: what llama.cpp's loop over token ids meets first."""
    if len(set(raws)) == len(raws):
        return None
    seen: dict = {}
    for i, r in enumerate(raws):
        if r in seen:
            return i, seen[r]
        seen[r] = i
    return None


def _block_hashes(strings: StringArray) -> np.ndarray:
    """A 64-bit hash of each string's bytes and length: a polynomial over blocks of at
    most ``_CHUNK`` strings and ``_BUDGET`` bytes (numpy holds about 24 bytes per byte of
    a block), Python's hash of the bytes for a string longer than ``_LONG`` (equal
    strings have equal lengths, so they always meet the same hash)."""
    n = len(strings)
    out = np.empty(n, dtype=np.uint64)
    lens = strings.lengths()
    short = lens[lens <= _LONG]
    pw = np.cumprod(np.full(int(short.max()) + 1 if short.size else 1, _P, dtype=np.uint64), dtype=np.uint64)
    ends = np.cumsum(lens + 1)                         # joined with one byte before each string
    lo = 0
    with np.errstate(over="ignore"):
        while lo < n:
            if lens[lo] > _LONG:
                out[lo] = np.uint64(hash(strings.raw(lo)) & 0xFFFFFFFFFFFFFFFF) ^ (np.uint64(lens[lo]) * _MIX)
                lo += 1
                continue
            hi = int(np.searchsorted(ends, ends[lo] - lens[lo] - 1 + _BUDGET, side="right"))
            hi = min(max(hi, lo + 1), lo + _CHUNK, n)
            longs = np.flatnonzero(lens[lo:hi] > _LONG)
            if longs.size:
                hi = lo + int(longs[0])
            part = strings.part(lo, hi)
            joined = part.joined()                    # each string after one NUL: no segment is empty
            seg = lens[lo:hi] + 1
            starts = np.cumsum(seg) - seg
            pos = np.arange(joined.size, dtype=np.int64) - np.repeat(starts, seg)
            h = np.add.reduceat(joined.astype(np.uint64) * pw[pos], starts)
            out[lo:hi] = h ^ (seg.astype(np.uint64) * _MIX)
            lo = hi
    return out


def _first_duplicate_numpy(strings: StringArray) -> tuple[int, int] | None:
    key = _block_hashes(strings)
    order = np.lexsort((np.arange(len(key)), key))          # by hash, then by index
    k = key[order]
    same = np.empty(len(k), dtype=bool)
    same[0] = False
    np.not_equal(k[1:], k[:-1], out=same[1:])
    np.logical_not(same[1:], out=same[1:])
    if not same.any():
        return None
    head = np.where(same, 0, np.arange(len(k)))
    np.maximum.accumulate(head, out=head)                   # the first of each run of equal hashes
    later, first = order[same], order[head[same]]
    by = np.argsort(later, kind="stable")
    for i, j in zip(later[by].tolist(), first[by].tolist()):
        if strings.raw(i) == strings.raw(j):
            return i, j
        break                                               # a hash collision: settle it exactly
    return _exact([strings.raw(i) for i in range(len(strings))])


# --- UTF-8 ---------------------------------------------------------------------------

_BAD = threading.local()           # where the error handler puts the positions of one decode


def _collect(exc: UnicodeDecodeError) -> tuple[str, int]:
    _BAD.at.append(exc.start)
    return "", exc.end


codecs.register_error("ggscope.rules.vocab_bytes", _collect)


def invalid_utf8(strings: Sequence, memo: dict | None = None) -> list[int]:
    if len(strings) == 0:
        return []
    if not isinstance(strings, StringArray):
        return [i for i, s in enumerate(strings) if not is_utf8(_as_bytes(s))]   # a list built in Python
    if _compiled(strings):
        seen = memo.get(id(strings)) if memo is not None else None
        bad = seen[1] if seen is not None and seen[0] is strings else _scan(strings, False, True)[2]
        return np.frombuffer(bad, dtype=np.int64).tolist()
    joined = strings.joined().tobytes()           # each string after one NUL, which is UTF-8
    if is_utf8(joined):
        return []
    _BAD.at = []
    joined.decode("utf-8", "ggscope.rules.vocab_bytes")
    at = np.asarray(_BAD.at, dtype=np.int64)
    _BAD.at = []
    seg = strings.lengths() + 1
    starts = np.cumsum(seg) - seg
    return np.unique(np.searchsorted(starts, at, side="right") - 1).tolist()


# --- many texts by index -------------------------------------------------------------

def texts(strings: Sequence, ids: Sequence[int]) -> list:
    """``[strings[i] for i in ids]`` (each 0 <= i < len): a StringArray's through its
    batched read (``StringArray.take``), not one offset sum per index."""
    if not isinstance(strings, StringArray):
        return [strings[i] for i in ids]
    return strings.take(ids)


def _as_text(t) -> str:
    return t if isinstance(t, str) else bytes(t).decode("utf-8", "replace")


def _utf8_or_raw(encoding: str | None) -> bool:
    try:
        return encoding is None or codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def joined_texts(strings: Sequence, ids: Sequence[int], *, ascending: bool = False) -> str:
    """``"\n".join`` of the strings at ``ids`` as text - a str element as it is, bytes
    decoded as UTF-8 with U+FFFD for what is not - without a str per string: the bytes
    gathered in one pass and decoded once.  The same text: a newline is ASCII, so no
    byte sequence runs from one string into the next and each string decodes alone.
    Ascending ids of a contiguous array are found by the compiled gather's own sum over
    the lengths (``gather_ids``), other ids through ``StringArray.starts``; ``ascending``
    says the caller's ids are known to ascend (the order is then not checked here: the
    gather itself still refuses ids out of order or range)."""
    if not isinstance(strings, StringArray) or not _utf8_or_raw(strings.encoding):
        return "\n".join(_as_text(t) for t in texts(strings, ids))
    idx = ids if isinstance(ids, np.ndarray) and ids.dtype == np.int64 and ids.ndim == 1 else \
        np.asarray(ids, dtype=np.int64).reshape(-1)
    if _compiled(strings) and strings.rel is None and hasattr(_cvocab, "gather_ids") \
            and (ascending or len(idx) < 2 or bool((idx[1:] >= idx[:-1]).all())):
        raw = _cvocab.gather_ids(strings._arr, strings.first, np.ascontiguousarray(strings.lens),
                                 strings.lens.itemsize, strings.width, strings.tail, idx)
        return raw.decode("utf-8", "surrogateescape") if strings.encoding else raw.decode("utf-8", "replace")
    if len(idx) < 16:
        return "\n".join(_as_text(t) for t in texts(strings, ids))
    lens = strings.lens[idx].astype(np.int64)
    if _compiled(strings) and hasattr(_cvocab, "gather"):
        raw = _cvocab.gather(strings._arr, strings.starts(idx), lens, strings.width)
        return raw.decode("utf-8", "surrogateescape") if strings.encoding else raw.decode("utf-8", "replace")
    at = strings.starts(idx) + strings.width                   # each string's first byte
    seg = lens + 1                                             # the string and the newline after it
    base = np.cumsum(seg) - seg                                # where each begins in the output
    pos = np.arange(int(seg.sum()), dtype=np.int64) - np.repeat(base, seg)
    src = np.repeat(at, seg) + pos
    out = strings._arr[np.minimum(src, len(strings._arr) - 1)]
    out[pos == np.repeat(lens, seg)] = 0x0A
    raw = out[:-1].tobytes()
    return raw.decode("utf-8", "surrogateescape") if strings.encoding else raw.decode("utf-8", "replace")


# --- whole tokens ----------------------------------------------------------------------

def is_token(strings: Sequence, needles: Sequence[bytes]) -> list[bool]:
    """Whether each of ``needles`` is, byte for byte, one string of ``strings``: each is
    compared with the strings of its own length only, gathered into one array (no str
    per string, no copy of the whole vocabulary)."""
    if not isinstance(strings, StringArray):
        have = {_as_bytes(s) for s in strings}
        return [bytes(b) in have for b in needles]
    out = [False] * len(needles)
    by_len: dict[int, list[int]] = {}
    for i, b in enumerate(needles):
        by_len.setdefault(len(b), []).append(i)
    lens = strings.lens
    for size, which in by_len.items():
        ids = np.flatnonzero(lens == size)
        if not ids.size:
            continue
        if size == 0:
            for i in which:
                out[i] = True
            continue
        if _compiled(strings) and hasattr(_cvocab, "gather"):
            raw = _cvocab.gather(strings._arr, strings.starts(ids), np.full(len(ids), size, np.int64), strings.width)
            rows = np.frombuffer(raw + b"\n", dtype=np.uint8).reshape(-1, size + 1)[:, :size]
        else:
            rows = np.frombuffer(b"".join(strings.raw(int(j)) for j in ids), dtype=np.uint8).reshape(-1, size)
        for i in which:
            out[i] = bool((rows == np.frombuffer(bytes(needles[i]), dtype=np.uint8)).all(axis=1).any())
    return out
