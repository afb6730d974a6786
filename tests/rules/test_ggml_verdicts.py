"""The structure family agrees with ggml's own reader on every handcrafted file.

Oracle: ../shared/fixtures/ggml/handcrafted/verdicts.json, ggml's gguf_init_from_file
verdict for each file (see that folder's MANIFEST.md).
"""
from __future__ import annotations

import json

import pytest

from ggscope.validate.runner import validate_file


def _cases(shared):
    d = shared / "ggml" / "handcrafted"
    if not (d / "verdicts.json").is_file():
        pytest.skip(f"no verdicts.json in {d}")
    return d, json.loads((d / "verdicts.json").read_text())


def test_structure_family_matches_ggml_verdicts(shared_fixtures):
    d, verdicts = _cases(shared_fixtures)
    wrong = []
    for name, v in sorted(verdicts.items()):
        findings = validate_file(str(d / name))
        assert not [f for f in findings if f.code == "GG000"], name
        structural = [f for f in findings if f.code.startswith("GG1") and f.severity.value == "error"]
        if v["ggml_accepts"] and structural:
            wrong.append((name, "accepted by ggml", [f.code for f in structural]))
        if not v["ggml_accepts"] and not structural:
            wrong.append((name, f"refused by ggml ({v['ggml_error']})", []))
    assert not wrong
    assert len(verdicts) == 85
