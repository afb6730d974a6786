"""One engine that runs ``loader_table`` over a parsed GGUF file: llama.cpp's verdict.

Why: the loader rules (GG11xx) must say what llama.cpp's ``llama_model_load`` does with a
file ggml's reader accepted - and the answer depends on one chain of facts (hyper-
parameters -> head sizes -> every tensor's expected shape), so it is computed once here
and each rule reports one kind of issue from it.  The order mirrors llama.cpp: load_arch
(unknown architecture), load_hparams (typed keys, derived sizes, sanity checks),
load_vocab (src/llama-vocab.cpp), load_tensors (create_tensor, done_getting_tensors); a
stage that fails stops the later ones, as in llama.cpp, so each refusal is named once.

Contract: ``predict(mf)`` returns a ``Prediction`` (cached in ``mf.extra``): ``arch``,
``covered`` (the table has the architecture), ``issues`` - ``Issue(kind, message, node
path)`` with kind one of ``unknown-arch``, ``missing-key``, ``key-type``, ``hparam``,
``vocab``, ``missing-tensor``, ``tensor-shape``, ``unexpected-tensor``, ``tensor-type``.
Nothing here reads tensor data; token texts are read only to look for duplicates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ggscope.facts import loader_table as table
from ggscope.facts import llama_arch as gen
from ggscope.rules import loader_generated as generated

__all__ = ["Issue", "Prediction", "predict", "key_name", "tensor_name"]

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


@lru_cache(maxsize=None)
def key_name(attr: str, arch: str) -> str:
    """``"LLM.CONTEXT_LENGTH"`` -> ``"llama.context_length"`` from gguf-py's Keys."""
    import gguf.constants as c
    group, name = attr.split(".")
    return getattr(getattr(c.Keys, group), name).format(arch=arch)


@lru_cache(maxsize=None)
def _tensor_template(member: str) -> str:
    import gguf.constants as c
    return c.TENSOR_NAMES[getattr(c.MODEL_TENSOR, member)]


def tensor_name(t: table.T, i: int | None) -> str:
    base = _tensor_template(t.tensor).replace("{bid}", str(i))
    return f"{base}.{t.suffix}" if t.suffix else base


def _is_block(t: table.T) -> bool:
    return "{bid}" in _tensor_template(t.tensor)


def _eval(expr: str, env: dict):
    try:
        return eval(expr, {"__builtins__": {}}, env)   # noqa: S307 - expressions are ggscope's own table
    except (ZeroDivisionError, TypeError):
        return None


class _Stop(Exception):
    """A stage failed: llama.cpp stops loading here."""


