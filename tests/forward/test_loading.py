"""Weights loaded through the compiled decoders, decoded once or kept packed (issue 27 item 5).

Oracles: ggml's own ``to_float`` output for every type (../shared/fixtures/ggml:
quant-oracle.gguf decoded by ggml into dequant-oracle.gguf) for ``loading.decode``, and
the logits the forward pass gave with every weight decoded at load, which a load that
keeps the matrices packed (``DECODED_BUDGET`` 0: every product that needs float32 values
decodes its matrix) must reproduce bit for bit -- on every transformer architecture's
tiny llama.cpp models, in both arithmetics.  And the decodes are counted: a matrix
ggml's kernels multiply from its blocks is never expanded (issue 28 item 5).
"""
from __future__ import annotations

import numpy as np
import pytest

import ggscope
from ggscope.facts.ggml_types import LAYOUTS
from ggscope.forward import WeightError, ggml_ops, load_weights, loading
from ggscope.forward.matmul import Packed, StreamedRows, linear, typed
from ggscope.stats import cstats

ARCHS = ["Llama-140K", "Qwen2-140K", "Qwen3-164K", "Qwen3MoE-4x116K", "Gemma2-119K", "Gemma3-317K",
         "Phi-3-140K", "StarCoder2-133K", "GPT2-149K", "DeepSeek2-4x138K"]
TOKENS = [1, 17, 300, 42, 5, 99, 250, 7]


def test_decode_is_ggml_to_float_for_every_type(ggml_oracle, monkeypatch):
    """Every tensor of the oracle decodes to ggml's own float32, bit for bit; the layouts
    the compiled kernels know never reach the numpy codecs."""
    quant, deq = ggml_oracle
    numpy_layouts = []
    real = loading.decode_into
    monkeypatch.setattr(loading, "decode_into", lambda lay, *a: (numpy_layouts.append(lay), real(lay, *a))[1])
    bad = []
    for t in quant.tensors:
        if LAYOUTS[t.layout].codec is None:
            continue
        got = loading.decode(t)
        want = deq.tensor(t.name).raw().view(np.uint32).reshape(t.np_shape)
        assert got.dtype == np.float32 and got.shape == t.np_shape
        if not np.array_equal(got.view(np.uint32), want):
            bad.append(t.name)
    assert not bad, f"tensors differing from ggml: {bad}"
    if cstats.available():
        assert not set(numpy_layouts) & cstats.FUSED_LAYOUTS
        assert {"Q8_0", "Q4_K", "Q6_K", "IQ2_XXS"} <= cstats.FUSED_LAYOUTS


def test_decode_of_a_tensor_spanning_many_windows(ggml_oracle, monkeypatch):
    """Windows of a few blocks, decoded on both threads, tile the tensor exactly."""
    quant, _ = ggml_oracle
    t = next(t for t in quant.tensors if t.type == "Q4_K")
    whole = loading.decode(t)
    monkeypatch.setattr(loading, "WINDOW_BYTES", 3 * LAYOUTS["Q4_K"].block_bytes)
    assert np.array_equal(loading.decode(t).view(np.uint32), whole.view(np.uint32))


