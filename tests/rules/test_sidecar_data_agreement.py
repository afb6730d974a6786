"""ggscope's control-vector and importance-matrix verdicts against llama.cpp's readers.

fixtures/sidecar_data/verdicts.json holds what ``llama-completion --control-vector`` and
``llama-quantize --imatrix`` (llama.cpp 0c1e570) did with each file tools/record_sidecar_data.py
makes, applied to the bundled example model; this test regenerates the same bytes and checks
that ``validate --base MODEL`` reports an error exactly when the reader refused or crashed,
with the reader's cause, and no error where it loaded.
"""
from __future__ import annotations

import json

import pytest

from ggscope.validate.runner import validate_file
from tools import record_sidecar_data as rec

DATA = json.loads(rec.VERDICTS.read_text())
RECORD = DATA["cases"]
CODES = ("GG1124", "GG1125", "GG1126", "GG1127")
# llama.cpp's line -> the fragment ggscope's finding must carry
CAUSES = {"invalid (zero) direction tensor layer": "invalid (zero) direction tensor layer index",
          "invalid (non-F32) direction tensor type": "invalid (non-F32) direction tensor type",
          "invalid (non-1D) direction tensor shape": "invalid (non-1D) direction tensor shape",
          "does not match previous dimensions": "does not match previous dimensions",
          "invalid/unparsable direction tensor layer index": "invalid/unparsable direction tensor layer index",
          "no direction tensors found": "no direction tensors found",
          "n_embd does not match model": "control vector n_embd does not match model",
          "missing imatrix metadata": "missing imatrix metadata",
          "imatrix size 32 is different from tensor size 64": "imatrix size 32 is different from tensor size 64",
          "GGML_ASSERT": "GGML_ASSERT in gguf_get_val_u32"}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    return rec.write_all(tmp_path_factory.mktemp("sidecar_data"))


def test_record_covers_every_case_and_the_same_bytes(written):
    assert sorted(RECORD) == sorted(c["name"] for c in rec.cases())
    assert {r["verdict"] for r in RECORD.values()} == {"loads", "refuses", "crash"}
    assert rec.sha256(rec.MODEL) == DATA["model_sha256"]
    assert {n: rec.sha256(p) for n, p in written.items()} == {n: r["sha256"] for n, r in RECORD.items()}


@pytest.mark.parametrize("name", sorted(RECORD))
def test_ggscope_agrees_with_the_reader(written, name):
    findings = validate_file(str(written[name]), options={"base": str(rec.MODEL)})
    errors = [f for f in findings if f.severity.value == "error"]
    record = RECORD[name]
    assert bool(errors) == (record["verdict"] != "loads"), (record, [(f.code, f.message) for f in errors])
    assert all(f.code in CODES for f in errors), [(f.code, f.message) for f in errors]
    for line, fragment in CAUSES.items():
        if line in record["error"]:
            assert any(fragment in f.message for f in errors), [f.message for f in errors]
            break
    else:
        assert record["verdict"] == "loads" or record["error"] in ("failed to load imatrix",), record


def test_what_loads_but_does_less_is_a_warning(written):
    for name, code in (("control-vector.beyond-layers", "GG1125"), ("imatrix.other-model", "GG1127")):
        found = [(f.code, f.severity.value) for f in validate_file(str(written[name]), options={"base": str(rec.MODEL)})
                 if f.code in CODES]
        assert found == [(code, "warning")], (name, found)


def test_sidecars_are_not_judged_as_models(written):
    # before these rules: GG1101 "unknown model architecture: 'controlvector'" and GG602 on every imatrix
    for name in ("control-vector.ok", "imatrix.ok"):
        found = validate_file(str(written[name]))
        assert not [f for f in found if f.severity.value == "error"], [(f.code, f.message) for f in found]
        assert any(f.code == "GG1120" for f in found)


@pytest.mark.parametrize("text,value", [("1", 1), (" 7x", 7), ("+3", 3), ("-2", -2), ("3.weight", 3), ("x", None),
                                         ("", None), ("2147483648", None), ("-2147483648", -(1 << 31))])
def test_stoi_is_cpp_stoi(text, value):
    from ggscope.rules.sidecar_data import stoi
    assert stoi(text) == value
