"""llama.cpp's load_hparams / load_tensors, run from the generated table (``ggscope.facts.llama_arch``).

Why: the table covers every architecture the pinned llama.cpp knows, read from its source
by tools/gen_llama_arch.py, with the conditions around each call as Python; a call whose
condition ggscope cannot evaluate is judged only where the answer does not depend on it
(a required tensor inside an unknown ``if`` is not demanded; a tensor any branch may create
is not "unexpected"; a flags variable that may include TENSOR_NOT_REQUIRED makes the tensor
optional), so nothing is guessed.  Asserts and throws of load_arch_hparams /
load_arch_tensors whose conditions evaluate are errors quoting them.

Contract: ``hparams(run, checks=True)`` adds ``missing-key`` / ``key-type`` / ``hparam`` issues and returns
the variables of ``LLAMA_LOAD_LOCALS`` (per block: ``env(i)``) or raises ``run.Stop``;
``tensors(run, env)`` adds ``missing-tensor`` / ``tensor-shape`` / ``unexpected-tensor``
issues.  ``run`` is loader_engine's ``_Run`` (``md``, ``types``, ``add``, ``node``, ``mf``).
"""
from __future__ import annotations

from functools import lru_cache

from ggscope.core.escape import llama_quoted, quoted
from ggscope.facts import llama_arch as gen
from ggscope.facts.llama_loader import key, tensor_name, tensor_pattern

__all__ = ["hparams", "tensors", "certain", "LAYER_MAX"]

LAYER_MAX = 512        # LLAMA_MAX_LAYERS, src/llama-hparams.h
EXPERT_MAX = 512       # LLAMA_MAX_EXPERTS
_SCALAR = {"u32": ("uint32",), "i32": ("int32",), "f32": ("float32",), "bool": ("bool",), "str": ("string",),
           "u64": ("uint64",), "u16": ("uint16",)}
_SHORT = {"uint8": "u8", "int8": "i8", "uint16": "u16", "int16": "i16", "uint32": "u32", "int32": "i32",
          "float32": "f32", "bool": "bool", "string": "str", "uint64": "u64", "int64": "i64", "float64": "f64"}


def _accepts(h, got: str) -> bool:
    base = (h.ctype or "").rstrip("[]")
    if base not in _SCALAR:
        return True
    if h.mode.startswith("per_"):
        ints = ("uint32", "int32") if base in ("u32", "i32") else _SCALAR[base]
        return got in _SCALAR[base] or got in tuple(f"array[{t}]" for t in ints)
    if h.mode in ("array", "array_n"):
        return got.startswith("array")
    return got in _SCALAR[base]


def _eval(expr, env):
    try:
        v = eval(expr, {"__builtins__": {"max": max, "min": min}}, env)   # noqa: S307 - generated table
    except Exception:  # noqa: BLE001 - an unknown variable: the dimension is not checked
        return None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == int(v) else None


def _int(v, default=0):
    """An integer value from the file (numpy integers of arrays included), else ``default``."""
    if v is None or isinstance(v, (bool, str, bytes)):
        return default
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return default


@lru_cache(maxsize=64)
def _keyed(arch: str) -> tuple[tuple, ...]:
    """``(H, its GGUF key)`` of every ``get_key`` call of ``arch``'s load_hparams, in order
    (COMMON first): a fact of the table, made once per architecture, not per file."""
    return tuple((h, key(h.kv, arch)) for h in (*gen.COMMON, *gen.ARCHS[arch].hparams))


@lru_cache(maxsize=64)
def _defaults(arch: str) -> dict:
    """llama_hparams' initial values with ``arch``'s preset over them, as numbers (``_num``)."""
    return {d: _num(v) for d, v in {**gen.HPARAM_DEFAULTS, **gen.ARCHS[arch].preset}.items()}


