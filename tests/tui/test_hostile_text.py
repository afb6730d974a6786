"""The browser over a file whose every text field holds markup and control sequences.

``hostile_text.HOSTILE`` (a closing tag, a hyperlink, a click action, ESC and C1
sequences, U+202E, U+200B, U+FEFF, bytes that are not UTF-8) is in the file name, the
keys, string values, a string array, the architecture, the chat template, the tokens and
the tensor names.  Each screen - overview, metadata, tensors, findings, structure, the hex
view, the detail pane for a key, a tensor, a finding and the chat template, a search
notification - must show the text literally (escaped by ``ggscope.core.escape``): no
MarkupError, no hyperlink or click action made from file text, no raw control reaching
the terminal, and the app still running afterwards (``[@click=app.quit]`` fired nothing).
"""
from __future__ import annotations

import asyncio

import pytest

from hostile_text import MARKUP, NAME_SHOWN, SHOWN, raw_left, write_hostile

from ggscope.tui.app import GGScopeApp
from tui_files import settle_until

SIZE = (220, 60)


def _screen(app) -> tuple[str, list]:
    """The whole screen as text, and every segment style carrying a link or an action."""
    strips = app.screen._compositor.render_strips()
    text = "\n".join(s.text for s in strips)
    actions = [seg.style for s in strips for seg in s if seg.style is not None
               and (seg.style.link or any("click" in str(k) or "click" in str(v)
                                          for k, v in (seg.style.meta or {}).items()))]
    return text, actions


def _detail(app) -> str:
    import io
    from rich.console import Console
    con = Console(width=400, file=io.StringIO(), color_system=None)
    con.print(app.query_one("#detail-text").content)
    return con.file.getvalue()


async def _settle(pilot, done) -> None:
    await settle_until(pilot, done)


