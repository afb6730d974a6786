"""Every case of the damage corpus (fixtures/damage_corpus.py) gets the reader's verdict.

Cuts at field boundaries and inside fields, appends and header mutations of one real
file per format (../shared/fixtures), of a BIT1 file from the independent writer and of
the repository's GGUF fixture; each asserts the exit status of ``ggscope validate`` and
the rule code that carries it.  Formats whose seed is absent are skipped.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("damage_corpus", REPO / "fixtures" / "damage_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["damage_corpus"] = mod          # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


DC = _module()
SEEDS = DC.seeds()


@pytest.mark.parametrize("label", sorted(SEEDS))
def test_every_case_gets_the_readers_verdict(label):
    data = SEEDS[label]
    cases = [*DC.cuts(label, data), *DC.appends(label, data), *DC.mutations(label, data)]
    assert cases
    wrong = []
    for case in cases:
        if not DC.right(case):
            status, _, codes = DC.verdict(case)
            wrong.append((case.kind, case.name, status, sorted(codes), case.exit, sorted(case.codes)))
    assert not wrong, wrong[:10]


def test_every_format_has_a_seed():
    want = {"bit1", "gguf"} | set(DC.SEEDS) if (REPO / ".." / "shared" / "fixtures").is_dir() else {"bit1", "gguf"}
    assert set(SEEDS) == want
