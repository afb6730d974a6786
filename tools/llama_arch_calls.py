"""What one model class's functions in llama.cpp's source call, as the rows of
ggscope/facts/llama_arch.py: the keys ``load_arch_hparams`` reads (``hparam_rows``), the
tensors ``load_arch_tensors`` creates (``tensor_rows``, with the flags that make one
optional: ``flag_optional``, ``flag_vars``), the C type of each hparams field
(``field_types``) and the tokenizer names llama-vocab.cpp knows (``vocab_facts``).

Why apart: tools/gen_llama_arch.py reads the source tree and renders the module; how one
function body becomes rows is its own job, and the tests read it on snippets.

Contract: pure functions of the source text; ``ARCH_ENUMS`` (LLM_ARCH_X -> name) is
filled by the caller before rows are made (conditions on the architecture are written
with the names).
"""
from __future__ import annotations

import re

from tools.c_source import match_close, py_bool, py_cond, py_expr, split_args, walk

ARCH_ENUMS: dict[str, str] = {}     # LLM_ARCH_X -> name, filled by read_source
# --- the source, read --------------------------------------------------------------
def field_types(hparams_h: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for ctype, name in re.findall(r"^\s*(uint32_t|int32_t|float|bool|uint64_t|std::string)\s+(\w+)\s*[=;]",
                                  hparams_h, re.M):
        out[name] = ctype
    for ctype, name in re.findall(r"std::array<\s*(uint32_t|int32_t|float|bool)\s*,\s*LLAMA_MAX_\w+\s*>\s+(\w+)",
                                  hparams_h):
        out[name] = ctype + "[]"
    return out


_CTYPES = {"uint32_t": "u32", "int32_t": "i32", "float": "f32", "bool": "bool", "std::string": "str",
           "uint64_t": "u64", "uint16_t": "u16", "int": "i32"}


def hparam_rows(body: str, fields: dict[str, str], kv_names: dict[str, str], local_ok: bool = True):
    rows = []
    for call, args, _loop, conds in walk(body):
        if not call.startswith("ml.get") or not args or not args[0].startswith("LLM_KV_"):
            continue
        kid = args[0]
        if kid not in kv_names:
            continue
        fn = call[3:]
        dest = args[1] if len(args) > 1 else ""
        req_i = {"get_key": 2, "get_arr": 2, "get_arr_n": 2, "get_key_or_arr": 3}[fn]
        if fn == "get_key_or_arr" and len(args) == 3 and args[2] in ("true", "false"):
            req_i = 2                           # the scalar overload (kid, uint32_t &, required)
        req = args[req_i] if len(args) > req_i else "true"
        field = dest[len("hparams."):] if dest.startswith("hparams.") else None
        ctype = None
        if field and field in fields:
            ctype = fields[field]
        elif dest and re.match(r"^\w+$", dest):
            m = re.search(r"\b(uint32_t|int32_t|float|bool|std::string|uint64_t|uint16_t|int)\s+" + dest + r"\b", body)
            ctype = m.group(1) if m else None
        short = None
        if ctype:
            arr = ctype.endswith("[]")
            short = _CTYPES.get(ctype.rstrip("[]"))
            if short and (arr or fn == "get_arr"):
                short += "[]"
        if fn == "get_arr":
            mode = "array"
        elif fn == "get_key_or_arr":
            # a scalar or an array of n entries: n is block_count (n_layer_all), the layers
            # but the next-token-prediction ones (hparams.n_layer()), or a constant
            # (qwen2vl's rope.dimension_sections: 4)
            n = args[2].strip() if len(args) >= 3 and args[2].strip() not in ("true", "false") else ""
            mode = (f"per_{n}" if n.isdigit() else "per_layer_main" if n.endswith("n_layer()")
                    else "per_layer")
        elif fn == "get_arr_n":
            mode = "array_n"
        else:
            mode = "scalar"
        rows.append((kid, short, req.strip() == "true" if req.strip() in ("true", "false") else None, mode,
                     field or dest, conds, tuple(py_cond(c, ARCH_ENUMS) for c in conds)))
    return rows


_FLAG_WORDS = ("TENSOR_NOT_REQUIRED", "TENSOR_SKIP")


def flag_optional(expr: str, known: dict[str, str | None], words=_FLAG_WORDS) -> str | None:
    """When a flags expression includes TENSOR_NOT_REQUIRED or TENSOR_SKIP, as Python;
    "False" / "True" for constant flags; None when it cannot be told."""
    e = " ".join(expr.split())
    while e.startswith("(") and e.endswith(")") and match_close(e, 0, "(", ")") == len(e) - 1:
        e = e[1:-1].strip()
    m = re.fullmatch(r"(.+?)\s*\?\s*(.+?)\s*:\s*(.+)", e)
    if m:
        c, a, b = (py_bool(m.group(1), ARCH_ENUMS), flag_optional(m.group(2), known, words),
                   flag_optional(m.group(3), known, words))
        if None in (c, a, b):
            return None
        return f"(({c}) and ({a})) or (not ({c}) and ({b}))"
    parts = [x.strip() for x in split_args(e.replace("|", ","))]
    out = []
    for x in parts:
        if x in words:
            return "True"
        if x == "0" or x in _FLAG_WORDS + ("TENSOR_DUPLICATED", "TENSOR_SKIP_IF_VIRTUAL", "TENSOR_ALLOW_RESHAPE",
                                           "TENSOR_READ_LAZY"):
            continue
        if x in known:
            if known[x] is None:
                return None
            out.append(known[x])
            continue
        sub = flag_optional(x, known, words) if x.startswith("(") else None
        if sub is None:
            return None
        out.append(sub)
    return " or ".join(f"({o})" for o in out) if out else "False"


def flag_vars(body: str, words=_FLAG_WORDS) -> dict[str, str | None]:
    """Local ``int flags`` variables of load_arch_tensors: when they include one of ``words``."""
    known: dict[str, str | None] = {}
    for m in re.finditer(r"\b(?:const\s+)?int\s+(\w*flags)\s*=\s*([^;]+);|"
                         r"if\s*\(([^{};]*?)\)\s*\{?\s*(\w*flags)\s*\|=\s*([\w\s|]+);|"
                         r"(?<![\w)])\s(\w*flags)\s*\|=\s*([\w\s|]+);", body):
        if m.group(1):
            known[m.group(1)] = flag_optional(m.group(2), known, words)
        elif m.group(4):
            name, add = m.group(4), flag_optional(m.group(5), known, words)
            c = py_bool(m.group(3), ARCH_ENUMS)
            old = known.get(name, "False")
            if add == "False":
                continue
            known[name] = None if None in (old, add, c) else f"({old}) or (({c}) and ({add}))"
        elif m.group(6):
            name, add = m.group(6), flag_optional(m.group(7), known, words)
            old = known.get(name, "False")
            known[name] = None if None in (old, add) else f"({old}) or ({add})"
    return known


def tensor_rows(body: str, tensor_names: dict[str, str]):
    """create_tensor calls as (tensor, suffix, shape, required, duplicated, loop, conds, unless, bid)."""
    rows, dynamic, derive = [], False, []
    for m in re.finditer(r"\bconst\s+(int64_t|int32_t|uint32_t|int|auto|bool)\s+(\w+)\s*=\s*([^;]+);", body):
        derive.append((m.group(2), py_bool(m.group(3), ARCH_ENUMS)))
    # create_tensor: only TENSOR_NOT_REQUIRED makes a tensor optional (check_tensor_dims'
    # required = !(flags & TENSOR_NOT_REQUIRED)); the qkv / gate_up helpers turn TENSOR_SKIP
    # into TENSOR_NOT_REQUIRED | TENSOR_SKIP
    flags_known = flag_vars(body, ("TENSOR_NOT_REQUIRED",))
    flags_helper = flag_vars(body)
    for call, args, loop, conds in walk(body):
        if call == "create_tensor":
            row = _tensor(args[0], args[1], args[2] if len(args) > 2 else "0", tensor_names, loop, conds,
                          flags_known)
            if row is None:
                dynamic = True
            elif row:
                rows.append(row)
        elif call == "create_tensor_qkv":
            _l, bid, e, q, k, v, flags = (args + ["0"] * 7)[:7]
            b = f", {bid}"
            qkv = f"{q} + {k} + {v}"
            for t, s, sh, f, unless in (
                    ("ATTN_QKV", "weight", f"{{{e}, {qkv}}}", "TENSOR_NOT_REQUIRED", None),
                    ("ATTN_QKV", "bias", f"{{{qkv}}}", "TENSOR_NOT_REQUIRED", None),
                    ("ATTN_Q", "weight", f"{{{e}, {q}}}", flags, "ATTN_QKV"),
                    ("ATTN_K", "weight", f"{{{e}, {k}}}", flags, "ATTN_QKV"),
                    ("ATTN_V", "weight", f"{{{e}, {v}}}", flags, "ATTN_QKV"),
                    ("ATTN_Q", "bias", f"{{{q}}}", "TENSOR_NOT_REQUIRED", None),
                    ("ATTN_K", "bias", f"{{{k}}}", "TENSOR_NOT_REQUIRED", None),
                    ("ATTN_V", "bias", f"{{{v}}}", "TENSOR_NOT_REQUIRED", None)):
                row = _tensor(f'tn(LLM_TENSOR_{t}, "{s}"{b})', sh, f, tensor_names, loop, conds, flags_helper, True)
                if row:
                    rows.append(row[:7] + (unless,) + row[8:])  # noqa
        elif call == "create_tensor_gate_up_exps":
            _l, bid, e, ff, ne, flags = (args + ["0"] * 6)[:6]
            b = f", {bid}"
            for t, sh, f, unless in (("FFN_GATE_UP_EXPS", f"{{{e}, {ff} * 2, {ne}}}", "TENSOR_NOT_REQUIRED", None),
                                     ("FFN_GATE_EXPS", f"{{{e}, {ff}, {ne}}}", flags, "FFN_GATE_UP_EXPS"),
                                     ("FFN_UP_EXPS", f"{{{e}, {ff}, {ne}}}", flags, "FFN_GATE_UP_EXPS")):
                row = _tensor(f'tn(LLM_TENSOR_{t}, "weight"{b})', sh, f, tensor_names, loop, conds, flags_helper, True)
                if row:
                    rows.append(row[:7] + (unless,) + row[8:])  # noqa
    return rows, dynamic, [(n, e) for n, e in derive if e is not None]


def _tensor(tn: str, shape: str, flags: str, tensor_names, loop, conds, flags_known=None, skip_optional=False):
    m = re.match(r"^tn\(\s*(LLM_TENSOR_\w+)\s*(.*)\)$", " ".join(tn.split()))
    if not m or m.group(1) not in tensor_names:
        return None
    rest = split_args(m.group(2).lstrip(", ")) if m.group(2).strip() else []
    suffix = rest[0].strip('"') if rest and rest[0].startswith('"') else None
    bids = rest[1:] if suffix is not None else rest
    bid = bids[0] if bids else None
    shape = shape.strip()
    dims = tuple(py_expr(d) for d in split_args(shape[1:-1])) if shape.startswith("{") else None
    f = " ".join(flags.split())
    dup = "TENSOR_DUPLICATED" in f
    known = re.fullmatch(r"[\w\s|]*", f) is not None and all(
        w in ("0", "TENSOR_NOT_REQUIRED", "TENSOR_DUPLICATED", "TENSOR_SKIP", "TENSOR_SKIP_IF_VIRTUAL",
              "TENSOR_ALLOW_RESHAPE", "TENSOR_READ_LAZY") for w in re.findall(r"\w+", f))
    words = _FLAG_WORDS if skip_optional else ("TENSOR_NOT_REQUIRED",)
    required = known and not any(w in re.findall(r"\w+", f) for w in words)
    optional_if = None
    if not known and flags_known is not None:
        opt = flag_optional(f, flags_known, words)
        if opt is not None and opt != "True":
            required, optional_if = True, (None if opt == "False" else opt)
    if bid is not None and bid not in ("i", "il"):
        loop = "other"
    elif bid is None:
        loop = None
    if dup:
        return ()
    return (m.group(1)[len("LLM_TENSOR_"):], suffix, dims, required, "TENSOR_ALLOW_RESHAPE" in f, loop, conds,
            None, bid if loop == "other" else None, tuple(py_cond(c, ARCH_ENUMS) for c in conds), optional_if)


def vocab_facts(vocab: str):
    load = vocab[vocab.index("void llama_vocab::impl::load("):]
    models = sorted(set(re.findall(r'tokenizer_model == "([^"]+)"', load[:load.index("tokenizer_pre.empty()")])))
    bpe = sorted(set(re.findall(r'tokenizer_model == "([^"]+)"', load[load.index('tokenizer_model == "gpt2"') - 20:
                                                                      load.index("type = LLAMA_VOCAB_TYPE_BPE")])))
    bpe += [m for m in re.findall(r'tokenizer_model == "([^"]+)"\)\s*\{[^}]*?type = LLAMA_VOCAB_TYPE_BPE', load)
            if m not in bpe]
    a = load.index("if (type == LLAMA_VOCAB_TYPE_BPE)")
    b = load.index("unknown pre-tokenizer type", a)
    pres = sorted(set(re.findall(r'tokenizer_pre == "([^"]+)"', load[a:b])))
    return models, sorted(set(bpe)), pres
