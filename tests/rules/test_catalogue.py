"""The rule catalogue itself: codes, names, severities, docstrings, docs/rules.md.

Any rule added to ``ggscope.rules.RULES`` is held to these; after adding or editing a
rule, regenerate the page with ``python -m tools.gen_rules_doc``.
"""
from __future__ import annotations

import re

import pytest

from ggscope.report import rules_doc
from ggscope.rules import FAMILIES, REDIRECTS, RULES, Severity, by_code

SECTIONS = ("What it checks", "Why it matters", "Example", "Reference")


def test_codes_and_names_unique_and_well_formed():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    assert not set(codes) & set(REDIRECTS), "a retired code was reused"
    for r in RULES:
        assert re.fullmatch(r"GG\d{3,4}", r.code), r.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.name
        assert by_code(r.code) is r and by_code(r.name) is r


def test_every_rule_names_its_source():
    # the reader or writer behaviour it mirrors: ggscope rules, docs/rules.md and explain show it
    for r in RULES:
        src = r.source_text()
        assert src and "\n" not in src, r.code
        assert re.search(r"ggml|llama\.cpp|gguf|spec|rwkv|chatglm|bit1|ggscope|kaitai|legacy", src, re.I), (r.code, src)


def test_severity_family_summary():
    for r in RULES:
        assert isinstance(r.severity, Severity), r.code
        assert r.family in FAMILIES, (r.code, r.family)
        assert r.summary and "\n" not in r.summary and len(r.summary) <= 120, r.code
        assert r.formats and all(isinstance(f, str) for f in r.formats), r.code


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.code}-{r.name}")
def test_docstring_has_the_four_sections_in_order(rule):
    text = rule.explanation()
    at = []
    for s in SECTIONS:
        m = re.search(rf"^{s}:\s*\S", text, re.M)
        assert m, f"{rule.code} {rule.name}: docstring lacks a '{s}:' paragraph"
        at.append(m.start())
    assert at == sorted(at), f"{rule.code}: sections out of order"


def test_docs_rules_md_is_current():
    assert rules_doc.DOC_PATH.is_file(), "docs/rules.md missing: run python -m tools.gen_rules_doc"
    assert rules_doc.DOC_PATH.read_text(encoding="utf-8") == rules_doc.render(), \
        "docs/rules.md is stale: run python -m tools.gen_rules_doc"
    for r in RULES:
        assert f"### {r.code} {r.name}" in rules_doc.render()
