"""Compare ggscope's forward pass with llama.cpp's, op by op, on one perplexity chunk.

Why: on gemma-3-270m the KL-divergence report moves by percents with any 1e-7 change
upstream, so "each op matched to 1e-7" is not enough: every product, every attention
row must be the same bits as llama-perplexity's.  This script makes that claim
checkable.  A child process runs the model through llama.cpp itself (the llama-cpp-
python 0.3.36 binding over libllama built from the llama.cpp it vendors) with an eval
callback that copies every node of the graph as it is computed -- its output and, for
the matrix products and flash attention, its inputs -- for the first chunk of the
corpus (llama-perplexity's chunking: the corpus's first n_ctx tokens, BOS first, one
batch, logits of the second half, an F16 cache, flash attention on, one thread).  The
parent then feeds each recorded product's and attention's inputs to ggscope's kernels
(``ggscope.forward.ggml_ops``) and counts the output elements that differ in any bit,
and runs ggscope's whole forward pass on the same tokens against llama.cpp's logits.

Usage::

    python -m tools.record_ggml_ops MODEL.gguf [--lib DIR] [--binding DIR] [--ctx 128]
                                    [--requantize TYPE] [--out RECORD.json] [--cases CASES.npz]

DIR (or $LLAMA_CPP_LIB_PATH) holds libllama.so (and llama-quantize); --binding (or
$LLAMA_CPP_PYTHON_DIR) is the unpacked llama-cpp-python 0.3.36 sdist.  The record is a
small JSON file: per op kind the number of nodes and of elements that differ, the first
node that differs, and how the whole pass's logits differ.  CI never runs this (it needs
llama.cpp): the cases it writes (fixtures/ggml_ops/, see its MANIFEST) are what
tests/forward/test_ggml_ops.py recomputes.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "fixtures" / "perplexity" / "corpus.txt"

class _Tensor(ctypes.Structure):
    """ggml.h struct ggml_tensor (GGML_MAX_DIMS 4, GGML_MAX_OP_PARAMS 64, GGML_MAX_SRC 10,
    GGML_MAX_NAME 64), as vendored in llama-cpp-python 0.3.36."""


_Tensor._fields_ = [("type", ctypes.c_int), ("buffer", ctypes.c_void_p), ("ne", ctypes.c_int64 * 4),
                    ("nb", ctypes.c_size_t * 4), ("op", ctypes.c_int), ("op_params", ctypes.c_int32 * 16),
                    ("flags", ctypes.c_int32), ("src", ctypes.POINTER(_Tensor) * 10),
                    ("view_src", ctypes.c_void_p), ("view_offs", ctypes.c_size_t), ("data", ctypes.c_void_p),
                    ("name", ctypes.c_char * 64), ("extra", ctypes.c_void_p), ("padding", ctypes.c_char * 8)]

_DTYPES = {0: np.float32, 1: np.float16}        # GGML_TYPE_F32, GGML_TYPE_F16


def _array(t: _Tensor) -> np.ndarray | None:
    """The tensor's elements as float32 in ggml order [ne3, ne2, ne1, ne0], or None."""
    dt = _DTYPES.get(t.type)
    if dt is None or not t.data:
        return None
    ne, nb = list(t.ne), list(t.nb)
    span = sum((n - 1) * s for n, s in zip(ne, nb)) + np.dtype(dt).itemsize
    raw = np.ctypeslib.as_array((ctypes.c_uint8 * span).from_address(t.data))
    arr = np.lib.stride_tricks.as_strided(raw.view(dt) if span % np.dtype(dt).itemsize == 0 else
                                          np.frombuffer(raw.tobytes() + b"\0" * 4, dt),
                                          shape=ne[::-1], strides=nb[::-1])
    return arr.astype(np.float32)


def _op_numbers(header: Path) -> dict[str, int]:
    """enum ggml_op's values, read from ggml.h (GGML_OP_NONE = 0, one per line)."""
    text = header.read_text()
    body = text[text.index("enum ggml_op {"):]
    body = body[:body.index("};")]
    names = [ln.strip().rstrip(",").split("=")[0].strip() for ln in body.splitlines()[1:]]
    names = [n for n in names if n.startswith("GGML_OP_")]
    return {n[len("GGML_OP_"):]: i for i, n in enumerate(names)}


