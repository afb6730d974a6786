"""ggscope's projector verdicts against libmtmd's, on the tiny projectors tools/record_mtmd.py makes.

fixtures/mtmd/verdicts.json holds what ``mtmd_init_from_file`` (llama.cpp 0c1e570's libmtmd,
with the tiny llama text model) did with each file; this test regenerates the same files and
checks that ``validate --base TEXT_MODEL`` reports an error exactly when libmtmd refused or
crashed, and for a refusal the same cause.  Cases ggscope's sidecar rules do not yet cover
are strict xfails naming the gap: when a rule learns it, the xfail fails and must go.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ggscope.validate.runner import validate_file
from tools import record_mtmd

_DATA = json.loads(record_mtmd.VERDICTS.read_text())
RECORD = _DATA["cases"]

# what each refusal's cause is, as a fragment of llama.cpp's message and of ggscope's
_CAUSES = {"unknown-type": ("unknown projector type", "unknown projector type"),
           "width-mismatch": ("mismatch between text model (n_embd = 64) and mmproj (n_embd = 48)",
                              "mismatch between text model (n_embd = 64) and mmproj (n_embd = 48)"),
           "no-encoder": ("Failed to load CLIP model", "no clip.has_vision_encoder"),
           "missing-block-count": ("Key not found: clip.vision.block_count", "Key not found: clip.vision.block_count"),
           "missing-attn-out": ("unable to find tensor v.blk.0.attn_out.weight",
                                "unable to find tensor v.blk.0.attn_out.weight")}
_GAPS: dict[str, str] = {}        # case or change -> why ggscope does not agree yet (none at present)
_CAUSES["missing-projection"] = ("killed by signal", "crashes on a null tensor: an mlp projector without mm.2.weight")
_CAUSES["missing-patch-embd-1"] = ("killed by signal", "v.patch_embd.weight.1")


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    text, projectors = record_mtmd.write_all(tmp_path_factory.mktemp("mtmd"))
    return text, dict(projectors)


def test_record_covers_every_case():
    assert sorted(RECORD) == sorted(c["name"] for c in record_mtmd.cases())
    assert {r["verdict"] for r in RECORD.values()} == {"loads", "refuses", "crash"}


def test_files_are_the_ones_recorded(written):
    # the verdicts belong to these exact bytes: the writer must stay deterministic
    text, projectors = written
    assert record_mtmd.sha256(text) == _DATA["text_model_sha256"]
    assert {n: record_mtmd.sha256(p) for n, p in projectors.items()} == {n: r["sha256"] for n, r in RECORD.items()}


def _params():
    for name in sorted(RECORD):
        gap = _GAPS.get(name) or _GAPS.get(name.split(".", 1)[1])
        marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", _params())
def test_ggscope_agrees_with_libmtmd(written, name):
    text, projectors = written
    findings = validate_file(str(projectors[name]), options={"base": str(text)})
    errors = [f for f in findings if f.severity.value == "error"]
    rec = RECORD[name]
    assert bool(errors) == (rec["verdict"] != "loads"), (rec, [(f.code, f.message) for f in errors])
    cause = _CAUSES.get(name.split(".", 1)[1])
    if cause:
        assert cause[0] in rec["error"]
        assert any(cause[1] in f.message for f in errors), [f.message for f in errors]
