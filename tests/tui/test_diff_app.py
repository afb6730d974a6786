"""The diff screen (``ggscope diff A B --tui``) driven by Pilot.

The pair is written here with gguf-py; the oracle for the error columns is numpy on
gguf-py's own decoding of both files (``GGUFReader`` + ``gguf.quants.dequantize``),
never ggscope's output.  A snapshot pins the layout at 140x40.
"""
from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope import cli
from ggscope.tui import diff_app
from ggscope.tui.diff_app import DiffApp
from ggscope.tui.messages import DiffFinished
from ggscope.tui.widgets.diff_tables import DiffMetadataTable, DiffTensorTable

gguf = pytest.importorskip("gguf")
from gguf_writers import KV, T, TensorSpec, V, write_gguf_py  # noqa: E402 - tests/ is on sys.path (conftest)

SIZE = (140, 40)
RWKV = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "rwkv"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A: four F32 tensors.  B: "same" unchanged, "noisy" = A + 0.3 N(0,1), "quant" as
    Q8_0, "gone" removed, "new" added; one metadata key changed and one added."""
    d = tmp_path_factory.mktemp("tui-diff")
    rng = np.random.default_rng(11)
    same = rng.standard_normal((8, 32)).astype(np.float32)
    noisy = rng.standard_normal((16, 64)).astype(np.float32)
    quant = rng.standard_normal((4, 256)).astype(np.float32)
    from gguf.quants import quantize
    ta = [TensorSpec("same", T.F32, same), TensorSpec("noisy", T.F32, noisy),
          TensorSpec("quant", T.F32, quant), TensorSpec("gone", T.F32, same)]
    tb = [TensorSpec("same", T.F32, same),
          TensorSpec("noisy", T.F32, (noisy + 0.3 * rng.standard_normal(noisy.shape)).astype(np.float32)),
          TensorSpec("quant", T.Q8_0, quantize(quant, T.Q8_0).view(np.uint8)),
          TensorSpec("new", T.F32, same)]
    pa = write_gguf_py(d / "a.gguf", kvs=[KV("test.value", V.UINT32, 1)], tensors=ta)
    pb = write_gguf_py(d / "b.gguf", kvs=[KV("test.value", V.UINT32, 2), KV("test.added", V.STRING, "hi")],
                       tensors=tb)
    return pa, pb


def numpy_metrics(pa, pb) -> dict[str, tuple[float, float]]:
    """(rel RMSE, cosine) of every tensor in both files, from gguf-py's decoding."""
    from gguf.quants import dequantize
    va = {t.name: dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64).ravel()
          for t in gguf.GGUFReader(pa).tensors}
    vb = {t.name: dequantize(np.asarray(t.data), t.tensor_type).astype(np.float64).ravel()
          for t in gguf.GGUFReader(pb).tensors}
    out = {}
    for name in va.keys() & vb.keys():
        x, y = va[name], vb[name]
        out[name] = (float(np.linalg.norm(y - x) / np.linalg.norm(x)),
                     float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y))))
    return out


def run(coro):
    return asyncio.run(coro)


def rows(table: DiffTensorTable) -> dict[str, dict[str, str]]:
    """The table as displayed: row key -> {column key: cell text}."""
    cols = [c.value for c in table.columns]
    return {rk.value: {c: str(v) for c, v in zip(cols, table.get_row(rk))} for rk in table.rows}


def detail_text(app) -> str:
    """What the detail pane shows, as plain text."""
    from rich.console import Console
    con = Console(width=120, file=io.StringIO(), color_system=None)
    con.print(app.query_one("#diff-detail-text").content)
    return con.file.getvalue()


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