def child(args) -> int:
    """Run llama.cpp on the chunk and write every node into an npz (args.dump)."""
    os.environ["LLAMA_CPP_LIB_PATH"] = args.lib
    sys.path.insert(0, args.binding)
    import llama_cpp as L                                     # noqa: E402 (after the path is set)
    ops = _op_numbers(Path(args.binding) / "vendor" / "llama.cpp" / "ggml" / "include" / "ggml.h")
    want = {ops[k]: k for k in ("MUL_MAT", "FLASH_ATTN_EXT", "ROPE", "GLU")}
    tokens = [int(t) for t in args.tokens.split(",")]
    nodes, arrays = [], {}

    def on_node(ptr, ask, _user):
        if ask:
            return True
        t = ctypes.cast(ptr, ctypes.POINTER(_Tensor)).contents
        key = f"{len(nodes):04d}"
        srcs = [t.src[i].contents for i in range(10) if t.src[i]]
        nodes.append({"key": key, "name": t.name.decode(), "op": t.op,
                      "src": [s.name.decode() for s in srcs], "src_type": [s.type for s in srcs]})
        out = _array(t)
        if out is not None:
            arrays[key] = out
        if t.op in want:
            nodes[-1]["kind"] = want[t.op]
            for i, s in enumerate(srcs):
                a = _array(s)
                if a is not None:
                    arrays[f"{key}.src{i}"] = a
            params = list(t.op_params)
            nodes[-1]["op_params_i32"] = params[:12]
            nodes[-1]["op_params"] = [ctypes.c_float.from_buffer_copy(ctypes.c_int32(v)).value for v in params[:12]]
        return True

    L.llama_backend_init()
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(args.model.encode(), mp)
    cp = L.llama_context_default_params()
    cp.n_ctx = cp.n_batch = cp.n_ubatch = len(tokens)
    cp.n_threads = cp.n_threads_batch = 1
    cb = L.ggml_backend_sched_eval_callback(on_node)
    cp.cb_eval = cb
    ctx = L.llama_init_from_model(model, cp)
    batch = L.llama_batch_init(len(tokens), 0, 1)
    first = len(tokens) // 2
    for i, tok in enumerate(tokens):
        batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, i, 1
        batch.seq_id[i][0] = 0
        batch.logits[i] = i >= first
    batch.n_tokens = len(tokens)
    if L.llama_decode(ctx, batch) != 0:
        print("llama_decode failed", file=sys.stderr)
        return 1
    np.savez(args.dump, **arrays)
    Path(args.dump + ".json").write_text(json.dumps(nodes))
    return 0


def _chunk_tokens(model_path: str, n_ctx: int) -> list[int]:
    """The first chunk as llama-perplexity builds it: the corpus's first n_ctx tokens, BOS first."""
    from ggscope.model.split import open_model
    from ggscope.model.tokenizer import load as load_tokenizer
    tok = load_tokenizer(open_model(model_path))
    ids = tok.encode(CORPUS.read_text())[:n_ctx]
    if tok.add_bos:
        ids[0] = tok.bos_id
    return [int(t) for t in ids]


def _produced(nodes: list[dict], arrays, node: dict, i: int) -> np.ndarray:
    """Source ``i`` of ``node`` as the node that computed it recorded it (the last earlier
    node of that name), not as the source's memory holds it when ``node`` has run."""
    name, before = node["src"][i], node["key"]
    key = next(n["key"] for n in reversed(nodes) if n["key"] < before and n["name"] == name)
    return arrays[key]


