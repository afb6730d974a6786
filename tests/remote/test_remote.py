"""Remote files over loopback HTTP: every command on a URL equals the local file, the
header of a 20 GiB model arrives in a few range requests, and every broken server is a
one-line error with exit status 2."""
from __future__ import annotations

import json
import math
import os
import re
import string
from pathlib import Path

import numpy as np
import pytest

import ggscope
from ggscope.cli import main

from range_server import RangeServer

REPO = Path(__file__).resolve().parents[2]
Q8 = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
Q4K = REPO / "fixtures" / "TinyLlama-Test-164K-v1.0-Q4_K_S.gguf"
BIG = 20 * 2**30
MiB = 2**20


@pytest.fixture
def server():
    with RangeServer() as s:
        yield s


@pytest.fixture(autouse=True)
def _short_timeout(monkeypatch):
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "2")


def _fixture(path: Path) -> Path:
    if not path.is_file():
        pytest.skip(f"{path} missing; run python fixtures/make_fixtures.py")
    return path


def write_big_header_sparse(path: Path, n_tokens: int = 120_000) -> int:
    """gguf-py writes a GGUF with a multi-MiB vocabulary and one F32 tensor of 20 GiB;
    the data section is a hole (``os.truncate``).  Returns the data section's offset."""
    import gguf
    rng = np.random.default_rng(7)
    letters = np.array(list(string.ascii_letters))
    w = gguf.GGUFWriter(path, "llama")
    w.add_block_count(1)
    w.add_tokenizer_model("llama")
    w.add_token_list(["".join(rng.choice(letters, 3 + i % 40)) for i in range(n_tokens)])
    w.add_token_scores(rng.standard_normal(n_tokens).astype(np.float32).tolist())
    w.add_tensor_info("huge.weight", [BIG // 4], np.dtype(np.float32), BIG,
                      raw_dtype=gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    data_offset = -(-path.stat().st_size // 32) * 32
    os.truncate(path, data_offset + BIG)
    if os.stat(path).st_blocks * 512 > 64 * MiB:
        path.unlink()
        pytest.skip("the filesystem of tmp_path does not keep sparse files")
    return data_offset


def test_open_20gb_reads_header_plus_at_most_2mib(server, tmp_path):
    path = tmp_path / "big.gguf"
    header = write_big_header_sparse(path)
    assert header > 2 * MiB                     # several read-ahead rounds are needed
    url = server.serve("/big.gguf", path)
    mf = ggscope.open(url)
    local = ggscope.open(path)
    assert mf.file_size == path.stat().st_size
    assert mf.metadata["tokenizer.ggml.tokens"] == local.metadata["tokenizer.ggml.tokens"]
    assert np.array_equal(mf.metadata["tokenizer.ggml.scores"], local.metadata["tokenizer.ggml.scores"])
    assert [(t.name, t.shape, t.offset, t.nbytes) for t in mf.tensors] == \
           [(t.name, t.shape, t.offset, t.nbytes) for t in local.tensors]
    assert mf.damage is None
    assert server.served.bytes_sent <= header + 2 * MiB
    # geometric read-ahead: 256 KiB, then steps doubling up to 2 MiB - not one request per field
    rounds = 2 + math.ceil(math.log2(header / (256 * 1024))) + max(0, header - 4 * MiB) // (2 * MiB)
    assert server.served.requests <= rounds
    assert all(r.startswith("bytes=") for r in server.served.ranges)


def test_every_command_on_a_url_matches_the_local_file(server, capsys):
    q8 = _fixture(Q8)
    url = server.serve(f"/m/{q8.name}", q8)
    for argv in (["info", "--json"], ["stats", "--json"], ["validate", "--format", "json"]):
        assert main([*argv, str(q8)]) in (0, 1)
        local = capsys.readouterr().out.replace(str(q8), "FILE")
        assert main([*argv, url]) in (0, 1)
        remote = capsys.readouterr().out.replace(url, "FILE")
        assert json.loads(remote) == json.loads(local), argv


def test_diff_and_run_on_urls(server, capsys):
    q8, q4 = _fixture(Q8), _fixture(Q4K)
    u8 = server.serve(f"/a/{q8.name}", q8)
    u4 = server.serve(f"/b/{q4.name}", q4)
    code_local = main(["diff", "--json", str(q8), str(q4)])
    local = json.loads(capsys.readouterr().out)
    assert main(["diff", "--json", u8, u4]) == code_local
    remote = json.loads(capsys.readouterr().out)
    assert json.dumps(remote).replace(u8, str(q8)).replace(u4, str(q4)) == json.dumps(local)
    assert main(["run", str(q8), "--tokens", "1,2,3", "--json"]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["run", u8, "--tokens", "1,2,3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == local


def test_tensor_data_is_fetched_only_when_asked(server, tmp_path):
    path = write_f32(tmp_path / "f32.gguf")
    url = server.serve("/f32.gguf", path)
    mf = ggscope.open(url)
    assert server.served.requests == 1 and mf.source.fetched() <= 256 * 1024 < mf.file_size
    t = mf.tensors[0]
    got = t.dequantize()
    assert np.array_equal(got, ggscope.open(path).tensor(t.name).dequantize())
    assert server.served.requests == 2          # the tensor's missing blocks in one request
    assert server.served.bytes_sent <= mf.file_size


def _one_line_exit_2(capsys, argv, *needles):
    assert main(argv) == 2
    cap = capsys.readouterr()
    problems = [x for x in cap.err.splitlines() if not re.match(r"\d+ files? checked", x)]   # validate's summary
    assert "Traceback" not in cap.err and len(problems) == 1, cap.err
    for n in needles:
        assert n in cap.err, cap.err
    return cap.err


def test_server_ignoring_range(server, capsys):
    url = server.serve("/q8.gguf", _fixture(Q8), mode="ignore-range")
    _one_line_exit_2(capsys, ["info", url], "ignores HTTP Range")


def test_server_error_404_403(server, capsys):
    _one_line_exit_2(capsys, ["info", server.serve("/e.gguf", _fixture(Q8), mode="error")], "HTTP 500")
    _one_line_exit_2(capsys, ["info", server.status("/missing.gguf", 404)], "not found (HTTP 404)")
    _one_line_exit_2(capsys, ["validate", server.status("/secret.gguf", 403)], "access denied (HTTP 403)")


def test_stalled_server_times_out(server, capsys, monkeypatch):
    monkeypatch.setenv("GGSCOPE_HTTP_TIMEOUT", "0.5")
    url = server.serve("/slow.gguf", _fixture(Q8), mode="stall", stall=3)
    _one_line_exit_2(capsys, ["info", url], "timed out")


def test_connection_refused(capsys):
    with RangeServer() as s:
        url = s.url("/gone.gguf")             # the server is gone once the block ends
    _one_line_exit_2(capsys, ["info", url], "network error")


def write_f32(path: Path, n: int = 1 << 20) -> Path:
    """gguf-py writes one F32 tensor of ``n`` elements: tensor data beyond the first request."""
    import gguf
    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor("w.weight", np.arange(n, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_file_changing_size_between_requests(server, tmp_path, capsys):
    first = write_f32(tmp_path / "first.gguf")
    longer = tmp_path / "longer.gguf"
    longer.write_bytes(first.read_bytes() + b"\0" * 4096)
    url = server.serve_growing("/grow.gguf", first, longer)
    _one_line_exit_2(capsys, ["stats", url], "changed size")


def test_release_gives_pages_back_and_refetches(server, tmp_path):
    url = server.serve("/f32.gguf", write_f32(tmp_path / "f32.gguf"))
    mf = ggscope.open(url)
    t = max(mf.tensors, key=lambda t: t.nbytes)
    want = bytes(t.raw())
    n = server.served.requests
    mf.source.release(t.offset, t.offset + t.nbytes)
    assert bytes(t.raw()) == want
    assert server.served.requests > n


@pytest.mark.parametrize("name", ["rwkv/tiny-rwkv-6v0-3m-Q5_0.bin", "llama-legacy/llama-tiny-ggjt-v1-q4_0.bin",
                                  "ggml-legacy/gpt2-tiny-2023-05-26-qnt2-q4_0.bin",
                                  "llama-vocab/ggml-vocab-deepseek-llm.gguf"])
def test_every_format_opens_by_url_as_it_does_locally(server, shared_fixtures, name, capsys):
    path = shared_fixtures / name
    if not path.is_file():
        pytest.skip(f"{path} missing")
    url = server.serve(f"/f/{path.name}", path)
    assert main(["info", "--json", str(path)]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main(["info", "--json", url]) == 0
    remote = json.loads(capsys.readouterr().out)
    local["file"] = remote["file"] = ""
    assert remote == local


def test_progress_bar_on_a_terminal_for_large_fetches(server, tmp_path, monkeypatch):
    import io
    import sys

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True
    err = Tty()
    monkeypatch.setattr(sys, "stderr", err)
    url = server.serve("/f32.gguf", write_f32(tmp_path / "f32.gguf", 2 << 20))     # 8 MiB of data
    mf = ggscope.open(url)
    assert "fetching" not in err.getvalue()            # the header is small: no bar
    mf.tensors[0].raw()
    assert "fetching" in err.getvalue() and "f32.gguf" in err.getvalue()


def test_deep_rules_give_fetched_tensor_pages_back(server, tmp_path):
    from ggscope.rules.deep import BadBlockScales, NonFiniteValues
    from ggscope.validate.runner import validate
    import gguf
    path = tmp_path / "deep.gguf"
    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor("a.weight", np.arange(1 << 20, dtype=np.float32))
    q = gguf.quants.quantize(np.ones((256, 4096), np.float32), gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("b.weight", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    mf = ggscope.open(server.serve("/deep.gguf", path))
    head = mf.source.fetched()
    assert validate(mf, [NonFiniteValues, BadBlockScales]) == []
    assert server.served.bytes_sent >= mf.file_size - head    # every tensor byte was read once
    assert mf.source.fetched() <= head                         # and given back afterwards


def test_stats_of_a_large_remote_tensor_fetch_chunk_by_chunk(server, tmp_path, monkeypatch):
    path = write_f32(tmp_path / "f32.gguf", 2 << 20)               # 8 MiB of F32 data
    mf = ggscope.open(server.serve("/f32.gguf", path))
    head = mf.source.fetched()
    got = mf.tensors[0].stats()
    want = ggscope.open(path).tensors[0].stats()
    for k in ("count", "min", "max", "mean", "std", "zeros", "nan", "inf"):
        assert got[k] == want[k], k
    # chunks were fetched and given back: only 64 KiB blocks straddling chunk edges stay
    assert mf.source.fetched() - head < mf.file_size // 4


def test_browser_on_a_url_shows_the_bytes_it_fetches(server, tmp_path, monkeypatch):
    """`ggscope URL` opens the browser; its hex view reads remote bytes by range, a block
    at a time, and shows what the local file holds."""
    import asyncio

    from ggscope.tui.app import GGScopeApp
    from ggscope.tui.widgets.hex_view import HexView

    path = write_f32(tmp_path / "f32.gguf", 1 << 20)
    url = server.serve("/f32.gguf", path)
    opened = []
    monkeypatch.setattr("ggscope.tui.run.run_app", lambda target: opened.append(target) or 0)
    monkeypatch.setattr("ggscope.commands.tui._has_terminal", lambda: True)
    assert main([url]) == 0 and opened == [url]

    async def rows(mf):
        app = GGScopeApp(mf, auto_stats=False)
        async with app.run_test(size=(140, 40)) as pilot:
            await pilot.pause()
            hexview = app.query_one(HexView)
            hexview.focus()
            hexview.action_jump_end()
            await pilot.pause()
            return [hexview.render_line(y).text for y in range(hexview.size.height)]
    before = server.served.requests
    remote = asyncio.run(rows(ggscope.open(url)))
    assert remote == asyncio.run(rows(ggscope.open(path)))
    assert any(f"{path.stat().st_size - 16:x}" in line for line in remote)    # the last row is there
    assert server.served.requests - before <= 3        # the head, then the block(s) at the end
