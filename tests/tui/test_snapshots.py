"""SVG snapshots of the main screens (pytest-textual-snapshot): 140x40, and the narrow
(80x24) and wide (250x60) layouts, a long value in the detail pane, the diff at 80 columns.

Statistics stay off and the validator worker is awaited so each screen is
deterministic; regenerate with --snapshot-update only after reading the diff report.
"""
from __future__ import annotations

import pytest

import ggscope
from ggscope.tui.app import GGScopeApp

SIZE = (140, 40)


async def _settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def test_main_screen(snap_compare, q8):
    assert snap_compare(GGScopeApp(ggscope.open(q8), auto_stats=False), terminal_size=SIZE, run_before=_settle)


def test_tensors_pane(snap_compare, q8):
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("3", "down", "down")
        await pilot.pause()
    assert snap_compare(GGScopeApp(ggscope.open(q8), auto_stats=False), terminal_size=SIZE, run_before=before)


def test_damaged_file_findings(snap_compare, truncated):
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("4")
        await pilot.pause()
    assert snap_compare(GGScopeApp(ggscope.open(truncated), auto_stats=False), terminal_size=SIZE,
                        run_before=before)


def test_goto_prompt(snap_compare, q8):
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        from textual.widgets import Input
        pilot.app.screen.query_one(Input).cursor_blink = False
        await pilot.press(*"0x1c8")
        await pilot.pause()
    assert snap_compare(GGScopeApp(ggscope.open(q8), auto_stats=False), terminal_size=SIZE, run_before=before)


def test_narrow_terminal(snap_compare, q8):
    """80x24: the overview beside 8-byte hex rows."""
    assert snap_compare(GGScopeApp(ggscope.open(q8), auto_stats=False), terminal_size=(80, 24), run_before=_settle)


def test_wide_terminal_metadata(snap_compare, q8):
    """250x60: metadata values whole beside 16-byte hex rows."""
    async def before(pilot):
        await _settle(pilot)
        await pilot.press("2", "down", "down")
        await pilot.pause()
    assert snap_compare(GGScopeApp(ggscope.open(q8), auto_stats=False), terminal_size=(250, 60),
                        run_before=before)


def test_long_value_detail(snap_compare, tmp_path):
    """A 5,000-character description, its first page, in the detail pane."""
    from tui_files import write_long_values
    path = write_long_values(tmp_path / "long.gguf")

    async def before(pilot):
        await _settle(pilot)
        await pilot.press("2", "down", "right_square_bracket")
        await pilot.pause()
    assert snap_compare(GGScopeApp(ggscope.open(path), auto_stats=False), terminal_size=SIZE, run_before=before)


def test_diff_at_80_columns(snap_compare, q8):
    """`ggscope diff Q8_0 Q4_K_S --tui` in 80x24, every tensor compared."""
    from tui_files import FIXTURES
    from ggscope.tui.diff_app import DiffApp
    q4 = FIXTURES / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
    if not q4.is_file():
        pytest.skip(f"{q4} missing; run python fixtures/make_fixtures.py")
    assert snap_compare(DiffApp(ggscope.open(q8), ggscope.open(q4)), terminal_size=(80, 24), run_before=_settle)
