"""Text -> token ids from a model file's own vocabulary, the way llama.cpp splits text.

Why: ``ggscope run --prompt`` must feed a model the ids llama.cpp would feed it, so the
tokenizer is rebuilt from the file's metadata rather than fetched from elsewhere.  Byte-
level BPE and WordPiece merging is done by Hugging Face ``tokenizers``; this module
translates GGUF metadata into a ``tokenizers.Tokenizer``, except for SentencePiece:

* ``tokenizer.ggml.model == "llama"`` (SentencePiece BPE with scores): llama.cpp's own
  algorithm (``ggscope.model.spm``: the highest-scoring adjacent pair merges first, byte
  fallback to ``<0xXX>`` pieces, spaces turned into "▁" and one "▁" put in front of the
  text, ``tokenizer.ggml.add_space_prefix``, default true).  It needs no merge table
  (one derived from the scores is quadratic in a piece's length: issue 23), only the
  pieces the text can contain.
* ``tokenizer.ggml.model == "gpt2"`` (byte-level BPE with merges): the pre-tokenizer
  regexes llama.cpp picks for ``tokenizer.ggml.pre`` (``PRE_TOKENIZER_REGEXES``, copied
  from llama.cpp's ``src/llama-vocab.cpp``), applied in sequence as llama.cpp's
  ``unicode_regex_split`` does, then GPT-2's byte-to-unicode map and the merges.
* ``tokenizer.ggml.model == "bert"`` (WordPiece): llama.cpp's own session
  (``ggscope.model.wpm``: its per-code-point normalisation, word splitting and greedy
  longest match over the stored pieces, word-initial ones with a leading "▁").
* Early llama.cpp files (GGML/GGMF/GGJT) carry LLaMA's SentencePiece vocabulary as the
  converter of the time wrote it: "▁" as a plain space, byte pieces as the raw byte
  (ids 3..258), no token types.  It is turned back into SentencePiece pieces
  (``_legacy_pieces``) so that the file tokenizes as llama.cpp tokenizes LLaMA today.
* rwkv.cpp files carry no vocabulary: their tiny models are byte-level, id = byte.

User-defined tokens (token_type 4) are matched in the text as whole pieces, as llama.cpp
does even without special-token parsing; control tokens are not -- with the types
llama.cpp gives them at load (``special_tokens.retype``: ``</s>``, ``<end_of_turn>`` and
the like are control tokens even where the file says user-defined).  Anything else
(Unigram, an unknown ``pre``) raises ``TokenizerError`` saying what is supported.

Contract: ``load(model) -> Tokenizer`` reads no piece of the vocabulary: it is a
``model.vocab.Vocab`` over the file's string array, read where it lies.  ``piece_bytes``
reads the one piece it is asked for (``ggscope run --tokens`` decodes its candidates'
pieces and nothing else); a SentencePiece ``encode`` reads the pieces its text can
contain (``spm.SpmEncoder``: a six-token prompt decodes about a hundred of Gemma 3's
262,144); the WordPiece and byte-level BPE encoders are built from the whole vocabulary
on the first ``encode`` or ``decode``.  Types are llama.cpp's, one token at a time
(``special_tokens.type_reader``).  A vocabulary the encoder cannot be built from raises
``TokenizerError`` there.
``Tokenizer.encode(text, add_bos=None)`` gives a
list of ints (``add_bos=None`` follows the file's ``tokenizer.ggml.add_bos_token``),
``decode(ids)`` gives text; ``piece_bytes(id)`` is one token's text as llama.cpp's
``token_to_piece`` (special tokens rendered) gives it, ``piece(id)`` the same as str and
``label(id)`` a terminal-safe quoted form (``core.escape.escape_label``) for listing candidates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from ggscope.core.errors import GGScopeError
from ggscope.core.escape import escape_label, quoted
from ggscope.ksy.strings import StringArray
from ggscope.model.special_tokens import retype, type_reader
from ggscope.model.spm import SpmEncoder
from ggscope.model.vocab import Vocab

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["Tokenizer", "TokenizerError", "PRE_TOKENIZER_REGEXES", "load", "supported_models"]


class TokenizerError(GGScopeError):
    """The file's vocabulary cannot be turned into a tokenizer."""


_GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"""
_LLAMA3 = (r"""(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"""
           r"""|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
_QWEN2 = (r"""(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+"""
          r"""|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
_DEEPSEEK_LLM = (
    "[\r\n]",
    # escaped: these ranges include characters that Unicode normalization would change
    ("\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+"),
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
)
_DEEPSEEK_CODER = ("[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[一-龥ࠀ-一가-퟿]+", r"\p{N}")
_FALCON = (r"[\p{P}\$\+<=>\^~\|`]+", _GPT2, "[0-9][0-9][0-9]")
_STARCODER = (r"\p{N}", _GPT2)
_DEFAULT = (r"[\p{P}\$\+<=>\^~\|]+", _GPT2, r"\p{N}+", "[0-9][0-9][0-9]")

# tokenizer.ggml.pre -> the regexes llama.cpp applies in order (src/llama-vocab.cpp).
PRE_TOKENIZER_REGEXES: dict[str, tuple[str, ...]] = {
    "default": _DEFAULT,
    "llama3": (_LLAMA3,), "llama-v3": (_LLAMA3,), "llama-bpe": (_LLAMA3,),
    "dbrx": (_LLAMA3,), "smaug-bpe": (_LLAMA3,), "falcon3": (_LLAMA3,),
    "deepseek-llm": _DEEPSEEK_LLM,
    "deepseek-coder": _DEEPSEEK_CODER,
    "falcon": _FALCON,
    "starcoder": _STARCODER, "refact": _STARCODER, "command-r": _STARCODER,
    "smollm": _STARCODER, "codeshell": _STARCODER, "exaone": _STARCODER,
    "gpt-2": (_GPT2,), "mpt": (_GPT2,), "olmo": (_GPT2,), "jais": (_GPT2,),
    "qwen2": (_QWEN2,),
}
# pre-tokenizers for which llama.cpp looks a whole pre-token up in the vocab before merging
_IGNORE_MERGES = {"llama3", "llama-v3", "llama-bpe", "falcon3"}

# llama_token_type (gguf-py TokenType): NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4,
# UNUSED 5, BYTE 6
TOKEN_TYPE_NORMAL, TOKEN_TYPE_UNKNOWN, TOKEN_TYPE_CONTROL = 1, 2, 3
TOKEN_TYPE_USER_DEFINED, TOKEN_TYPE_BYTE = 4, 6
SPM_SPACE = "\u2581"             # "▁"


def supported_models() -> str:
    return ('tokenizer.ggml.model "llama" (SentencePiece BPE), "bert" (WordPiece) and "gpt2" '
            f'(byte-level BPE; pre: {", ".join(sorted(PRE_TOKENIZER_REGEXES))}); '
            'rwkv.cpp files (bytes)')


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-to-unicode table, reversed (the pieces of byte-level BPE)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + n)] = b
            n += 1
    return chars


@dataclass(frozen=True)
class Tokenizer:
    """A vocabulary and, once used, its encoder: ``build()`` makes an ``spm.SpmEncoder``, a
    ``WpmVocab`` or a ``tokenizers.Tokenizer``; None for byte-level."""
    kind: str                  # "llama", "bert", "gpt2" or "bytes"
    build: Callable[[], Any] | None
    bos_id: int | None
    add_bos: bool
    n_vocab: int
    vocab: Vocab | None = None     # the pieces as the tokenizer reads them, read lazily
    type_of: Callable[[int, str], int] | None = None   # llama_token_type of (id, its piece)
    add_space_prefix: bool = True  # SentencePiece: decode drops the first token's space
    _built: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def engine(self) -> Any:
        """The encoder, built on first use; ``TokenizerError`` if it cannot be."""
        if "engine" not in self._built:
            self._built["engine"] = self.build() if self.build is not None else None
        return self._built["engine"]

    def piece_bytes(self, tid: int) -> bytes:
        """Token ``tid``'s text, as llama.cpp's ``token_to_piece`` with special tokens
        rendered: control, unknown and user-defined tokens as stored; normal tokens
        with "▁" as space (SentencePiece, WordPiece) or through GPT-2's byte table
        (byte-level BPE); byte tokens as their byte.  b"" for an id it does not know.
        Reads that one piece of the vocabulary, nothing else."""
        tid = int(tid)
        if self.kind == "bytes" or self.vocab is None or not len(self.vocab):
            return bytes([tid]) if 0 <= tid < 256 else b""
        if not 0 <= tid < len(self.vocab):
            return b""
        text = self.vocab.text(tid)
        ttype = self.type_of(tid, text) if self.type_of is not None else TOKEN_TYPE_NORMAL
        if ttype in (TOKEN_TYPE_CONTROL, TOKEN_TYPE_UNKNOWN, TOKEN_TYPE_USER_DEFINED):
            return text.encode("utf-8", "surrogateescape")
        if self.kind == "gpt2":
            if ttype != TOKEN_TYPE_NORMAL:
                return b""
            table = _BYTE_DECODER
            return b"".join(bytes([table[c]]) if c in table else c.encode("utf-8", "surrogateescape")
                            for c in text)
        if ttype == TOKEN_TYPE_BYTE and len(text) == 6 and text.startswith("<0x"):
            try:
                return bytes([int(text[3:5], 16)])
            except ValueError:
                return b""
        if ttype != TOKEN_TYPE_NORMAL:
            return b""
        return text.replace(SPM_SPACE, " ").encode("utf-8", "surrogateescape")

    def piece(self, tid: int) -> str:
        """``piece_bytes`` as text (bytes that are not UTF-8 as U+FFFD)."""
        return self.piece_bytes(tid).decode("utf-8", "replace")

    def label(self, tid: int) -> str:
        """Token ``tid``'s text quoted and escaped for a terminal, e.g. ``" world"``."""
        return '"' + escape_label(self.piece_bytes(tid)) + '"'

    def encode(self, text: str, add_bos: bool | None = None) -> list[int]:
        engine = self.engine
        if engine is None:
            ids = list(text.encode("utf-8"))
        elif self.kind == "llama":
            try:
                ids = engine.encode(text)
            except KeyError as exc:      # a byte without a piece: llama.cpp throws too
                raise TokenizerError(f"cannot tokenize the text: {exc.args[0]}") from None
        elif self.kind == "bert":
            ids = engine.encode(text)
        else:
            ids = list(engine.encode(text, add_special_tokens=False).ids)
        bos = self.add_bos if add_bos is None else add_bos
        if bos and self.bos_id is not None:
            ids = [self.bos_id, *ids]
        return ids

    def decode(self, ids: list[int]) -> str:
        if self.kind == "bytes":
            return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")
        if self.kind in ("llama", "bert"):
            # llama_vocab::impl::detokenize: the pieces' bytes, the first token's leading
            # space dropped where the tokenizer added one (token_to_piece's lstrip)
            pieces = [self.piece_bytes(int(i)) for i in ids]
            if pieces and self.add_space_prefix and pieces[0].startswith(b" "):
                pieces[0] = pieces[0][1:]
            return b"".join(pieces).decode("utf-8", errors="replace")
        return self.engine.decode(list(ids), skip_special_tokens=False)


_BYTE_DECODER = _byte_decoder()


def _meta_list(meta: dict, key: str) -> list:
    value = meta.get(key)
    if value is None:
        return []
    return value.tolist() if hasattr(value, "tolist") else list(value)


def _user_defined(tokens: list[str], types: list[int]) -> list[str]:
    return [t for t, ty in zip(tokens, types) if ty == TOKEN_TYPE_USER_DEFINED]


def _legacy_pieces(tokens: list[str]) -> tuple[list[str], list[int]]:
    """An early llama.cpp vocabulary (GGML/GGMF/GGJT) as SentencePiece pieces and types.

    Its converter (``convert-pth-to-ggml.py`` of 2023-03) wrote each piece's text with
    "▁" turned into a space, ``<unk>`` as " ⁇ ", ``<s>``/``</s>`` empty and the 256
    byte pieces (ids 3..258, right after the three specials) as the raw byte, which the
    parser shows as that character or U+FFFD; the loader of the time mapped byte b to
    id b + 3 (legacy-formats.md; llama-legacy/MANIFEST.md "Vocab text").  Files whose
    ids 3..258 do not look like that keep their pieces and get only the space fix.
    """
    pieces = [t.replace(" ", SPM_SPACE) for t in tokens]
    types = [TOKEN_TYPE_NORMAL] * len(tokens)
    bytes_at_3 = len(tokens) >= 259 and all(
        tokens[3 + b] in (chr(b), "\ufffd") for b in range(256))
    if not bytes_at_3:
        return pieces, types
    for i, (name, ttype) in enumerate((("<unk>", TOKEN_TYPE_UNKNOWN), ("<s>", TOKEN_TYPE_CONTROL),
                                       ("</s>", TOKEN_TYPE_CONTROL))):
        pieces[i], types[i] = name, ttype
    for b in range(256):
        pieces[3 + b], types[3 + b] = f"<0x{b:02X}>", TOKEN_TYPE_BYTE
    return pieces, types


def _build_gpt2(model: "ModelFile", vocab: Vocab, legacy):
    meta, tokens, types, path = model.metadata, vocab.texts(), _all_types(model, vocab, legacy), model.path
    from tokenizers import AddedToken, Regex, Tokenizer as HF, decoders, models, pre_tokenizers
    pre = str(meta.get("tokenizer.ggml.pre", "default"))
    regexes = PRE_TOKENIZER_REGEXES.get(pre)
    if regexes is None:
        raise TokenizerError(f"{path}: no pre-tokenizer for tokenizer.ggml.pre {quoted(pre)}; "
                             f"supported: {supported_models()}")
    vocab: dict[str, int] = {}
    for i, t in enumerate(tokens):
        vocab.setdefault(t, i)
    merges = []
    for m in _meta_list(meta, "tokenizer.ggml.merges"):
        a, sep, b = str(m).partition(" ")
        if sep:
            merges.append((a, b))
    hf = HF(models.BPE(vocab=vocab, merges=merges, ignore_merges=pre in _IGNORE_MERGES))
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(r), behavior="isolated") for r in regexes]
        + [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    hf.decoder = decoders.ByteLevel()
    user = _user_defined(tokens, types)
    if user:
        hf.add_tokens([AddedToken(t, normalized=False, special=False) for t in user])
    return hf


def _all_types(model: "ModelFile", vocab: Vocab, legacy: list[int] | None) -> list[int]:
    """Every token's type, for the encoders built over the whole vocabulary (``retype``
    over the decoded pieces: set look-ups, no call per token)."""
    if legacy is not None:
        return legacy
    stored = [int(t) for t in _numbers(model, "tokenizer.ggml.token_type")]
    types = stored[:len(vocab)] + [TOKEN_TYPE_NORMAL] * max(0, len(vocab) - len(stored))
    return retype(model.metadata, vocab.texts(), types) if model.format == "gguf" else types


def _build_bert(model: "ModelFile", vocab: Vocab, legacy):
    from ggscope.model.wpm import WpmVocab  # start-up: WordPiece only for a bert vocabulary
    meta, tokens, types = model.metadata, vocab.texts(), _all_types(model, vocab, legacy)
    unk = int(meta.get("tokenizer.ggml.unknown_token_id", 100))    # llama.cpp's WPM default
    lowercase = bool(meta.get("tokenizer.ggml.normalizer.lowercase", True))
    strip = meta.get("tokenizer.ggml.normalizer.strip_accents")
    users = [(t, i) for i, t in enumerate(tokens) if types[i] == TOKEN_TYPE_USER_DEFINED]
    return WpmVocab.build(tokens, unk, lowercase, None if strip is None else bool(strip), users)


def _numbers(model: "ModelFile", key: str):
    """``key``'s array of numbers as stored (() when absent), read lazily by id; a value
    that is not one is ``TokenizerError`` here, not a traceback at the first read."""
    value = model.metadata.get(key)
    if value is None:
        return ()
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in ("b", "i", "u", "f") and getattr(value, "ndim", 1) == 1 or (
            isinstance(value, (list, tuple)) and all(isinstance(x, (int, float)) for x in value)):
        return value
    raise TokenizerError(f"{model.path}: {key} is not an array of numbers; pass token ids with --tokens")


def _build_llama(model: "ModelFile", vocab: Vocab, type_of) -> SpmEncoder:
    meta = model.metadata
    scores = _numbers(model, "tokenizer.ggml.scores")
    name = str(meta.get("general.name", "")).lower()
    return SpmEncoder(
        vocab, type_of, lambda i: float(scores[i]) if i < len(scores) else 0.0,
        add_space_prefix=bool(meta.get("tokenizer.ggml.add_space_prefix", True)),
        # llama.cpp's load: every special token of a phi-3 model strips the spaces after it
        rstrip_user="phi-3" in name or "phi3" in name)


def load(model: "ModelFile") -> Tokenizer:
    """The tokenizer of ``model``, built from its metadata; ``TokenizerError`` if none.
    Reads no piece of the vocabulary: ``piece_bytes`` reads the one it is asked for,
    ``encode`` the ones its text can use."""
    meta = model.metadata
    if model.format == "rwkv.cpp":
        return Tokenizer("bytes", None, None, False, 256)
    raw = meta.get("tokenizer.ggml.tokens")
    vocab = Vocab(raw if isinstance(raw, StringArray) else _meta_list(meta, "tokenizer.ggml.tokens"))
    kind = meta.get("tokenizer.ggml.model")
    legacy = kind is None and len(vocab) > 0 and model.format in ("ggml", "ggmf", "ggjt")
    if legacy:
        kind = "llama" if "tokenizer.ggml.scores" in meta else "bytes-vocab"
    if not len(vocab):
        raise TokenizerError(f"{model.path}: the file has no vocabulary "
                             f"(tokenizer.ggml.tokens); pass token ids with --tokens")
    legacy_types = None
    if legacy and kind == "llama":
        pieces, legacy_types = _legacy_pieces(vocab.texts())
        vocab = Vocab(pieces)
    if legacy_types is not None:
        type_of = lambda i, text: legacy_types[i]          # noqa: E731
    else:                 # llama.cpp's load-time typing, one token at a time (special_tokens)
        type_of = type_reader(meta, _numbers(model, "tokenizer.ggml.token_type"), model.format == "gguf", len(vocab),
                              lambda t: bool(vocab.find([t])), vocab.text)
    bos = meta.get("tokenizer.ggml.bos_token_id")
    bos = int(bos) if bos is not None else None
    space = bool(meta.get("tokenizer.ggml.add_space_prefix", True))
    if kind == "llama":
        build = _lazy(model.path, _build_llama, model, vocab, type_of)
        add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", True))
        if bos is None and model.format != "gguf":
            bos = 1                       # early llama.cpp: <s> is id 1
    elif kind == "gpt2":
        build = _lazy(model.path, _build_gpt2, model, vocab, legacy_types)
        add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", False))
    elif kind == "bert":
        build = _lazy(model.path, _build_bert, model, vocab, legacy_types)
        add_bos = bool(meta.get("tokenizer.ggml.add_bos_token", False))
        if bos is None and meta.get("tokenizer.ggml.cls_token_id") is not None:
            bos = int(meta["tokenizer.ggml.cls_token_id"])    # llama.cpp: BERT's BOS is [CLS]
    elif kind == "bytes-vocab" and len(vocab) == 256:
        return Tokenizer("bytes", None, None, False, 256)
    else:
        raise TokenizerError(f"{model.path}: no tokenizer for tokenizer.ggml.model "
                             f"{quoted(kind)}; supported: {supported_models()}; "
                             f"pass token ids with --tokens")
    return Tokenizer(str(kind), build, bos, add_bos, len(vocab), vocab, type_of, space)


def _lazy(path: str, build, *args) -> Callable[[], Any]:
    """``build(*args)`` later, its failures as one-line ``TokenizerError``s naming ``path``."""
    def run():
        try:
            return build(*args)
        except ImportError as exc:
            raise TokenizerError(f"the 'tokenizers' package is needed for text prompts ({exc}); "
                                 f"pass token ids with --tokens") from None
        except TokenizerError:
            raise
        except Exception as exc:  # tokenizers raises plain Exceptions on bad vocab data
            raise TokenizerError(f"{path}: cannot build the tokenizer: {exc}") from None
    return run
