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

from tools.c_source import (checks, cmap, function_body, hparam_defaults, literal, match_close, py_bool, py_expr,
                            strip_comments)
from tools.llama_arch_calls import ARCH_ENUMS, field_types, hparam_rows, tensor_rows, vocab_facts

PINNED_PACKAGE = "llama-cpp-python==0.3.36"
OUT = Path(__file__).resolve().parent.parent / "ggscope" / "facts" / "llama_arch.py"

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
