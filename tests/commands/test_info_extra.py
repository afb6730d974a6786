"""What ``info`` shows of ``mf.extra``: the format views' public facts only
(``report.info.PUBLIC_EXTRA``), never a validate run's cache or any other state a layer
keeps there, whether the file was validated in the same process first (the browser, the
Python API) or not."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

import ggscope
from ggscope.cli import main
from ggscope.report import info
from ggscope.validate import validate

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
PRIVATE = "_ggscope_validate"          # rules.common.file_cache's key


def outputs(mf) -> tuple[dict, str, str]:
    """``info``'s three outputs of one open file: JSON (as written), plain text, and the
    rich facts' text."""
    buf = io.StringIO()
    info.write_json(mf, buf)
    return json.loads(buf.getvalue()), info.plain(mf), "\n".join(f"{k}: {v}" for k, v in info.header_facts(mf))


def test_a_validated_file_reports_no_cache():
    mf = ggscope.open(EXAMPLE)
    fresh, fresh_text, _ = outputs(mf)
    validate(mf)
    assert PRIVATE in mf.extra and mf.extra[PRIVATE], "validate kept no cache: the test shows nothing"
    doc, text, facts = outputs(mf)
    assert doc == fresh and text == fresh_text
    assert "extra" not in doc                    # a GGUF file has no format-specific facts
    assert doc == info.as_json(mf)
    assert "ggscope_validate" not in json.dumps(doc) + text + facts


def test_only_public_facts_of_a_legacy_file_after_validate(shared_fixtures):
    path = shared_fixtures / "rwkv" / "tiny-rwkv-4v0-660K-FP16.bin"
    if not path.is_file():
        pytest.skip(f"{path.name} not in the shared fixtures")
    mf = ggscope.open(path)
    public = dict(mf.extra)
    validate(mf)
    mf.extra["kernel_scratch"] = [1, 2, 3]       # state a layer keeps without a leading "_"
    doc, text, _ = outputs(mf)
    assert set(public) <= info.PUBLIC_EXTRA and public
    assert doc["extra"] == json.loads(json.dumps(info.jsonable(public)))
    assert "arch version: 4" in text
    assert "scratch" not in text and "kernel_scratch" not in json.dumps(doc)


def test_info_json_in_one_process_after_validate(capsys, monkeypatch):
    """The command's own path (``commands.info``) given a file the same process validated
    (as the browser holds one open file for every view)."""
    from ggscope.commands import info as command
    mf = ggscope.open(EXAMPLE)
    validate(mf)
    monkeypatch.setattr(command, "open_or_report", lambda path: mf)
    assert main(["info", "--json", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "ggscope_validate" not in out and "kv_nodes" not in out


VIEW_DIRS = ("chatglm", "ggml-legacy", "llama-legacy", "rwkv")


def test_every_view_writes_only_public_facts(shared_fixtures):
    """A fact a view adds to ``mf.extra`` must be named in ``PUBLIC_EXTRA`` (shown) -- or
    be private on purpose: then this test is where to say so."""
    seen: set[str] = set()
    for d in VIEW_DIRS:
        for path in sorted((shared_fixtures / d).glob("*.bin")):
            try:
                mf = ggscope.open(path)
            except ggscope.GGScopeError:
                continue                         # the logits files beside the models
            seen |= set(mf.extra)
    if not seen:
        pytest.skip("no legacy model files in the shared fixtures")
    assert seen <= info.PUBLIC_EXTRA, seen - info.PUBLIC_EXTRA


def test_every_public_fact_is_one_some_layer_writes():
    """No stale entry: each name in ``PUBLIC_EXTRA`` is set by the model layer (a view or
    split.open_model)."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "ggscope" / "model").rglob("*.py"))
    for key in info.PUBLIC_EXTRA:
        assert re.search(rf'(\b{key}=|\["{key}"\] =|"{key}":)', source), key
