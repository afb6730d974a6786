"""ggscope/spec/documents.py holds the shipped .ksy specs as YAML parses them, and is
used only for a .ksy byte for byte the one it was made from."""
from __future__ import annotations

import pytest

from ggscope.ksy import documents
from ggscope.ksy import loader
from tools.gen_documents import main as gen_main


def test_documents_are_current():
    assert gen_main(["--check"]) == 0, "run python -m tools.gen_documents"


def test_every_shipped_spec_has_its_yaml_document():
    specs = sorted(loader.spec_path("gguf").parent.glob("*.ksy"))
    assert sorted(documents.DOCUMENTS) == [p.stem for p in specs]
    for p in specs:
        source, doc = documents.DOCUMENTS[p.stem]
        assert source == p.read_bytes()
        assert doc == loader.parse_yaml(p.read_text(encoding="utf-8"))


@pytest.fixture
def fresh_specs():
    loader.load_spec.cache_clear()
    yield
    loader.load_spec.cache_clear()


def test_an_edited_spec_is_parsed_from_its_yaml(monkeypatch, fresh_specs):
    """A .ksy that differs from the stored bytes (edited in a checkout, or the module
    stale) is read by YAML, never answered from the stored document."""
    source, doc = documents.DOCUMENTS["gguf"]
    decoy = dict(doc, meta=dict(doc["meta"], id="not_gguf"))
    monkeypatch.setitem(documents.DOCUMENTS, "gguf", (source + b"\n# edited\n", decoy))
    assert loader.load_spec("gguf").id == "gguf"
    monkeypatch.setitem(documents.DOCUMENTS, "gguf", (source, decoy))      # the same bytes: stored one used
    loader.load_spec.cache_clear()
    assert loader.load_spec("gguf").id == "not_gguf"
