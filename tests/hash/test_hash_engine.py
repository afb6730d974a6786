"""The hashing engine against an independent reading of the same files: gguf-py's
GGUFReader gives each tensor's bytes, hashlib and xxhash hash them in one call."""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import xxhash

gguf = pytest.importorskip("gguf")

import ggscope  # noqa: E402
from ggscope.hash import windows  # noqa: E402
from ggscope.hash.engine import hash_file, hash_set, tensor_digests  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return generated.write_all(tmp_path_factory.mktemp("hash_engine"))


def _reference(path: Path) -> dict[str, bytes]:
    r = gguf.GGUFReader(path)
    return {t.name: np.ascontiguousarray(t.data).view(np.uint8).tobytes() for t in r.tensors}


@pytest.mark.parametrize("name", ["many_tensors.gguf", "big_tensor.gguf", "tiny_tensors.gguf", "custom_alignment.gguf"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_digest_is_the_hash_of_the_tensor_bytes(files, name, threads):
    ref = _reference(files[name])
    with ggscope.open(files[name]) as mf:
        got = hash_file(mf, ["xxh64", "sha1", "sha256", "xxh3", "uuid"], threads=threads)
    assert [t.name for t in got.tensors] == list(ref)
    for t in got.tensors:
        data = ref[t.name]
        assert dict(t.digests) == {"xxh64": xxhash.xxh64(data).hexdigest(), "sha1": hashlib.sha1(data).hexdigest(),
                                   "sha256": hashlib.sha256(data).hexdigest(), "xxh3": xxhash.xxh3_64(data).hexdigest()}
    whole = b"".join(ref.values())
    assert dict(got.whole)["sha256"] == hashlib.sha256(whole).hexdigest()
    assert dict(got.whole)["xxh3"] == xxhash.xxh3_64(whole).hexdigest()
    assert got.nbytes == len(whole)


def test_uuid_is_uuid5_of_the_data_in_llama_cpps_namespace(files):
    """RFC 9562 UUIDv5 = sha1(namespace + name) with the version and variant bits set; the
    namespace is Python's uuid5(NAMESPACE_URL, 'en.wikipedia.org/wiki/Llama.cpp')."""
    import uuid
    ref = b"".join(_reference(files["custom_alignment.gguf"]).values())
    ns = uuid.uuid5(uuid.NAMESPACE_URL, "en.wikipedia.org/wiki/Llama.cpp")
    assert str(ns) == "ef001206-dadc-5f6d-a15f-3359e577d4e5"
    with ggscope.open(files["custom_alignment.gguf"]) as mf:
        got = dict(hash_file(mf, ["uuid"]).whole)["uuid"]
    assert got == str(uuid.UUID(bytes=hashlib.sha1(ns.bytes + ref).digest()[:16], version=5))


def test_no_layer_hashes_only_the_whole_data(files):
    with ggscope.open(files["many_tensors.gguf"]) as mf:
        got = hash_file(mf, ["sha256"], per_tensor=False)
    assert got.tensors == () and [a for a, _ in got.whole] == ["sha256"]


def test_one_tensor_on_demand_is_its_line(files):
    with ggscope.open(files["many_tensors.gguf"]) as mf:
        full = hash_file(mf, ["xxh64", "sha1", "sha256"])
        t = mf.tensors[7]
        assert tensor_digests(t) == full.tensors[7].digests


def test_plan_reads_each_tensor_once_in_bounded_windows(files):
    with ggscope.open(files["tiny_tensors.gguf"]) as mf:
        reads = windows.plan(mf.tensors, window=1000, gap=64)
        pieces = [p for _, _, ps in reads for p in ps]
        assert [(t.offset, t.offset + t.nbytes) for t in mf.tensors] == [(s, e) for _, s, e in pieces]
        assert all(e - s <= 1000 for s, e, _ in reads)
        assert len(reads) < len(mf.tensors) / 5          # small neighbours share a read
    with ggscope.open(files["big_tensor.gguf"]) as mf:
        reads = windows.plan(mf.tensors)
        assert all(e - s <= windows.WINDOW for s, e, _ in reads) and len(reads) >= 2


@pytest.mark.parametrize("window", [7, 4096, 1 << 20])
@pytest.mark.parametrize("threads", [1, 3])
def test_stream_gives_exactly_the_tensor_bytes(files, window, threads):
    p = files["custom_alignment.gguf"] if window == 7 else files["big_tensor.gguf"]
    ref = list(_reference(p).values())
    with ggscope.open(p) as mf:
        got = [b""] * len(mf.tensors)
        for i, mv in windows.stream(mf, mf.tensors, threads=threads, window=window):
            got[i] += bytes(mv)
    assert got == ref


def test_a_file_changed_while_hashed_is_an_error(files, tmp_path, monkeypatch):
    p = tmp_path / "victim.gguf"
    p.write_bytes(files["big_tensor.gguf"].read_bytes())
    real = windows._Disk.read

    def read_then_touch(self, start, end, buf):
        out = real(self, start, end, buf)
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        return out
    monkeypatch.setattr(windows._Disk, "read", read_then_touch)
    with ggscope.open(p) as mf, pytest.raises(windows.FileChanged, match="changed while it was being hashed"):
        hash_file(mf, ["xxh64"])


def test_a_file_truncated_while_hashed_is_an_error(files, tmp_path):
    p = tmp_path / "victim.gguf"
    p.write_bytes(files["big_tensor.gguf"].read_bytes())
    with ggscope.open(p) as mf:
        os.truncate(p, mf.tensors[1].offset + 100)
        with pytest.raises(windows.FileChanged, match="ended at byte"):
            hash_file(mf, ["xxh64"])


def test_a_split_set_with_a_missing_shard_hashes_the_others(files, tmp_path):
    for n in generated.SPLIT[:2]:
        (tmp_path / n).write_bytes(files[n].read_bytes())
    sh = hash_set(str(tmp_path / generated.SPLIT[1]), ["xxh64"])
    assert [Path(f.path).name for f in sh.files] == list(generated.SPLIT[:2])
    assert [Path(p).name for p, _ in sh.missing] == [generated.SPLIT[2]]


def test_hostile_tensor_past_the_end_is_refused_before_reading(tmp_path):
    from ggscope.core.errors import DamagedFile
    src = Path(__file__).resolve().parents[2] / "fixtures" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
    p = tmp_path / "cut.gguf"
    p.write_bytes(src.read_bytes()[:-1000])
    with pytest.raises(DamagedFile):
        hash_set(str(p), ["xxh64"])
