"""The browser's layout follows the terminal, and every pane shows things whole.

Pilot drives the app at 80x24, 140x40 and 250x60.  Oracles: gguf-py's GGUFReader for
key and tensor names and values, the validator's own Finding objects for messages."""
from __future__ import annotations

import asyncio
import io

import pytest

import ggscope
from ggscope.tui.app import GGScopeApp, left_width
from ggscope.tui.format import PAGE_CHARS
from ggscope.tui.widgets.hex_view import HexView, row_width

from tui_files import LONG_TEXT, write_long_values, settle_until

gguf = pytest.importorskip("gguf")


def run(coro):
    return asyncio.run(coro)


def text_of(app, selector: str, width: int = 400) -> str:
    from rich.console import Console
    con = Console(width=width, file=io.StringIO(), color_system=None)
    con.print(app.query_one(selector).content)
    return con.file.getvalue()


async def settle(pilot) -> None:
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.pause()


@pytest.mark.parametrize("size, per_row", [((80, 24), 8), ((140, 40), 16), ((250, 60), 16)])
def test_panes_follow_the_terminal_width(q8, size, per_row):
    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            hexview = app.query_one(HexView)
            return (app.query_one("#left").outer_size.width, hexview.bytes_per_row,
                    hexview.scrollable_content_region.width, hexview._offset_digits)
    left, bpr, hex_width, digits = run(flow())
    assert left == left_width(size[0])
    assert bpr == per_row and row_width(digits, bpr) <= hex_width      # whole rows, no sideways scroll


def test_wide_terminal_shows_metadata_values_whole(q8):
    desc = gguf.GGUFReader(q8).fields["general.description"].contents()

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=(250, 60)) as pilot:
            await settle(pilot)
            await pilot.press("2")
            await pilot.pause()
            table = app.query_one("#metadata-table")
            return str(table.get_cell("general.description", table.ordered_columns[2].key)), \
                table.ordered_columns[2].get_render_width(table), table.region.width
    cell, col_width, table_width = run(flow())
    assert desc in cell and col_width >= len(cell) and col_width < table_width


def test_resizing_keeps_the_tab_and_focus(q8):
    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2")
            before = app.query_one("#left").outer_size.width
            await pilot.press("plus")
            await pilot.pause()
            wider = app.query_one("#left").outer_size.width
            tab1, focus1 = app.query_one("#left").active, app.focused.id
            await pilot.resize_terminal(80, 24)
            await pilot.pause()
            await pilot.pause()
            return before, wider, tab1, focus1, app.query_one("#left").active, app.query_one("#left").outer_size.width
    before, wider, tab1, focus1, tab2, narrow = run(flow())
    assert wider == before + 4 and tab1 == "metadata" and focus1 == "metadata-table"
    assert tab2 == "metadata" and narrow == left_width(80, 4)


def test_zoom_gives_the_focused_pane_the_screen(q8):
    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", "z")
            await pilot.pause()
            zoomed = app.screen.maximized
            return zoomed.id if zoomed else None, zoomed.outer_size.width if zoomed else 0, app.screen.size.width
    zid, width, screen = run(flow())
    assert zid == "metadata-table" and width == screen


def test_tree_labels_name_keys_and_tensors(q8):
    reader = gguf.GGUFReader(q8)
    keys = [k for k in reader.fields if not k.startswith("GGUF.")]
    names = [t.name for t in reader.tensors]

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("5")
            tree = app.query_one("#tree")
            labels = {}
            for node in list(tree.root.children):
                if node.data.name in ("metadata_kv", "tensor_infos"):
                    node.expand()
                    await pilot.pause()
                    labels[node.data.name] = [str(c.label) for c in node.children]
            return labels
    labels = run(flow())
    assert [lab.split()[1] for lab in labels["metadata_kv"]] == keys
    assert [lab.split()[1] for lab in labels["tensor_infos"]] == names


