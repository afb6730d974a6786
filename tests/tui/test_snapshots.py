"""SVG snapshots of the main screens at 140x40 (pytest-textual-snapshot).

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
