"""``ggscope template``: the text with line numbers, the findings, the renders, exit codes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ggscope import cli

pytest.importorskip("gguf")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rules"))
from template_corpus import CHATML, Case, write_case  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def _file(tmp_path, template=None, **kw) -> str:
    return str(write_case(EXAMPLE, Case("c", "c", "none", template=template, **kw), tmp_path / "c.gguf"))


def test_text_output_numbers_lines_and_renders(tmp_path, capsys):
    assert cli.main(["template", _file(tmp_path, "{% for m in messages %}\n[{{ m.role }}] {{ m.content }}\n{% endfor %}")]) == 0
    out = capsys.readouterr().out
    assert "tokenizer.chat_template (3 lines" in out
    assert "  2  [{{ m.role }}] {{ m.content }}" in out
    assert "render: system + user, add_generation_prompt=false: ok" in out
    assert "[system] You are a helpful assistant." in out


def test_error_finding_exits_1_and_json_carries_everything(tmp_path, capsys):
    path = _file(tmp_path, CHATML + "{{ cycler.__init__.__globals__.os }}")
    assert cli.main(["template", path, "--json", "--messages", '[{"role": "user", "content": "Hi"}]']) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["key"] == "tokenizer.chat_template" and doc["templates"] == ["default"]
    assert {"GG1302", "GG1304"} <= {f["code"] for f in doc["findings"]}
    assert {r["conversation"] for r in doc["renders"]} == {"given messages"}
    assert [r["add_generation_prompt"] for r in doc["renders"]] == [False, True]


def test_named_template(tmp_path, capsys):
    path = _file(tmp_path, named={"tool_use": "{{ messages|length }} messages"})
    assert cli.main(["template", path, "--name", "tool_use", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["templates"] == ["default", "tool_use"]
    assert doc["renders"][0]["output"] == "2 messages"


def test_messages_from_a_file(tmp_path, capsys):
    msgs = tmp_path / "chat.json"
    msgs.write_text(json.dumps([{"role": "user", "content": "from a file"}]))
    assert cli.main(["template", _file(tmp_path, "{{ messages[0].content }}"), "--messages", str(msgs)]) == 0
    assert "from a file" in capsys.readouterr().out


@pytest.mark.parametrize("argv, needle", [
    (["--name", "nope"], 'no chat template "nope" (templates: default)'),
    (["--messages", "{not json"], "--messages is not JSON"),
    (["--messages", '{"role": "user"}'], "--messages must be a JSON list"),
    (["--messages", "missing.json"], "cannot read"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, capsys, argv, needle):
    assert cli.main(["template", _file(tmp_path, "x"), *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_unreadable_file_exits_2(tmp_path, capsys):
    assert cli.main(["template", str(tmp_path / "absent.gguf")]) == 2
    assert capsys.readouterr().err.startswith("ggscope: ")


def test_file_text_is_escaped(tmp_path, capsys):
    cli.main(["template", _file(tmp_path, "\x1b]0;owned\x07 \u202eabc \u200b[bold]x[/bold]")])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\u200b" not in out
    assert "\\x1b]0;owned\\x07" in out and "\\u202e" in out and "\\u200b" in out


def test_hostile_template_costs_a_bounded_render(tmp_path, capsys):
    assert cli.main(["template", _file(tmp_path, "{{ 'x' * 2000000000 }}")]) == 1
    out = capsys.readouterr().out
    assert "render: (all): budget" in out or ": budget: memory" in out


def test_info_and_summary_name_the_templates(tmp_path, capsys):
    from ggscope.model.summary import summarize
    import ggscope
    path = _file(tmp_path, "x", named={"tool_use": "y", "rag": "z"})
    assert cli.main(["info", path]) == 0
    assert "chat templates: default, tool_use, rag" in capsys.readouterr().out
    assert summarize(ggscope.open(path)).templates == ["default", "tool_use", "rag"]


@pytest.mark.parametrize("key, prose", [
    ("general.description", True), ("general.name", True), ("general.tags", True), ("general.author", True),
    ("general.source.url", False), ("general.license.link", False), ("general.base_model.0.repo_url", False),
    ("general.doi", False), ("tokenizer.chat_template", False), ("tokenizer.ggml.tokens", False),
])
def test_prose_keys_and_locators(key, prose):
    from ggscope.rules.templates.context import is_free_text_key
    assert is_free_text_key(key) is prose
