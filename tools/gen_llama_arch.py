"""Generate ggscope/facts/llama_arch.py from the llama.cpp source of one pinned version.

Why: what llama.cpp's loader reads and creates for each architecture changes with every
release; transcribing it by hand covers a few architectures and drifts.  This script reads
the source llama-cpp-python 0.3.36 vendors and writes the table as data, so upgrading
llama.cpp is re-running it:

* src/llama-arch.cpp: ``LLM_ARCH_NAMES``, ``LLM_KV_NAMES``, ``LLM_TENSOR_NAMES``;
* src/llama-model.cpp: ``llama_model_mapping`` (architecture -> model class) and
  ``llama_model_base::load_hparams`` (the keys read for every architecture);
* src/models/models.h (class inheritance) and src/models/*.cpp: each class's graph
  constructor (its top-level GGML_ASSERTs over hyperparameters: they abort at context
  creation) and its
  ``load_arch_hparams`` (``ml.get_key`` / ``get_key_or_arr`` / ``get_arr`` calls with their
  required flag and the conditions around them) and ``load_arch_tensors``
  (``create_tensor`` calls with shape expressions, flags, the loop over layers and the
  conditions around them; the helpers ``create_tensor_qkv`` and
  ``create_tensor_gate_up_exps`` expanded as llama-model.cpp defines them);
* src/llama-hparams.h: the C type of each hparams field (the GGUF type get_key accepts);
* src/llama-vocab.cpp: the tokenizer models and BPE pre-tokenizer names it knows;
* tools/mtmd/clip-impl.h: the projector types clip.cpp knows.

Usage: ``python -m tools.gen_llama_arch LLAMA_CPP_DIR [--check]``; without a directory the
script downloads the sdist (``pip download llama-cpp-python==0.3.36 --no-binary :all:
--no-deps``) into a temporary directory.  ``--check`` exits 1 when the checked-in module
differs from what the source makes.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tools.c_source import (checks, cmap, function_body, hparam_defaults, literal, match_close, py_bool, py_cond,
                            py_expr, split_args, strip_comments, walk)

PINNED_PACKAGE = "llama-cpp-python==0.3.36"
OUT = Path(__file__).resolve().parent.parent / "ggscope" / "facts" / "llama_arch.py"

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
            mode = "per_layer"
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


def read_source(root: Path) -> dict:
    src = root / "src"
    arch_cpp = strip_comments((src / "llama-arch.cpp").read_text())
    model_cpp = strip_comments((src / "llama-model.cpp").read_text())
    models_h = strip_comments((src / "models" / "models.h").read_text())
    hparams_h = strip_comments((src / "llama-hparams.h").read_text())
    arch_names = cmap(arch_cpp, "LLM_ARCH_NAMES")
    ARCH_ENUMS.clear()
    ARCH_ENUMS.update(arch_names)
    kv_names = cmap(arch_cpp, "LLM_KV_NAMES")
    tensor_names = cmap(arch_cpp, "LLM_TENSOR_NAMES")
    fields = field_types(hparams_h)
    rope_types = list(cmap(model_cpp, "LLAMA_ROPE_SCALING_TYPES").values())
    mapping_body = function_body(model_cpp, r"llama_model \* llama_model_mapping\([^)]*\)\s*\{")
    arch_class: dict[str, str] = {}
    pending: list[str] = []
    for m in re.finditer(r"case\s+(LLM_ARCH_\w+)\s*:|return\s+new\s+(llama_model_\w+)\s*\(", mapping_body):
        if m.group(1):
            pending.append(m.group(1))
        else:
            for a in pending:
                arch_class[a] = m.group(2)
            pending = []
    parents = dict(re.findall(r"struct\s+(llama_model_\w+)\s*:\s*public\s+(llama_model_\w+)", models_h))
    bodies: dict[tuple[str, str], str] = {}
    graphs: dict[str, list[str]] = {}
    for f in sorted((src / "models").glob("*.cpp")):
        text = strip_comments(f.read_text())
        for m in re.finditer(r"(llama_model_\w+)::graph(?:<\w+>)?::graph\s*\([^)]*\)\s*:[^{]*\{", text):
            b = m.end() - 1
            graphs.setdefault(m.group(1), []).append(text[b + 1:match_close(text, b, "{", "}")])
        for m in re.finditer(r"void\s+(llama_model_\w+)::(load_arch_hparams|load_arch_tensors)\s*\([^)]*\)\s*\{", text):
            b = m.end() - 1
            bodies[(m.group(1), m.group(2))] = text[b + 1:match_close(text, b, "{", "}")]

    def body(cls: str, fn: str) -> str:
        while cls:
            if (cls, fn) in bodies:
                return bodies[(cls, fn)]
            cls = parents.get(cls)
        return ""

    base = function_body(model_cpp, r"void llama_model_base::load_hparams\(llama_model_loader & ml\)\s*\{")
    swa = function_body(model_cpp, r"void llama_model_base::load_swa_pattern\([^)]*\)\s*\{")
    common = hparam_rows(base, fields, kv_names)
    swa_rows = hparam_rows(swa, fields, kv_names)
    archs = {}
    for enum, name in arch_names.items():
        cls = arch_class.get(enum)
        if cls is None:
            continue
        hb = body(cls, "load_arch_hparams")
        hrows = hparam_rows(hb, fields, kv_names)
        if "load_swa_pattern(" in hb:
            hrows += [r[:5] + (r[5] + ("load_swa_pattern",), r[6] + (None,)) for r in swa_rows]
        tb = body(cls, "load_arch_tensors")
        trows, dynamic, derive = tensor_rows(tb, tensor_names)
        gchecks = []
        for gb in graphs.get(cls, []):
            local = dict(re.findall(r"\bconst\s+(?:int64_t|int32_t|uint32_t|int|auto)\s+(\w+)\s*=\s*([^;]+);", gb))
            for kind, cond, text, when in checks(gb, ARCH_ENUMS):
                if kind != "assert" or when:
                    continue
                # the graph's own locals, substituted (n_embd_head = hparams.n_embd_head_v(), ...)
                for var, expr in local.items():
                    e = py_expr(expr)
                    if e is not None:
                        cond = re.sub(rf"\b{var}\b", f"({e})", cond)
                if cond not in [c[2] for c in gchecks]:
                    gchecks.append(("graph", kind, cond, text, when))
        # per-layer flags load_arch_hparams computes (hparams.is_recr_impl[i] = n_head_kv(i) == 0;)
        layer_flags = []
        for flag, var, expr in re.findall(r"hparams\.(is_\w+)_impl\[(\w+)\]\s*=\s*([^;]+);", hb):
            e = py_bool(re.sub(rf"\b{var}\b", "i", expr), ARCH_ENUMS)
            if e is not None and flag not in [n for n, _ in layer_flags]:
                layer_flags.append((flag, e))
        # hparams fields the architecture sets before reading its keys (hparams.x = 1.0f;)
        preset = {f: literal(v) for f, v in re.findall(
            r"^\s{4}hparams\.(\w+)\s*=\s*([-+]?[\d.]+(?:e[-+]?\d+)?f?|true|false)\s*;", hb, re.M)}
        archs[name] = dict(enum=enum, cls=cls, hparams=hrows, tensors=trows, dynamic=dynamic, derive=derive,
                           preset=preset, layer_flags=tuple(layer_flags),
                           checks=tuple(("hparams",) + c for c in checks(hb, ARCH_ENUMS)) +
                           tuple(("tensors",) + c for c in checks(tb, ARCH_ENUMS)) + tuple(gchecks))
    models, bpe, pres = vocab_facts(strip_comments((src / "llama-vocab.cpp").read_text()))
    clip_h = strip_comments((root / "tools" / "mtmd" / "clip-impl.h").read_text())
    projectors = list(cmap(clip_h, "PROJECTOR_TYPE_NAMES").values())
    return dict(arch_names=arch_names, kv_names=kv_names, tensor_names=tensor_names, common=common, archs=archs,
                defaults=hparam_defaults(hparams_h), projectors=projectors, rope_types=rope_types,
                tokenizer_models=models, bpe_models=bpe, pre_tokenizers=pres)


# --- writing ------------------------------------------------------------------------
HEADER = '''"""GENERATED by tools/gen_llama_arch.py from {pinned} - do not edit.