def test_rows_statuses_and_metrics_match_numpy(pair):
    want = numpy_metrics(*pair)
    finished = []

    async def flow():
        app = DiffApp(ggscope.open(pair[0]), ggscope.open(pair[1]))
        async with app.run_test(size=SIZE, message_hook=lambda m: finished.append(m)
                                if isinstance(m, DiffFinished) else None) as pilot:
            await settle(pilot)
            table = app.query_one(DiffTensorTable)
            shown = rows(table)
            order = [rk.value for rk in table.rows]
            meta = [str(table_row[1]) for table_row in
                    (app.query_one(DiffMetadataTable).get_row(rk) for rk in app.query_one(DiffMetadataTable).rows)]
            return shown, order, meta, dict(app.diffs), app.exit_status()
    shown, order, meta, diffs, status = run(flow())
    assert finished and not finished[0].cancelled and not finished[0].error
    assert order == ["same", "noisy", "quant", "gone", "new"]
    # "same" has the same bytes; B's longer metadata puts them at another file offset
    ra, rb = gguf.GGUFReader(pair[0]), gguf.GGUFReader(pair[1])
    off = {r: {t.name: t.data_offset for t in r.tensors} for r in (ra, rb)}
    assert off[ra]["same"] != off[rb]["same"]
    assert {n: r["status"] for n, r in shown.items()} == {
        "same": "moved", "noisy": "changed", "quant": "changed", "gone": "removed", "new": "added"}
    assert shown["quant"]["type"] == "F32 → Q8_0" and shown["noisy"]["type"] == "F32"
    assert shown["noisy"]["shape"] == "64×16"           # ggml order, ne[0] first
    for name in ("noisy", "quant"):
        rel, cos = want[name]
        # the cells as displayed (4 significant digits / 6 decimals) ...
        assert float(shown[name]["rel_rmse"]) == pytest.approx(rel, rel=6e-4)
        assert float(shown[name]["cosine"]) == pytest.approx(cos, abs=6e-7)
        # ... and the values behind them, to float64 precision
        assert diffs[name].rel_rmse == pytest.approx(rel, rel=1e-9)
        assert diffs[name].cosine == pytest.approx(cos, rel=1e-9)
    assert 0.25 < want["noisy"][0] < 0.35 and want["noisy"][1] < 0.97    # the perturbation shows
    assert shown["same"]["cosine"] == "1.000000" and shown["gone"]["cosine"] == "-"
    assert meta == ["test.added", "test.value"]
    assert status == 1


def test_filter_sort_and_detail(pair):
    want = numpy_metrics(*pair)

    async def flow():
        app = DiffApp(ggscope.open(pair[0]), ggscope.open(pair[1]))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            table = app.query_one(DiffTensorTable)
            seen = {"all": [rk.value for rk in table.rows]}
            await pilot.press("f")
            seen["filtered"] = [rk.value for rk in table.rows]
            await pilot.press("f", "o", "o", "o")             # unfiltered; name, status, rel RMSE
            seen["sort"] = table.sort_label
            seen["by_rel"] = [rk.value for rk in table.rows]
            await pilot.press("o")
            seen["by_cos"] = [rk.value for rk in table.rows]
            await pilot.press("home")
            await pilot.pause()
            seen["detail"] = detail_text(app)
            await pilot.press("2")
            await pilot.pause()
            seen["meta_detail"] = detail_text(app)
            return seen
    seen = run(flow())
    assert seen["filtered"] == ["noisy", "quant", "gone", "new"]       # "same" is identical
    assert seen["sort"].startswith("rel RMSE")
    worst = sorted(want, key=lambda n: -want[n][0])                     # numpy's ranking
    assert [n for n in seen["by_rel"] if n in want] == worst
    assert [n for n in seen["by_cos"] if n in want] == sorted(want, key=lambda n: want[n][1])
    assert seen["by_rel"][-2:] == ["gone", "new"]                      # no metric: last
    top = seen["by_cos"][0]
    assert top == "noisy" and "noisy" in seen["detail"]
    # both files' data offsets of "noisy", as gguf-py's reader finds them
    offs = [next(t.data_offset for t in gguf.GGUFReader(p).tensors if t.name == "noisy") for p in pair]
    assert f"{offs[0]:#x}" in seen["detail"] and f"{offs[1]:#x}" in seen["detail"]
    assert "test.added" in seen["meta_detail"] or "test.value" in seen["meta_detail"]


