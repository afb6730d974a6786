"""The committed hostile corpus (fixtures/malicious, written by fixtures/make_malicious.py).

Every file opens without an exception, within a bounded amount of work (function calls,
counted: see tests/work_budget.py; never the clock) and produces the finding its name
starts with.  The corpus on disk must equal what the script writes.
"""
import importlib.util

import pytest

import ggscope
from ggscope.rules import by_code
from ggscope.validate.runner import selected_rules, validate

from conftest import FIXTURES
from work_budget import call_budget

# the 164K-parameter example costs about 25,000 calls to open and validate (100,000 with
# its first imports); a loop over a claimed count of 2**32 would cost billions
CALL_BUDGET = 1_000_000

MAL = FIXTURES / "malicious"
FILES = sorted(MAL.glob("*.gguf"))


def _corpus():
    spec = importlib.util.spec_from_file_location("make_malicious", FIXTURES / "make_malicious.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.CORPUS


def test_corpus_is_current():
    corpus = _corpus()
    assert sorted(p.name for p in FILES) == sorted(corpus)
    for p in FILES:
        assert p.read_bytes() == corpus[p.name], p.name


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_malicious_file(path):
    code = path.name.split("_", 1)[0]
    with call_budget(CALL_BUDGET):
        mf = ggscope.open(str(path))
        found = list(validate(mf, selected_rules(deep=True)))
    assert not [f for f in found if f.code == "GG000"], found
    codes = {f.code for f in found}
    if by_code(code) is not None:
        assert code in codes, (path.name, sorted(codes))
    else:       # the rule's family is not written yet: the file must still be judged bad
        assert mf.damage is not None or any(f.severity.value == "error" for f in found)