What llama.cpp's loader reads and creates for every architecture it knows, as data (see
``ggscope.facts.llama_arch_types`` for the record types and what each field means).  Re-run
``python -m tools.gen_llama_arch LLAMA_CPP_DIR`` to upgrade; tests/rules/test_loader_generated.py
fails when this file is not what the script makes from the pinned source.
"""
from ggscope.facts.llama_arch_types import Arch, Archs, H, T

PINNED = {pinned!r}
'''


def render(s: dict, pinned: str) -> str:
    out = [HEADER.format(pinned=pinned)]
    out.append("ARCH_NAMES = {\n" + "".join(f"    {k[9:]!r}: {v!r},\n" for k, v in s["arch_names"].items()) + "}\n")
    out.append("KV_NAMES = {\n" + "".join(f"    {k[7:]!r}: {v!r},\n" for k, v in s["kv_names"].items()) + "}\n")
    out.append("TENSOR_NAMES = {\n" + "".join(f"    {k[11:]!r}: {v!r},\n" for k, v in s["tensor_names"].items())
               + "}\n")
    out.append(f"TOKENIZER_MODELS = {tuple(s['tokenizer_models'])!r}\n")
    out.append(f"BPE_MODELS = {tuple(s['bpe_models'])!r}\n")
    out.append(f"ROPE_SCALING_TYPES = {tuple(s['rope_types'])!r}\n")
    out.append("# tools/mtmd/clip-impl.h PROJECTOR_TYPE_NAMES: the clip.projector_type values clip.cpp knows\n"
               "PROJECTOR_TYPES = (\n" + "".join(f"    {p!r},\n" for p in s["projectors"]) + ")\n")
    out.append("PRE_TOKENIZERS = (\n" + "".join(f"    {p!r},\n" for p in s["pre_tokenizers"]) + ")\n")
    out.append("HPARAM_DEFAULTS = {\n" + "".join(f"    {k!r}: {v!r},\n" for k, v in s["defaults"].items()) + "}\n")
    out.append("COMMON = (\n" + "".join(f"    {_h(r)},\n" for r in s["common"]) + ")\n")
    # each architecture as JSON text, decoded on first access (``llama_arch_types.Archs``): a
    # string loads with the module's bytecode at the cost of a copy, where a function per
    # architecture cost every process the unmarshalling of ~150 code objects it never ran
    out.append("ARCHS = Archs({")
    for name, a in s["archs"].items():
        text = "[" + ",\n".join([
            ", ".join(json.dumps(v) for v in (a["cls"], a["dynamic"], a["preset"], a["derive"], a["layer_flags"])),
            "[" + ",\n".join(json.dumps(c) for c in a["checks"]) + "]",
            "[" + ",\n".join(json.dumps(_h_fields(r)) for r in a["hparams"]) + "]",
            "[" + ",\n".join(json.dumps(_t_fields(r)) for r in a["tensors"]) + "]"]) + "]"
        lines = "".join(f"        {t!r}\n" for t in text.splitlines(keepends=True))
        out.append(f"    {name!r}: (\n{lines}    ),")
    out.append("})\n")
    return "\n".join(out)


def _h_fields(r) -> list:
    """``H``'s fields in order, as ``_h`` spells them (JSON: the decoder makes lists tuples)."""
    kid, ctype, req, mode, dest, conds, when = r
    return [kid[7:], ctype, req, mode, dest, conds, when]


