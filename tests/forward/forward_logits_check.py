"""The one comparison of a decoder's logits with llama.cpp's, shared by the two suites that
hold the forward pass to recorded llama.cpp runs (test_llama_cpp_arch.py: the shared
fixtures; test_more_archs.py: the models tools/arch_models.py writes).

Tolerances (test_llama_cpp_arch.py's docstring says where each comes from): against the
F32-cache logits 1e-5, or 1e-3 for the GELU models (1e-2 for their Q8_0 files); against
llama.cpp's default F16-cache logits 2e-3 for F32 files and 5e-2 for Q8_0; the decoder
with its own cache in F16 against those, 5e-4 and 1e-2.  Each sequence runs twice: all
tokens at once, and one token at a time through the key/value cache.
"""
from __future__ import annotations

import numpy as np

F32KV_TOL = {("F32", False): 1e-5, ("F32", True): 1e-3, ("Q8_0", False): 1e-5, ("Q8_0", True): 1e-2}
DEFAULT_TOL = {"F32": 2e-3, "Q8_0": 5e-2}
F16KV_TOL = {"F32": 5e-4, "Q8_0": 1e-2}


def assert_logits_match(mod, w, tokens: list[int], ref: np.ndarray, ref_default: np.ndarray, enc: str,
                        tol: float) -> None:
    """``mod``'s logits for ``tokens`` against llama.cpp's with an F32 cache (``ref``, within
    ``tol``) and with its default F16 one (``ref_default``), batch and step by step, the
    most likely token the same everywhere."""
    batch, _ = mod.forward(w, tokens, all_logits=True)
    state, steps = None, []
    for t in tokens:
        logits, state = mod.forward(w, [t], state)
        steps.append(logits)
    for got in (batch, np.stack(steps)):
        assert got.shape == ref.shape
        assert np.abs(got - ref).max() <= tol
        assert (got.argmax(axis=1) == ref.argmax(axis=1)).all()
        assert np.abs(got - ref_default).max() <= DEFAULT_TOL[enc]
    f16, _ = mod.forward(w, tokens, all_logits=True, kv_f16=True)
    assert np.abs(f16 - ref_default).max() <= F16KV_TOL[enc]
    assert (f16.argmax(axis=1) == ref_default.argmax(axis=1)).all()