class _Run:
    Stop = _Stop

    def __init__(self, mf):
        self.mf = mf
        self.md = mf.metadata
        self.types = mf.metadata_types
        self.nodes = mf.metadata_nodes
        a = self.md.get("general.architecture")
        self.arch = a if isinstance(a, str) else None
        self.pred = Prediction(self.arch, self.arch in table.ARCHS)

    def add(self, kind: str, message: str, path: str | None = None) -> None:
        self.pred.issues.append(Issue(kind, message, path))

    def node(self, key: str) -> str | None:
        return self.nodes.get(key) or self.nodes.get("general.architecture")

    # --- load_hparams ---------------------------------------------------------------
    def read(self, attr: str, ctype: str, required: bool) -> object:
        key = key_name(attr, self.arch)
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

    def hparams(self) -> dict:
        spec = table.ARCHS[self.arch]
        vals: dict[str, object] = {}
        for attr, ctype, req in table.COMMON_KEYS:
            if attr in ("Attention.KEY_LENGTH", "Attention.VALUE_LENGTH", "Rope.DIMENSION_COUNT"):
                continue              # read below, only when n_head > 0
            vals[attr] = self.read(attr, ctype, bool(req))
        n_layer = _int(vals["LLM.BLOCK_COUNT"])
        env: dict[str, object] = {"n_layer": n_layer}
        for attr, ctype, req in spec.keys:
            if isinstance(req, str):
                req = bool(_eval(req, env))
            vals[attr] = self.read(attr, ctype, req)
        if self.pred.of("missing-key") or self.pred.of("key-type"):
            raise _Stop
        n_embd = _int(vals["LLM.EMBEDDING_LENGTH"])
        per_layer = {}
        for attr in ("LLM.FEED_FORWARD_LENGTH", "Attention.HEAD_COUNT", "Attention.HEAD_COUNT_KV"):
            v = vals[attr]
            if isinstance(v, list):
                key = key_name(attr, self.arch)
                if len(v) != n_layer:
                    self.add("hparam", f"key {key} has wrong array length; expected {n_layer}, got {len(v)}",
                             self.node(key))
                    raise _Stop
                per_layer[attr] = _int(v[0]) if v else 0
            else:
                per_layer[attr] = _int(v) if v is not None else None
            if v is not None and n_layer > table.LLAMA_MAX_LAYERS:
                self.add("hparam", f"n > N_MAX: {n_layer} > {table.LLAMA_MAX_LAYERS} for key "
                         f"{key_name(attr, self.arch)}", self.node(key_name("LLM.BLOCK_COUNT", self.arch)))
                raise _Stop
        n_ff = per_layer["LLM.FEED_FORWARD_LENGTH"] or 0
        n_head = per_layer["Attention.HEAD_COUNT"] or 0
        n_head_kv = per_layer["Attention.HEAD_COUNT_KV"]
        n_head_kv = n_head if n_head_kv is None else n_head_kv
        n_expert = _int(vals["LLM.EXPERT_COUNT"])
        n_expert_used = _int(vals["LLM.EXPERT_USED_COUNT"])
        bc = self.node(key_name("LLM.EXPERT_COUNT", self.arch))
        if n_expert_used > n_expert:
            self.add("hparam", f"GGML_ASSERT(n_expert_used <= n_expert) fails: {n_expert_used} > {n_expert}", bc)
        elif n_expert > 0 and n_expert_used == 0:
            self.add("hparam", "GGML_ASSERT(n_expert_used > 0) fails: experts but none used", bc)
        rope_type = vals["Rope.SCALING_TYPE"]
        if isinstance(rope_type, str) and rope_type not in table.ROPE_SCALING_TYPES:
            k = key_name("Rope.SCALING_TYPE", self.arch)
            self.add("hparam", f"{k} = {rope_type!r} is not one of {', '.join(table.ROPE_SCALING_TYPES)}: "
                     "GGML_ASSERT(rope_scaling_type_train != UNSPECIFIED) fails", self.node(k))
        head_k = head_v = n_rot = 0
        if n_head > 0:
            head_k = head_v = n_embd // n_head
            kl = self.read("Attention.KEY_LENGTH", "u32", False)
            vl = self.read("Attention.VALUE_LENGTH", "u32", False)
            rd = self.read("Rope.DIMENSION_COUNT", "u32", False)
            if self.pred.of("key-type"):
                raise _Stop
            head_k = _int(kl) if kl is not None else head_k
            head_v = _int(vl) if vl is not None else head_v
            n_rot = _int(rd) if rd is not None else head_k
            if self.arch in table.N_ROT_CHECKED and n_rot != head_k:
                self.add("hparam", f"invalid n_rot: {n_rot}, expected {head_k}",
                         self.node(key_name("Rope.DIMENSION_COUNT", self.arch)))
        env.update(n_embd=n_embd, n_ctx_train=_int(vals["LLM.CONTEXT_LENGTH"]), n_ff=n_ff, n_head=n_head,
                   n_head_kv=n_head_kv, n_expert=n_expert, n_expert_used=n_expert_used, head_k=head_k,
                   head_v=head_v, n_rot=n_rot, n_embd_k_gqa=head_k * n_head_kv, n_embd_v_gqa=head_v * n_head_kv,
                   n_embd_gqa=head_v * n_head_kv, longrope=rope_type == "longrope")
        for attr, _ctype, _req in spec.keys:
            env[key_name(attr, self.arch).rsplit(".", 1)[1]] = _num(vals.get(attr))
        for var, expr in spec.derive:
            env[var] = _eval(expr, env)
        for cond, message in spec.checks:
            if _eval(cond, env):
                self.add("hparam", message, self.nodes.get("general.architecture"))
        if self.pred.of("hparam"):
            raise _Stop
        return env

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
            self.add("vocab", f"unknown tokenizer: {model!r}", self.node("tokenizer.ggml.model"))
            raise _Stop
        if model in ("no_vocab", "none"):
            v = self.md.get(key_name("LLM.VOCAB_SIZE", self.arch))
            return _int(v) if v is not None else None
        pre = self.md.get("tokenizer.ggml.pre")
        if model in gen.BPE_MODELS and isinstance(pre, str) and pre and pre not in gen.PRE_TOKENIZERS:
            self.add("vocab", f"unknown pre-tokenizer type: {_q(pre)}", self.node("tokenizer.ggml.pre"))
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
                if model == "gemma4" or pre not in table.MERGES_OPTIONAL_PRE:
                    self.add("vocab", "cannot find tokenizer merges in model file", node)
                    raise _Stop
            elif self.types.get("tokenizer.ggml.merges") != "array[string]":
                self.add("vocab", f"invalid gguf type for tokenizer.ggml.merges: "
                         f"{self.types.get('tokenizer.ggml.merges')}", self.node("tokenizer.ggml.merges"))
                raise _Stop
        self.special_token_types()
        seen: dict[str, int] = {}
        texts = tokens.tolist() if hasattr(tokens, "tolist") else tokens
        for i, text in enumerate(texts):
            if text in seen:
                self.add("vocab", f"token {i} has the same text as token {seen[text]} ({_short(text)}): "
                         "GGML_ASSERT(id_to_token.size() == token_to_id.size()) fails",
                         self.node("tokenizer.ggml.tokens"))
                raise _Stop
            seen[text] = i
        return len(tokens)

    def special_token_types(self) -> None:
        """get_key's typed reads: the pre-tokenizer (str), token_type_count and special
        token ids (u32), the add_* flags (bool)."""
        import gguf.constants as c
        for attr, key in vars(c.Keys.Tokenizer).items():
            if not isinstance(key, str) or "{" in key or key not in self.md:
                continue
            want = ("uint32" if attr.endswith("_ID") or attr == "TOKEN_TYPE_COUNT" else "bool" if attr.startswith("ADD_")
                    else "string" if attr == "PRE" else None)
            if want and self.types.get(key) != want:
                self.add("key-type", f"key {key} has wrong type {_GGUF_SHORT.get(self.types.get(key), '?')} "
                         f"but expected type {_GGUF_SHORT[want]}", self.node(key))
        if self.pred.of("key-type"):
            raise _Stop

    # --- load_tensors ----------------------------------------------------------------
    def tensors(self, env: dict) -> None:
        spec = table.ARCHS[self.arch]
        in_file = {t.name: t for t in self.mf.tensors}
        created: set[str] = set()
        n_layer = env["n_layer"]
        for t in spec.tensors:
            layers = range(n_layer) if _is_block(t) else (None,)
            for i in layers:
                scope = dict(env, i=i)
                if t.when and not _eval(t.when, scope):
                    continue
                name = tensor_name(t, i)
                have = in_file.get(name)
                if have is None:
                    if t.required:
                        self.add("missing-tensor", f"missing tensor '{name}'", self.nodes.get("general.architecture"))
                    continue
                created.add(name)
                want = [None if d == "*" else _eval(d, scope) for d in t.shape]
                if any(w is not None and not isinstance(w, int) for w in want):
                    continue
                ne = list(have.shape) + [1] * (4 - len(have.shape))
                bad = any((j < len(want) and want[j] is not None and want[j] != ne[j]) or (j >= len(want) and ne[j] != 1)
                          for j in range(4))
                if bad:
                    self.add("tensor-shape", f"tensor '{name}' has wrong shape; expected "
                             f"{_fmt(want)}, got {_fmt(list(have.shape))}", have.node_path)
                    continue
                self.check_type(t, name, have, len(want))
        extra = [n for n in in_file if n not in created]
        for n in extra:
            self.add("unexpected-tensor", f"tensor {_q(n)} is not one llama.cpp creates for {self.arch} "
                     f"(done_getting_tensors: wrong number of tensors; expected {len(created)}, got "
                     f"{len(in_file)})", in_file[n].node_path)

    def check_type(self, t: table.T, name: str, have, ndims: int) -> None:
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
        if self.arch == "clip" or self.md.get("general.type") in ("adapter", "imatrix"):
            return self.pred          # a sidecar: ggscope.rules.sidecar judges it by its own loader
        if self.arch not in gen.ARCHS:
            # llm_arch_from_string, then llama_model_mapping's default (src/llama-model.cpp)
            known = self.arch in gen.ARCH_NAMES.values() and self.arch != "(unknown)"
            self.add("unknown-arch", f"unsupported model architecture: {_q(self.arch)}" if known else
                     f"unknown model architecture: {_q(self.arch)}", self.node("general.architecture"))
            return self.pred
        try:
            for attr, ctype, req in table.LOADER_KEYS:
                self.read(attr, ctype, req)
            if self.pred.of("key-type"):
                raise _Stop
            if not self.mf.tensors:
                # a file without tensors is a vocabulary file, read with vocab_only
                # (load_hparams stops after general.name)
                self.vocab()
                return self.pred
            if not self.pred.covered:
                h = generated.hparams(self)
                h["vocab"][0] = self.vocab()
                generated.tensors(self, h)
                return self.pred
            env = self.hparams()
            n_vocab = self.vocab()
            env["n_vocab"] = n_vocab
            self.tensors(env)
        except _Stop:
            pass
        return self.pred


