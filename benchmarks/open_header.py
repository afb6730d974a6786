"""Open a Llama-3-sized GGUF header: ggscope versus gguf-py's GGUFReader, same run.

The header matches the one ggml's C reader was timed on (../shared/fixtures/ggml
MANIFEST, section 3a): 128,000 tokens of 3-12 random alphanumerics, 128,000 float32
scores, 128,000 int32 token types, 280,000 merges "A B", a dozen llama scalars, a chat
template, and 291 tensor infos with Llama-3-8B names (Q4_K, Q6_K, F32; tiny shapes,
zero data).  It is written once with gguf-py's GGUFWriter.

Timed: opening the file and reading every metadata value (string arrays materialised
as Python lists, numeric arrays as numpy), median of 5, each tool in a fresh
subprocess so peak RSS is its own.  Also: a sparse 20 GB file with the same header
opens in the same time and memory (only the header is read).

Run: python benchmarks/open_header.py [--runs 5] [--skip-gguf-py]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

C_READER_MS = 34.2   # ggml's gguf_init_from_file on the same header (fixtures MANIFEST 3a)


def splitmix64(seed: int):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        yield z ^ (z >> 31)


def write_header(path: Path, *, data_gb: float = 0.0) -> None:
    import numpy as np
    from gguf import GGMLQuantizationType as Q, GGUFWriter

    alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    rng = splitmix64(0x5EED0001)

    def word(lo: int, hi: int) -> str:
        n = lo + next(rng) % (hi - lo + 1)
        return "".join(alnum[next(rng) % 62] for _ in range(n))

    tokens = [word(3, 12) for _ in range(128_000)]
    merges = [f"{word(1, 6)} {word(1, 6)}" for _ in range(280_000)]
    w = GGUFWriter(str(path), "llama")
    w.add_name("Bench-Llama-3-8B")
    w.add_context_length(8192)
    w.add_embedding_length(4096)
    w.add_block_count(32)
    w.add_feed_forward_length(14336)
    w.add_head_count(32)
    w.add_head_count_kv(8)
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type(15)
    w.add_vocab_size(128_000)
    w.add_rope_dimension_count(128)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(128_000)])
    w.add_token_types([6] * 256 + [1] * (128_000 - 512) + [3] * 256)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    names = ["token_embd.weight"]
    for b in range(32):
        names += [f"blk.{b}.{n}.weight" for n in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                                                  "ffn_norm", "ffn_gate", "ffn_up", "ffn_down")]
    names += ["output_norm.weight", "output.weight"]
    for i, name in enumerate(names):
        if name.endswith("norm.weight"):
            w.add_tensor(name, np.zeros(64, np.float32))
        else:
            q, bytes_per = (Q.Q6_K, 210) if i % 3 == 0 else (Q.Q4_K, 144)
            rows = 1 + i % 4
            w.add_tensor(name, np.zeros((rows, bytes_per), np.uint8), raw_dtype=q)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if data_gb:
        os.truncate(path, int(data_gb * 1e9))   # sparse: a huge "data section" nobody reads


MEASURE = r"""
import json, resource, statistics, sys, time
path, tool, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
times = []
if tool == "ggscope":
    import ggscope
    ggscope.open(path)                       # load and compile the spec once, as any process does
    for _ in range(runs):
        t = time.perf_counter()
        m = ggscope.open(path)
        for k, v in m.metadata.items():
            if hasattr(v, "tolist"):
                v = v.tolist()
        times.append(time.perf_counter() - t)
        n_keys, n_tensors = len(m.metadata), len(m.tensors)
else:
    from gguf import GGUFReader
    for _ in range(runs):
        t = time.perf_counter()
        r = GGUFReader(path)
        for name, field in r.fields.items():
            field.contents()
        times.append(time.perf_counter() - t)
        n_keys, n_tensors = len(r.fields), len(r.tensors)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"median_s": statistics.median(times), "times": times, "rss_mib": rss,
                  "keys": n_keys, "tensors": n_tensors}))
"""


def measure(path: Path, tool: str, runs: int) -> dict:
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path), tool, str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-gguf-py", action="store_true", help="time ggscope only")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        small = Path(tmp) / "llama3-header.gguf"
        t = time.perf_counter()
        write_header(small)
        print(f"wrote {small.stat().st_size:,} bytes of header with GGUFWriter in {time.perf_counter() - t:.1f} s")
        ours = measure(small, "ggscope", args.runs)
        print(f"ggscope.open + every metadata value: {ours['median_s'] * 1e3:8.1f} ms  "
              f"(median of {args.runs}), peak RSS {ours['rss_mib']:.0f} MiB")
        print(f"ggml C reader (MANIFEST, same header):  {C_READER_MS:8.1f} ms  "
              f"-> ggscope / C = {ours['median_s'] * 1e3 / C_READER_MS:.2f}x")
        if not args.skip_gguf_py:
            peer = measure(small, "gguf-py", args.runs)
            print(f"gguf-py GGUFReader + contents():       {peer['median_s'] * 1e3:8.1f} ms  "
                  f"(median of {args.runs}), peak RSS {peer['rss_mib']:.0f} MiB")
            print(f"ratio: ggscope is {peer['median_s'] / ours['median_s']:.0f}x faster, "
                  f"{peer['rss_mib'] / ours['rss_mib']:.1f}x less memory")
        sparse = Path(tmp) / "llama3-20GB-sparse.gguf"
        write_header(sparse, data_gb=20)
        big = measure(sparse, "ggscope", args.runs)
        print(f"sparse 20 GB file, same header:        {big['median_s'] * 1e3:8.1f} ms, "
              f"peak RSS {big['rss_mib']:.0f} MiB (small file: {ours['median_s'] * 1e3:.1f} ms, "
              f"{ours['rss_mib']:.0f} MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
