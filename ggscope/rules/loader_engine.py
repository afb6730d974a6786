"""One engine that predicts llama.cpp's verdict on a parsed GGUF file: the loader's stages in order.

Why: the loader rules (GG11xx) must say what llama.cpp's ``llama_model_load`` does with a
file ggml's reader accepted - and the answer depends on one chain of facts (hyper-
parameters -> head sizes -> every tensor's expected shape), so it is computed once here
and each rule reports one kind of issue from it.  The order mirrors llama.cpp: load_arch
(unknown or unsupported architecture), load_hparams and load_tensors from the table
generated from the pinned llama.cpp (``ggscope.rules.loader_generated`` over
``ggscope.facts.llama_arch``), load_vocab (src/llama-vocab.cpp) between them; a stage that
fails stops the later ones, as in llama.cpp, so each refusal is named once.  Sidecars
(projectors, adapters, control vectors, imatrix files) are left to ``ggscope.rules.sidecar``
and ``ggscope.rules.sidecar_data``.

Contract: ``predict(mf)`` returns a ``Prediction`` (cached in ``mf.extra``): ``arch``,
``covered`` (the generated table has the architecture), ``issues`` - ``Issue(kind, message,
node path)`` with kind one of ``unknown-arch``, ``missing-key``, ``key-type``, ``hparam``,
``vocab``, ``missing-tensor``, ``tensor-shape``, ``unexpected-tensor``, ``tensor-type``,
``abort`` (a GGML_ASSERT at load or context creation).
Nothing here reads tensor data; token bytes are read only to look for duplicates
(``ggscope.rules.vocab_bytes``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ggscope.core.escape import llama_quoted
from ggscope.facts import llama_arch as gen, upstream
from ggscope.facts.llama_loader import key as llama_key
from ggscope.model.split import open_model, shard_paths
from ggscope.rules import loader_generated as generated, vocab_bytes
from ggscope.rules.common import file_cache

__all__ = ["Issue", "Prediction", "predict", "LOADER_KEYS"]

# llama_model_loader's constructor, for every file: general.file_type read as u32 (ftype),
# split.count as u16 (n_split) - src/llama-model-loader.cpp
LOADER_KEYS: tuple[tuple[str, str, bool], ...] = (
    ("GENERAL_FILE_TYPE", "u32", False),
    ("SPLIT_COUNT", "u16", False),
)

# GGUF types a C-typed llama_model_loader::get_key accepts (GGUFMeta::GKV: exact match)
_ACCEPTS = {"u16": ("uint16",), "u32": ("uint32",), "f32": ("float32",), "bool": ("bool",), "str": ("string",),
            "u32[]": ("uint32", "array[int32]", "array[uint32]")}
_C_NAMES = {"u16": "u16", "u32": "u32", "f32": "f32", "bool": "bool", "str": "str", "u32[]": "u32 or an array of i32/u32"}
_GGUF_SHORT = {"uint8": "u8", "int8": "i8", "uint16": "u16", "int16": "i16", "uint32": "u32", "int32": "i32",
               "float32": "f32", "bool": "bool", "string": "str", "uint64": "u64", "int64": "i64",
               "float64": "f64"}
# ggml types no matrix multiplication / binary op kernel takes: a weight stored so loads
# (create_tensor does not check types) and crashes at the first evaluation.
_NO_MATMUL = frozenset({"I8", "I16", "I32", "I64", "F64"})
_VECTOR_TENSORS = frozenset({"ATTN_SINKS", "ROPE_FREQS", "ROPE_FACTORS_LONG", "ROPE_FACTORS_SHORT",
                             "FFN_EXP_PROBS_B", "FFN_ACT"})


@dataclass(frozen=True)
class Issue:
    kind: str
    message: str
    path: str | None = None


@dataclass
class Prediction:
    arch: str | None
    covered: bool
    issues: list[Issue] = field(default_factory=list)

    def of(self, kind: str) -> list[Issue]:
        return [i for i in self.issues if i.kind == kind]


class _Stop(Exception):
    """A stage failed: llama.cpp stops loading here."""



@lru_cache(maxsize=1)
def _typed_tokenizer_keys() -> tuple[tuple[str, str], ...]:
    """(key, GGUF type get_key reads it as) of gguf-py's ``Keys.Tokenizer`` keys that have
    one - the pre-tokenizer (string), token_type_count and the special token ids (uint32),
    the add_* flags (bool) - in gguf-py's order; per process, not per file."""
    out = []
    for attr, key in upstream.tokenizer_keys().items():      # gguf-py's Keys.Tokenizer
        want = ("uint32" if attr.endswith("_ID") or attr == "TOKEN_TYPE_COUNT" else "bool" if attr.startswith("ADD_")
                else "string" if attr == "PRE" else None)
        if "{" not in key and want:
            out.append((key, want))
    return tuple(out)

