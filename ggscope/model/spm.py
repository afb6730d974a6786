"""llama.cpp's SentencePiece BPE tokenizer, as it runs: scores and a pair queue, no merge table.

Why: a SentencePiece ("llama") vocabulary carries pieces and scores, not merges.  The
tokenizer used to derive a merge table for Hugging Face's BPE from every split of every
piece -- quadratic in a piece's length and, for a vocabulary that is a chain of prefixes,
in the number of pieces (a 2.6 MB file: 119 s and 5.9 GB).  llama.cpp needs no such
table: ``llm_tokenizer_spm_session`` starts from the text's characters and repeatedly
merges the adjacent pair whose concatenation is the highest-scoring piece (leftmost on
a tie), looking pairs up in ``token_to_id``.  This module is that algorithm (llama.cpp as
vendored in llama-cpp-python 0.3.36, src/llama-vocab.cpp: ``llm_tokenizer_spm_session``,
``llama_vocab::impl::tokenize`` case SPM, ``tokenizer_st_partition``), so building it is
one pass over the pieces (a dict and the longest piece's length) and nothing is derived.
llama.cpp's map keeps the first of equal pieces; so does ``token_to_id`` here.

Contract: ``SpmVocab.over(pieces, type_of, score_of, add_space_prefix, rstrip_user)``
in time and memory linear in the bytes of ``pieces`` - the whole vocabulary or only the
pieces one text can use (``ggscope.model.vocab.Vocab.near``: the rest stays undecoded
in the file); ``encode(text) -> list[int]`` gives the ids llama.cpp gives with
``add_special=false, parse_special=false`` (no BOS): user-defined pieces (token type 4) are cut out of the text first, longest first, as whole tokens
(their right-hand whitespace dropped when ``rstrip_user``, llama.cpp's rule for phi-3);
each remaining fragment gets a leading space when it starts the text or follows such a
piece (``add_space_prefix``), spaces become "▁", and characters no piece covers become
their UTF-8 bytes' ``<0xXX>`` pieces.  A byte without a piece is ``KeyError`` (llama.cpp's
``token_to_id.at`` throws there too).  Pairs longer than the longest piece are never
looked up: none can match, and that bounds each lookup by the vocabulary, not the text.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ggscope.model.vocab import utf8_bytes

if TYPE_CHECKING:
    from ggscope.model.vocab import Vocab

__all__ = ["SpmVocab", "SpmEncoder"]

SPM_SPACE = "\u2581"
_USER_DEFINED = 4
_C_SPACE = " \t\n\v\f\r"          # C isspace() in the "C" locale


@dataclass(frozen=True)
class SpmVocab:
    token_to_id: dict[str, int]
    scores: Sequence[float] | Mapping[int, float]      # by id
    user: tuple[str, ...]           # user-defined pieces, longest first
    max_len: int                    # longest piece, in characters
    add_space_prefix: bool
    rstrip_user: bool

    @classmethod
    def over(cls, pieces: Mapping[str, list[int]], type_of: Callable[[int, str], int],
             score_of: Callable[[int], float],
             add_space_prefix: bool = True, rstrip_user: bool = False) -> "SpmVocab":
        """The encoder over a vocabulary or part of one: ``pieces`` maps texts to their ids
        (ascending), ``type_of(id, text)`` and ``score_of(id)`` give a token's type and
        score.  Over part, it encodes a text exactly as over the whole when ``pieces`` holds every piece that occurs in the text or in it after a space prefix, and the
        byte pieces of its bytes (``ggscope.model.vocab.Vocab.near``): every lookup the
        encoder makes is one of those."""
        token_to_id = {t: ids[0] for t, ids in pieces.items()}
        user = sorted((i, t) for t, ids in pieces.items() if t for i in ids if type_of(i, t) == _USER_DEFINED)
        texts = [t for _, t in user]
        texts.sort(key=len, reverse=True)          # cache_special_tokens: longest text first
        scores = {i: score_of(i) for i in token_to_id.values()}
        return cls(token_to_id, scores, tuple(texts), max(map(len, token_to_id), default=0),
                   add_space_prefix, rstrip_user)

    # --- tokenizer_st_partition with parse_special = false: user-defined pieces only --------
    def _partition(self, text: str) -> list[str | int]:
        parts: list[str | int] = [text] if text else []
        for piece in self.user:
            pid = self.token_to_id[piece]
            out: list[str | int] = []
            for frag in parts:
                if isinstance(frag, int):
                    out.append(frag)
                    continue
                start = 0
                while (hit := frag.find(piece, start)) >= 0:
                    if hit > start:
                        out.append(frag[start:hit])
                    out.append(pid)
                    start = hit + len(piece)
                    if self.rstrip_user:
                        while start < len(frag) and frag[start] in _C_SPACE:
                            start += 1
                if start < len(frag):
                    out.append(frag[start:])
            parts = out
        return parts

    def encode(self, text: str) -> list[int]:
        """``text`` as llama.cpp's SPM token ids (no BOS)."""
        ids: list[int] = []
        prev_special = True                      # a space before the first fragment
        for frag in self._partition(text):
            if isinstance(frag, int):
                ids.append(frag)
                prev_special = True
                continue
            if self.add_space_prefix and prev_special:
                frag = " " + frag
            self._session(frag.replace(" ", SPM_SPACE), ids)
            prev_special = False
        return ids

    # --- llm_tokenizer_spm_session::tokenize -------------------------------------------------
    def _session(self, text: str, out: list[int]) -> None:
        n = len(text)
        if n == 0:
            return
        start = list(range(n))                   # symbol i covers text[start[i]:start[i]+size[i]]
        size = [1] * n
        prev = list(range(-1, n - 1))
        nxt = list(range(1, n)) + [-1]
        queue: list[tuple[float, int, int, int]] = []

        def try_add(left: int, right: int) -> None:
            if left < 0 or right < 0:
                return
            width = size[left] + size[right]
            if width > self.max_len:
                return
            tid = self.token_to_id.get(text[start[left]:start[left] + width])
            if tid is None:
                return
            # highest score first, then the leftmost pair (llm_bigram_spm::comparator)
            heapq.heappush(queue, (-self.scores[tid], left, right, width))

        for i in range(1, n):
            try_add(i - 1, i)
        while queue:
            _, left, right, width = heapq.heappop(queue)
            if size[left] == 0 or size[right] == 0 or size[left] + size[right] != width:
                continue                         # one side was merged since
            size[left] = width
            size[right] = 0
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prev[nxt[right]] = left
            try_add(prev[left], left)
            try_add(left, nxt[left])
        i = 0
        while i != -1:
            piece = text[start[i]:start[i] + size[i]]
            tid = self.token_to_id.get(piece)
            if tid is not None:
                out.append(tid)
            else:                                # resegment: bytes of what no piece covers
                for b in _utf8(piece):
                    out.append(self._byte(b))
            i = nxt[i]

    def _byte(self, b: int) -> int:
        """llama_vocab::impl::byte_to_token for SPM: ``<0xXX>``, else the byte as a piece."""
        tid = self.token_to_id.get(f"<0x{b:02X}>")
        if tid is None:
            tid = self.token_to_id.get(chr(b)) if b < 0x80 else None
        if tid is None:
            raise KeyError(f"the vocabulary has no piece for byte 0x{b:02X} (<0x{b:02X}>)")
        return tid


