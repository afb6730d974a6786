"""Pilot drives the browser's main flows; gguf-py's GGUFReader is the oracle for where
fields are, so the hex view is checked against an independent parser."""
from __future__ import annotations

import asyncio
import threading

import pytest

import ggscope
from ggscope import cli
from ggscope.commands import tui as tui_command
from ggscope.tui.app import GGScopeApp
from ggscope.tui.messages import StatsFinished
from ggscope.tui.widgets.hex_view import HexView
from ggscope.tui.widgets.node_tree import NodeTree

from tui_files import BIG, write_sparse_20gb, settle_until

gguf = pytest.importorskip("gguf")
SIZE = (140, 40)


def run(coro):
    return asyncio.run(coro)


def text_of(app, selector: str, width: int = 200) -> str:
    """What a Static shows, as plain text."""
    import io
    from rich.console import Console
    con = Console(width=width, file=io.StringIO(), color_system=None)
    con.print(app.query_one(selector).content)
    return con.file.getvalue()


def _field_range(field) -> tuple[int, int]:
    return field.offset, field.offset + sum(int(p.nbytes) for p in field.parts)


def test_select_tensor_moves_hex_highlight(q8):
    reader = gguf.GGUFReader(q8)
    expected = [_field_range(t.field) for t in reader.tensors[:3]]

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")                 # tensors pane, first row
            await pilot.press("down")
            await pilot.pause()
            hexview = app.query_one(HexView)
            got = [hexview.selection]
            await pilot.press("down")
            await pilot.pause()
            got.append(hexview.selection)
            return got, hexview.cursor
    got, cursor = run(flow())
    assert got == expected[1:3]
    assert cursor == expected[2][0]


def test_cursor_selects_deepest_node(q8):
    kv = gguf.GGUFReader(q8).fields["llama.block_count"]
    key_start = kv.offset + 8                         # after the u64 key length
    key_end = key_start + len("llama.block_count")

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("g")
            await pilot.press(*hex(key_start + 3), "enter")
            await pilot.pause()
            return app.selected, app.query_one(HexView)
    node, hexview = run(flow())
    assert (node.start, node.end) == (key_start, key_end)
    assert hexview.cursor == key_start + 3
    assert hexview.selection == (key_start, key_end)


def test_search_key_then_bytes(q8):
    kv = gguf.GGUFReader(q8).fields["llama.block_count"]
    raw = q8.read_bytes()

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("slash", *"block_count", "enter")
            await pilot.pause()
            first = app.query_one(HexView).selection
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"x:47 47 55 46", "enter")
            await pilot.pause()
            second = app.query_one(HexView).selection
            return first, second
    first, second = run(flow())
    assert first == _field_range(kv)
    assert second == (raw.find(b"GGUF"), raw.find(b"GGUF") + 4)


def test_damaged_file_opens_and_finding_jumps(truncated):
    mf = ggscope.open(truncated)
    assert mf.damage is not None

    async def flow():
        app = GGScopeApp(mf, auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            assert app.has_class("-damaged")
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.pause()
            tree = app.query_one(NodeTree)
            at_cursor = tree.cursor_node
            labels = [str(at_cursor.label)]
            assert at_cursor.data is mf.damage
            await app.workers.wait_for_complete()
            await pilot.press("4")
            i = next(i for i, f in enumerate(app.findings) if f.start == mf.damage.start)
            await pilot.press(*["down"] * i)
            await pilot.pause()
            hexview = app.query_one(HexView)
            return app.findings, labels, hexview.cursor, hexview.selection
    findings, labels, cursor, selection = run(flow())
    assert cursor == mf.damage.start and selection[0] == mf.damage.start
    assert any("ERROR" in lab for lab in labels)


def test_stats_worker_fills_table_or_says_unavailable(q8):
    reader = gguf.GGUFReader(q8)
    from gguf.quants import dequantize
    want = [float(dequantize(t.data, t.tensor_type).astype("float64").mean()) for t in reader.tensors]
    finished = []

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=True)
        async with app.run_test(size=SIZE, message_hook=lambda m: finished.append(m)
                                if isinstance(m, StatsFinished) else None) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            table = app.query_one("#tensor-table")
            return [str(table.get_cell(str(i), "mean")) for i in range(len(app.mf.tensors))]
    cells = run(flow())
    assert finished and not finished[0].cancelled
    if all(c == "n/a" for c in cells):
        pytest.skip("ggscope.stats.tensors is not there yet: the table says n/a (statistics unavailable)")
    assert [float(c) for c in cells] == pytest.approx(want, rel=1e-3, abs=1e-4)


