"""The lazy array of a scanned array of length-prefixed strings, stored compactly.

Why compact: a hostile (or merely odd) GGUF of 134 MB holds 16 M empty strings; int64
starts and lengths for them took 256 MB, twice the file (issue 23, item 6).  The store
here costs about one byte per short string:

- ``lens``: each string's length in the narrowest unsigned dtype that holds the longest
  (uint8 for strings under 256 bytes - every vocabulary in practice);
- where the strings lie: either *contiguous* - each element is its ``width``-byte
  prefix, the string, then ``tail`` bytes of fixed-size fields, back to back from
  ``first`` (what ``scan.scan_length_prefixed`` walks), so element i starts at
  ``first + i * (width + tail) + sum(lens[:i])`` and only one int64 mark per
  ``_BLOCK`` elements is kept for random access - or *placed* at explicit offsets
  (a column of records: tensor names), kept relative to ``first`` as uint32 when the
  array spans less than 4 GiB.

The contract: ``len``, indexing (one string decoded), ``raw(i)``, ``tolist()`` (all
decoded in one pass and cached), ``offsets(lo, hi)`` and ``lengths(lo, hi)`` (int64
arrays made on demand for a range), ``starts(ids)`` and ``take(ids)`` (the offsets and
the strings of many ids at once: the batched read every caller shares), ``part(lo,
hi)`` (a range as a StringArray of its own), ``heads()`` (each string's first eight
bytes as one uint64: a search key), ``blocks()`` (offsets and lengths, a bounded block
at a time: every bulk pass here walks the array that way, so no pass allocates 16
bytes a string), ``nbytes`` (what the store itself holds).  It compares equal to the list of its
strings.  The file's bytes are read, never written.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

try:
    from ggscope.ksy import _cscan            # compiled at install (setup.py); else numpy
except ImportError:
    _cscan = None

__all__ = ["StringArray", "is_utf8", "narrow_unsigned"]

_BLOCK = 4096            # elements per random-access mark of a contiguous array
_CHUNK = 1 << 18         # elements per block of a bulk pass
_GROUP = 64              # blocks whose lengths ``starts`` sums at once
_FEW = 16                # at most this many ids: ``starts`` sums per id (a vectorised pass costs more)


def narrow_unsigned(top: int) -> np.dtype:
    """The narrowest unsigned dtype holding 0..top."""
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def is_utf8(raw: bytes) -> bool:            # well-formed UTF-8, by Python's codec
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


class StringArray(Sequence):
    """A lazy, read-only sequence of the strings of a scanned array (see the module)."""

    __slots__ = ("_arr", "first", "lens", "rel", "width", "tail", "encoding", "_list", "fields", "_marks")

    def __init__(self, arr: np.ndarray, first: int, lens: np.ndarray, width: int, encoding: str | None,
                 fields: dict[str, np.ndarray] | None = None, *, tail: int = 0,
                 rel: np.ndarray | None = None) -> None:
        self._arr = arr
        self.first = int(first)
        self.lens = lens
        self.rel = rel
        self.width = width
        self.tail = tail
        self.encoding = encoding
        self._list: list | None = None
        self.fields = fields or {}          # fixed-size fields after each string, by id
        self._marks: np.ndarray | None = None

    @classmethod
    def placed(cls, arr: np.ndarray, starts: np.ndarray, lens: np.ndarray, width: int,
               encoding: str | None) -> StringArray:
        """Strings whose prefixes are at the absolute offsets ``starts`` (any order)."""
        starts = np.asarray(starts, dtype=np.int64)
        lens = np.asarray(lens, dtype=np.int64)
        first = int(starts.min()) if len(starts) else 0
        rel = starts - first
        span = int(rel.max()) if len(rel) else 0
        rel = rel.astype(np.uint32) if span < 1 << 32 else rel
        return cls(arr, first, lens.astype(narrow_unsigned(int(lens.max()) if len(lens) else 0)), width,
                   encoding, rel=rel)

    # -- where the strings are -------------------------------------------------------

    def __len__(self) -> int:
        return len(self.lens)

    @property
    def nbytes(self) -> int:
        """Bytes the store holds (lengths, offsets, marks; not the file or a cached list)."""
        return self.lens.nbytes + (self.rel.nbytes if self.rel is not None else 0) + \
            (self._marks.nbytes if self._marks is not None else 0)

    def _mark_table(self) -> np.ndarray:
        """Absolute start of every ``_BLOCK``-th element of a contiguous array."""
        if self._marks is None:
            n = len(self.lens)
            full = n // _BLOCK * _BLOCK        # a buffered sum: no int64 copy of the lengths
            sums = self.lens[:full].reshape(-1, _BLOCK).sum(axis=1, dtype=np.int64)
            if full < n:
                sums = np.append(sums, np.int64(self.lens[full:].sum(dtype=np.int64)))
            marks = np.empty(-(-n // _BLOCK), dtype=np.int64)
            if n:
                marks[0] = self.first
                np.cumsum(sums[:-1] + _BLOCK * (self.width + self.tail), out=marks[1:])
                marks[1:] += self.first
            self._marks = marks
        return self._marks

    def offsets(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Absolute offsets of the prefixes of elements ``lo..hi-1`` (int64, made now)."""
        hi = len(self) if hi is None else min(hi, len(self))
        if hi <= lo:
            return np.zeros(0, np.int64)
        if self.rel is not None:
            return self.rel[lo:hi].astype(np.int64) + self.first
        b = lo // _BLOCK
        s = int(self._mark_table()[b]) + (lo - b * _BLOCK) * (self.width + self.tail) + \
            int(self.lens[b * _BLOCK:lo].sum(dtype=np.int64))
        out = np.empty(hi - lo, dtype=np.int64)
        out[0] = s
        np.cumsum(self.lens[lo:hi - 1], dtype=np.int64, out=out[1:])
        out[1:] += s + (self.width + self.tail) * np.arange(1, hi - lo, dtype=np.int64)
        return out

    def starts(self, ids) -> np.ndarray:
        """Absolute offsets of the prefixes of the elements ``ids`` (any order, repeats
        allowed; int64).  A contiguous array sums, vectorised, only the lengths of the
        ``_BLOCK``-element blocks the ids fall in, ``_GROUP`` at a time: no walk per id,
        no int64 array of all offsets, a few MB at most; ``_FEW`` ids before the marks
        exist, one walk up to the largest.  An id outside ``0..len-1`` raises IndexError."""
        idx = np.asarray(ids, dtype=np.int64).reshape(-1)
        n = len(self)
        if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= n):
            raise IndexError("StringArray.starts: an id outside the array")
        if self.rel is not None:
            return self.rel[idx].astype(np.int64) + self.first
        out = np.empty(len(idx), dtype=np.int64)
        if not idx.size:
            return out
        if len(idx) <= _FEW and self._marks is None:   # a few ids, no marks: the lengths before each, in id order
            at, prev, step = 0, 0, self.width + self.tail
            for k in np.argsort(idx, kind="stable").tolist():
                i = int(idx[k])
                at += int(self.lens[prev:i].sum(dtype=np.int64))
                prev = i
                out[k] = self.first + i * step + at
            return out
        blk = idx // _BLOCK
        order = np.argsort(blk, kind="stable")
        sb = blk[order]
        used = sb[np.concatenate(([True], sb[1:] != sb[:-1]))]         # the blocks, ascending
        full, marks, step = n // _BLOCK, self._mark_table(), self.width + self.tail
        acc = np.int32 if self.lens.itemsize <= 2 else np.int64        # a block of u16 sums below 2**31
        for g in range(0, len(used), _GROUP):
            grp = used[g:g + _GROUP]
            rows = np.zeros((len(grp), _BLOCK), dtype=self.lens.dtype)
            whole = grp < full
            rows[whole] = self.lens[:full * _BLOCK].reshape(full, _BLOCK)[grp[whole]]
            if not whole[-1]:                             # the last block, shorter
                rows[-1, :n - full * _BLOCK] = self.lens[full * _BLOCK:]
            before = np.zeros((len(grp), _BLOCK), dtype=acc)
            np.cumsum(rows[:, :-1], axis=1, dtype=acc, out=before[:, 1:])   # lengths before each in its block
            sel = order[np.searchsorted(sb, grp[0]):np.searchsorted(sb, grp[-1], side="right")]
            b = blk[sel]
            col = idx[sel] - b * _BLOCK
            out[sel] = marks[b] + col * step + before[np.searchsorted(grp, b), col]
        return out

    def take(self, ids) -> list:
        """``[self[i] for i in ids]``: the positions found at once (``starts``), the bytes
        gathered after one NUL each and, unless a string holds a NUL, decoded once and
        split - the one way a rule or a reader takes many strings by id.  The same
        strings: NUL is ASCII, so no byte sequence runs from one string into the next."""
        idx = np.asarray(ids, dtype=np.int64).reshape(-1)
        if self._list is not None:
            return [self._list[i] for i in idx.tolist()]
        at = self.starts(idx) + self.width
        lens = self.lens[idx].astype(np.int64)
        if len(idx) < 16 or int(lens.sum()) > min(1024 * len(idx), _CHUNK):    # few, long or many bytes: slices
            raws = [self._arr[s:s + k].tobytes() for s, k in zip(at.tolist(), lens.tolist())]
            return [r.decode(self.encoding, "surrogateescape") for r in raws] if self.encoding else raws
        seg = lens + 1                                    # one NUL, then the string
        base = np.cumsum(seg) - seg
        joined = self._arr[np.arange(int(seg.sum()), dtype=np.int64) + np.repeat(at - 1 - base, seg)]   # a copy
        joined[base] = 0                                  # each string's first place: its NUL
        if np.count_nonzero(joined == 0) != len(idx):    # a string holds a NUL: one slice each
            return [self[i] for i in idx.tolist()]
        raw = joined.tobytes()
        return raw.decode(self.encoding, "surrogateescape").split("\0")[1:] if self.encoding else raw.split(b"\0")[1:]

    def lengths(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """The lengths of elements ``lo..hi-1`` as int64 (made now)."""
        return self.lens[lo:hi].astype(np.int64)

    def blocks(self, chunk: int = _CHUNK) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """``(lo, hi, offsets, lengths)`` for consecutive ranges of at most ``chunk``
        elements: a bulk pass holds int64 positions for one block, not for the array."""
        n = len(self)
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            yield lo, hi, self.offsets(lo, hi), self.lengths(lo, hi)

    def part(self, lo: int, hi: int) -> StringArray:
        """Elements ``lo..hi-1`` as a StringArray of their own (a view of the same store)."""
        lo, hi = max(0, lo), min(len(self), hi)
        hi = max(lo, hi)
        if self.rel is not None:
            return StringArray(self._arr, self.first, self.lens[lo:hi], self.width, self.encoding,
                               rel=self.rel[lo:hi])
        first = int(self.offsets(lo, lo + 1)[0]) if hi > lo else self.first
        return StringArray(self._arr, first, self.lens[lo:hi], self.width, self.encoding, tail=self.tail)

    # -- the strings -----------------------------------------------------------------

    def raw(self, i: int) -> bytes:
        s = int(self.offsets(i, i + 1)[0]) + self.width
        return self._arr[s:s + int(self.lens[i])].tobytes()

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if self._list is not None:
            return self._list[i]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        raw = self.raw(i)
        return raw.decode(self.encoding, "surrogateescape") if self.encoding else raw

    def heads(self) -> np.ndarray:
        """Each string's first eight bytes as a little-endian uint64, zero past the end of
        a shorter string: a key that finds strings by their text without decoding any
        (``ggscope.model.vocab``).  A contiguous array in one compiled walk (``_cscan``);
        else block by block, a gather through an unaligned view of the store."""
        n, arr = len(self), self._arr
        out = np.zeros(n, dtype=np.uint64)
        if n == 0:
            return out
        if _cscan is not None and self.rel is None and arr.flags.c_contiguous:
            _cscan.heads(arr, self.first, np.ascontiguousarray(self.lens), self.lens.itemsize, self.width,
                         self.tail, out)
            return out
        size = len(arr)
        masks = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
        win = np.ndarray((size - 7,), dtype="<u8", buffer=arr, strides=(1,)) if size >= 8 else None
        for lo, hi, offs, lens in self.blocks():
            starts = offs + self.width
            if win is not None:
                out[lo:hi] = win[np.minimum(starts, size - 8)] & masks[np.minimum(lens, 8)]
            for j in np.flatnonzero((starts > size - 8) & (lens > 0)):   # within 8 bytes of the end
                s = int(starts[j])
                out[lo + j] = int.from_bytes(arr[s:s + min(int(lens[j]), 8)].tobytes(), "little")
        return out

    def tolist(self) -> list:
        if self._list is None:
            self._list = self._decode_all()
        return self._list

    def invalid_utf8(self) -> list[int]:
        """Indices of the elements that are not valid UTF-8: one strict decode of all the
        string bytes joined with NUL; only when that fails each element alone."""
        if not len(self) or is_utf8(self._joined().tobytes()):
            return []
        return [i for i in range(len(self)) if not is_utf8(self.raw(i))]

    def _decode_all(self) -> list:
        n = len(self)
        if n == 0:
            return []
        if self.encoding is None:
            return [self.raw(i) for i in range(n)]
        joined = self._joined()
        if np.count_nonzero(joined == 0) != n:  # a string contains NUL: decode one by one
            return [self.raw(i).decode(self.encoding, "surrogateescape") for i in range(n)]
        return joined.tobytes().decode(self.encoding, "surrogateescape").split("\0")[1:]

    def joined(self) -> np.ndarray:
        """All string bytes, each string preceded by one NUL byte (a copy)."""
        return self._joined() if len(self) else np.zeros(0, np.uint8)

    def _joined(self) -> np.ndarray:
        """All string bytes, each string preceded by one NUL byte.

        Block by block, one gather of exactly the string bytes: work and memory grow
        with the bytes the strings hold plus one per string, never with the prefixes or
        fixed-size fields between them (16 M empty strings join in one allocation of
        16 MB).  Where the strings of a block fill most of its region (a vocabulary: the
        usual case), one boolean mask over the region is three times faster than the
        gather's index arrays and still bounded by a few bytes per string byte.
        """
        n = len(self)
        total = int(self.lens.sum(dtype=np.int64))
        out = np.zeros(total + n, dtype=np.uint8)
        if total == 0:
            return out
        at = 0
        for lo, hi, starts, lens in self.blocks():
            m = hi - lo
            size = int(lens.sum()) + m
            out[at:at + size] = self._joined_block(starts, lens)
            at += size
        return out

    def _joined_block(self, starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
        n = len(starts)
        total = int(lens.sum())
        w = self.width
        first = int(starts.min())
        region = int((starts + w + lens).max()) - first
        if total and region <= 4 * (total + n) and self.rel is None:
            return self._joined_by_mask(starts, lens, region)
        out = np.zeros(total + n, dtype=np.uint8)
        if total == 0:
            return out
        nz = np.flatnonzero(lens)
        nl = lens[nz]
        before = np.cumsum(nl) - nl                      # string bytes before each non-empty string
        src = np.arange(total, dtype=np.int64) + np.repeat(starts[nz] + w - before, nl)
        dst = np.arange(total, dtype=np.int64) + np.repeat(nz + 1, nl)   # one NUL per string up to it
        out[dst] = self._arr[src]
        return out

    def _joined_by_mask(self, starts: np.ndarray, lens: np.ndarray, region: int) -> np.ndarray:
        """A contiguous block joined by compressing its region with a mask: keep each
        string's bytes and the last byte of its prefix, which becomes the NUL separator."""
        first = int(starts[0])
        rel = starts - first
        keep = np.ones(region, dtype=bool)
        for k in range(self.width - 1):       # drop all but one byte of each prefix ...
            keep[rel + k] = False
        for k in range(self.tail):             # and every byte of the fixed-size fields
            keep[rel[:-1] + self.width + lens[:-1] + k] = False
        out = self._arr[first:first + region][keep]   # a new array: the file is never written
        sep = np.zeros(len(starts), dtype=np.int64)
        np.cumsum(lens[:-1] + 1, out=sep[1:])
        out[sep] = 0
        return out

    def joined_with(self, sep: bytes) -> np.ndarray | None:
        """All string bytes, each string preceded by ``sep`` (a copy), or None when the
        array is not contiguous, its strings do not mostly fill their region (the usual
        vocabulary does) or its prefix is shorter than ``sep``.

        The last ``len(sep)`` bytes of each prefix are kept and overwritten with ``sep``:
        one compress of each block's region, where joining with NUL and replacing each
        NUL would copy the text twice more (``report.jsonable`` writes string arrays this
        way when its compiled writer is missing)."""
        n, k, w = len(self), len(sep), self.width
        if n == 0 or w < k or self.rel is not None:
            return None
        total = int(self.lens.sum(dtype=np.int64))
        if not total or (w + self.tail) * n - self.tail + total > 4 * (total + n):
            return None
        out = np.empty(total + k * n, dtype=np.uint8)
        strided = np.lib.stride_tricks.as_strided
        pat = np.frombuffer(sep, dtype=np.uint8)
        at = 0
        for _lo, _hi, starts, lens in self.blocks():
            first = int(starts[0])
            rel = starts - first
            region = int(rel[-1]) + w + int(lens[-1])
            keep = np.ones(region + w + self.tail, dtype=bool)
            if w > k:      # rows of w - k flags from each prefix start: one assignment, not w - k
                strided(keep, shape=(region + 1, w - k), strides=(1, 1))[rel] = False
            if self.tail:  # the fixed-size fields after each string but the last
                strided(keep, shape=(region + 1, self.tail), strides=(1, 1))[rel[:-1] + w + lens[:-1]] = False
            part = self._arr[first:first + region][keep[:region]]
            pos = np.zeros(len(starts), dtype=np.int64)
            np.cumsum(lens[:-1] + k, out=pos[1:])
            strided(part, shape=(part.size - k + 1, k), strides=(1, 1))[pos] = pat
            out[at:at + part.size] = part
            at += part.size
        return out

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StringArray):
            return self.tolist() == other.tolist()
        if isinstance(other, (list, tuple)):
            return self.tolist() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        head = ", ".join(repr(self[i]) for i in range(min(3, len(self))))
        return f"StringArray({len(self)}: [{head}{', ...' if len(self) > 3 else ''}])"