def test_cancel_keeps_rows_without_traceback(pair, monkeypatch):
    """The first comparison blocks until the test has pressed `x`, so the key always
    lands while the worker runs, however busy the machine (no sleeps, no clocks)."""
    real = diff_app.diffmod.diff_tensor
    started, release = threading.Event(), threading.Event()

    def gated(*args, **kw):
        started.set()
        release.wait(60)          # a safety net for a broken test, never a measurement
        return real(*args, **kw)
    monkeypatch.setattr(diff_app.diffmod, "diff_tensor", gated)
    finished = []

    async def flow():
        app = DiffApp(ggscope.open(pair[0]), ggscope.open(pair[1]))
        async with app.run_test(size=SIZE, message_hook=lambda m: finished.append(m)
                                if isinstance(m, DiffFinished) else None) as pilot:
            assert await asyncio.to_thread(started.wait, 60)
            await pilot.pause()
            bar_while_running = app.query_one("#diff-progress").display
            await pilot.press("x")
            release.set()
            # the cancelled worker's thread posts DiffFinished when it next polls
            for _ in range(6000):     # a poll, not a limit: it ends as soon as the message is in
                if finished:
                    break
                await pilot.pause(0.01)
            await pilot.pause()
            statuses = {n: r["status"] for n, r in rows(app.query_one(DiffTensorTable)).items()}
            summary = str(app.query_one("#diff-summary").render())
            return (statuses, summary, app.exit_status(),
                    app.has_class("-diff-running") or app.query_one("#diff-progress").display, bar_while_running)
    statuses, summary, status, running, bar_while_running = run(flow())
    assert bar_while_running
    assert finished and finished[0].cancelled and not finished[0].error
    assert "pending" in statuses.values() and not running
    assert "stopped" in summary
    assert status in (1, 2)         # unknown when nothing differed yet, else "different"


def test_cli_diff_tui_runs_the_screen(pair, monkeypatch):
    """`ggscope diff A B --tui` through cli.main: the screen runs headless, waits for the
    comparison and quits; the status is diff(1)'s "different"."""
    from textual.app import App

    async def auto(pilot):
        await settle(pilot)
        await pilot.press("q")

    monkeypatch.setattr(DiffApp, "run", lambda self, **kw: App.run(self, headless=True, size=SIZE,
                                                                     auto_pilot=auto))
    assert cli.main(["diff", str(pair[0]), str(pair[1]), "--tui"]) == 1
    assert cli.main(["diff", str(pair[0]), str(pair[0]), "--tui"]) == 0


def test_rwkv_fp32_against_q5_1():
    fp32, q51 = RWKV / "tiny-rwkv-5v1-730K-FP32.bin", RWKV / "tiny-rwkv-5v1-730K-Q5_1.bin"
    if not (fp32.is_file() and q51.is_file()):
        pytest.skip(f"rwkv.cpp fixtures not found in {RWKV.resolve()}")
    a, b = ggscope.open(fp32), ggscope.open(q51)

    async def flow():
        app = DiffApp(a, b)
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            return rows(app.query_one(DiffTensorTable))
    shown = run(flow())
    assert list(shown) == [t.name for t in a.tensors]
    changed = {n: r for n, r in shown.items() if r["status"] == "changed"}
    assert changed and all(r["type"].endswith("→ Q5_1") for r in changed.values())
    assert all(0.9 < float(r["cosine"]) < 1.0 for r in changed.values())
    # the first changed matrix against gguf-py's Q5_1 decoder
    from gguf.quants import dequantize
    name = next(iter(changed))
    x = np.frombuffer(a.tensor(name).raw().tobytes(), "<f4").astype(np.float64)
    y = dequantize(np.array(b.tensor(name).raw()), T.Q5_1).astype(np.float64).ravel()
    cos = float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    assert float(changed[name]["cosine"]) == pytest.approx(cos, abs=6e-7)


def test_snapshot(snap_compare, pair, monkeypatch):
    """Opened by relative name from their folder, so the header shows no tmp path."""
    async def before(pilot):
        await settle(pilot)
        await pilot.press("down")
        await pilot.pause()
    monkeypatch.chdir(pair[0].parent)
    app = DiffApp(ggscope.open(pair[0].name), ggscope.open(pair[1].name))
    assert snap_compare(app, terminal_size=SIZE, run_before=before)
