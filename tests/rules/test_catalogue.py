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


def test_a_rule_keeps_no_state_of_its_own():
    """The runner makes one object per rule class and one context per file, pointed at
    each rule in turn (``validate.runner.validate``): so no rule may define ``__init__``
    or assign to ``self`` - what rules share per file lives in ``rules.common.file_cache``."""
    import ast
    import inspect
    import textwrap
    for r in RULES:
        for klass in r.__mro__:
            if klass.__module__.startswith("ggscope.rules") and klass.__name__ != "Rule":
                assert "__init__" not in vars(klass), klass
                tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
                stores = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                          and isinstance(n.value, ast.Name) and n.value.id == "self"]
                assert not stores, (klass, [n.attr for n in stores])


def test_every_finding_is_its_own_rules_on_a_file_many_rules_judge(tmp_path):
    """One context serves every rule of a file in turn: each finding still carries the
    code, name and severity of the rule that made it, the GG000 of a rule that breaks
    names that rule, and the next rule's findings are its own."""
    import ggscope
    from ggscope.rules.base import Rule
    from ggscope.validate.runner import selected_rules, validate
    from gguf_writers import KV, V, write_gguf_py
    path = write_gguf_py(tmp_path / "m.gguf", kvs=[KV("llama.context_length", V.STRING, "8"),
                                                    KV("Bad Key", V.UINT32, 1),
                                                    KV("general.file_type", V.UINT64, 0)])

    class Broken(Rule):
        code, name, severity, family = "GG999", "broken-rule", Severity.INFO, "test"

        def check(self, ctx):
            yield ctx.at(None, "first")
            raise RuntimeError("boom")

    rules = selected_rules()
    mf = ggscope.open(str(path))
    found = validate(mf, [*rules[:3], Broken, *rules[3:]])
    by = {r.code: r for r in [*rules, Broken]}
    codes = {f.code for f in found}
    assert len(codes - {"GG000", "GG999"}) >= 4, codes
    for f in found:
        if f.code == "GG000":
            assert "GG999 (broken-rule)" in f.message and f.rule == "internal-error"
            continue
        assert f.rule == by[f.code].name, f
        assert f.severity == by[f.code].severity or f.code in ("GG1307", "GG1112"), f
    assert [f.message for f in found if f.code == "GG999"] == ["first"]
