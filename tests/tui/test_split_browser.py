"""The browser on a split model: a tensor of a later shard is shown in that shard's
bytes, at its offset in that file (issue 26: the hex view and the tree showed shard 1's
bytes at that offset).  The split is written by gguf-py's GGUFWriter
(``split_max_tensors``) and every expected offset and byte is read back with gguf-py's
GGUFReader from the shard file itself, never from ggscope."""
from __future__ import annotations

import asyncio

import pytest

from ggscope.tui.app import GGScopeApp
from ggscope.tui.widgets.hex_view import HexView
from ggscope.tui.widgets.node_tree import NodeTree
from tui_files import settle_until

gguf = pytest.importorskip("gguf")
SIZE = (160, 40)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def split3(tmp_path):
    from test_split import Q8, rewrite
    if not Q8.is_file():
        pytest.skip(f"{Q8} missing; run python fixtures/make_fixtures.py")
    rewrite(Q8, tmp_path / "Tiny.gguf", split_max_tensors=8)
    shards = sorted(tmp_path.glob("Tiny-*-of-*.gguf"))
    assert len(shards) == 3
    return shards


def hex_rows(hexview: HexView) -> list[str]:
    return [hexview.render_line(y).text for y in range(hexview.size.height)]


def expected_row(path, offset: int, per_row: int) -> str:
    """The hex column of the row holding ``offset``, from the file's own bytes."""
    start = offset - offset % per_row
    return path.read_bytes()[start:start + per_row].hex(" ")


async def _open(app, pilot):
    await settle_until(pilot, lambda: app.panes_ready and app.query(HexView))   # mounted after the first frames


def test_a_later_shards_tensor_shows_its_own_shards_bytes(split3):
    third = gguf.GGUFReader(split3[2])
    first_names = [t.name for t in gguf.GGUFReader(split3[0]).tensors]
    second_names = [t.name for t in gguf.GGUFReader(split3[1]).tensors]
    want = third.tensors[1]            # a tensor that lives in shard 3
    index = len(first_names) + len(second_names) + 1

    async def flow():
        app = GGScopeApp(str(split3[1]), auto_stats=False)      # opened through shard 2
        async with app.run_test(size=SIZE) as pilot:
            await _open(app, pilot)
            await pilot.press("3", *["down"] * index)
            await pilot.pause()
            hexview = app.query_one(HexView)
            name = app.mf.tensors[index].name
            return (name, hexview.source.path, hexview.selection, hexview.bytes_per_row, hex_rows(hexview),
                    str(hexview.border_subtitle), app.query_one("#detail-text").content)
    name, path, selection, per_row, rows, subtitle, detail = run(flow())
    assert name == want.name
    assert path == str(split3[2])                               # shard 3's file, not shard 1's
    assert selection[0] == want.field.offset                    # its tensor info, in that file
    assert any(expected_row(split3[2], want.field.offset, per_row) in row for row in rows)
    assert "shard 3 of 3" in subtitle and "shard 3 of 3" in str(detail)


def test_opened_through_shard_2_the_hex_view_starts_in_shard_2s_bytes(split3):
    async def flow():
        app = GGScopeApp(str(split3[1]), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await _open(app, pilot)
            await pilot.pause()
            hexview = app.query_one(HexView)
            return hexview.source.path, hexview.bytes_per_row, hex_rows(hexview), str(hexview.border_subtitle)
    path, per_row, rows, subtitle = run(flow())
    assert path == str(split3[1]) and "shard 2 of 3" in subtitle
    assert any(expected_row(split3[1], 0, per_row) in row for row in rows)      # its own first bytes


def test_the_tree_has_each_shard_and_shows_its_bytes(split3):
    second = gguf.GGUFReader(split3[1])
    want = second.tensors[0]

    async def flow():
        app = GGScopeApp(str(split3[0]), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await _open(app, pilot)
            await pilot.press("5")
            tree = app.query_one(NodeTree)
            tops = [str(n.label) for n in tree.root.children]
            shard2 = tree.root.children[1]
            shard2.expand()
            await pilot.pause()
            infos = next(n for n in shard2.children if n.data.name == "tensor_infos")
            infos.expand()
            await pilot.pause()
            tree.move_cursor(infos.children[0])
            await pilot.pause()
            hexview = app.query_one(HexView)
            return tops, hexview.source.path, hexview.selection, hexview.bytes_per_row, hex_rows(hexview)
    tops, path, selection, per_row, rows = run(flow())
    assert [t.split(" · ")[0] for t in tops] == ["shard 1 of 3", "shard 2 of 3", "shard 3 of 3"]
    assert path == str(split3[1])
    assert selection[0] == want.field.offset
    assert any(expected_row(split3[1], want.field.offset, per_row) in row for row in rows)


def test_a_file_that_is_not_split_has_one_tree_and_one_source(q8):
    async def flow():
        app = GGScopeApp(str(q8), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await _open(app, pilot)
            tree = app.query_one(NodeTree)
            return [n.data.name for n in tree.root.children], app.query_one(HexView).source.path
    tops, path = run(flow())
    assert "tensor_infos" in tops and path == str(q8)