def save_cases(model_path: str, dump: str, tokens: list[int], out: Path, rows: int = 8,
               products_only: bool = False, elementwise_only: bool = False,
               no_attention: bool = False) -> None:
    """A few of llama.cpp's nodes with everything needed to recompute them without the
    model or llama.cpp, for tests/forward/test_ggml_ops.py: per weight type and path the
    first product (its weight's bytes, the first ``rows`` rows of its input and output),
    the first flash attention (inputs whole: the tiled path needs 64 query rows), the
    first rope (its last ``rows`` positions) and GLU (SwiGLU / GEGLU: its first ``rows``), and the chunk's
    logits -- the products alone for a ``--requantize`` copy, which CI cannot run whole
    (the copy is not kept), the rope and GLU alone with ``elementwise_only``."""
    from ggscope.forward import ggml_ops
    from ggscope.model.split import open_model
    model = open_model(model_path)
    names = {t.name for t in model.tensors}
    nodes = json.loads(Path(dump + ".json").read_text())
    arrays = np.load(dump)
    keep: dict[str, np.ndarray] = {"tokens": np.asarray(tokens, np.int32)}
    skip = products_only or no_attention            # no attention, rope or GLU cases
    seen = set()
    for n in nodes:
        kind, key = n.get("kind"), n["key"]
        if kind == "MUL_MAT" and n["src"][0] in names and f"{key}.src1" in arrays and not elementwise_only:
            info = model.tensor(n["src"][0])
            M, K = int(info.shape[1]), int(info.shape[0])
            one_row = arrays[f"{key}.src1"].reshape(-1, K).shape[0] < 2      # vec_dot, not the gemm
            path = (info.type, ggml_ops.repacked(info.type, M), one_row)
            if path in seen:
                continue
            seen.add(path)
            i = len([k for k in keep if k.endswith(".w")])
            keep[f"mm{i}.w"] = np.asarray(info.raw(), np.uint8)
            keep[f"mm{i}.type"] = np.frombuffer(info.type.encode(), np.uint8)
            keep[f"mm{i}.x"] = arrays[f"{key}.src1"].reshape(-1, K)[:rows]
            keep[f"mm{i}.y"] = arrays[key].reshape(-1, M)[:rows]
        elif kind == "ROPE" and "rope.x" not in keep and not skip and f"{key}.src0" in arrays:
            # ggml.c ggml_rope_impl's op_params: n_past, n_dims, mode, n_ctx, n_ctx_orig (int32),
            # then freq_base, freq_scale, ext_factor, attn_factor, beta_fast, beta_slow (float)
            # the input as its producer left it: an elementwise op may be computed in place
            x = _produced(nodes, arrays, n, 0)                        # [1, T, H, D]: the last rows
            keep["rope.x"], keep["rope.y"] = x[:, -rows:], arrays[key][:, -rows:]
            keep["rope.pos"] = np.arange(x.shape[1] - rows, x.shape[1], dtype=np.int32)
            keep["rope.ints"] = np.asarray(n["op_params_i32"][:5], np.int32)
            keep["rope.floats"] = np.asarray(n["op_params"][5:11], np.float32)
        elif kind == "GLU" and "glu.g" not in keep and not skip and f"{key}.src1" in arrays:
            keep["glu.g"], keep["glu.u"], keep["glu.y"] = (_produced(nodes, arrays, n, 0)[..., :rows, :],
                                                           _produced(nodes, arrays, n, 1)[..., :rows, :],
                                                           arrays[key][..., :rows, :])
        elif kind == "FLASH_ATTN_EXT" and "fa.q" not in keep and not (skip or elementwise_only):
            for i, part in enumerate("qkvm"):
                if f"{key}.src{i}" in arrays:
                    keep[f"fa.{part}"] = arrays[f"{key}.src{i}"]
            keep["fa.params"] = np.asarray(n["op_params"][:3], np.float32)
            keep["fa.out"] = arrays[key]
    out_key = next((n["key"] for n in reversed(nodes) if n["name"] == "result_output"), None)
    if out_key is not None and not products_only and not elementwise_only:
        keep["logits"] = arrays[out_key].reshape(-1, arrays[out_key].shape[-1])
    np.savez_compressed(out, **keep)


