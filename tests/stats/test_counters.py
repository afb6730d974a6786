"""The counting tables the statistics lend and take back (``ggscope.stats.counters``):
every table given back is all zeros, whatever route counted into it, and the next call
counts in the same tables instead of faulting in new pages."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.stats import counters
from ggscope.stats.tensors import tensor_stats

sys.path.insert(0, str(Path(__file__).resolve().parent))     # the sibling module, in any import mode
from test_reading import CHUNK, write_model  # noqa: E402


@pytest.fixture
def fresh(monkeypatch):
    """This process's tables given back (``core.perprocess``), empty for the test."""
    monkeypatch.setattr(counters._FREE, "value", {})
    return counters._FREE.value


def test_tables_come_back_zeroed_from_every_route(tmp_path, fresh):
    mf = ggscope.open(write_model(tmp_path / "routes.gguf"))
    want = {t.name: tensor_stats(t, chunk_elems=CHUNK, threads=2) for t in mf.tensors}
    assert fresh, "no table was given back"
    for tables in fresh.values():
        assert len(tables) <= counters.KEEP
        for table in tables:
            assert not table.any()
    # the next calls count in those tables and agree with the first ones
    lent = {id(t) for tables in fresh.values() for t in tables}
    for bins in (64, 7):
        for t in mf.tensors:
            got = tensor_stats(t, chunk_elems=CHUNK, threads=2, bins=bins)
            if bins == 64:
                assert got == want[t.name]
    assert lent <= {id(t) for tables in fresh.values() for t in tables}
    for tables in fresh.values():
        assert all(not table.any() for table in tables)


def test_lend_gives_zeros_and_keeps_at_most_keep(fresh):
    a = counters.lend(16, np.int64)
    a[3] = 5
    counters.give_back([a], lambda t: t.fill(0))
    b = counters.lend(16, np.int64)
    assert b is a and not b.any()
    many = [counters.lend((2, 8), np.int32) for _ in range(counters.KEEP + 3)]
    counters.give_back(many, lambda t: None)
    assert len(fresh[((2, 8), np.dtype(np.int32).str)]) == counters.KEEP