@dataclass(frozen=True)
class SpmEncoder:
    """``SpmVocab.over`` the pieces each text can use (``Vocab.near``): the pieces it
    contains, after a space prefix too, and the byte pieces of its bytes.  A vocabulary
    that comes back whole (a list, a corpus-sized text) is built into one SpmVocab, once."""
    vocab: "Vocab"
    type_of: Callable[[int, str], int]
    score_of: Callable[[int], float]
    add_space_prefix: bool = True
    rstrip_user: bool = False
    _last: dict = field(default_factory=dict, compare=False, repr=False)

    def encode(self, text: str) -> list[int]:
        """``text`` as llama.cpp's SPM token ids (no BOS), as ``SpmVocab.encode``."""
        prefix = SPM_SPACE if self.add_space_prefix else ""
        spaced = prefix + text.replace(" ", SPM_SPACE)
        raw = set(_utf8(spaced)) | set(utf8_bytes(spaced))      # what _byte can be asked for
        pieces = self.vocab.near([text, spaced], [f"<0x{b:02X}>" for b in raw], prefix)
        if self._last.get("pieces") is not pieces:
            self._last.update(pieces=pieces, spm=SpmVocab.over(pieces, self.type_of, self.score_of,
                                                               self.add_space_prefix, self.rstrip_user))
        return self._last["spm"].encode(text)


def _utf8(text: str) -> bytes:
    """``text``'s bytes; a byte that was not UTF-8 in the input (surrogateescape) as itself."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
