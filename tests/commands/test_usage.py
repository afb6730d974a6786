"""Usage that teaches (issue 26 item 6, item 4): "did you mean" for a mistyped command,
``ggscope help [COMMAND]``, a subcommand's own usage on its errors, ``-V``, shell
completion, and no browser without a terminal."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ggscope import cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def test_mistyped_command_gets_did_you_mean(capsys):
    assert cli.main(["valdate", "x.gguf"]) == 2
    err = capsys.readouterr().err
    assert "did you mean 'validate'?" in err and "unrecognized" not in err


def test_a_word_far_from_every_command_points_to_help(capsys):
    assert cli.main(["frobnicate"]) == 2
    assert "see 'ggscope --help'" in capsys.readouterr().err


def test_a_file_name_is_still_a_file(tmp_path, capsys):
    assert cli.main([str(tmp_path / "missing.gguf")]) == 2          # the browser's refusal, not a typo
    assert "did you mean" not in capsys.readouterr().err


def test_control_characters_in_the_word_are_escaped(capsys):
    assert cli.main(["val\x1bdate"]) == 2
    assert "\x1b" not in capsys.readouterr().err


@pytest.mark.parametrize("topic", [None, "validate", "info", "completion", "help"])
def test_help_command(topic, capsys):
    assert cli.main(["help"] + ([topic] if topic else [])) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: ggscope {topic}" if topic not in (None, "help") else "usage: ggscope")


def test_unknown_flag_shows_the_subcommands_usage(capsys):
    assert cli.main(["validate", "--bogus", str(EXAMPLE)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ggscope validate") and "unrecognized arguments: --bogus" in err


def test_short_version(capsys):
    assert cli.main(["-V"]) == 0
    assert capsys.readouterr().out.startswith("ggscope ")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_script(shell, capsys):
    assert cli.main(["completion", shell]) == 0
    assert "_ARGCOMPLETE" in capsys.readouterr().out


def test_completion_answers_subcommands_and_flags(tmp_path):
    out = tmp_path / "answer"
    env = dict(os.environ, _ARGCOMPLETE="1", _ARGCOMPLETE_STDOUT_FILENAME=str(out), PYTHONPATH=str(REPO))
    for line, want in (("ggscope val", "validate"), ("ggscope validate --sel", "--select")):
        env.update(COMP_LINE=line, COMP_POINT=str(len(line)))
        subprocess.run([sys.executable, "-c", "from ggscope.cli import main; main()"], env=env,
                       capture_output=True, timeout=120)
        assert want in out.read_text().split(), line


def test_no_terminal_no_browser():
    """`ggscope FILE` from a pipe prints info's text and exits instead of drawing into it."""
    r = subprocess.run([sys.executable, "-m", "ggscope", str(EXAMPLE)], stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0
    assert r.stdout.startswith("file: ") and "format: gguf" in r.stdout
    assert "\x1b" not in r.stdout and "no terminal" in r.stderr
