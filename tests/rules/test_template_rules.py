"""The template family (GG13xx) on a corpus of payloads, on the public sample, and in detail.

The corpus (``template_corpus.py``) is the bundled example with one change per case;
each case must get exactly its expected worst severity from the security codes.  The
public sample's MANIFEST verdicts are checked the same way.  Unit tests pin what each
finding carries: line, column, the key's byte range, and that a hostile template costs a
bounded render, never a hang.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import ggscope
from ggscope.rules.templates import RULES as TEMPLATE_RULES
from ggscope.rules.templates.analysis import analyse, literals
from ggscope.rules.templates.fold import UNKNOWN, Folder
from ggscope.rules.templates.sandbox import render_all
from ggscope.validate.runner import validate
from template_corpus import CASES, SECURITY_CODES, write_case

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
_RANK = {"none": 0, "info": 0, "warning": 1, "error": 2}


def worst(findings) -> str:
    sev = max((f.severity.value for f in findings if f.code in SECURITY_CODES), key=_RANK.get, default="none")
    return "none" if sev == "info" else sev


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("template-corpus")
    for case in CASES:
        write_case(EXAMPLE, case, d / f"{case.name}.gguf")
    return d


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_case_gets_its_verdict(case, corpus_dir):
    mf = ggscope.open(str(corpus_dir / f"{case.name}.gguf"))
    findings = validate(mf, TEMPLATE_RULES)
    assert worst(findings) == case.expected, [(f.code, f.severity.value, f.message) for f in findings]


def test_public_sample_verdicts(shared_fixtures):
    folder = shared_fixtures / "templates"
    if not (folder / "sample.json").is_file():
        pytest.skip(f"no sample.json in {folder}")
    sample = json.loads((folder / "sample.json").read_text())
    rows = sample if isinstance(sample, list) else sample.get("files", sample.get("cases", []))
    assert rows
    for row in rows:
        name = row.get("file") or row.get("name")
        name = name if name.endswith(".gguf") else f"{name}.gguf"
        got = worst(validate(ggscope.open(str(folder / name)), TEMPLATE_RULES))
        assert got == row["expected"], (name, got)


def test_finding_carries_line_column_and_the_keys_bytes(tmp_path):
    text = "{% for m in messages %}\n  {{ m.content }}\n{% endfor %}\n{{ x.__class__ }}"
    case = CASES[0].__class__("t", "t", "error", template=text)
    mf = ggscope.open(str(write_case(EXAMPLE, case, tmp_path / "t.gguf")))
    [f] = [f for f in validate(mf, TEMPLATE_RULES) if f.code == "GG1302"]
    assert "tokenizer.chat_template line 4, column 6" in f.message
    kv = mf.metadata_nodes["tokenizer.chat_template"]
    from ggscope.ksy.node import find
    node = find(mf.root, kv)
    assert (f.start, f.end) == (node.start, node.end)
    raw = Path(mf.path).read_bytes()[f.start:f.end]
    assert text.encode() in raw


def test_example_has_no_security_finding():
    assert worst(validate(ggscope.open(str(EXAMPLE)), TEMPLATE_RULES)) == "none"


@pytest.mark.parametrize("expr, value", [
    ("'__cla' ~ 'ss__'", "__class__"),
    ("['a','b']|join('-')", "a-b"),
    ("'%s%s'|format('x', 'y')", "xy"),
    ("'abc'[::-1]", "cba"),
    ("dict(k=1)|first", "k"),
    ("'{}{}'.format('a', 'b')", "ab"),
    ("'a' * 3", "aaa"),
    ("'a' * 10**9", UNKNOWN),             # never computed
    ("'%999999999s'|format('x')", UNKNOWN),
    ("messages[0]", UNKNOWN),
])
def test_folding_follows_jinja2(expr, value):
    from ggscope.rules.templates.engine import environment
    env = environment()
    node = env.parse("{{ " + expr + " }}").body[0].nodes[0]
    got = Folder().value(node)
    assert got is UNKNOWN if value is UNKNOWN else got == value
    if value is not UNKNOWN:            # the oracle: Jinja2 itself renders the same string
        assert env.from_string("{{ " + expr + " }}").render() == str(value)


def test_syntax_error_has_its_line():
    [issue] = analyse("{% for m in messages %}\n{{ m }}\n{% endfoo %}")
    assert issue.kind == "syntax" and issue.line == 3


def test_literals_decode_escapes():
    assert "a\nb" in literals("{{ 'a\\nb' }}")


@pytest.mark.slow          # waits out the child's CPU budget (5 s)
def test_hostile_render_is_bounded():
    # a CPU loop the sandbox allows (MAX_RANGE each) that would run 10**10 steps
    text = "{% for i in range(100000) %}{% for j in range(100000) %}{{ '' }}{% endfor %}{% endfor %}"
    [r] = render_all(text, {"bos_token": "", "eos_token": ""})
    assert r.outcome == "budget"


def test_memory_bomb_render_is_bounded():
    rs = render_all("{{ 'x' * 2000000000 }}", {"bos_token": "", "eos_token": ""})
    assert {r.outcome for r in rs} == {"budget"}


def test_render_outcomes():
    ok = render_all("{{ messages[0].content }}", {"bos_token": "<s>"})
    assert ok[0].outcome == "ok" and ok[0].output == "You are a helpful assistant."
    raised = render_all("{{ raise_exception('no') }}", {})
    assert raised[0].outcome == "raised" and raised[0].error == "no"
    sec = render_all("{{ ().__class__.__base__ }}", {})     # printing an unsafe attribute alone renders ""
    assert sec[0].outcome == "security"


def test_tool_conversation_only_when_tools_are_mentioned():
    names = {r.conversation for r in render_all("{{ messages|length }}", {})}
    assert names == {"system + user", "user, assistant, user"}
    names = {r.conversation for r in render_all("{{ tools|length if tools else 0 }}", {})}
    assert "tool call" in names


def test_double_bos_inside_the_prompt_is_a_warning(tmp_path):
    case = CASES[0].__class__("b", "b", "warning",
                              template="{% for m in messages %}{{ bos_token }}{{ m.content }}{% endfor %}")
    mf = ggscope.open(str(write_case(EXAMPLE, case, tmp_path / "b.gguf")))
    sev = {f.severity.value for f in validate(mf, TEMPLATE_RULES) if f.code == "GG1309"}
    assert sev == {"warning"}


def test_special_tokens_scanned_together_keep_their_own_verdicts():
    """GG1310 scans all special-token texts joined by newlines first: a variation
    selector or joiner at a text's edge must stay hidden, as it is in its own text."""
    from ggscope.rules.templates.hidden import invisible
    for texts in (["\U0001F600", "\ufe0fx"], ["\U0001F600\u200d", "\U0001F600"], ["a\u200b", "b"]):
        assert bool(invisible("\n".join(texts))) == any(invisible(t) for t in texts), texts
