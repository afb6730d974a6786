"""tools/record_llama_memory.parse_log reads llama.cpp's own log lines (as printed by
llama.cpp vendored in llama-cpp-python 0.3.36 loading Gemma 3 270M Q4_K_M at n_ctx 256)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tools.record_llama_memory import parse_log  # noqa: E402

LOG = """\
load_tensors:   CPU_Mapped model buffer size =   235.16 MiB
load_tensors:   CPU_REPACK model buffer size =    12.66 MiB
llama_context:        CPU  output buffer size =     1.00 MiB
llama_kv_cache_iswa: creating non-SWA KV cache, size = 256 cells
llama_kv_cache:        CPU KV buffer size =     0.75 MiB
llama_kv_cache: size =    0.75 MiB (   256 cells,   3 layers,  1/1 seqs), K (f16):    0.38 MiB, V (f16):    0.38 MiB
llama_kv_cache_iswa: creating     SWA KV cache, size = 256 cells
llama_kv_cache:        CPU KV buffer size =     3.75 MiB
llama_kv_cache: size =    3.75 MiB (   256 cells,  15 layers,  1/1 seqs), K (q8_0):    1.88 MiB, V (q8_0):    1.88 MiB
llama_memory_recurrent:        CPU RS buffer size =     0.06 MiB
sched_reserve:        CPU compute buffer size =   257.25 MiB
~llama_context:        CPU compute buffer size is 257.2510 MiB, matches expectation of 257.2510 MiB
"""


def test_every_size_line_is_read():
    got = parse_log(LOG)
    assert got["model"] == {"CPU_Mapped": 235.16, "CPU_REPACK": 12.66}
    assert got["output"] == 1.0 and got["rs"] == 0.06 and got["compute"] == 257.251
    assert got["kv"] == [{"mib": 0.75, "cells": 256, "layers": 3, "type_k": "f16", "k": 0.38, "type_v": "f16", "v": 0.38},
                         {"mib": 3.75, "cells": 256, "layers": 15, "type_k": "q8_0", "k": 1.88, "type_v": "q8_0",
                          "v": 1.88}]
