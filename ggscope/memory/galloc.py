"""A replay of ggml's graph allocator: the compute buffer ggml-alloc reserves for a graph.

Why: llama.cpp sizes its compute buffer by running ggml-alloc over the worst-case graph
(``ggml_backend_sched_reserve`` -> ``ggml_gallocr_reserve_n``); the size is where the
allocator's high-water mark ends up, and that depends on placement (which free block
each tensor lands in, which holes stay), not only on which tensors are live together.
This module is that allocator, rule for rule, over a symbolic graph of shapes (no data),
from llama.cpp as vendored in llama-cpp-python 0.3.36:

* ggml/src/ggml.c ``ggml_visit_parents_graph``: a graph is built by depth-first visits
  from each ``expand``-ed tensor, sources left to right; a tensor without an op is a leaf,
  the rest are nodes, each listed once in post-order (``Graph.expand``).
* ggml/src/ggml-alloc.c ``ggml_gallocr_alloc_graph_impl``: leafs allocated first (graph
  inputs at the bottom of the buffer), then per node its parents and itself; a node
  reuses a parent's block in place when ``ggml_op_can_inplace`` allows the op, the parent
  is the allocator's own, not an output, of the same layout, and has no other consumer or
  view (a view parent only when its source has no other view or consumer and starts at the
  same byte); the unused tail of a larger parent is freed (``free_extra_space``); a parent
  is freed after its last consumer (``n_children``/``n_views``), a view's source after its
  last view; outputs are never freed.
* ``ggml_dyn_tallocr_alloc`` / ``free_bytes``: sizes padded to the alignment, best fit
  among the free blocks except the last (ties to the later block: ``<=``), else the last
  block (the end of the buffer grows), blocks kept sorted by offset and merged with both
  neighbours on free.  One chunk: the CPU buffer type's maximum size is unbounded.
* ggml/src/ggml-backend.cpp ``ggml_backend_sched_split_graph``: on the CPU alone there is
  one split, no input copies and no backend graph optimisation (ggml-cpu's
  ``graph_optimize`` is NULL), so the allocator sees the graph as built.
* The CPU buffer type's alignment is ``TENSOR_ALIGNMENT`` (32, ggml/src/ggml-impl.h) and
  its allocation size ``ggml_nbytes``.

Contract: build tensors with ``Tensor`` (weights and cache tensors ``external=True``;
``view_of`` for views, whose root ``view_src`` is kept as ggml keeps it; ``set_output``
flags a view's source too, as ``ggml_set_output`` does), collect them
with ``Graph.expand`` in llama.cpp's order, and ``reserve(graph) -> int`` is the buffer
size in bytes.  Work is linear in the graph's nodes times its free blocks (at most a few
dozen); nothing is per element.
"""
from __future__ import annotations

__all__ = ["Tensor", "Graph", "reserve", "INPLACE_OPS", "UNARY_OPS", "ALIGNMENT"]

ALIGNMENT = 32                       # TENSOR_ALIGNMENT, the CPU buffer type's alignment

# ggml_op_can_inplace (ggml/src/ggml-alloc.c)
INPLACE_OPS = frozenset({"FILL", "SCALE", "DIAG_MASK_ZERO", "DIAG_MASK_INF", "ADD", "ADD_ID", "ADD1", "SUB", "MUL",
                         "DIV", "SQR", "SQRT", "LOG", "UNARY", "ROPE", "ROPE_BACK", "SILU_BACK", "RMS_NORM",
                         "RMS_NORM_BACK", "CLAMP", "SOFT_MAX", "SOFT_MAX_BACK"})
# GGML_OP_UNARY, named as ggml_op_desc prints it (ggml_unary_op_name), in place like UNARY
UNARY_OPS = frozenset({"ABS", "SGN", "NEG", "STEP", "TANH", "ELU", "RELU", "SIGMOID", "GELU", "GELU_QUICK", "SILU",
                       "HARDSWISH", "HARDSIGMOID", "EXP", "GELU_ERF", "XIELU", "FLOOR", "CEIL", "ROUND", "TRUNC",
                       "SOFTPLUS", "EXPM1"})
