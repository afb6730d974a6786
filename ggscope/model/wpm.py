"""WordPiece (``tokenizer.ggml.model == "bert"``) exactly as llama.cpp runs it.

Why: llama.cpp does not run Hugging Face's BertNormalizer + WordPiece for a BERT GGUF;
it has its own session (llama.cpp as vendored in llama-cpp-python 0.3.36,
src/llama-vocab.cpp ``llm_tokenizer_wpm_session``), and the two part on real text:

* normalisation is per code point, never a sequence: with ``strip_accents`` each code
  point becomes the *first* code point of its NFD (``unicode_cpts_normalize_nfd``, a
  table made by scripts/gen-unicode-data.py as ``ord(unicodedata.normalize('NFD',
  c)[0])``) -- "é" becomes "e" and a Hangul syllable becomes its leading jamo alone,
  where a real NFD gives two or three jamo;
* whitespace (llama.cpp's White_Space table: \\t \\n \\v \\f \\r, space, U+0085,
  U+00A0, ...) ends a word *before* control characters (\\p{C}: Cc Cf Co Cs) are
  dropped, so "a\\tb" is two words, not "ab";
* NUL, U+FFFD and control characters are dropped; with ``strip_accents`` so are marks
  (\\p{M}); with ``lowercase`` each code point takes its simple lower-case mapping;
* punctuation (\\p{P}), ASCII symbols (\\p{S} below U+007F) and CJK ideographs are
  words of their own;
* each word, with "▁" in front, is cut greedily into the longest vocabulary entries
  (any entry: word-initial pieces are stored with "▁", continuations bare), looking at
  most ``max_token_len`` bytes ahead; a word with a position nothing matches becomes
  the unknown token.

``lowercase`` comes from ``tokenizer.ggml.normalizer.lowercase`` (default true) and
``strip_accents`` from ``tokenizer.ggml.normalizer.strip_accents`` (default: as
lowercase), as llama_vocab::impl::load reads them.

Contract: ``WpmVocab.build(tokens, unk_id, lowercase, strip_accents, user_defined)``;
``encode(text) -> list[int]`` (no [CLS]/[SEP]: the caller adds BOS); user-defined
tokens are matched in the text first, as llama.cpp's ``tokenizer_st_partition`` does
without special-token parsing.  Work is linear in the text times ``max_token_len``.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import lru_cache

SPACE = "\u2581"

# llama.cpp's unicode_set_whitespace (scripts/gen-unicode-data.py, PropList White_Space)
WHITESPACE = frozenset([*range(0x09, 0x0E), *range(0x2000, 0x200B),
                        0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])
_CJK = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def is_chinese_char(cpt: int) -> bool:
    return any(lo <= cpt <= hi for lo, hi in _CJK)


@lru_cache(maxsize=1 << 16)
def _flags(cpt: int) -> tuple[str, int]:
    """(major category letter, llama.cpp's nfd mapping) of one code point."""
    ch = chr(cpt)
    cat = unicodedata.category(ch)
    nfd = unicodedata.normalize("NFD", ch)
    return cat, (ord(nfd[0]) if nfd else cpt)


def _lower(cpt: int) -> int:
    low = chr(cpt).lower()
    return ord(low[0]) if low else cpt      # the simple mapping: the first code point


def preprocess(text: str, lowercase: bool, strip_accents: bool) -> list[str]:
    """``llm_tokenizer_wpm_session::preprocess``: the words of ``text``."""
    words = [""]
    for ch in text:
        cpt = ord(ch)
        if strip_accents:
            cpt = _flags(cpt)[1]
        if cpt in WHITESPACE:
            if words[-1]:
                words.append("")
            continue
        cat = _flags(cpt)[0]
        if cpt == 0 or cpt == 0xFFFD or cat in ("Cc", "Cf", "Co", "Cs"):
            continue
        if strip_accents and cat[0] == "M":
            continue
        s = chr(_lower(cpt) if lowercase else cpt)
        if cat[0] == "P" or (cpt < 0x7F and cat[0] == "S") or is_chinese_char(cpt):
            if words[-1]:
                words.append("")
            words[-1] = s
            words.append("")
        else:
            words[-1] += s
    if not words[-1]:
        words.pop()
    return words


@dataclass(frozen=True)
class WpmVocab:
    ids: dict                      # utf-8 bytes of a token's text -> id (the first holder)
    unk_id: int
    max_len: int                   # the longest token, in bytes (llama_vocab::max_token_len)
    lowercase: bool
    strip_accents: bool
    user_defined: tuple[tuple[str, int], ...] = ()    # longest first

    @classmethod
    def build(cls, tokens: list[str], unk_id: int, lowercase: bool = True,
              strip_accents: bool | None = None, user_defined: list[tuple[str, int]] = ()) -> "WpmVocab":
        ids: dict = {}
        max_len = 0
        for i, t in enumerate(tokens):
            b = t.encode("utf-8", "surrogatepass")
            ids.setdefault(b, i)
            max_len = max(max_len, len(b))
        strip = lowercase if strip_accents is None else strip_accents
        users = tuple(sorted(((t, i) for t, i in user_defined if t), key=lambda p: -len(p[0])))
        return cls(ids, unk_id, max_len, lowercase, strip, users)

    def encode(self, text: str) -> list[int]:
        out: list[int] = []
        for fragment, tid in self._partition(text):
            if tid is not None:
                out.append(tid)
            else:
                for word in preprocess(fragment, self.lowercase, self.strip_accents):
                    out.extend(self._word(word))
        return out

    def _partition(self, text: str):
        """Text pieces and the user-defined tokens between them (tokenizer_st_partition)."""
        if not self.user_defined:
            yield text, None
            return
        start = i = 0
        while i < len(text):
            for t, tid in self.user_defined:
                if text.startswith(t, i):
                    if start < i:
                        yield text[start:i], None
                    yield "", tid
                    i += len(t)
                    start = i
                    break
            else:
                i += 1
        if start < len(text):
            yield text[start:], None

    def _word(self, word: str) -> list[int]:
        w = (SPACE + word).encode("utf-8", "surrogatepass")
        n, i, out = len(w), 0, []
        while i < n:
            for j in range(min(n, i + self.max_len + 1), i, -1):
                tid = self.ids.get(w[i:j])
                if tid is not None:
                    out.append(tid)
                    i = j
                    break
            else:
                return [self.unk_id]                      # discard the word's tokens
        return out or [self.unk_id]