def test_stats_worker_cancels(q8, monkeypatch):
    """The first tensor's statistics block until `x` is pressed: the key always lands
    while the worker runs, however busy the machine."""
    from ggscope.model.modelfile import TensorInfo
    started, release = threading.Event(), threading.Event()

    def gated(self, **kw):
        started.set()
        release.wait(60)          # a safety net for a broken test, never a measurement
        return {"mean": 0.0}
    monkeypatch.setattr(TensorInfo, "stats", gated)
    finished = []

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=True)
        async with app.run_test(size=SIZE, message_hook=lambda m: finished.append(m)
                                if isinstance(m, StatsFinished) else None) as pilot:
            assert await asyncio.to_thread(started.wait, 60)
            await pilot.press("x")
            release.set()
            for _ in range(6000):     # a poll, not a limit: it ends as soon as the message is in
                if finished:
                    break
                await pilot.pause(0.01)
            await pilot.pause()
            return len(app.stats), len(app.mf.tensors)
    done, total = run(flow())
    assert finished and finished[0].cancelled
    assert done < total


def _paint_and_jump(path) -> tuple[list, tuple]:
    """Open, paint, press End; every byte range the browser read from the file."""
    mf = ggscope.open(path)
    reads: list[tuple[int, int]] = []
    real_read, real_pread = mf.source.read, mf.source.pread          # the hex view reads with pread
    mf.source.read = lambda start, end: reads.append((start, end)) or real_read(start, end)
    mf.source.pread = lambda start, end: reads.append((start, end)) or real_pread(start, end)
    path_size = path.stat().st_size

    async def flow():
        app = GGScopeApp(mf)
        async with app.run_test(size=SIZE) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            hexview = app.query_one(HexView)
            hexview.focus()
            await pilot.press("end")             # the key, through the event loop
            await pilot.pause()
            lines = [hexview.render_line(y).text for y in range(hexview.size.height)]
            assert any(f"{path_size - 1:x}"[:-1] in line for line in lines) if path_size else True
            return hexview.cursor, int(hexview.scroll_offset.y), hexview.n_rows, app.auto_stats
    return reads, run(flow())