def _t_fields(r) -> list:
    """``T``'s fields in order (tensor, suffix, shape, required, loop, conds, when, unless,
    reshape, bid, optional_if), each left out of ``_t`` given its default."""
    tensor, suffix, dims, required, reshape, loop, conds, unless, bid, when, optional_if = r
    return [tensor, suffix, dims, required, loop, conds, when, unless or None, bool(reshape), bid or None,
            optional_if or None]


def _h(r) -> str:
    kid, ctype, req, mode, dest, conds, when = r
    return f"H({kid[7:]!r}, {ctype!r}, {req!r}, {mode!r}, {dest!r}, {conds!r}, {when!r})"


def _t(r) -> str:
    tensor, suffix, dims, required, reshape, loop, conds, unless, bid, when, optional_if = r
    return (f"T({tensor!r}, {suffix!r}, {dims!r}, {required!r}, {loop!r}, {conds!r}, {when!r}"
            + (f", optional_if={optional_if!r}" if optional_if else "")
            + (f", unless={unless!r}" if unless else "") + (", reshape=True" if reshape else "")
            + (f", bid={bid!r}" if bid else "") + ")")


def sdist_dir(tmp: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", PINNED_PACKAGE, "--no-binary", ":all:", "--no-deps",
                    "-d", str(tmp), "-q"], check=True)
    tgz = next(tmp.glob("llama_cpp_python-*.tar.gz"))
    with tarfile.open(tgz) as tf:
        tf.extractall(tmp, filter="data")
    return next(tmp.glob("llama_cpp_python-*/vendor/llama.cpp"))


# the llama.cpp commit llama-cpp-python 0.3.36 pins as its vendor/llama.cpp submodule (the
# sdist holds no git metadata, so it is named here; upgrade it with PINNED_PACKAGE)
PINNED_COMMIT = "0c1e570"


def generate(root: Path) -> str:
    pinned = f"llama.cpp {PINNED_COMMIT} as vendored in {PINNED_PACKAGE.replace('==', ' ')}"
    return render(read_source(root), pinned)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("llama_cpp", nargs="?", help="llama.cpp source directory (default: download the pinned sdist)")
    p.add_argument("--check", action="store_true", help="exit 1 when the checked-in module differs")
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(a.llama_cpp) if a.llama_cpp else sdist_dir(Path(tmp))
        text = generate(root)
    out = Path(a.out)
    if a.check:
        same = out.exists() and out.read_text() == text
        print("up to date" if same else f"{out.name} differs from what the source makes")
        return 0 if same else 1
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