# ops whose result is a view of their first source (ggml_view_tensor / ggml_view_impl)
VIEW_OPS = frozenset({"VIEW", "RESHAPE", "PERMUTE", "TRANSPOSE"})


def _pad(n: int, a: int = ALIGNMENT) -> int:
    return (n + a - 1) // a * a


class Tensor:
    """One ggml tensor: shape ``ne`` and strides ``nb`` (4 each), the bytes of one block of
    ``blck`` elements (``esize``; blck 1 but for quantized caches), op and sources.
    ``view_src`` is the root tensor whose memory a view uses (ggml_new_tensor_impl
    collapses views of views); ``external`` tensors (weights, the caches) live in other
    buffers and are never placed here."""
    __slots__ = ("op", "ne", "nb", "esize", "blck", "src", "view_src", "view_offs", "input", "output", "external",
                 "name")

    def __init__(self, op: str, ne, esize: int = 4, src=(), *, nb=None, view_of: "Tensor | None" = None,
                 offs: int = 0, external: bool = False, name: str = "", blck: int = 1):
        ne = tuple(int(x) for x in ne) + (1,) * (4 - len(ne))
        self.op, self.ne, self.esize, self.blck, self.src, self.name = op, ne, esize, blck, tuple(src), name
        if nb is None:
            row = esize * ne[0] // blck
            nb = (esize, row, row * ne[1], row * ne[1] * ne[2])
        self.nb = tuple(nb)
        self.view_src, self.view_offs = None, offs
        if view_of is not None:
            self.view_src = view_of.view_src or view_of
            self.view_offs = offs + (view_of.view_offs if view_of.view_src is not None else 0)
        self.input = self.output = False
        self.external = external

    @property
    def nbytes(self) -> int:
        """ggml_nbytes: the last byte any index reaches (whole blocks along dim 0)."""
        if any(n <= 0 for n in self.ne):
            return 0
        if self.blck == 1:
            return self.esize + sum((n - 1) * s for n, s in zip(self.ne, self.nb))
        return self.ne[0] * self.nb[0] // self.blck + sum((n - 1) * s for n, s in zip(self.ne[1:], self.nb[1:]))

    def set_output(self) -> "Tensor":
        """ggml_set_output: the tensor and the tensor whose memory it views are outputs."""
        self.output = True
        if self.view_src is not None:
            self.view_src.output = True
        return self

    def contiguous(self) -> bool:
        return self.nb == Tensor("", self.ne, self.esize, blck=self.blck).nb

    def __repr__(self) -> str:            # for debugging a replay, never shown to a user
        return f"{self.name or self.op}{list(self.ne)}"