def test_a_tensor_the_file_does_not_hold_is_one_line(ggml_oracle, tmp_path):
    """Cut the file inside its last tensor: the load says which tensor and how many bytes,
    before allocating for it."""
    quant, _ = ggml_oracle
    last = max(quant.tensors, key=lambda t: t.offset)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(quant.source.buf[:last.offset + last.nbytes // 2].tobytes())
    mf = ggscope.open(cut)
    t = mf.tensor(last.name)
    with pytest.raises(ValueError, match=f"needs {last.nbytes} bytes, the file holds {last.nbytes // 2}"):
        loading.decode(t)
    with pytest.raises(ValueError, match="the file holds"):
        loading.read_blocks(t)


@pytest.fixture(scope="module")
def arch_dir(shared_fixtures):
    d = shared_fixtures / "llama-cpp-arch"
    if not d.is_dir():
        pytest.skip(f"{d} not found")
    return d


def _logits(path, exact: bool):
    mf = ggscope.open(path)
    module, w = load_weights(mf, exact)
    logits, state = module.forward(w, TOKENS)
    step, _ = module.forward(w, [3], state)              # one more token through the cache
    return w, np.concatenate([logits, step])


@pytest.mark.parametrize("exact", [False, True], ids=["llama.cpp", "exact"])
@pytest.mark.parametrize("enc", ["F32", "Q8_0"])
@pytest.mark.parametrize("arch", ARCHS)
def test_packed_weights_give_the_same_logits(arch_dir, monkeypatch, arch, enc, exact):
    path = arch_dir / f"Tiny-{arch}-v1.0-{enc}.gguf"
    if not path.is_file():
        pytest.skip(f"{path.name} not found")
    _, want = _logits(path, exact)
    monkeypatch.setattr(loading, "DECODED_BUDGET", 0)
    w, got = _logits(path, exact)
    packed = [x for L in w.layers for x in vars(L).values() if isinstance(x, Packed)]
    assert packed, "nothing was left packed"
    assert all(x.vec_dot is None for x in packed) == (exact or enc == "F32")
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_budget_keeps_the_first_matrices_decoded(repo_fixtures, monkeypatch):
    """A budget of layer 0's attn_q and attn_k: those have room for their float32 values
    (a slot, decoded at most once), every later product (not only those that would have
    fitted) is packed without one; norms and the embedding are neither."""
    mf = ggscope.open(repo_fixtures / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf")
    q, k = mf.tensor("blk.0.attn_q.weight"), mf.tensor("blk.0.attn_k.weight")
    monkeypatch.setattr(loading, "DECODED_BUDGET", 4 * (q.n_elements + k.n_elements))
    _, w = load_weights(mf)
    L0 = w.layers[0]
    assert all(not isinstance(x, Packed) or x.slot is not None for x in (L0.wq, L0.wk))
    assert all(isinstance(x, Packed) and x.slot is None
               for L in w.layers for x in (L.wv, L.wo, L.gate, L.up, L.down))
    assert all(isinstance(L.attn_norm, np.ndarray) for L in w.layers)
    assert isinstance(w.embed, StreamedRows)
    packed = sum(x.blocks.nbytes for L in w.layers for x in vars(L).values() if isinstance(x, Packed))
    assert packed < sum(4 * int(np.prod(x.shape)) for L in w.layers for x in vars(L).values()
                        if isinstance(x, Packed)) / 4      # Q4_K: 0.56 bytes a parameter


class _Decodes:
    """Counts the weight matrices decoded to float32: whole 2-D tensors through
    ``loading.decode`` and packed matrices through ``Packed.values``'s decoder."""

    def __init__(self, monkeypatch) -> None:
        self.matrices: list[str] = []
        decode, decoded = loading.decode, Packed._decoded

        def counting_decode(info, out=None):
            if len(info.shape) >= 2 and min(int(d) for d in info.shape[:2]) > 1:
                self.matrices.append(info.name)
            return decode(info, out)

        def counting_decoded(packed, out):
            self.matrices.append(f"packed {packed.type} {packed.shape}")
            return decoded(packed, out)
        monkeypatch.setattr(loading, "decode", counting_decode)
        monkeypatch.setattr(Packed, "_decoded", counting_decoded)


@pytest.mark.skipif(not ggml_ops.AVAILABLE, reason="needs the compiled ggml kernels (csrc/_cggml.c)")
def test_the_default_arithmetic_decodes_no_q8_0_matrix(arch_dir, monkeypatch):
    """Issue 28 item 5: a Q8_0 matrix ggml's kernels multiply from its blocks is never
    expanded to float32 -- not at load, not by a forward pass of several tokens or of one
    (generation); ``--exact`` multiplies float32 and decodes them; the logits are the ones
    of the matrices decoded at load (a budget of 0 decodes every matrix for each product)."""
    path = arch_dir / "Tiny-Llama-140K-v1.0-Q8_0.gguf"
    if not path.is_file():
        pytest.skip(f"{path.name} not found")
    F = pytest.importorskip("ggscope.forward")
    counted = _Decodes(monkeypatch)
    mf = ggscope.open(path)
    mod, w = load_weights(mf)
    assert any(isinstance(x, Packed) for L in w.layers for x in vars(L).values())
    logits, state = mod.forward(w, [1, 5, 9, 3, 7], all_logits=True)
    step, _ = mod.forward(w, [11], state)
    assert counted.matrices == []
    mod_e, w_e = F.load_weights(ggscope.open(path), exact=True)
    mod_e.forward(w_e, [1, 5, 9, 3, 7])
    assert len(counted.matrices) >= 7 * len(w_e.layers)        # q k v o gate up down per layer

    # main's load: every matrix decoded to float32 and tagged with its blocks (matmul.typed)
    for L in w.layers:
        for name, x in list(vars(L).items()):
            if isinstance(x, Packed):
                fresh = Packed(x.blocks, x.layout, x.type, x.shape, x.byteorder)
                setattr(L, name, typed(fresh.values().view(np.ndarray), x.type, x.blocks))
    want, state_d = mod.forward(w, [1, 5, 9, 3, 7], all_logits=True)
    want_step, _ = mod.forward(w, [11], state_d)
    assert np.array_equal(logits.view(np.uint32), want.view(np.uint32))
    assert np.array_equal(step.view(np.uint32), want_step.view(np.uint32))


def test_a_kept_matrix_is_decoded_once(repo_fixtures):
    """A Q4_K matrix with its slot: one activation row takes ggml's vec_dot, which
    ``ggml_ops`` does not have, so the values are decoded -- on the first such product only."""
    mf = ggscope.open(repo_fixtures / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf")
    _, w = load_weights(mf)
    wq = w.layers[0].wq
    assert isinstance(wq, Packed) and wq.slot is not None
    x = np.random.default_rng(3).standard_normal((1, wq.shape[1])).astype(np.float32)
    first = linear(x, wq)
    kept = wq.values()
    assert linear(x, wq).tobytes() == first.tobytes() and wq.values() is kept
    assert np.shares_memory(kept, wq.slot)
    want = loading.decode(mf.tensor("blk.0.attn_q.weight"))
    assert np.array_equal(np.asarray(kept).view(np.uint32), want.view(np.uint32))


def test_packed_q4_1_keeps_the_q8_1_sum_term():
    """A Q4_1 matrix multiplies with ggml's Q8_1 sum correction whether packed or decoded."""
    rng = np.random.default_rng(7)
    rows, cols = 48, 128
    blocks = rng.integers(0, 256, (rows * cols // 32, 20), dtype=np.uint8)
    blocks[:, 0:2] = np.frombuffer(np.full(len(blocks), 0.01, "<f2").tobytes(), np.uint8).reshape(-1, 2)
    blocks[:, 2:4] = np.frombuffer((rng.standard_normal(len(blocks)) * 0.05).astype("<f2").tobytes(),
                                   np.uint8).reshape(-1, 2)
    packed = Packed(blocks, "Q4_1", "Q4_1", (rows, cols))
    decoded = typed(packed.values().view(np.ndarray), "Q4_1", blocks)
    assert packed.mins is not None and np.array_equal(packed.mins, decoded.mins)
    x = rng.standard_normal((5, cols)).astype(np.float32)
    assert np.array_equal(linear(x, packed), linear(x, decoded))
    plain = Packed(blocks, "Q4_1", "Q4_1", (rows, cols), rounded=False)
    assert plain.vec_dot is None and np.array_equal(linear(x, plain), x @ packed.values().view(np.ndarray).T)


def test_a_cut_file_fails_the_load_with_one_line(arch_dir, tmp_path, monkeypatch):
    src = ggscope.open(arch_dir / "Tiny-Llama-140K-v1.0-Q8_0.gguf")
    last = max(src.tensors, key=lambda t: t.offset)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(src.source.buf[:last.offset + last.nbytes - 1].tobytes())
    for budget in (loading.DECODED_BUDGET, 0):
        monkeypatch.setattr(loading, "DECODED_BUDGET", budget)
        with pytest.raises(WeightError, match=f"{last.name}.*the file holds {last.nbytes - 1}") as err:
            load_weights(ggscope.open(cut))
        assert "\n" not in str(err.value)


def test_the_embedding_stays_in_the_file(arch_dir):
    """token_embd is not read at load (no copy of the table in the process); rows and the
    tied output's product read it from the file, to ggml's values."""
    mf = ggscope.open(arch_dir / "Tiny-Gemma3-317K-v1.0-Q8_0.gguf")
    _, w = load_weights(mf)
    assert w.output is w.embed                                   # tied: the product streams it
    held = [k for k, v in vars(w.embed).items() if isinstance(v, np.ndarray) and v.size > 1024]
    assert not held, f"the embedding holds arrays: {held}"
    table = loading.decode(mf.tensor("token_embd.weight"))
    ids = [5, 0, w.embed.shape[0] - 1, 5]
    assert np.array_equal(w.embed.rows(ids).view(np.uint32), table[ids].view(np.uint32))
    x = np.random.default_rng(1).standard_normal((3, w.embed.shape[1])).astype(np.float32)
    from ggscope.forward.matmul import round_activations
    want = round_activations(x, "q8_0") @ table.T
    assert np.allclose(w.embed.project(x), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(IndexError):
        w.embed.rows([w.embed.shape[0]])