def compare(model_path: str, dump: str, tokens: list[int]) -> dict:
    """Each recorded product and attention recomputed by ggscope's kernels from llama.cpp's
    own inputs; then ggscope's whole pass against llama.cpp's logits."""
    from ggscope.forward import load_weights
    from ggscope.forward import ggml_ops
    from ggscope.model.split import open_model
    model = open_model(model_path)
    nodes = json.loads(Path(dump + ".json").read_text())
    arrays = np.load(dump)
    kinds: dict[str, dict] = {}
    for n in nodes:
        kind = n.get("kind")
        if kind not in ("MUL_MAT", "FLASH_ATTN_EXT") or n["key"] not in arrays:
            continue                          # rope and GLU: the cases file holds them (save_cases)
        want = arrays[n["key"]]
        if kind == "MUL_MAT":
            wname = n["src"][0]
            info = model.tensor(wname) if wname in {t.name for t in model.tensors} else None
            if info is None or f"{n['key']}.src1" not in arrays:
                continue
            x = arrays[f"{n['key']}.src1"].reshape(-1, info.shape[0])
            try:
                got = ggml_ops.product_from_tensor(info, x).reshape(want.shape)
            except ValueError:                # a type or shape ggml_ops has no kernel for
                kinds.setdefault("MUL_MAT without a kernel", {}).setdefault(info.type, 0)
                kinds["MUL_MAT without a kernel"][info.type] += 1
                continue
        else:
            q, k, v = (arrays[f"{n['key']}.src{i}"] for i in range(3))     # [1, H, T, D], [1, Hkv, S, D]
            mask = arrays.get(f"{n['key']}.src3")
            scale, _bias, softcap = n["op_params"][:3]
            T = q.shape[2]
            m = np.zeros((T, k.shape[2]), np.float32) if mask is None else mask[0, 0, :T, :k.shape[2]]
            got = ggml_ops.flash_attention(q[0].transpose(1, 0, 2), k[0].transpose(1, 0, 2),
                                           v[0].transpose(1, 0, 2), m, scale, softcap)
            got = got.reshape(want.shape)
        differ = int(np.count_nonzero(got.view(np.uint32) != np.ascontiguousarray(want).view(np.uint32)))
        rec = kinds.setdefault(kind, {"nodes": 0, "elements": 0, "differ": 0, "first_differing": None})
        rec["nodes"] += 1
        rec["elements"] += int(want.size)
        rec["differ"] += differ
        if differ and rec["first_differing"] is None:
            rec["first_differing"] = {"node": n["name"], "weight": n["src"][0] if kind == "MUL_MAT" else None,
                                      "differ": differ, "max_abs": float(np.abs(got - want).max())}
    out_key = next((n["key"] for n in reversed(nodes) if n["name"] == "result_output"), None)
    module, w = load_weights(model)
    first = len(tokens) // 2
    logits, _ = module.forward(w, tokens, None, kv_f16=True, logits_from=first, flash_attn=True)
    theirs = arrays[out_key].reshape(logits.shape) if out_key else None
    whole = None
    if theirs is not None:
        whole = {"rows": int(logits.shape[0]),
                 "differ": int(np.count_nonzero(np.asarray(logits, np.float32).view(np.uint32)
                                                != np.ascontiguousarray(theirs).view(np.uint32))),
                 "max_abs": float(np.abs(logits - theirs).max()),
                 "argmax_agree": int((logits.argmax(1) == theirs.argmax(1)).sum())}
    return {"ops": kinds, "logits": whole}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--lib", default=os.environ.get("LLAMA_CPP_LIB_PATH"))
    ap.add_argument("--binding", default=os.environ.get("LLAMA_CPP_PYTHON_DIR"))
    ap.add_argument("--ctx", type=int, default=128)
    ap.add_argument("--out")
    ap.add_argument("--cases", metavar="FILE.npz", help="also write a few nodes' inputs and outputs "
                    "(and the logits) for tests/forward/test_ggml_ops.py")
    ap.add_argument("--elementwise-only", action="store_true", help="--cases holds the first rope and "
                    "GLU alone, on two rows each (a large model's record stays small)")
    ap.add_argument("--products-and-logits", action="store_true", help="--cases holds the products and "
                    "the chunk's logits, no attention, rope or GLU")
    ap.add_argument("--requantize", metavar="TYPE", help="first make a TYPE copy of MODEL with "
                    "llama-quantize --allow-requantize from --lib's directory (a temporary file)")
    ap.add_argument("--pure", action="store_true", help="with --requantize: llama-quantize --pure (every "
                    "tensor it can in TYPE, none in the preset's other types)")
    ap.add_argument("--keep", metavar="DIR", help="keep llama.cpp's nodes (nodes.npz, nodes.npz.json) in DIR")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tokens", help=argparse.SUPPRESS)
    ap.add_argument("--dump", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not args.lib or not args.binding:
        ap.error("give --lib and --binding (or $LLAMA_CPP_LIB_PATH and $LLAMA_CPP_PYTHON_DIR)")
    if args.child:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        if args.requantize:
            made = Path(tmp) / f"{Path(args.model).stem}-{args.requantize}.gguf"
            q = subprocess.run([str(Path(args.lib) / "llama-quantize"), "--allow-requantize",
                                *(["--pure"] if args.pure else []), args.model,
                                str(made), args.requantize, "1"], capture_output=True, text=True)
            if q.returncode != 0:
                print(f"llama-quantize failed: {q.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
                return 2
            args.model = str(made)
        tokens = _chunk_tokens(args.model, args.ctx)
        dump = str(Path(args.keep or tmp) / "nodes.npz")
        cmd = [sys.executable, "-m", "tools.record_ggml_ops", args.model, "--child", "--lib", args.lib,
               "--binding", args.binding, "--tokens", ",".join(map(str, tokens)), "--dump", dump]
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        if done.returncode != 0:
            print(f"llama.cpp failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            return 2
        if args.cases:
            save_cases(args.model, dump, tokens, Path(args.cases), 2 if args.elementwise_only else 8,
                       products_only=bool(args.requantize),
                       elementwise_only=args.elementwise_only, no_attention=args.products_and_logits)
        record = {"oracle": "llama.cpp as vendored in llama-cpp-python 0.3.36 (eval callback, 1 thread, "
                            "F16 cache, flash attention on)",
                  "model": Path(args.model).name, "ctx": args.ctx, **compare(args.model, dump, tokens)}
    text = json.dumps(record, indent=1) + "\n"
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