def hparams(run, checks: bool = True) -> dict:
    arch = run.arch
    spec = gen.ARCHS[arch]
    vals: dict[str, object] = {}
    keyed = _keyed(arch)
    for h, k in keyed:
        if k not in run.md:
            if h.required and not h.conds:
                run.add("missing-key", f"key not found in model: {k}", run.node("general.architecture"))
            continue
        got = run.types.get(k, "")
        if not h.conds and not _accepts(h, got):
            want = h.ctype.rstrip("[]")
            run.add("key-type", f"key {k} has wrong type {_SHORT.get(got, got)} but expected type {want}"
                    if h.mode == "scalar" else f"key {k} has wrong type {_SHORT.get(got, got)} for {h.mode} "
                    f"{want}", run.node(k))
            continue
        if h.mode == "scalar" and got.startswith("array"):
            continue
        vals.setdefault(h.dest, run.md[k])
    if run.pred.of("missing-key") or run.pred.of("key-type"):
        raise run.Stop
    bc_key = key("BLOCK_COUNT", arch)
    n_all = _int(vals.get("n_layer_all"))
    if not 0 < n_all <= LAYER_MAX:
        run.add("hparam", f"GGML_ASSERT(hparams.n_layer_all > 0 && hparams.n_layer_all <= LLAMA_MAX_LAYERS) "
                f"fails: {bc_key} = {n_all}", run.node(bc_key))
        raise run.Stop
    nextn = _int(vals.get("n_layer_nextn"))
    if nextn > n_all:
        run.add("hparam", f"GGML_ASSERT(hparams.n_layer_nextn <= hparams.n_layer_all) fails: {nextn} > {n_all}",
                run.node(key("NEXTN_PREDICT_LAYERS", arch)))
        raise run.Stop
    rope = vals.get("rope_scaling")
    if isinstance(rope, str) and rope not in gen.ROPE_SCALING_TYPES:
        k = key("ROPE_SCALING_TYPE", arch)
        run.add("hparam", f"{k} = {quoted(rope)} is not one of {', '.join(gen.ROPE_SCALING_TYPES)}: "
                "GGML_ASSERT(hparams.rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED) failed",
                run.node(k))
        raise run.Stop
    per_layer: dict[str, list] = {}
    for h, k in keyed:
        v = run.md.get(k)
        if not h.mode.startswith("per_") or v is None or not run.types.get(k, "").startswith("array"):
            continue
        # get_key_or_arr's n: block_count, the layers but the nextn ones, or a constant
        n = n_all if h.mode == "per_layer" else n_all - nextn if h.mode == "per_layer_main" else int(h.mode[4:])
        if len(v) != n:
            run.add("hparam", f"key {k} has wrong array length; expected {n}, got {len(v)}", run.node(k))
            raise run.Stop
        if h.mode == "per_layer":
            per_layer[h.dest] = [_int(x) for x in v]
    n_expert = _int(vals.get("n_expert"))
    used = per_layer.get("n_expert_used_arr") or [_int(vals.get("n_expert_used_arr"))]
    groups = _int(vals.get("n_expert_groups"))
    ek = run.node(key("EXPERT_COUNT", arch))
    for ok, text in ((n_expert <= EXPERT_MAX, "hparams.n_expert <= LLAMA_MAX_EXPERTS"),
                     (max(used) <= n_expert, "n_expert_used_max <= hparams.n_expert"),
                     (n_expert == 0 or max(used) > 0, "n_expert_used_max > 0"),
                     (n_expert == 0 or groups < n_expert, "hparams.n_expert_groups < hparams.n_expert"),
                     (n_expert > 0 or groups == 0, "hparams.n_expert_groups == 0")):
        if not ok:
            run.add("hparam", f"GGML_ASSERT({text}) fails (src/llama-model.cpp load_hparams)", ek)
            raise run.Stop

    def layer_val(dest, i, fallback):
        arr = per_layer.get(dest)
        if arr is not None:
            return arr[i] if i < len(arr) else 0
        v = vals.get(dest)
        return _int(v) if v is not None else fallback

    n_embd = _int(vals.get("n_embd"))
    base = dict(_defaults(arch))
    base.update({d: _num(v) for d, v in vals.items() if _num(v) is not None})
    base["arch"] = arch
    names = frozenset(t.name for t in run.mf.tensors)
    base["has"] = names.__contains__          # ml.get_weight(name) != nullptr
    base["load_mtp"] = False                  # llama_model_default_params: MTP layers are skipped
    base["n_token_types"] = _int(run.md.get("tokenizer.ggml.token_type_count"))
    n_layer = n_all - nextn

    def env(i: int | None) -> dict:
        j = i if i is not None and i < n_all else 0
        n_head = layer_val("n_head_arr", j, 0)
        n_head_kv = layer_val("n_head_kv_arr", j, n_head)
        hk = _int(vals.get("n_embd_head_k_full"), n_embd // n_head if n_head else 0) if n_head else 0
        hv = _int(vals.get("n_embd_head_v_full"), n_embd // n_head if n_head else 0) if n_head else 0
        rot = _int(vals.get("n_rot_full"), hk) if n_head else 0
        e = dict(base)
        e.update(n_layer=n_layer, n_layer_all=n_all, n_layer_nextn=nextn, n_embd=n_embd, n_head=n_head,
                 n_head_kv=n_head_kv, n_embd_head_k=hk, n_embd_head_v=hv, n_embd_k_gqa=hk * n_head_kv,
                 n_embd_v_gqa=hv * n_head_kv, n_embd_gqa=hv * n_head_kv, n_ff=layer_val("n_ff_arr", j, 0),
                 n_rot=rot, n_expert=n_expert, n_expert_used=used[j] if len(used) > 1 else used[0],
                 n_ctx_train=_int(vals.get("n_ctx_train")), n_vocab=run_vocab[0], i=i, il=i,
                 n_embd_head_k_full=hk, n_embd_head_v_full=hv, n_rot_full=rot)
        if "n_ff_exp_arr" in per_layer or "n_ff_exp_arr" in vals:
            e["n_ff_exp"] = layer_val("n_ff_exp_arr", j, 0)
        for name, expr in spec.layer_flags:
            v = _value(expr, e) if i is not None else None
            if v is not None:
                e[name] = bool(v)
        for name, expr in spec.derive:
            v = _value(expr, e)
            if v is not None:
                e[name] = v
            else:
                e.pop(name, None)
        return e

    run_vocab = [None]
    n_head0 = layer_val("n_head_arr", 0, 0)
    if n_head0:      # load_hparams: "sanity check for n_rot" of llama, deci, falcon, llama-embed
        if arch in ("llama", "deci", "falcon", "llama-embed"):
            hk = _int(vals.get("n_embd_head_k_full"), n_embd // n_head0)
            rot = _int(vals.get("n_rot_full"), hk)
            if rot != hk:
                run.add("hparam", f"invalid n_rot: {rot}, expected {hk}", run.node(key("ROPE_DIMENSION_COUNT", arch)))
                raise run.Stop
    h = {"env": env, "vocab": run_vocab, "n_layer": n_layer, "n_all": n_all}
    if checks:
        _checks(run, spec, "hparams", h)
    return h


def _checks(run, spec, stage: str, h: dict) -> None:
    """The GGML_ASSERTs and throws of load_arch_hparams / load_arch_tensors whose conditions
    ggscope can evaluate: a failed assert aborts the process, a throw refuses the file."""
    e = h["env"](None)
    for st, kind, cond, text, when in spec.checks:
        if st != stage or certain(when, e) is not True:
            continue
        if kind == "throw":
            run.add("hparam", text.replace("{arch}", run.arch), run.node("general.architecture"))
            raise run.Stop
        v = _value(cond, e)
        if v is not None and not v:
            run.add("abort", f"GGML_ASSERT({text}) failed: llama.cpp aborts ({spec.cls})",
                    run.node("general.architecture"))
            raise run.Stop


def certain(when, env) -> bool | None:
    """True when every condition holds, False when one fails, None when one is unknown."""
    result: bool | None = True
    for w in when:
        v = _value(w, env) if w is not None else None
        if v is None:
            result = None
        elif not v:
            return False
    return result


def _value(expr, env):
    """A table expression's value: an int, a bool, or None when it cannot be evaluated."""
    if expr is None:
        return None
    try:
        v = eval(expr, {"__builtins__": {"max": max, "min": min}}, env)   # noqa: S307 - generated table
    except Exception:  # noqa: BLE001 - an unknown variable
        return None
    if isinstance(v, bool):
        return v
    if isinstance(v, str):
        return None
    return bool(v) if isinstance(v, (int, float)) and expr.strip().startswith("not ") else v


def _num(v):
    if isinstance(v, bool):
        return int(v)
    return v if isinstance(v, (int, float)) else None


def tensors(run, h: dict) -> None:
    spec = gen.ARCHS[run.arch]
    env, n_layer, n_all = h["env"], h["n_layer"], h["n_all"]
    in_file = {t.name: t for t in run.mf.tensors}
    arch_node = run.nodes.get("general.architecture")
    created: set[str] = set()
    _checks(run, spec, "tensors", h)
    envs: dict = {}

    def env_of(i):
        if i not in envs:
            envs[i] = env(i)
        return envs[i]
    for t in spec.tensors:
        block = "%d" in gen.TENSOR_NAMES[t.tensor]
        if t.loop in ("n_layer", "n_layer_all") and block:
            layers = range(n_layer if t.loop == "n_layer" else n_all)
        elif block:                           # another block index: any block of the file may be it
            for name in in_file:
                m = tensor_pattern(t).match(name)
                if m and int(m.group(1)) < n_all:
                    created.add(name)
            continue
        else:
            layers = (None,)
        for i in layers:
            sure = certain(t.when, env_of(i)) if t.conds else True
            if sure is False:
                continue                      # this branch does not run: the tensor is not created here
            name = tensor_name(t, i)
            have = in_file.get(name)
            if have is None:
                alt = t.unless and any(n in in_file for n in _alts(t, i))
                opt = _value(t.optional_if, env_of(i)) if t.optional_if else False
                if t.required and sure and not alt and opt is not None and not opt:
                    run.add("missing-tensor", f"missing tensor '{name}'", arch_node)
                continue
            created.add(name)
            if t.shape is None or t.reshape:
                continue
            want = [None if d is None else _eval(d, env_of(i)) for d in t.shape]
            ne = list(have.shape) + [1] * (4 - len(have.shape))
            if len(want) > 4:
                continue
            bad = any((j < len(want) and want[j] is not None and want[j] != ne[j]) or (j >= len(want) and ne[j] != 1)
                      for j in range(4))
            if bad and sure and not _other_shape_ok(spec, t, i, ne, env_of(i)):
                run.add("tensor-shape", f"tensor '{name}' has wrong shape; expected "
                        f"{_fmt(want)}, got {_fmt(list(have.shape))}", have.node_path)
            elif not bad:
                run.check_type(t, name, have, len(want))
    if not spec.dynamic:
        extra = [n for n in in_file if n not in created]
        for n in extra:
            run.add("unexpected-tensor", f"tensor {llama_quoted(n)} is not one llama.cpp creates for {run.arch} "
                    f"(done_getting_tensors: wrong number of tensors; expected {len(created)}, got "
                    f"{len(in_file)})", in_file[n].node_path)
    if not run.pred.issues:
        _mmap_alignment(run, [in_file[n] for n in created])
    if not run.pred.issues:
        _graph_checks(run, spec, env_of(None))


TENSOR_ALIGNMENT = 32      # ggml/src/ggml-impl.h


def _mmap_alignment(run, tensors) -> None:
    """With mmap (llama.cpp's default) the CPU buffer starts at the first tensor's data:
    llama_model_base::load_tensors -> ggml_backend_dev_buffer_from_host_ptr(addr + first)
    -> ggml_backend_cpu_buffer_from_ptr asserts that it is aligned to TENSOR_ALIGNMENT."""
    split = run.md.get("split.count")
    if not tensors or (isinstance(split, int) and split > 1):
        return
    first = min(t.offset for t in tensors)
    if first % TENSOR_ALIGNMENT:
        run.add("abort", f"the first tensor's data starts at byte {first}, not a multiple of {TENSOR_ALIGNMENT}: "
                "with mmap GGML_ASSERT((uintptr_t)ptr % TENSOR_ALIGNMENT == 0 && \"buffer pointer must be "
                "aligned\") fails (ggml-backend.cpp ggml_backend_cpu_buffer_from_ptr)",
                run.node("general.alignment"))


def _graph_checks(run, spec, e) -> None:
    """The graph constructor's GGML_ASSERTs (llama_context reserves a graph at creation)."""
    for st, _kind, cond, text, _when in spec.checks:
        v = _value(cond, e) if st == "graph" else None
        if v is not None and not v:
            run.add("abort", f"GGML_ASSERT({text}) failed when the context builds the graph "
                    f"({spec.cls}::graph): llama.cpp aborts", run.node("general.architecture"))
            return


def _alts(t, i):
    for suffix in ("weight", "bias"):
        name = gen.TENSOR_NAMES[t.unless]
        yield (name.replace("%d", str(i), 1) if i is not None else name) + "." + suffix


def _other_shape_ok(spec, t, i, ne, env) -> bool:
    """Another create_tensor call of the same tensor (another branch) accepts this shape."""
    for o in spec.tensors:
        if o is t or o.tensor != t.tensor or o.suffix != t.suffix or o.shape is None:
            continue
        want = [None if d is None else _eval(d, env) for d in o.shape]
        if len(want) <= 4 and not any((j < len(want) and want[j] is not None and want[j] != ne[j]) or
                                      (j >= len(want) and ne[j] != 1) for j in range(4)):
            return True
    return False


def _fmt(ne) -> str:
    return "{" + ", ".join("*" if d is None else str(d) for d in ne) + "}"