class Graph:
    """The nodes and leafs of a ggml_cgraph, in ggml_visit_parents_graph's order."""

    def __init__(self):
        self.nodes: list[Tensor] = []
        self.leafs: list[Tensor] = []
        self._seen: set[int] = set()

    def expand(self, t: Tensor) -> Tensor:
        """ggml_build_forward_expand: visit ``t``'s sources depth first, left to right."""
        stack = [(t, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                if id(node) in self._seen:
                    continue
                self._seen.add(id(node))
            if i < len(node.src):
                stack.append((node, i + 1))
                s = node.src[i]
                if s is not None and id(s) not in self._seen:
                    stack.append((s, 0))
                continue
            (self.leafs if node.op == "NONE" else self.nodes).append(node)
        return t


class _Alloc:
    """ggml_dyn_tallocr over one chunk: free blocks sorted by offset, the last one endless."""

    def __init__(self):
        self.blocks = [[0, 1 << 62]]
        self.max_size = 0

    def alloc(self, size: int) -> int:
        size = _pad(size)
        best, best_size = -1, None
        for i in range(len(self.blocks) - 1):
            b = self.blocks[i]
            if b[1] >= size and (best_size is None or b[1] <= best_size):
                best, best_size = i, b[1]
        if best < 0:
            best = len(self.blocks) - 1
        b = self.blocks[best]
        addr = b[0]
        b[0] += size
        b[1] -= size
        if b[1] == 0:
            del self.blocks[best]
        self.max_size = max(self.max_size, addr + size)
        return addr

    def free(self, addr: int, size: int) -> None:
        size = _pad(size)
        blocks = self.blocks
        for i, b in enumerate(blocks):
            if b[0] + b[1] == addr:
                b[1] += size
                if i < len(blocks) - 1 and b[0] + b[1] == blocks[i + 1][0]:
                    b[1] += blocks[i + 1][1]
                    del blocks[i + 1]
                return
            if addr + size == b[0]:
                b[0] = addr
                b[1] += size
                if i > 0 and blocks[i - 1][0] + blocks[i - 1][1] == b[0]:
                    blocks[i - 1][1] += b[1]
                    del blocks[i]
                return
        pos = 0
        while pos < len(blocks) and blocks[pos][0] < addr:
            pos += 1
        blocks.insert(pos, [addr, size])


class _Hash:
    __slots__ = ("n_children", "n_views", "allocated", "addr")

    def __init__(self):
        self.n_children = self.n_views = 0
        self.allocated = False
        self.addr = 0


def reserve(graph: Graph) -> int:
    """The bytes ggml_gallocr_reserve_n gives this graph on the CPU buffer type."""
    alloc = _Alloc()
    hs: dict[int, _Hash] = {}

    def h(t: Tensor) -> _Hash:
        x = hs.get(id(t))
        if x is None:
            x = hs[id(t)] = _Hash()
        return x

    def is_own(t: Tensor) -> bool:
        return h(t).allocated

    def allocate(node: Tensor) -> None:
        hn = h(node)
        if node.external or hn.allocated or node.view_src is not None:
            return
        hn.allocated = True
        if node.op in INPLACE_OPS or node.op in UNARY_OPS:
            for parent in node.src:
                if parent is None or not is_own(parent):
                    continue
                if parent.output or (parent.view_src is not None and parent.view_src.output):
                    continue
                if (parent.esize, parent.blck, parent.ne, parent.nb) != (node.esize, node.blck, node.ne, node.nb):
                    continue
                ph = h(parent)
                if ph.n_children == 1 and ph.n_views == 0:
                    if parent.view_src is not None:
                        vs = parent.view_src
                        vh = h(vs)
                        if vh.n_views == 1 and vh.n_children == 0 and parent.view_offs == 0:
                            hn.addr = ph.addr
                            ph.allocated = False
                            vh.allocated = False
                            _free_extra(node, vs, vh)
                            return
                    else:
                        hn.addr = ph.addr
                        ph.allocated = False
                        _free_extra(node, parent, ph)
                        return
        hn.addr = alloc.alloc(node.nbytes)

    def _free_extra(node: Tensor, parent: Tensor, ph: _Hash) -> None:
        psize, nsize = _pad(parent.nbytes), _pad(node.nbytes)
        if psize > nsize:
            alloc.free(ph.addr + nsize, psize - nsize)

    def free(node: Tensor) -> None:
        if node.output:
            return
        hn = h(node)
        alloc.free(hn.addr, node.nbytes)
        hn.allocated = False

    for leaf in graph.leafs:
        allocate(leaf)
    for node in graph.nodes:
        if node.view_src is not None and node.op != "NONE":
            h(node.view_src).n_views += 1
        if node.input:
            allocate(node)
        for s in node.src:
            if s is None:
                continue
            h(s).n_children += 1
            if s.input:
                allocate(s)
    for node in graph.nodes:
        for p in node.src:
            if p is not None:
                allocate(p)
        allocate(node)
        for p in node.src:
            if p is None:
                continue
            ph = h(p)
            ph.n_children -= 1
            if ph.n_children == 0 and ph.n_views == 0:
                if p.view_src is not None:
                    vh = h(p.view_src)
                    vh.n_views -= 1
                    if vh.n_views == 0 and vh.n_children == 0 and vh.allocated:
                        free(p.view_src)
                elif ph.allocated:
                    free(p)
    return alloc.max_size