def test_metadata_detail_shows_the_whole_value_in_pages(tmp_path):
    path = write_long_values(tmp_path / "long.gguf")
    keys = [k for k in gguf.GGUFReader(path).fields if not k.startswith("GGUF.")]
    desc = gguf.GGUFReader(path).fields["general.description"].contents()
    n_pages = -(-len(desc) // (PAGE_CHARS // 2))          # at most this many, at least len/PAGE_CHARS

    async def flow():
        app = GGScopeApp(ggscope.open(path), auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", *["down"] * keys.index("general.description"))
            await pilot.pause()
            pages = []
            for _ in range(n_pages + 1):
                pages.append(text_of(app, "#detail-text"))
                await pilot.press("right_square_bracket")
                await pilot.pause()
            await pilot.press(*["down"] * (keys.index("test.words") - keys.index("general.description")))
            await pilot.pause()
            return pages, text_of(app, "#detail-text")
    pages, words = run(flow())
    assert "general.description" in pages[0] and "page 1/" in pages[0]
    total = int(pages[0].split("page 1/")[1].split()[0])
    assert len(desc) / PAGE_CHARS <= total <= n_pages and f"page {total}/{total}" in pages[-1]
    for line in LONG_TEXT.splitlines()[:-1]:              # every line whole on one page
        assert sum(line in p for p in pages[:total]) == 1, line
    assert "\\x1b[31mend" in pages[total - 1] and "\x1b" not in "".join(pages)
    assert "test.words" in words and "300 items, page 1/5" in words and "word63" in words and "word64" not in words


def test_finding_detail_shows_the_whole_message(truncated):
    mf = ggscope.open(truncated)

    async def flow():
        app = GGScopeApp(mf, auto_stats=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            i = max(range(len(app.findings)), key=lambda k: (app.findings[k].start is not None,
                                                             len(app.findings[k].message)))
            await pilot.press("4", *["down"] * i)
            await pilot.pause()
            return app.findings[i], text_of(app, "#detail-text")
    finding, detail = run(flow())
    assert finding.code in detail
    assert " ".join(finding.message.split()) in " ".join(detail.split())


def test_stats_columns_fit_their_values_and_the_bar_completes(q8):
    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=True)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("3")
            await pilot.pause()
            table = app.query_one("#tensor-table")
            out = {}
            for col in table.ordered_columns[5:]:
                cells = [str(table.get_cell(str(i), col.key)) for i in range(len(app.mf.tensors))]
                out[str(col.label)] = (col.get_render_width(table) - 2 * table.cell_padding, cells)
            bar = app.query_one("#stats-progress ProgressBar")
            return out, bar.progress, bar.total
    cols, progress, total = run(flow())
    assert set(cols) == {"mean", "std", "min", "max"}
    for label, (width, cells) in cols.items():
        assert all(c not in ("…", "n/a") for c in cells), label
        assert width >= max(len(c) for c in cells), (label, width, cells)
    assert progress == total == len(gguf.GGUFReader(q8).tensors)


def test_copy_takes_the_metadata_value(q8):
    reader = gguf.GGUFReader(q8)
    keys = [k for k in reader.fields if not k.startswith("GGUF.")]

    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("2", *["down"] * keys.index("general.name"), "c")
            await pilot.pause()
            return app.clipboard
    assert run(flow()) == reader.fields["general.name"].contents()


def test_detail_follows_its_row_when_statistics_arrive_and_the_bar_counts(q8):
    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await settle(pilot)
            await pilot.press("3", "down", "down")
            await pilot.pause()
            before = text_of(app, "#detail-text")
            await pilot.press("s")
            await settle(pilot)
            after = text_of(app, "#detail-text")
            count = text_of(app, "#stats-count")
            return app.query_one("#detail-text").parent.tensor.name, before, after, count
    name, before, after, count = run(flow())
    n = len(gguf.GGUFReader(q8).tensors)
    assert "not computed yet" in before and name in before
    assert "not computed yet" not in after and "mean" in after and name in after
    assert count.strip() == f"statistics {n}/{n}"


def test_a_shard_opens_the_whole_split_model_with_validates_findings(tmp_path, capsys):
    import json
    from test_split import Q8, rewrite
    from ggscope.cli import main
    rewrite(Q8, tmp_path / "Tiny.gguf", split_max_tensors=8)
    shards = sorted(tmp_path.glob("Tiny-*-of-*.gguf"))
    shards[2].unlink()
    assert main(["validate", "--json", str(shards[1])]) == 1
    want = sorted((f["code"], f["message"]) for f in json.loads(capsys.readouterr().out))

    async def flow(path):
        from ggscope.tui.messages import FindingsReady
        app, validated = GGScopeApp(str(path), auto_stats=False), []
        async with app.run_test(size=(140, 40), message_hook=lambda m: validated.append(m)
                                if isinstance(m, FindingsReady) else None) as pilot:
            await settle_until(pilot, lambda: validated)     # the validator starts once the window is up
            await pilot.pause()
            return len(app.mf.tensors), sorted((f.code, f.message) for f in app.findings)
    n_shard2 = len(gguf.GGUFReader(shards[1]).tensors)
    n, found = run(flow(shards[1]))
    assert found == want and [c for c, _ in found].count("GG803") == 1 and n == n_shard2   # the missing shard: alone
    rewrite(Q8, tmp_path / "Tiny.gguf", split_max_tensors=8)                                # the set again
    n, found = run(flow(shards[1]))
    assert n == len(gguf.GGUFReader(Q8).tensors) and "GG803" not in [c for c, _ in found]


def test_summary_line_names_the_shard_and_the_whole_size(tmp_path):
    from test_split import Q8, rewrite
    from ggscope.model.split import open_model
    from ggscope.tui.format import summary_line
    rewrite(Q8, tmp_path / "Tiny.gguf", split_max_tensors=8)
    shards = sorted(tmp_path.glob("Tiny-*-of-*.gguf"))
    line = summary_line(open_model(str(shards[1])), shards[1].name)
    from ggscope.tui.format import human_bytes
    assert f"{shards[1].name} (shard 2 of 3)" in line
    assert human_bytes(sum(p.stat().st_size for p in shards)) in line
