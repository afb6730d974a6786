"""Record what ggml's own graph allocator reserves for random graphs, as fixtures for ggscope.memory.galloc.

Why: ``ggscope.memory.galloc`` replays ggml-alloc (ggml/src/ggml-alloc.c) rule for rule; the
graphs llama.cpp builds exercise only some of its paths.  This script builds random graphs
of f32 tensors with ggml itself (through ctypes, on the ``libggml-base`` of a llama.cpp build:
``ggml_init`` without allocation, the ops below, ``ggml_set_input`` / ``ggml_set_output``,
``ggml_build_forward_expand``), reserves each with ``ggml_gallocr_reserve`` on the CPU
buffer type and writes the graph (as a list of ops) and ggml's buffer size to
``fixtures/ggml_alloc/random_graphs.json``.  ``tests/memory/test_galloc.py`` rebuilds each
graph with ``ggscope.memory.graph_ops`` and must get the same size: best-fit ties, block
merging, in-place reuse, views keeping their source alive, outputs never freed, inputs
first - on graphs no model has.

Ops (each a row ``[op, sources..., parameter]``): ``input n`` (a new input of n floats),
``add a b`` / ``mul a b`` (same shapes), ``scale a`` / ``rms_norm a`` / ``soft_max a`` /
``silu a`` (in place where allowed), ``cont a`` (a copy), ``mul_mat a b k`` (a and b
reshaped to rows of k: a result of (a/k) x (b/k) floats), ``view a n`` (the first n floats
of a, a view), ``concat a b``; the last row's tensor and any row flagged ``out`` are outputs;
every row is expanded into the graph in order (as llama.cpp expands several tensors).

Usage::

    python -m tools.record_galloc_cases --lib <dir with libggml-base.so> [--n 300] [--seed 1]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "ggml_alloc" / "random_graphs.json"
UNARY = ("scale", "rms_norm", "soft_max", "silu", "cont")


class _Params(ctypes.Structure):
    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


def _lib(path: str):
    g = ctypes.CDLL(os.path.join(path, "libggml-base.so"))
    P = ctypes.c_void_p
    sig = {"ggml_init": (P, [_Params]), "ggml_free": (None, [P]),
           "ggml_new_tensor_1d": (P, [P, ctypes.c_int, ctypes.c_int64]),
           "ggml_add": (P, [P, P, P]), "ggml_mul": (P, [P, P, P]), "ggml_scale": (P, [P, P, ctypes.c_float]),
           "ggml_rms_norm": (P, [P, P, ctypes.c_float]), "ggml_soft_max": (P, [P, P]), "ggml_silu": (P, [P, P]),
           "ggml_cont": (P, [P, P]), "ggml_mul_mat": (P, [P, P, P]),
           "ggml_reshape_2d": (P, [P, P, ctypes.c_int64, ctypes.c_int64]),
           "ggml_view_1d": (P, [P, P, ctypes.c_int64, ctypes.c_size_t]), "ggml_concat": (P, [P, P, P, ctypes.c_int]),
           "ggml_set_input": (None, [P]), "ggml_set_output": (None, [P]), "ggml_new_graph": (P, [P]),
           "ggml_build_forward_expand": (None, [P, P]), "ggml_backend_cpu_buffer_type": (P, []),
           "ggml_gallocr_new": (P, [P]), "ggml_gallocr_reserve": (ctypes.c_bool, [P, P]),
           "ggml_gallocr_get_buffer_size": (ctypes.c_size_t, [P, ctypes.c_int]), "ggml_gallocr_free": (None, [P])}
    for name, (res, args) in sig.items():
        f = getattr(g, name)
        f.restype, f.argtypes = res, args
    return g


def random_graph(rng: random.Random) -> list[list]:
    """A list of op rows (see the module docstring) over tensors of 1..64 KiB."""
    rows: list[list] = []
    sizes: list[int] = []
    for _ in range(rng.randint(2, 4)):
        n = rng.choice((8, 256, 1000, 1024, 4096, 8192, 16384))
        rows.append(["input", n])
        sizes.append(n)
    for _ in range(rng.randint(4, 24)):
        i = rng.randrange(len(rows))
        kind = rng.choice(("add", "mul", "mul_mat", "view", "concat") + UNARY)
        if kind in ("add", "mul"):
            same = [j for j, s in enumerate(sizes) if s == sizes[i]]
            rows.append([kind, i, rng.choice(same)])
            sizes.append(sizes[i])
        elif kind == "mul_mat":
            j = rng.randrange(len(rows))
            k = 8 if sizes[i] % 8 == 0 and sizes[j] % 8 == 0 else 1
            if k == 1 or (sizes[i] // k) * (sizes[j] // k) > 1 << 16:     # a copy instead: tensors stay small
                rows.append(["cont", i])
                sizes.append(sizes[i])
                continue
            rows.append(["mul_mat", i, j, k])
            sizes.append((sizes[i] // k) * (sizes[j] // k))
        elif kind == "view":
            n = rng.randint(1, sizes[i])
            rows.append(["view", i, n])
            sizes.append(n)
        elif kind == "concat" and sizes[i] + sizes[j := rng.randrange(len(rows))] <= 1 << 16:
            rows.append(["concat", i, j])
            sizes.append(sizes[i] + sizes[j])
        else:
            rows.append([kind if kind in UNARY else "cont", i])
            sizes.append(sizes[i])
        if rng.random() < 0.1:
            rows[-1] = rows[-1] + ["out"]
    return rows


def ggml_size(g, rows: list[list]) -> int:
    ctx = g.ggml_init(_Params(64 << 20, None, True))
    try:
        ts = []
        for row in rows:
            op, args = row[0], [a for a in row[1:] if a != "out"]
            if op == "input":
                t = g.ggml_new_tensor_1d(ctx, 0, args[0])
                g.ggml_set_input(t)
            elif op in ("add", "mul"):
                t = getattr(g, f"ggml_{op}")(ctx, ts[args[0]], ts[args[1]])
            elif op == "scale":
                t = g.ggml_scale(ctx, ts[args[0]], 0.5)
            elif op == "rms_norm":
                t = g.ggml_rms_norm(ctx, ts[args[0]], 1e-6)
            elif op in ("soft_max", "silu", "cont"):
                t = getattr(g, f"ggml_{op}")(ctx, ts[args[0]])
            elif op == "mul_mat":
                a, b, k = ts[args[0]], ts[args[1]], args[2]
                na, nb = _n(rows, args[0]), _n(rows, args[1])
                t = g.ggml_mul_mat(ctx, g.ggml_reshape_2d(ctx, a, k, na // k), g.ggml_reshape_2d(ctx, b, k, nb // k))
                t = g.ggml_reshape_2d(ctx, t, (na // k) * (nb // k), 1)
            elif op == "view":
                t = g.ggml_view_1d(ctx, ts[args[0]], args[1], 0)
            elif op == "concat":
                t = g.ggml_concat(ctx, ts[args[0]], ts[args[1]], 0)
            else:
                raise ValueError(op)
            if row[-1] == "out":
                g.ggml_set_output(t)
            ts.append(t)
        g.ggml_set_output(ts[-1])
        gf = g.ggml_new_graph(ctx)
        for t in ts:                        # every row joins the graph, in row order
            g.ggml_build_forward_expand(gf, t)
        galloc = g.ggml_gallocr_new(g.ggml_backend_cpu_buffer_type())
        try:
            assert g.ggml_gallocr_reserve(galloc, gf)
            return int(g.ggml_gallocr_get_buffer_size(galloc, 0))
        finally:
            g.ggml_gallocr_free(galloc)
    finally:
        g.ggml_free(ctx)


def _n(rows: list[list], i: int) -> int:
    """The number of floats row i's tensor holds."""
    row = rows[i]
    op, args = row[0], [a for a in row[1:] if a != "out"]
    if op == "input":
        return args[0]
    if op == "view":
        return args[1]
    if op == "mul_mat":
        return (_n(rows, args[0]) // args[2]) * (_n(rows, args[1]) // args[2])
    if op == "concat":
        return _n(rows, args[0]) + _n(rows, args[1])
    return _n(rows, args[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True, help="the directory holding a llama.cpp build's libggml-base.so")
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    g = _lib(a.lib)
    rng = random.Random(a.seed)
    cases = []
    for _ in range(a.n):
        rows = random_graph(rng)
        cases.append({"rows": rows, "ggml_bytes": ggml_size(g, rows)})
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"seed": a.seed, "cases": cases}, separators=(",", ":")) + "\n")
    print(f"{OUT.name}: {len(cases)} graphs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
