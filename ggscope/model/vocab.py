"""A vocabulary's pieces read where they lie: a piece by id, the pieces a text can use.

Why: ``ggscope run`` lists five candidates' text and encodes a prompt of a few words,
yet turning ``tokenizer.ggml.tokens`` into a list of str and a dict cost 0.17 s on Gemma
3's 262,144 pieces - more than all of the command but the forward pass (issue 28 item
5).  The GGUF parser keeps a string array as a ``ggscope.ksy.strings.StringArray``
(lengths and block marks; the bytes stay in the file's map), so one piece is read by
id without the others, and ``StringArray.heads`` gives every piece's first eight bytes
as one integer: the pieces a text can contain are found by one vectorized pass over
those integers against the text's own runs of 1 to 8 bytes, and only they are decoded.

Contract: ``Vocab(pieces)`` over a ``StringArray`` (GGUF) or a sequence of str (the views
of early formats, decoded already); ``len``; ``text(i)`` (one piece, as the parser
decodes it: undecodable bytes as surrogate escapes); ``texts()`` (every piece, decoded
once - what an encoder that needs the whole vocabulary reads); ``find(texts) -> {text:
[ids]}`` (the ids whose piece is exactly one of ``texts``, ascending; texts absent are
left out); ``near(within, exact=(), prefix="") -> {piece: [ids]}``: every piece that
occurs in one of the strings ``within`` (also right after ``prefix`` put in front of any
position of them: SentencePiece's space before a fragment) or equals one of ``exact``,
with all its ids ascending - and possibly more pieces (those sharing their first eight
bytes with such a run): a superset that is exact for every lookup of a substring.  Work
is one pass over 8 bytes a piece plus the pieces returned, the keys bounded by the
vocabulary: a text longer than a quarter of the pieces' count (a corpus) and a
vocabulary given as a list (decoded already) get every piece.  The file is never written.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["Vocab", "utf8_bytes"]

_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)
_BITS = 16               # a key's hash: its top bits after one multiply (Fibonacci hashing)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_DECODE_ALL = 8          # more than 1/_DECODE_ALL of the pieces wanted: decode the array at once


def utf8_bytes(text: str) -> bytes:
    """``text`` as the parser's pieces are bytes (UTF-8, surrogate escapes as their byte);
    a lone surrogate no piece can hold as its UTF-8 form, the rest unchanged."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return b"".join(c.encode("utf-8", "surrogatepass") if 0xD800 <= ord(c) <= 0xDFFF
                        and not 0xDC80 <= ord(c) <= 0xDCFF else c.encode("utf-8", "surrogateescape")
                        for c in text)


def _runs(data: bytes, prefix: bytes = b"") -> np.ndarray:
    """The keys (``StringArray.heads``' form) of every run of 1 to 8 bytes of ``data``;
    with ``prefix`` (at most 8 bytes) the runs that start with it followed by ``data`` from any position."""
    n = len(data)
    if n == 0:
        return np.array([int.from_bytes(prefix, "little")] if prefix else [], np.uint64)
    win = np.ndarray((n,), dtype="<u8", buffer=np.frombuffer(data + bytes(8), dtype=np.uint8), strides=(1,))
    if not prefix:
        return np.concatenate([win[:n - k + 1] & _MASKS[k] for k in range(1, min(8, n) + 1)])
    k, head = len(prefix), np.uint64(int.from_bytes(prefix, "little"))
    rest = [(win & _MASKS[j]) << np.uint64(8 * k) | head for j in range(1, 9 - k)]
    return np.concatenate([np.array([head], np.uint64), *rest])


def _bucket(keys: np.ndarray) -> np.ndarray:
    return ((keys * _MIX) >> np.uint64(64 - _BITS)).astype(np.uint16)


class Vocab(Sequence):
    """The pieces of ``tokenizer.ggml.tokens``, read lazily (see the module)."""

    def __init__(self, pieces) -> None:
        self._pieces = pieces
        self._array = hasattr(pieces, "heads")           # a StringArray: read in place
        self._list: list[str] | None = None if self._array else [str(p) for p in pieces]
        self._heads: np.ndarray | None = None
        self._buckets: np.ndarray | None = None
        self._index: dict[str, list[int]] | None = None  # a list's pieces by text

    def __len__(self) -> int:
        return len(self._pieces)

    def __getitem__(self, i):  # type: ignore[override]
        return self.text(i) if isinstance(i, int) else self.texts()[i]

    def text(self, i: int) -> str:
        if self._list is not None:
            return self._list[i]
        return str(self._pieces[i])

    def texts(self) -> list[str]:
        if self._list is None:
            self._list = list(map(str, self._pieces.tolist()))
        return self._list

    def find(self, texts: Iterable[str]) -> dict[str, list[int]]:
        want = set(texts)
        if not self._array:
            return {t: ids for t, ids in self._by_text().items() if t in want}
        keys = np.array([int.from_bytes(utf8_bytes(t)[:8], "little") for t in want], dtype=np.uint64)
        return {t: ids for t, ids in self._decoded(self._matching(keys)).items() if t in want}

    def near(self, within: Iterable[str], exact: Iterable[str] = (), prefix: str = "") -> dict[str, list[int]]:
        if not self._array:
            return self._by_text()
        within = list(within)
        datas = [utf8_bytes(t) for t in within]
        if sum(map(len, datas)) * 4 > len(self):      # a long text: its runs would outnumber the pieces
            return self._by_text()
        pre = utf8_bytes(prefix)[:8]
        parts = [np.array([int.from_bytes(utf8_bytes(t)[:8], "little") for t in exact], dtype=np.uint64)]
        for data in datas:
            parts.append(_runs(data))
            if pre:
                parts.append(_runs(data, pre))
        return self._decoded(self._matching(np.concatenate(parts)))

    # -- internals ------------------------------------------------------------------

    def _by_text(self) -> dict[str, list[int]]:
        """Every piece by its text (the whole vocabulary decoded once)."""
        if self._index is None:
            index: dict[str, list[int]] = {}
            for i, t in enumerate(self.texts()):
                index.setdefault(t, []).append(i)
            self._index = index
        return self._index

    def _matching(self, keys: np.ndarray) -> np.ndarray:
        """Ids (ascending) whose first eight bytes are one of ``keys``: a table of the keys'
        hashes sifts the pieces (one gather a piece), the sorted keys decide."""
        if self._buckets is None:
            self._heads = self._pieces.heads()
            self._buckets = _bucket(self._heads)
        keys = np.sort(keys)                 # (np.unique would import numpy.ma: 20 ms)
        if not len(keys) or not len(self._heads):
            return np.zeros(0, np.int64)
        table = np.zeros(1 << _BITS, dtype=bool)
        table[_bucket(keys)] = True
        ids = np.flatnonzero(table[self._buckets])
        heads = self._heads[ids]
        at = np.minimum(np.searchsorted(keys, heads), len(keys) - 1)
        return ids[keys[at] == heads]

    def _decoded(self, ids: np.ndarray) -> dict[str, list[int]]:
        if len(ids) * _DECODE_ALL > len(self):
            self.texts()                                  # most of it: one pass beats one call a piece
        out: dict[str, list[int]] = {}
        ids = ids.tolist()
        texts = [self._list[i] for i in ids] if self._list is not None else map(str, self._pieces.take(ids))
        for i, t in zip(ids, texts):                      # a StringArray's batched read: positions at once
            out.setdefault(t, []).append(i)
        return out
