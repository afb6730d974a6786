"""``ggscope.cli.main`` called many times in one process (a server, a harness, the
validate benchmark): the parser is built once per set of commands, and nothing of one
call reaches the next."""
from __future__ import annotations

import json
from pathlib import Path

from ggscope import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def test_the_parser_is_built_once_per_set_of_commands():
    one = cli._parser_for(cli._available("validate"))
    assert cli._parser_for(cli._available("validate")) is one
    assert cli._parser_for(cli._available("info")) is not one


def test_no_option_of_one_call_reaches_the_next(capsys):
    assert cli.main(["validate", "--json", "--select", "GG801", str(EXAMPLE)]) in (0, 1)
    first = json.loads(capsys.readouterr().out)
    assert {f["code"] for f in first} <= {"GG801"}
    status = cli.main(["validate", str(EXAMPLE)])
    out = capsys.readouterr().out
    assert status in (0, 1) and not out.lstrip().startswith("[")          # text again, every rule
    assert cli.main(["validate", "--no-such-option", str(EXAMPLE)]) == 2   # usage errors still exit 2
    assert "--no-such-option" in capsys.readouterr().err
    assert cli.main(["info", "--json", str(EXAMPLE)]) == 0
    assert json.loads(capsys.readouterr().out)["format"] == "gguf"
