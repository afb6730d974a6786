"""Shared test paths and fixtures; the helpers (kaitai_oracle, gguf_writers) live beside it.

* ``REPO``: the repository root; ``FIXTURES``: the project's own small files
  (written by ``fixtures/make_fixtures.py``); ``SHARED_FIXTURES``: the real files of
  ``<repo>/../shared/fixtures``, which may be absent (tests then skip).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
FIXTURES = REPO / "fixtures"
SHARED_FIXTURES = REPO / ".." / "shared" / "fixtures"

# `import ggscope` from the checkout (installed or not) and `import kaitai_oracle` /
# `import gguf_writers` from here, whatever pytest's import mode.
for _p in (REPO, TESTS):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """``<repo>/../shared/fixtures``, or skip with the reason when it is absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"shared fixtures not found at {SHARED_FIXTURES.resolve()}")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def ggml_oracle(shared_fixtures):
    """ggml's quantization oracle: (quant-oracle.gguf, dequant-oracle.gguf) opened, every
    type's blocks and ggml's own float32 decoding of them (fixtures/ggml/MANIFEST.md §1)."""
    import ggscope
    q = shared_fixtures / "ggml" / "quant-oracle.gguf"
    d = shared_fixtures / "ggml" / "dequant-oracle.gguf"
    if not q.is_file() or not d.is_file():
        pytest.skip(f"ggml oracle files not found under {shared_fixtures / 'ggml'}")
    return ggscope.open(q), ggscope.open(d)


@pytest.fixture(scope="session")
def repo_fixtures() -> Path:
    """``<repo>/fixtures``, or skip when ``make_fixtures.py`` output is missing."""
    if not any(FIXTURES.glob("*.gguf")):
        pytest.skip(f"no fixtures in {FIXTURES}; run python fixtures/make_fixtures.py")
    return FIXTURES


@pytest.fixture(autouse=True)
def _plain_environment(monkeypatch):
    """Tests see no CI-provided output switches (GitHub annotations, NO_COLOR), and no
    results a previous run left in the user cache (``core.stamped``: every test sees a
    first look; the cache's own tests turn it on)."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.setenv("GGSCOPE_CACHE", "0")
