"""The browser's `h` key: the selected tensor's llama-gguf-hash digests, computed in a
worker and shown as plain text (never markup)."""
from __future__ import annotations

import asyncio
import hashlib

import pytest
import xxhash

import ggscope
from ggscope.tui.app import GGScopeApp

gguf = pytest.importorskip("gguf")
SIZE = (140, 40)


def _shown(q8, keys: tuple[str, ...]):
    async def flow():
        app = GGScopeApp(ggscope.open(q8), auto_stats=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(*keys)
            await pilot.pause()
            await app.workers.wait_for_complete()
            await pilot.pause()
            return [(n.title, n.message) for n in app._notifications]
    return asyncio.run(flow())


def test_h_shows_the_selected_tensors_hashes(q8):
    t = gguf.GGUFReader(q8).tensors[1]
    data = t.data.tobytes()
    got = _shown(q8, ("3", "down", "h"))
    assert (t.name, f"xxh64   {xxhash.xxh64(data).hexdigest()}\nsha1    {hashlib.sha1(data).hexdigest()}\n"
                    f"sha256  {hashlib.sha256(data).hexdigest()}") in got


def test_h_without_a_tensor_says_so(q8):
    got = _shown(q8, ("h",))
    assert any("select a tensor" in m for _, m in got)