class _Run:
    Stop = _Stop

    def __init__(self, mf):
        self.mf = mf
        self.md = mf.metadata
        self.types = mf.metadata_types
        self.nodes = mf.metadata_nodes
        a = self.md.get("general.architecture")
        self.arch = a if isinstance(a, str) else None
        self.pred = Prediction(self.arch, self.arch in gen.ARCHS)

    def add(self, kind: str, message: str, path: str | None = None) -> None:
        self.pred.issues.append(Issue(kind, message, path))

    def node(self, key: str) -> str | None:
        return self.nodes.get(key) or self.nodes.get("general.architecture")

    # --- load_hparams ---------------------------------------------------------------
    def read(self, kv: str, ctype: str, required: bool) -> object:
        key = llama_key(kv, self.arch)
        if key not in self.md:
            if required:
                self.add("missing-key", f"key not found in model: {key}", self.nodes.get("general.architecture"))
            return None
        got = self.types.get(key, "")
        if got not in _ACCEPTS[ctype]:
            self.add("key-type", f"key {key} has wrong type {_GGUF_SHORT.get(got, got)} but expected type "
                     f"{_C_NAMES[ctype]}", self.node(key))
            return None
        v = self.md[key]
        if ctype == "u32[]" and got.startswith("array"):
            vals = list(v) if len(v) < 1 << 20 else []
            return vals
        return v

    # --- load_vocab (src/llama-vocab.cpp llama_vocab::impl::load) ---------------------
    def vocab(self) -> int | None:
        node = self.nodes.get("general.architecture")
        model = self.md.get("tokenizer.ggml.model")
        if "tokenizer.ggml.model" not in self.md:
            self.add("vocab", "key not found in model: tokenizer.ggml.model", node)
            raise _Stop
        if self.types.get("tokenizer.ggml.model") != "string":
            self.add("key-type", "key tokenizer.ggml.model has wrong type "
                     f"{_GGUF_SHORT.get(self.types.get('tokenizer.ggml.model'), '?')} but expected type str",
                     self.node("tokenizer.ggml.model"))
            raise _Stop
        if model not in gen.TOKENIZER_MODELS:
            self.add("vocab", f"unknown tokenizer: {llama_quoted(model)}", self.node("tokenizer.ggml.model"))
            raise _Stop
        if model in ("no_vocab", "none"):
            v = self.md.get(llama_key("VOCAB_SIZE", self.arch))
            return _int(v) if v is not None else None
        pre = self.md.get("tokenizer.ggml.pre")
        if model in gen.BPE_MODELS and isinstance(pre, str) and pre and pre not in gen.PRE_TOKENIZERS:
            self.add("vocab", f"unknown pre-tokenizer type: {llama_quoted(pre)}", self.node("tokenizer.ggml.pre"))
            raise _Stop
        tokens = self.md.get("tokenizer.ggml.tokens")
        if tokens is None:
            self.add("vocab", "cannot find tokenizer vocab in model file", node)
            raise _Stop
        if self.types.get("tokenizer.ggml.tokens") != "array[string]":
            self.add("vocab", f"tokenizer.ggml.tokens is {self.types.get('tokenizer.ggml.tokens')}; "
                     "gguf_get_arr_str asserts an array of strings", self.node("tokenizer.ggml.tokens"))
            raise _Stop
        if model in gen.BPE_MODELS:
            pre = self.md.get("tokenizer.ggml.pre")
            if "tokenizer.ggml.merges" not in self.md:
                if model == "gemma4" or pre != "kimi-k2":     # is_kimi_k2: merges optional
                    self.add("vocab", "cannot find tokenizer merges in model file", node)
                    raise _Stop
            elif self.types.get("tokenizer.ggml.merges") != "array[string]":
                self.add("vocab", f"invalid gguf type for tokenizer.ggml.merges: "
                         f"{self.types.get('tokenizer.ggml.merges')}", self.node("tokenizer.ggml.merges"))
                raise _Stop
        self.special_token_types()
        dup = vocab_bytes.first_duplicate(tokens, vocab_bytes.memo_of(self.mf))
        if dup is not None:
            i, j = dup
            self.add("vocab", f"token {i} has the same text as token {j} ({_short(tokens[i])}): "
                     "GGML_ASSERT(id_to_token.size() == token_to_id.size()) fails",
                     self.node("tokenizer.ggml.tokens"))
            raise _Stop
        return len(tokens)

    def special_token_types(self) -> None:
        """get_key's typed reads: the pre-tokenizer (str), token_type_count and special
        token ids (u32), the add_* flags (bool)."""
        for key, want in _typed_tokenizer_keys():
            if key in self.md and self.types.get(key) != want:
                self.add("key-type", f"key {key} has wrong type {_GGUF_SHORT.get(self.types.get(key), '?')} "
                         f"but expected type {_GGUF_SHORT[want]}", self.node(key))
        if self.pred.of("key-type"):
            raise _Stop

    def check_type(self, t, name: str, have, ndims: int) -> None:
        vector = t.suffix == "bias" or "NORM" in t.tensor or t.tensor in _VECTOR_TENSORS or ndims == 1
        if vector and have.type != "F32":
            self.add("tensor-type", f"tensor '{name}' is {have.type}; it is added or multiplied into F32 "
                     "activations and ggml's CPU kernels take only F32 there (crash at the first evaluation)",
                     have.node_path)
        elif not vector and have.type in _NO_MATMUL:
            self.add("tensor-type", f"tensor '{name}' is {have.type}; no matrix-multiplication kernel takes "
                     f"{have.type} weights (crash at the first evaluation)", have.node_path)

    def run(self) -> Prediction:
        if self.arch is None:
            return self.pred
        if self.arch in ("clip", "controlvector") or self.md.get("general.type") in ("adapter", "imatrix"):
            return self.pred          # a sidecar: ggscope.rules.sidecar judges it by its own loader
        if self.arch not in gen.ARCHS:
            # llm_arch_from_string, then llama_model_mapping's default (src/llama-model.cpp)
            known = self.arch in gen.ARCH_NAMES.values() and self.arch != "(unknown)"
            self.add("unknown-arch", f"unsupported model architecture: {llama_quoted(self.arch)}" if known else
                     f"unknown model architecture: {llama_quoted(self.arch)}", self.node("general.architecture"))
            return self.pred
        try:
            for attr, ctype, req in LOADER_KEYS:
                self.read(attr, ctype, req)
            if self.pred.of("key-type"):
                raise _Stop
            if not self.mf.tensors:
                # a file without tensors is a vocabulary file, read with vocab_only
                # (load_hparams stops after general.name)
                self.vocab()
                return self.pred
            h = generated.hparams(self)
            h["vocab"][0] = self.vocab()
            generated.tensors(self, h)
        except _Stop:
            pass
        return self.pred


def _int(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        return 0
    return v


def _short(text) -> str:
    s = llama_quoted(text)
    return s if len(s) <= 40 else s[:37] + "..."


def _whole_model(mf):
    """llama.cpp's loader sees a split model whole (llama_model_loader reads every shard's
    tensors, metadata from the first), so the first shard is predicted with all shards'
    tensors; later shards are left to the first (validate skips the family there)."""
    if mf.format != "gguf" or mf.metadata.get("split.no") != 0:
        return mf
    paths = shard_paths(mf.path)
    if not paths or len(paths) < 2:
        return mf
    try:
        return open_model(mf.path)
    except Exception:  # noqa: BLE001 - a missing or unreadable shard is GG803's finding
        return mf


def predict(mf) -> Prediction:
    cache = file_cache(mf)
    if "loader" not in cache:
        cache["loader"] = _Run(_whole_model(mf)).run()
    return cache["loader"]