def _int(v) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        return 0
    return v


def _num(v):
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, (int, float)) else 0


def _fmt(ne) -> str:
    return "{" + ", ".join("*" if d is None else str(d) for d in ne) + "}"


def _q(text: str) -> str:
    """File-provided text for a terminal: quoted as is when printable ASCII, else its repr."""
    return f"'{text}'" if text.isascii() and text.isprintable() and "'" not in text else repr(text)


def _short(text) -> str:
    s = repr(text)
    return s if len(s) <= 40 else s[:37] + "..."


def _whole_model(mf):
    """llama.cpp's loader sees a split model whole (llama_model_loader reads every shard's
    tensors, metadata from the first), so the first shard is predicted with all shards'
    tensors; later shards are left to the first (validate skips the family there)."""
    if mf.format != "gguf" or mf.metadata.get("split.no") != 0:
        return mf
    from ggscope.model.split import open_model, shard_paths
    paths = shard_paths(mf.path)
    if not paths or len(paths) < 2:
        return mf
    try:
        return open_model(mf.path)
    except Exception:  # noqa: BLE001 - a missing or unreadable shard is GG803's finding
        return mf


def predict(mf) -> Prediction:
    cache = mf.extra.setdefault("_ggscope_validate", {})
    if "loader" not in cache:
        cache["loader"] = _Run(_whole_model(mf)).run()
    return cache["loader"]
