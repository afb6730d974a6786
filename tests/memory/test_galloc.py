"""ggscope.memory.galloc against the rules of ggml-alloc (llama.cpp as vendored in
llama-cpp-python 0.3.36, ggml/src/ggml-alloc.c), on graphs small enough to follow by hand.

Each expected offset and size below is worked out from the C source's rules, not from
the replay: ``ggml_dyn_tallocr_alloc`` (sizes padded to 32, best fit among the free blocks
except the last, ties to the later block, else the end of the buffer), ``free_bytes``
(merging with both neighbours), and ``ggml_gallocr_alloc_graph_impl`` (leafs first, in-place
reuse, outputs never freed, views keeping their source alive).
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ggscope.memory import graph_ops as g
from ggscope.memory.galloc import Graph, Tensor, _Alloc, reserve


def _input(n_floats: int, name: str = "") -> Tensor:
    t = Tensor("NONE", (n_floats,), 4, name=name)
    t.input = True
    return t


def _weight(*ne) -> Tensor:
    return Tensor("NONE", ne, 4, external=True)


def test_best_fit_pads_prefers_the_later_tie_and_merges_neighbours():
    al = _Alloc()
    a, b, c, d = al.alloc(1000), al.alloc(1024), al.alloc(1024), al.alloc(1024)
    assert (a, b, c, d) == (0, 1024, 2048, 3072)          # 1000 padded to 1024
    al.free(a, 1000)
    al.free(c, 1024)
    assert al.alloc(1024) == 2048                          # two 1024-byte holes: the later one
    assert al.alloc(512) == 0                              # best fit: the hole at 0
    assert al.alloc(2048) == 4096                          # no hole fits: the end of the buffer
    assert al.max_size == 6144
    al.free(b, 1024)                                       # joins the free [512, 1024) before it
    assert al.blocks[0] == [512, 1536]
    al.free(2048, 1024)                                    # and now the block after it too
    assert al.blocks[0] == [512, 2560]


def test_the_last_block_is_not_a_best_fit_candidate():
    al = _Alloc()
    x = al.alloc(4096)
    al.alloc(64)
    al.free(x, 4096)                                       # a 4096 hole, then the endless last block
    assert al.alloc(8192) == 4096 + 64                     # does not fit the hole: grows the end
    assert al.alloc(4096) == 0                             # fits the hole exactly


def test_inputs_at_the_bottom_leave_a_hole_below_the_logits():
    """The placement the plan of peaks could not see: a graph input (the KQ mask) sits at the
    bottom; once freed its space is a hole the larger logits cannot use."""
    mask, tok = _input(1024, "mask"), _input(8, "tok")     # 4096 and 32 bytes, allocated first
    a = Tensor("MUL_MAT", (512,), 4, (_weight(8, 512), tok))
    k = Tensor("SOFT_MAX", (512,), 4, (a, mask))           # in place over a (a's only consumer)
    logits = Tensor("MUL_MAT", (2048,), 4, (_weight(512, 2048), k))
    logits.output = True
    g = Graph()
    g.expand(logits)
    assert [t.name for t in g.leafs if t.input] == ["tok", "mask"]   # depth first, sources in order
    # tok at 0 (32 bytes), mask at 32, a at 4128; once SOFT_MAX (in place over a) has run both
    # inputs are free, [0, 4128): too small for the 8192-byte logits, which go to the end
    assert reserve(g) == 32 + 4096 + 2048 + 8192


def test_in_place_reuse_needs_a_sole_consumer_and_a_non_output_parent():
    x = _input(256)                                        # 1024 bytes
    y = Tensor("RMS_NORM", (256,), 4, (x,))                # reuses x: its only consumer
    z = Tensor("MUL_MAT", (512,), 4, (_weight(256, 512), y))
    z.output = True
    g = Graph()
    g.expand(z)
    assert reserve(g) == 1024 + 2048

    x = _input(256)
    x.output = True                                        # an output's block is never reused
    y = Tensor("RMS_NORM", (256,), 4, (x,))
    z = Tensor("MUL_MAT", (512,), 4, (_weight(256, 512), y))
    g = Graph()
    g.expand(z)
    assert reserve(g) == 1024 + 1024 + 2048

    x = _input(256)
    y = Tensor("RMS_NORM", (256,), 4, (x,))
    y2 = Tensor("MUL_MAT", (256,), 4, (_weight(256, 256), x))   # x has two consumers
    z = Tensor("ADD", (256,), 4, (y, y2))                  # in place over y (own, sole consumer)
    g = Graph()
    g.expand(z)
    assert reserve(g) == 3 * 1024


def test_a_view_keeps_its_source_alive_and_is_never_reused_in_place():
    x = _input(256)
    h = Tensor("MUL_MAT", (512,), 4, (_weight(256, 512), x))          # 2048 at 1024
    v = Tensor("VIEW", (256,), 4, (h,), view_of=h)                     # no memory of its own
    n = Tensor("RMS_NORM", (256,), 4, (v,))                           # a view parent: a new block
    big = Tensor("MUL_MAT", (1024,), 4, (_weight(256, 1024), n))
    big.output = True
    g = Graph()
    g.expand(big)
    assert [t.op for t in g.nodes] == ["MUL_MAT", "VIEW", "RMS_NORM", "MUL_MAT"]
    # x [0,1024) freed after h; n best-fits that hole; h [1024,3072) freed after the view's
    # consumer merges with the free end of the buffer, where big (4096) then starts
    assert reserve(g) == 1024 + 4096


def test_views_of_views_share_the_root():
    h = Tensor("MUL_MAT", (512,), 4, (_weight(8, 512), _input(8)))
    v1 = Tensor("RESHAPE", (256, 2), 4, (h,), view_of=h, offs=0)
    v2 = Tensor("VIEW", (256,), 4, (v1,), view_of=v1, offs=1024)
    assert v2.view_src is h and v2.view_offs == 1024


def test_quantized_block_sizes():
    q = Tensor("NONE", (4096, 256), 34, external=True, blck=32)   # q8_0: 34 bytes per 32 values
    assert q.nbytes == 4096 // 32 * 34 * 256
    assert q.contiguous()


RANDOM = Path(__file__).resolve().parents[2] / "fixtures" / "ggml_alloc" / "random_graphs.json"


def _replay_rows(rows: list[list]) -> int:
    """The graph tools/record_galloc_cases.py built with ggml, rebuilt with ggscope.memory.graph_ops."""
    ts: list[Tensor] = []
    for row in rows:
        op, args = row[0], [a for a in row[1:] if a != "out"]
        if op == "input":
            t = g.new_input((args[0],), g.F32)
        elif op in ("add", "mul"):
            t = g.dup(op.upper(), ts[args[0]], (ts[args[0]], ts[args[1]]))
        elif op in ("scale", "rms_norm", "soft_max"):
            t = g.dup(op.upper(), ts[args[0]], (ts[args[0]],))
        elif op == "silu":
            t = g.unary(ts[args[0]], "SILU")
        elif op == "cont":
            t = g.cont(ts[args[0]])
        elif op == "mul_mat":
            a, b, k = ts[args[0]], ts[args[1]], args[2]
            na, nb = g.nelements(a), g.nelements(b)
            t = g.mul_mat(g.reshape(a, k, na // k), g.reshape(b, k, nb // k))
            t = g.reshape(t, (na // k) * (nb // k), 1)
        elif op == "view":
            t = g.view(ts[args[0]], (args[1],))
        elif op == "concat":
            t = g.concat(ts[args[0]], ts[args[1]], 0)
        else:
            raise AssertionError(op)
        if row[-1] == "out":
            t.set_output()                                 # ggml_set_output: a view's source too
        ts.append(t)
    ts[-1].set_output()
    graph = Graph()
    for t in ts:
        graph.expand(t)
    return reserve(graph)


def test_random_graphs_reserve_what_ggml_reserves():
    """300 random graphs ggml's own allocator reserved (tools/record_galloc_cases.py, through
    ctypes on the pinned llama.cpp's libggml-base): every size equal."""
    if not RANDOM.exists():
        pytest.skip("fixtures/ggml_alloc/random_graphs.json is absent (tools/record_galloc_cases.py writes it)")
    cases = json.loads(RANDOM.read_text())["cases"]
    assert len(cases) >= 100
    wrong = [(i, c["ggml_bytes"], got) for i, c in enumerate(cases)
             if (got := _replay_rows(c["rows"])) != c["ggml_bytes"]]
    assert not wrong, wrong[:5]
