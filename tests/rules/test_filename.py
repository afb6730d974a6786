"""File naming rules GG801-GG803: the spec's own regex test table, metadata agreement, split sets."""
import numpy as np
import pytest
from gguf_writers import KV, T, TensorSpec, V

from ggscope.rules.filename import parse_filename

from _helpers import findings, gguf

# gguf-spec.txt §1.1.1, the Node.js testCases table, verbatim
SPEC_CASES = [
    ("Mixtral-8x7B-v0.1-KQ2.gguf", dict(Sidecar=None, BaseName="Mixtral", SizeLabel="8x7B", FineTune=None, Version="v0.1",
                                        Encoding="KQ2", Type=None, Shard=None)),
    ("Grok-100B-v1.0-Q4_0-00003-of-00009.gguf", dict(Sidecar=None, BaseName="Grok", SizeLabel="100B", FineTune=None, Version="v1.0",
                                                     Encoding="Q4_0", Type=None, Shard="00003-of-00009")),
    ("Hermes-2-Pro-Llama-3-8B-v1.0-F16.gguf", dict(Sidecar=None, BaseName="Hermes-2-Pro-Llama-3", SizeLabel="8B", FineTune=None,
                                                   Version="v1.0", Encoding="F16", Type=None, Shard=None)),
    ("Phi-3-mini-3.8B-ContextLength4k-instruct-v1.0.gguf", dict(Sidecar=None, BaseName="Phi-3-mini", SizeLabel="3.8B-ContextLength4k",
                                                                FineTune="instruct", Version="v1.0", Encoding=None,
                                                                Type=None, Shard=None)),
    # ggml docs/gguf.md examples of the Sidecar prefix (ggml a7b74205, 2026-05-21)
    ("mtp-Qwen3-27B-v1.0-Q4_K_M.gguf", dict(Sidecar="mtp", BaseName="Qwen3", SizeLabel="27B", FineTune=None,
                                            Version="v1.0", Encoding="Q4_K_M", Type=None, Shard=None)),
    ("mmproj-Qwen2-VL-7B-v1.0-F16.gguf", dict(Sidecar="mmproj", BaseName="Qwen2-VL", SizeLabel="7B", FineTune=None,
                                              Version="v1.0", Encoding="F16", Type=None, Shard=None)),
    ("not-a-known-arrangement.gguf", None),
]


@pytest.mark.parametrize("name,expected", SPEC_CASES)
def test_spec_examples(name, expected):
    assert parse_filename(name) == expected


def test_convention_and_metadata(tmp_path):
    meta = [KV("general.basename", V.STRING, "Tiny Model"), KV("general.size_label", V.STRING, "1K"),
            KV("general.version", V.STRING, "v1.0"), KV("general.file_type", V.UINT32, 0)]
    t = [TensorSpec("w", T.F32, np.zeros(4, np.float32))]
    assert not [f for f in findings(gguf(tmp_path, "Tiny-Model-1K-v1.0-F32.gguf", kvs=meta, tensors=t))
                if f.code.startswith("GG8")]
    bad = findings(gguf(tmp_path, "Other-2K-v2.0-Q4_0.gguf", kvs=meta, tensors=t))
    assert [f.code for f in bad if f.code.startswith("GG8")] == ["GG802"] * 4
    assert "GG801" in {f.code for f in findings(gguf(tmp_path, "model.gguf"))}


def _shard(tmp_path, i, n, names, total):
    kv = [KV("split.no", V.UINT16, i - 1), KV("split.count", V.UINT16, n), KV("split.tensors.count", V.INT32, total)]
    t = [TensorSpec(nm, T.F32, np.zeros(4, np.float32)) for nm in names]
    return gguf(tmp_path, f"m-{i:05d}-of-{n:05d}.gguf", kvs=kv, tensors=t)


def test_split_set(tmp_path):
    a = _shard(tmp_path, 1, 3, ["a"], 3)
    _shard(tmp_path, 3, 3, ["c"], 3)
    fs = [f for f in findings(a) if f.code == "GG803"]
    assert len(fs) == 1 and "1 of 3 shards missing: 2" in fs[0].message
    _shard(tmp_path, 2, 3, ["a"], 3)          # complete now, but tensor "a" twice
    msgs = [f.message for f in findings(a) if f.code == "GG803"]
    assert len(msgs) == 1 and '"a" is in shard 1 and shard 2' in msgs[0]
    _shard(tmp_path, 2, 3, ["b"], 3)
    assert not [f for f in findings(a) if f.code == "GG803"]


def test_mmproj_sidecar_name_agrees_with_metadata(tmp_path):
    meta = [KV("general.basename", V.STRING, "Qwen2-VL"), KV("general.size_label", V.STRING, "7B"),
            KV("general.version", V.STRING, "v1.0"), KV("general.file_type", V.UINT32, 1)]
    p = gguf(tmp_path, "mmproj-Qwen2-VL-7B-v1.0-F16.gguf", kvs=meta, arch="clip")
    assert not {f.code for f in findings(p)} & {"GG801", "GG802"}


# Names as publishers write them (each seen on Hugging Face): GGUF-my-repo, bartowski,
# unsloth (UD- dynamic quants, split), TheBloke, llama.cpp's converter (gguf-py naming_convention).
PUBLISHED = ["gemma-3-270m-q4_k_m.gguf", "Qwen2.5-7B-Instruct-q4_k_m-imat.gguf",
             "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "google_gemma-3-270m-it-Q4_K_M.gguf",
             "Qwen3-8B-UD-Q4_K_M.gguf", "gemma-3-270m-it-UD-Q4_K_M-00001-of-00001.gguf",
             "llama-2-7b.Q4_K_M.gguf", "Gemma-3-270M-Q4_K_M.gguf"]


@pytest.mark.parametrize("name", PUBLISHED)
def test_publishers_names_pass_when_they_agree(tmp_path, name):
    meta = [KV("general.file_type", V.UINT32, 15)]                 # MOSTLY_Q4_K_M
    if "-of-" in name:
        meta += [KV("split.no", V.UINT16, 0), KV("split.count", V.UINT16, 1), KV("split.tensors.count", V.INT32, 1)]
    t = [TensorSpec("w", T.F32, np.zeros(4, np.float32))]
    assert not [f.code for f in findings(gguf(tmp_path, name, kvs=meta, tensors=t)) if f.code in ("GG801", "GG802")]


@pytest.mark.parametrize("name", ["gemma-3-270m-q8_0.gguf", "llama-2-7b.Q8_0.gguf", "Model-IQ2_XXS.gguf"])
def test_publishers_names_warn_when_they_contradict(tmp_path, name):
    meta = [KV("general.file_type", V.UINT32, 15)]
    t = [TensorSpec("w", T.F32, np.zeros(4, np.float32))]
    got = [f for f in findings(gguf(tmp_path, name, kvs=meta, tensors=t)) if f.code in ("GG801", "GG802")]
    assert [f.code for f in got] == ["GG802"] and "MOSTLY_Q4_K_M" in got[0].message


def test_a_label_no_file_type_has_contradicts_nothing(tmp_path):
    meta = [KV("general.file_type", V.UINT32, 15)]                 # unsloth's Q4_K_XL is a Q4_K_M mix
    t = [TensorSpec("w", T.F32, np.zeros(4, np.float32))]
    assert not [f for f in findings(gguf(tmp_path, "Qwen3-8B-UD-Q4_K_XL.gguf", kvs=meta, tensors=t))
                if f.code in ("GG801", "GG802")]
