"""The forward pass, ``run`` and GG1003 never build anything from a count the tensors cannot back.

The case of issue 23: the bundled example with ``llama.block_count`` set to 2^31 (one
integer changed).  Before, ``validate --deep`` and ``run`` grew without bound (2.2 GB
after 20 s, never finishing) although plain ``validate`` reported GG1105 at once.  Now
``run`` and GG1003 refuse with the loader rules' line before starting, and every forward
module checks a claimed block count against the tensors present before it sizes
anything by it -- for the architectures and formats the loader rules do not predict too
(mamba, RWKV GGUF, early llama.cpp and ggml gpt-2 files).

Work is counted, never timed (tests/work_budget.py); memory is bounded by running the
commands in a child process under RLIMIT_AS (a loop over 2^31 layers needs far more).
"""
from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys

import pytest

import ggscope
from ggscope import forward as F
from ggscope.cli import main
from ggscope.forward import WeightError
from tests.conftest import REPO
from work_budget import call_budget

EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
HUGE = 2**31
CHILD_AS = 1 << 30          # 1 GiB of address space for the whole child interpreter
CHILD_CPU = 60              # seconds of CPU: a limit, never an assertion on time


def set_u32(data: bytes, key: str, value: int) -> bytes:
    """``data`` (a GGUF file) with the UINT32 metadata value of ``key`` replaced."""
    k = key.encode()
    at = data.index(struct.pack("<Q", len(k)) + k) + 8 + len(k)
    assert struct.unpack_from("<I", data, at)[0] == 4, f"{key} is not a UINT32"
    out = bytearray(data)
    struct.pack_into("<I", out, at + 4, value)
    return bytes(out)


@pytest.fixture(scope="module")
def inflated(tmp_path_factory):
    p = tmp_path_factory.mktemp("bounds") / "inflated.gguf"
    p.write_bytes(set_u32(EXAMPLE.read_bytes(), "llama.block_count", HUGE))
    return p


def test_the_mutation_is_the_issues_case(inflated):
    mf = ggscope.open(inflated)
    assert mf.damage is None and mf.metadata["llama.block_count"] == HUGE
    assert sum(t.name.endswith("attn_norm.weight") for t in mf.tensors) == 2


def test_run_refuses_with_the_loader_line_before_building(inflated, capsys):
    main(["run", str(EXAMPLE), "--tokens", "1"])                 # imports and caches warmed
    capsys.readouterr()
    with call_budget(200_000) as budget:
        assert main(["run", str(inflated), "--tokens", "1,2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "GG1105" in err and "2147483648" in err
    assert "not run" in err
    assert budget.calls < 200_000


def test_forward_check_refuses_with_a_warning(inflated):
    from ggscope.validate.runner import selected_rules, validate
    mf = ggscope.open(inflated)
    with call_budget(2_000_000):
        (f,) = validate(mf, selected_rules(select=("GG1003",), deep=True))
    assert f.severity.value == "warning" and "GG1105" in f.message and "could not run" in f.message


def test_the_decoder_itself_bounds_layers_by_the_tensors(inflated):
    """Without the gate (the library's ``forward.run``): one line, no layer built."""
    mf = ggscope.open(inflated)
    with call_budget(50_000), pytest.raises(WeightError) as caught:
        F.run(mf, [1, 2])
    message = str(caught.value)
    assert "llama.block_count is 2147483648" in message and "'blk.2.attn_norm.weight'" in message


def _gguf_case(shared, name: str, key: str, tmp_path):
    src = shared / "llama-cpp-arch" / name
    if not src.is_file():
        pytest.skip(f"shared fixture missing: {src}")
    p = tmp_path / name
    p.write_bytes(set_u32(src.read_bytes(), key, HUGE))
    return p


@pytest.mark.parametrize("name, key, missing", [
    ("Tiny-Mamba-106K-v1.0-F32.gguf", "mamba.block_count", "blk.2.attn_norm.weight"),
    ("Tiny-RWKV6-627K-v1.0-F32.gguf", "rwkv6.block_count", "blk.2.attn_norm.weight"),
    ("Tiny-RWKV7-558K-v1.0-F32.gguf", "rwkv7.block_count", "blk.2.attn_norm.weight"),
    ("Tiny-Gemma3-317K-v1.0-F32.gguf", "gemma3.block_count", "blk.6.attn_norm.weight"),
])
def test_every_gguf_module_bounds_its_layers(shared_fixtures, tmp_path, name, key, missing):
    """Mamba and RWKV are not predicted by the loader rules (GG1102): their modules must
    hold the bound themselves."""
    mf = ggscope.open(_gguf_case(shared_fixtures, name, key, tmp_path))
    with call_budget(50_000), pytest.raises(WeightError, match=f"{key} is {HUGE}.*'{missing}'"):
        F.run(mf, [1, 2])


@pytest.mark.parametrize("rel, offset, key, missing", [
    ("llama-legacy/llama-tiny-ggjt-v1-f16.bin", 24, "ggjt.n_layer", "layers.1.attention_norm.weight"),
    ("ggml-legacy/gpt2-tiny-f32.bin", 20, "ggml.n_layer", "model/h2/ln_1/g"),
])
def test_early_files_bound_their_layers(shared_fixtures, tmp_path, rel, offset, key, missing):
    """GGJT's hparams (magic, version, n_vocab, n_embd, n_mult, n_head, n_layer) and ggml's
    gpt-2 example (magic, n_vocab, n_ctx, n_embd, n_head, n_layer), legacy-formats.md."""
    src = shared_fixtures / rel
    data = bytearray(src.read_bytes())
    struct.pack_into("<I", data, offset, HUGE - 1)
    p = tmp_path / src.name
    p.write_bytes(bytes(data))
    mf = ggscope.open(p)
    assert mf.metadata[key] == HUGE - 1
    with call_budget(50_000), pytest.raises(WeightError, match=f"'{missing}'"):
        F.run(mf, [1, 2])


def _limited() -> None:                      # in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_AS, CHILD_AS))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU, CHILD_CPU))


@pytest.mark.parametrize("argv, status", [
    (["run", "{f}", "--tokens", "1,2"], 2),
    (["run", "{f}", "--prompt", "Hello", "--generate", "3", "--json"], 2),
    (["validate", "--deep", "--format", "json", "{f}"], 1),
])
def test_memory_stays_bounded_in_a_child_under_rlimit(inflated, argv, status):
    """Under 1 GiB of address space the commands end with their answer, not a
    MemoryError, a signal or the CPU limit."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "ggscope", *[a.format(f=inflated) for a in argv]],
                          capture_output=True, text=True, env=env, preexec_fn=_limited, timeout=600)
    assert proc.returncode == status, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "memory" not in proc.stderr
    if argv[0] == "run":
        assert "GG1105" in proc.stderr and proc.stderr.count("\n") == 1
    else:
        by_code = {f["code"]: f for f in json.loads(proc.stdout)}
        assert "GG1105" in by_code and "GG1105" in by_code["GG1003"]["message"]