def test_every_screen_shows_file_text_literally(tmp_path):
    path = write_hostile(tmp_path)
    shots: dict[str, tuple[str, list]] = {}
    details: dict[str, str] = {}

    async def flow():
        app = GGScopeApp(str(path), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await _settle(pilot, lambda: app.mf is not None and app.findings)
            shots["overview"] = _screen(app)
            await pilot.press("2")                     # metadata
            await pilot.pause()
            shots["metadata"] = _screen(app)
            for _ in range(3):                         # down to x.<HOSTILE>
                await pilot.press("down")
            await pilot.pause()
            details["key"] = _detail(app)
            shots["metadata detail"] = _screen(app)
            await pilot.press("down", "down", "down")  # x.valid, x.array, tokenizer.chat_template
            await pilot.pause()
            details["chat template"] = _detail(app)
            await pilot.press("3", "down")             # tensors
            await pilot.pause()
            details["tensor"] = _detail(app)
            shots["tensors"] = _screen(app)
            await pilot.press("4")                     # findings
            await pilot.pause()
            await pilot.press("down", "down")
            await pilot.pause()
            details["finding"] = _detail(app)
            shots["findings"] = _screen(app)
            await pilot.press("5")                     # structure, opened at a tensor record
            from ggscope.ksy.node import find
            from ggscope.tui.widgets.node_tree import NodeTree
            tree = app.query_one(NodeTree)
            tree.reveal(find(app.mf.root, app.mf.tensors[1].node_path))
            await pilot.pause()
            await pilot.pause()
            shots["structure"] = _screen(app)
            await pilot.press("slash")                 # search a key: its name in a notification
            await pilot.press(*"x.[")
            await pilot.press("enter")
            await pilot.pause()
            shots["search"] = _screen(app)
            return app.is_running, app.return_code

    running, code = asyncio.run(flow())
    assert running and code is None                 # nothing quit the app

    for name, (text, actions) in shots.items():
        assert raw_left(text) == [], name
        assert actions == [], f"{name}: file text became a link or an action: {actions[:3]}"
    everything = "\n".join(text for text, _ in shots.values())
    for part in MARKUP:
        assert part in everything                   # shown as written, not eaten as markup
    assert NAME_SHOWN[:40] in shots["overview"][0]  # the file name in the summary bar
    for name, text in details.items():
        assert raw_left(text) == [], name
    assert SHOWN in details["key"]                  # the whole value, every escape
    # a template is shown as numbered lines (its newline splits them), each line escaped
    assert SHOWN in details["chat template"] and "1 {{ '\n2 ' }}tmpl:" in details["chat template"]
    assert SHOWN in details["tensor"]
    assert "[@click=app.quit]" in details["finding"]


@pytest.mark.parametrize("field", ["overview", "metadata", "tensors"])
def test_markup_in_a_file_does_not_crash_a_pane(tmp_path, field):
    """The original crash: MarkupError on `[/bold]` in a metadata value or tensor name
    (the file itself has a plain name here)."""
    path = write_hostile(tmp_path, "plain.gguf")
    key = {"overview": "1", "metadata": "2", "tensors": "3"}[field]

    async def flow():
        app = GGScopeApp(str(path), auto_stats=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await _settle(pilot, lambda: app.mf is not None)
            await pilot.press(key, "down", "down", "down", "down")
            await pilot.pause()
            return app.is_running
    assert asyncio.run(flow())


def test_diff_screen_shows_file_text_literally(tmp_path):
    """``ggscope diff --tui`` over two hostile files: the tensor and metadata tables, the
    summary and the detail pane show the text literally; nothing quits the app."""
    import ggscope
    from hostile_text import hostile_gguf
    from ggscope.tui.diff_app import DiffApp
    a = write_hostile(tmp_path)
    b = tmp_path / "b.gguf"
    b.write_bytes(hostile_gguf(arch=b"llama", scale=0.25))     # changed values, a changed key
    shots, details = {}, {}

    def detail(app) -> str:
        import io
        from rich.console import Console
        con = Console(width=400, file=io.StringIO(), color_system=None)
        con.print(app.query_one("#diff-detail-text").content)
        return con.file.getvalue()

    async def flow():
        app = DiffApp(ggscope.open(a), ggscope.open(b))
        async with app.run_test(size=SIZE) as pilot:
            await _settle(pilot, lambda: not app.has_class("-diff-running") and app.n_done)
            await pilot.press("down")
            await pilot.pause()
            shots["tensors"] = _screen(app)
            details["tensor"] = detail(app)
            await pilot.press("2", "down")
            await pilot.pause()
            shots["metadata"] = _screen(app)
            details["key"] = detail(app)
            return app.is_running
    assert asyncio.run(flow())
    for name, (text, actions) in shots.items():
        assert raw_left(text) == [] and actions == [], name
    for name, text in details.items():
        assert raw_left(text) == [], name
    assert "[@click=app.quit]" in shots["tensors"][0] and "[/bold]" in shots["metadata"][0]
    assert SHOWN in details["tensor"] + details["key"]


def test_the_preframe_shows_file_text_as_the_browser_does(tmp_path, monkeypatch):
    """The launcher's pre-frame (``tui.preframe``, plain ANSI written before Textual
    loads) over the hostile file: the file name, architecture and name escaped exactly
    as the browser's first frame shows them (the same characters in the same cells), no
    raw control left once the pre-frame's own sequences are taken out, and no markup
    interpreted (there is none: it is not Rich)."""
    from test_preframe import OWN, assert_same_where_painted, browser_first_frame, screen_of
    from ggscope.model.peek import peek
    from ggscope.tui import preframe
    path = write_hostile(tmp_path)
    first = peek(str(path))
    assert first is not None and "\udcff" in first.architecture       # the undecodable bytes reach it
    cols, rows = SIZE
    frame = preframe.frame(first, path.name, cols, rows, colour=True)
    shown = OWN.sub("", frame)
    assert raw_left(shown) == []
    assert NAME_SHOWN in shown and SHOWN in shown and "name:" + SHOWN in shown
    for part in MARKUP:
        assert part in shown
    assert_same_where_painted(screen_of(frame, cols, rows), browser_first_frame(path, cols, rows, monkeypatch), cols)
