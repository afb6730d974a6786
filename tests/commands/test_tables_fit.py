"""Every table fits its terminal (``report.fit``), help and rule texts wrap to it, piped
output keeps every column; the same flag means the same thing in every command."""
from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from ggscope.cli import main
from ggscope.report.fit import Column, FittingTable, fitting

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def _render(renderables, width: int) -> list[str]:
    con = Console(width=width, file=io.StringIO(), force_terminal=False, color_system=None)
    for r in renderables:
        con.print(r)
    return con.file.getvalue().splitlines()


def _stats(names=("token_embd.weight", "blk.0.attn_norm.weight", "blk.1.attn_output.weight")):
    from ggscope.model.open import open as open_file
    from ggscope.stats.tensors import tensor_stats
    mf = open_file(str(EXAMPLE))
    return [tensor_stats(mf.tensor(n), bins=8) for n in names]


@pytest.mark.parametrize("width", [80, 100, 120, 200])
def test_stats_table_fits_and_never_shows_a_column_of_ellipses(width):
    from ggscope.report.stats import COLUMNS, row, rich_table
    stats = _stats()
    lines = _render([rich_table(stats)], width)
    assert max(len(x) for x in lines) <= width
    assert "…" not in "\n".join(lines)
    header = next(x for x in lines if "name" in x and "┃" in x)
    shown = [h.strip() for h in header.strip("┃ ").split("┃")]
    assert shown[0] == "name" and "nan" in shown and "inf" in shown        # the telling columns stay
    cells = {c: v for c, v in zip(COLUMNS, row(stats[0]))}
    body = next(x for x in lines if "token_embd.weight" in x)
    assert all(cells[c] in body for c in shown if c != "name")             # whole numbers, not cut
    if len(shown) < len(COLUMNS):
        assert "left out for width:" in "\n".join(lines)


def test_stats_piped_keeps_every_column(capsys):
    from ggscope.report.stats import COLUMNS
    assert main(["stats", str(EXAMPLE), "token_embd.weight"]) == 0
    head = capsys.readouterr().out.splitlines()[0].split()
    assert tuple(head) == COLUMNS


def test_fitting_drops_by_priority_and_keeps_the_first():
    cols = [Column("name", False, 0), Column("a", True, 2), Column("b", True, 1)]
    rows = [["x" * 10, "1" * 20, "2" * 20]]
    assert fitting(cols, rows, 200) == [0, 1, 2]
    assert fitting(cols, rows, 4 + 13 + 23) == [0, 2]       # b outranks a
    assert fitting(cols, rows, 5) == [0]
    lines = _render([FittingTable(cols, rows, "t")], 40)
    assert "left out for width: a" in "\n".join(lines)


@pytest.mark.parametrize("width", [80, 200])
def test_info_tables_fit(width):
    from ggscope.model.open import open as open_file
    from ggscope.report.info import rich_renderables
    lines = _render(rich_renderables(open_file(str(EXAMPLE))), width)
    assert max(len(x) for x in lines) <= width
    assert not any(set(c.strip()) == {"…"} for x in lines for c in x.split("│") if c.strip())


@pytest.mark.parametrize("command", ["", "info", "stats", "diff", "validate", "run", "rules", "explain", "hash"])
def test_help_wraps_to_the_terminal_without_breaking_words(command, capsys, monkeypatch):
    def help_at(width: str) -> str:
        monkeypatch.setenv("COLUMNS", width)
        try:
            main([*([command] if command else []), "--help"])
        except SystemExit:
            pass
        return capsys.readouterr().out
    out = help_at("80")
    assert max(len(x) for x in out.splitlines()) <= 80
    assert "``" not in out
    wide = help_at("200")
    assert max(len(x) for x in wide.splitlines()) > 80
    words = lambda t: [w for w in t.split() if w not in ("\\", "#")]  # noqa: E731 - the same words, only breaks move
    assert words(out) == words(wide)


def test_help_wrap_keeps_examples_copyable():
    from ggscope.commands.helptext import wrap_help
    text = "examples:\n  ggscope diff --json a.bin b.bin | jq '.tensors[] | select(.cosine < 0.999) | .name'\n"
    out = wrap_help(text, 60).splitlines()
    assert out[1].endswith(" \\") and "'.tensors[] | select(.cosine < 0.999) | .name'" in out[2]


@pytest.mark.parametrize("width", [80, 120, 200])
def test_rules_table_wraps_to_the_terminal(width, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["rules", "--color", "always"]) == 0
    lines = [ANSI.sub("", x) for x in capsys.readouterr().out.splitlines()]
    assert max(len(x) for x in lines) <= width
    from ggscope.rules import RULES
    text = " ".join(c.strip() for x in lines for c in x.split("│"))
    summary = RULES[0].summary.split()
    assert all(w in text.split() for w in summary)                     # words whole, never split
    assert main(["rules"]) == 0
    piped = capsys.readouterr().out.splitlines()
    assert piped[0].split() == ["code", "name", "severity", "family", "summary", "source"]


def test_same_flags_everywhere(capsys, tmp_path):
    assert main(["validate", "--json", str(EXAMPLE)]) in (0, 1)
    assert isinstance(json.loads(capsys.readouterr().out), list)
    assert main(["validate", "--format", "json", str(EXAMPLE)]) in (0, 1)
    assert isinstance(json.loads(capsys.readouterr().out), list)
    for argv in (["rules", "--color", "never"], ["explain", "GG101", "--color", "never"],
                 ["run", str(EXAMPLE), "--tokens", "1,2", "--color", "never", "--top-k", "2"]):
        assert main(argv) == 0, argv
        capsys.readouterr()


def test_info_and_stats_take_globs(capsys, tmp_path):
    import shutil
    for n in ("a", "b"):
        shutil.copy(EXAMPLE, tmp_path / f"{n}.gguf")
    assert main(["info", "--json", str(tmp_path / "*.gguf")]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [Path(d["file"]).name for d in docs] == ["a.gguf", "b.gguf"]
    assert main(["stats", "--json", str(tmp_path / "*.gguf"), "output.weight"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert [Path(d["file"]).name for d in docs] == ["a.gguf", "b.gguf"]
    assert main(["info", str(tmp_path / "*.none")]) == 2
    assert "no file matches" in capsys.readouterr().err
