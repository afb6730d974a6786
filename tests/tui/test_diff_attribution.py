"""`ggscope diff A B --corpus TEXT --attribute --tui`: the KL-divergence report's
per-layer error and tensor ranking in the diff screen's tab 3 (issue 28 item 3).

The pair is the bundled example (Q8_0) and fixtures/TinyLlama-Test-164K-v1.0-Q4_K_S.gguf,
the text fixtures/perplexity/corpus.txt.  The screen runs through ``cli.main`` (headless,
driven by Pilot).  What it must show is the report that ``diff --corpus --json`` prints
for the same evaluation (``report.perplexity.as_json``, whose numbers
tests/forward/test_perplexity.py checks against llama-perplexity); which layers and
which tensors there are comes from gguf-py's reading of B, not from ggscope.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App

from ggscope import cli
from ggscope.report import perplexity as render
from ggscope.tui.diff_app import DiffApp
from ggscope.tui.messages import KldEvaluated

gguf = pytest.importorskip("gguf")

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
QUANT = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
CORPUS = REPO / "fixtures" / "perplexity" / "corpus.txt"
SIZE = (140, 40)


def cells(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row(rk)] for rk in table.rows]


def _drive(monkeypatch, argv: list[str]) -> tuple[int, dict]:
    """Run `ggscope diff ... --tui` headless; wait for the report, open tab 3, read it."""
    seen: dict = {}

    async def auto(pilot):
        app = pilot.app
        for _ in range(20000):           # a bound for a broken test, not a measurement
            if app.kld is None or app.kld_report is not None or app.kld_error:
                break
            await pilot.pause(0.01)
        await pilot.app.workers.wait_for_complete()
        await pilot.press("3")
        await pilot.pause()
        seen["tab"] = app.query_one("#diff-tabs").active if app.kld is not None else None
        seen["report"], seen["error"] = app.kld_report, app.kld_error
        if app.kld is not None:
            seen["headline"] = str(app.query_one("#kld-headline").content)
            seen["layers"] = cells(app.query_one("#kld-layers"))
            seen["tensors"] = cells(app.query_one("#kld-tensors"))
            seen["focused"] = app.focused.id if app.focused is not None else None
        seen["status"] = app.exit_status()
        await pilot.press("q")

    monkeypatch.setattr(DiffApp, "run", lambda self, **kw: App.run(self, headless=True, size=SIZE,
                                                                    auto_pilot=auto))
    return cli.main(["diff", *argv, "--tui"]), seen


def test_attribution_tab_shows_the_reports_layers_and_ranked_tensors(monkeypatch):
    for p in (BASE, QUANT, CORPUS):
        if not p.is_file():
            pytest.skip(f"{p} missing; run python fixtures/make_fixtures.py")
    rc, seen = _drive(monkeypatch, [str(BASE), str(QUANT), "--corpus", str(CORPUS), "--ctx", "64",
                                    "--chunks", "4", "--attribute"])
    assert not seen["error"], seen["error"]
    rep = seen["report"]
    want = render.as_json(rep)                      # what `diff --corpus --attribute --json` prints
    reader = gguf.GGUFReader(QUANT)
    n_layers = int(reader.fields["llama.block_count"].contents())
    weights = {t.name for t in reader.tensors if len(t.shape) == 2}     # B's weight matrices

    assert seen["tab"] == "attribution" and seen["focused"] == "kld-tensors"
    assert [row[0] for row in seen["layers"]] == [str(i) for i in range(n_layers)]
    assert [[float(x) for x in row[1:]] for row in seen["layers"]] == [
        [pytest.approx(e["rel_error"], abs=5e-7), pytest.approx(e["cosine"], abs=5e-7)] for e in want["layers"]]
    assert all(0 < float(r[1]) < 1 and 0.9 < float(r[2]) <= 1 for r in seen["layers"])   # Q4_K_S vs Q8_0
    names = [row[1] for row in seen["tensors"]]
    assert names == [t["name"] for t in want["tensors"]] and set(names) == weights
    assert [row[0] for row in seen["tensors"]] == [str(i) for i in range(1, len(names) + 1)]
    recovered = [float(row[2]) for row in seen["tensors"]]
    assert recovered == sorted(recovered, reverse=True)
    assert recovered == [pytest.approx(t["recovered"], abs=5e-7) for t in want["tensors"]]
    assert [float(row[3]) for row in seen["tensors"]] == [pytest.approx(t["kld"], abs=5e-7)
                                                          for t in want["tensors"]]
    kld, unc = want["kld_mean"]["value"], want["kld_mean"]["uncertainty"]
    assert f"Mean KLD {kld:.6f} ± {unc:.6f}" in seen["headline"]
    assert f"{rep.n_chunk} chunks of 64" in seen["headline"]
    assert rc == seen["status"] == 1                # B differs from A (the tensors and the KLD)


def test_without_a_text_there_is_no_attribution_tab(monkeypatch):
    rc, seen = _drive(monkeypatch, [str(BASE), str(BASE)])
    assert seen["tab"] is None and seen["report"] is None
    assert rc == 0


def test_a_text_that_cannot_be_read_is_one_line_before_the_screen(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(DiffApp, "run", lambda self, **kw: pytest.fail("the screen must not start"))
    rc = cli.main(["diff", str(BASE), str(QUANT), "--corpus", str(tmp_path / "absent.txt"), "--tui"])
    err = capsys.readouterr().err
    assert rc == 2 and "cannot read" in err and len(err.strip().splitlines()) == 1


def test_an_evaluation_that_fails_says_why_in_the_tab(monkeypatch):
    """A context longer than half the text: the report is refused (llama-perplexity's rule)
    and the tab says so in one line; the status is 2, as `diff --corpus` exits."""
    if not CORPUS.is_file():
        pytest.skip(f"{CORPUS} missing")
    rc, seen = _drive(monkeypatch, [str(BASE), str(QUANT), "--corpus", str(CORPUS), "--ctx", "100000"])
    assert seen["report"] is None and "you need at least" in seen["error"]
    assert rc == seen["status"] == 2
