"""The detail pane shows a chat template as numbered lines, the finding's line lit."""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

import ggscope
from ggscope.tui.app import GGScopeApp
from ggscope.tui.widgets.detail import DetailPane
from ggscope.tui.widgets.template_view import template_text

pytest.importorskip("gguf")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rules"))
from template_corpus import Case, write_case  # noqa: E402

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
TEMPLATE = "{% for m in messages %}\n{{ m.content }}\n{% endfor %}\n{{ ().__class__.__base__ }} [bold]x[/bold]"


def _lit_lines(text) -> set[int]:
    plain = text.plain
    lit = set()
    for span in text.spans:
        if "dark_red" in str(span.style):
            lit.add(plain.count("\n", 0, span.start))
    return lit


def test_template_text_numbers_lines_and_keeps_markup_literal():
    t = template_text("a\n[red]b[/red]\u200b\nc", flagged=2)
    assert "2 [red]b[/red]\\u200b" in t.plain
    assert " 1 a" in t.plain or "1 a" in t.plain
    assert _lit_lines(t) == {3}          # a header line, then line 2 of the template


def test_finding_shows_its_template_line(tmp_path):
    mf = ggscope.open(str(write_case(EXAMPLE, Case("t", "t", "error", template=TEMPLATE), tmp_path / "t.gguf")))

    async def flow():
        app = GGScopeApp(mf, auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            await pilot.press("4")
            i = next(i for i, f in enumerate(app.findings) if f.code == "GG1302")
            await pilot.press(*["down"] * i)
            await pilot.pause()
            return app.query_one(DetailPane).query_one("#detail-text").content
    content = asyncio.run(flow())
    assert "4 {{ ().__class__.__base__ }} [bold]x[/bold]" in content.plain
    assert _lit_lines(content) and all("__class__" in content.plain.split("\n")[n] for n in _lit_lines(content))