def test_sparse_20gb_paints_without_reading_data_and_jumps_to_end(tmp_path, q8):
    """A 20 GB file costs what a small one does: painting and jumping to the last byte
    read only the rows on the screen (and the header), never the tensor data; the
    statistics do not start by themselves.  Times are in benchmarks/first_paint.py."""
    path = write_sparse_20gb(tmp_path / "big.gguf")
    reads, (cursor, top, n_rows, auto) = _paint_and_jump(path)
    size = path.stat().st_size
    assert size > BIG and not auto
    assert cursor == size - 1
    assert n_rows == -(-size // 16) and top <= n_rows - 1 < top + SIZE[1]
    assert sum(min(e, size) - s for s, e in reads) < 64 * 1024, "read more than the rows shown"
    data_start = size - BIG
    in_data = {s // 16 for s, e in reads if s >= data_start}
    assert in_data and len(in_data) <= 2 * SIZE[1], "rendered rows in the data beyond the screen"
    assert max(in_data) == (size - 1) // 16


def test_command_errors_and_default_file(tmp_path, monkeypatch, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not a model file at all" * 4)
    assert cli.main([str(junk)]) == 2
    assert cli.main([str(tmp_path / "missing.gguf")]) == 2
    err = capsys.readouterr().err
    assert err.count("ggscope:") == 2
    opened = []
    monkeypatch.setattr("ggscope.tui.run.run_app", lambda path: opened.append(path) or 0)
    monkeypatch.setattr("ggscope.commands.tui._has_terminal", lambda: True)
    assert cli.main([]) == 0
    assert opened == [str(tui_command.EXAMPLE)]       # the app parses it, after its window is up


def _gate_open(monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Hold ``ggscope.model.open.open`` until ``release`` is set; ``started`` says it was
    called.  Events, not time, order the test."""
    started, release = threading.Event(), threading.Event()
    import ggscope.model.open as model_open
    real_open = model_open.open

    def gated(path):
        started.set()
        release.wait(60)          # a safety net for a broken test, never a measurement
        return real_open(path)
    monkeypatch.setattr(model_open, "open", gated)
    return started, release


def test_window_is_up_before_the_file_is_parsed(q8, monkeypatch):
    """Started with a path, the browser paints its frame and the overview says it is
    parsing while ggscope.open is still running; when parsing ends the panes fill in."""
    started, release = _gate_open(monkeypatch)

    async def flow():
        app = GGScopeApp(str(q8), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            assert await asyncio.to_thread(started.wait, 60)
            await pilot.pause()
            before = (text_of(app, "#summary"), text_of(app, "#overview-text"), len(app.query(HexView)))
            release.set()
            await _settle(pilot, lambda: "parsing" not in text_of(app, "#summary"))
            await pilot.pause()
            after = (text_of(app, "#summary"), text_of(app, "#overview-text"), len(app.query(HexView)))
            return before, after
    before, after = run(flow())
    assert "parsing" in before[0] and "parsing" in before[1] and before[2] == 0
    n = len(gguf.GGUFReader(q8).tensors)
    assert f"{n} tensors" in after[0] and "parsing" not in after[1] and after[2] == 1
    assert "llama" in after[1] and "Q8_0" in after[1]



def test_header_facts_in_the_first_frame_and_the_parse_after_it(q8, monkeypatch):
    """Given the header peek (model.peek, as run_app passes it), the first frame shows
    the facts - tensor count, architecture, name, file type - while the parse has not
    even started: it starts only once that frame is drawn; then the panes fill in."""
    from ggscope.model.peek import peek
    started, release = _gate_open(monkeypatch)
    n = len(gguf.GGUFReader(q8).tensors)

    async def flow():
        app = GGScopeApp(str(q8), auto_stats=False, peek=peek(str(q8)))
        async with app.run_test(size=SIZE) as pilot:
            first = (text_of(app, "#summary"), text_of(app, "#overview-text"), started.is_set())
            assert await asyncio.to_thread(started.wait, 60)
            release.set()
            await _settle(pilot, lambda: len(app.query(HexView)) == 1)
            await pilot.pause()
            return first, text_of(app, "#overview-text")
    (summary, overview, parse_started), after = run(flow())
    assert not parse_started
    assert f"{n} tensors" in summary and "parsing" not in summary
    assert "llama" in overview and "TinyLlama" in overview and "Q8_0" in overview
    assert "parameters" in after and "…" not in after.split("parameters")[1].splitlines()[0]

async def _settle(pilot, done) -> None:
    """Let the loader finish: its worker starts at mount and its FileLoaded message is
    handled a turn later, so wait for ``done()`` over a bounded number of turns (no
    clock: a busy machine only takes more turns).  A worker cancelled because the app
    exited (an unreadable file) counts as finished."""
    await settle_until(pilot, done)


def test_unreadable_path_exits_2_from_the_loader(tmp_path):
    """A file that vanishes between the command's check and the loader: the app exits
    with status 2 and one paragraph, no traceback."""
    async def flow():
        app = GGScopeApp(str(tmp_path / "gone.gguf"))
        async with app.run_test(size=SIZE) as pilot:
            await _settle(pilot, lambda: bool(app.load_error))
        return app.return_code, app.load_error
    code, said = run(flow())
    assert code == 2 and said.startswith("ggscope: cannot read") and "gone.gguf" in said


def test_cli_opens_the_browser_on_a_path(q8, monkeypatch):
    """`ggscope FILE` through cli.main: the app starts with the path, parses it in its
    loader and shows the file; q quits with status 0."""
    from textual.app import App
    seen = {}

    async def auto(pilot):
        await _settle(pilot, lambda: "parsing" not in text_of(pilot.app, "#summary"))
        seen["summary"] = text_of(pilot.app, "#summary")
        await pilot.press("q")

    monkeypatch.setattr(GGScopeApp, "run", lambda self, **kw: App.run(self, headless=True, size=SIZE,
                                                                       auto_pilot=auto))
    monkeypatch.setattr("ggscope.commands.tui._has_terminal", lambda: True)
    assert cli.main([str(q8)]) == 0
    assert f"{len(gguf.GGUFReader(q8).tensors)} tensors" in seen["summary"]


def test_stats_worker_fills_bit1_sign_tensors(tmp_path):
    """BIT1 sign-bit tensors get statistics in the browser (rows of 100 bits, padded)."""
    from bit1_writer import write_bit1
    path = tmp_path / "m.bit1"
    write_bit1(path, vocab_size=12, d_model=100, n_layers=1, n_heads=2, d_ff=70, seed=4)
    mf = ggscope.open(str(path))
    want = {i: float(t.dequantize().astype("float64").mean())
            for i, t in enumerate(mf.tensors) if t.layout == "BIT1_PACKED"}

    async def flow():
        app = GGScopeApp(mf, auto_stats=True)
        async with app.run_test(size=SIZE) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            table = app.query_one("#tensor-table")
            return {i: str(table.get_cell(str(i), "mean")) for i in want}
    cells = run(flow())
    assert {i: float(c) for i, c in cells.items()} == pytest.approx(want, abs=1e-4)


HEX_CHILD = """
import asyncio, os, shutil, sys
import ggscope
from ggscope.tui.app import GGScopeApp
from ggscope.tui.widgets.hex_view import HexView
path, cut = sys.argv[1], int(sys.argv[2])

async def flow():
    app = GGScopeApp(ggscope.open(path), auto_stats=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        os.truncate(path, cut)                  # another process shrinks the file
        app.query_one(HexView).focus()
        await pilot.press("end")                # the hex view reads the rows that are gone
        for _ in range(200):                    # a poll, not a limit: ends when the app exits
            if app._exit_renderables or app.return_code is not None:
                break
            await pilot.pause(0.01)
    return app

app = asyncio.run(flow())
print(app.return_code, app.load_error, sep="\\n")
"""


def test_hex_view_of_a_file_that_shrank_exits_2_with_one_line(tmp_path):
    """The hex view reads rows with pread, not through the map: a file cut under the
    browser closes it with status 2 and the file's line (before: SIGBUS)."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parents[2]
    p = tmp_path / "m.gguf"
    shutil.copyfile(repo / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf", p)
    with ggscope.open(str(p)) as mf:
        cut = min(t.offset for t in mf.tensors) + 100
    out = subprocess.run([sys.executable, "-c", HEX_CHILD, str(p), str(cut)], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(repo)}, cwd=str(repo), timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    code, line = out.stdout.splitlines()[-2:]
    assert code == "2" and str(p) in line and "changed while ggscope read it" in line, out.stdout
