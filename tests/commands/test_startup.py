"""Start-up stays light: what ``--version``, ``--help`` and the browser's first paint load.

The goal is a time (``--version`` under 0.3 s, the window under 1 s; measured by
benchmarks/first_paint.py, never here); what makes it hold is a fact a test can check
on any machine: which modules are imported.  Each check runs in a fresh interpreter.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

HEAVY = ("numpy", "numba", "textual", "ggscope.ksy", "ggscope.rules", "ggscope.stats.tensors", "ggscope.diff.compare",
         "ggscope.validate.runner", "ggscope.model.modelfile")


def loaded_after(code: str) -> set[str]:
    probe = (f"import sys, io, contextlib\nsys.path.insert(0, {str(REPO)!r})\n"
             "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
             + "".join(f"    {line}\n" for line in code.splitlines())
             + "print(__import__('json').dumps(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    return set(json.loads(out.stdout))


LIGHT = ("ggscope.ksy", "ggscope.ksy.node")     # the package's lazy names and the node tree: no engine


def heavy(mods: set[str]) -> list[str]:
    return sorted(m for m in mods if m not in LIGHT and any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["validate", "--help"], ["diff", "--help"],
                                  ["stats", "--help"], ["rules", "--help"], ["info", "--help"]])
def test_help_and_version_load_nothing_heavy(argv):
    mods = loaded_after(f"from ggscope.cli import main\nmain({argv!r})")
    assert "ggscope.cli" in mods
    assert heavy(mods) == []


def test_browser_window_needs_no_parser_numpy_or_kernels():
    """What runs before the first paint: the command's check of the file's head and
    the app's module.  The spec engine, numpy and numba load later, in the worker."""
    example = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
    mods = loaded_after("from ggscope.commands import tui\n"
                        f"assert tui._refusal({str(example)!r}) is None\n"
                        "from ggscope.tui.app import GGScopeApp")
    assert "ggscope.tui.app" in mods and "textual" in mods
    assert [m for m in heavy(mods) if not m.startswith("textual")] == []


def test_stats_help_names_the_library_default():
    from ggscope.commands import stats as stats_command
    from ggscope.stats.tensors import DEFAULT_BINS
    import argparse
    p = argparse.ArgumentParser()
    stats_command.add_arguments(p)
    assert f"(default {DEFAULT_BINS})" in p.format_help()


EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
# what a one-shot command on one file and one tensor has no use for (issue 18, item 3):
# the YAML parser (the specs come parsed, ggscope.spec.documents), the other commands'
# modules and the config loader, a thread pool for a tensor of one chunk, numba
ONE_SHOT_UNUSED = ("yaml", "numba", "concurrent.futures", "ggscope.validate.config", "ggscope.commands.validate",
                   "ggscope.commands.diff", "ggscope.commands.run", "ggscope.commands.tui")


@pytest.mark.parametrize("argv", [["info", str(EXAMPLE)], ["stats", str(EXAMPLE), "blk.0.attn_q.weight"],
                                  ["stats", "--json", str(EXAMPLE), "blk.0.attn_q.weight"]])
def test_one_shot_commands_load_only_what_they_use(argv):
    mods = loaded_after(f"from ggscope.cli import main\nassert main({argv!r}) == 0")
    assert f"ggscope.commands.{argv[0]}" in mods and "ggscope.ksy" in mods
    assert sorted(m for m in mods if any(m == u or m.startswith(u + ".") for u in ONE_SHOT_UNUSED)) == []


def test_stats_of_one_tensor_builds_only_its_layouts_tables():
    """The compiled kernels' decode tables (IQ grids...) are built per layout when asked."""
    from ggscope.stats import cstats
    if not cstats.available():
        pytest.skip("ggscope.stats._cstats not built (or GGSCOPE_KERNELS=numba): no C decode tables")
    probe = (f"import sys\nsys.path.insert(0, {str(REPO)!r})\nimport ggscope\n"
             f"ggscope.open({str(EXAMPLE)!r}).tensor('blk.0.attn_q.weight').stats()\n"
             "from ggscope.stats import cstats, fused_specs\n"
             "print(cstats._layout.cache_info().currsize, fused_specs.tables.cache_info().currsize)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["1", "1"]                 # Q8_0: its layout, its (empty) tables


@pytest.mark.parametrize("argv", [["--version"], ["-V"]])
def test_version_imports_no_command_module(argv):
    """``--version`` needs the version string alone: no command module, no config loader
    (tomllib, pathlib), no difflib (issue 27, item 6)."""
    mods = loaded_after(f"from ggscope.cli import main\nassert main({argv!r}) == 0")
    assert sorted(m for m in mods if m.startswith("ggscope.commands") or m.startswith("ggscope.validate")) == []
    assert "difflib" not in mods and "tomllib" not in mods


def test_version_prints_the_version():
    from ggscope import __version__
    out = subprocess.run([sys.executable, "-m", "ggscope", "--version"], capture_output=True, text=True, cwd=REPO,
                         env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert (out.returncode, out.stdout) == (0, f"ggscope {__version__}\n")


def test_run_loads_the_loader_gate_not_the_rule_catalogue():
    """``run`` asks llama.cpp's loader verdict (two rule modules), not the catalogue: the
    families (templates, Jinja2's helpers, sidecars ...) and the terminal UI stay unloaded."""
    model = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
    if not model.exists():
        pytest.skip(f"{model} missing: run fixtures/make_fixtures.py")
    mods = loaded_after(f"from ggscope.cli import main\nmain(['run', {str(model)!r}, '--tokens', '1,2', '--top-k', '3'])")
    assert "ggscope.rules.loader_engine" in mods and "ggscope.forward" in mods
    rules = sorted(m for m in mods if m.startswith("ggscope.rules."))
    assert not [m for m in rules if m.split(".")[2] in ("structure", "values", "templates", "sidecar", "release",
                                                          "deep", "naming", "tensors")], rules
    assert not [m for m in mods if m.split(".")[0] in ("textual", "rich", "jinja2", "tokenizers")]
