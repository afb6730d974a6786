"""What llama.cpp and ggml added after the installed gguf-py release (gguf 0.19.0).

Why: the facts llama.cpp maintains - architectures, keys, tensor names, file types -
are read from gguf-py at run time (``ggscope.facts.upstream``).  A release lags the source,
so the few facts upstream has added since live here, each with the upstream source and
date it was read from.  ``tests/test_upstream.py`` fails as soon as the installed
gguf-py carries an entry itself: then the entry is deleted here and the overlay shrinks.

Contract: plain data, no imports from the rest of ggscope.

* ``FILE_TYPES``: ``general.file_type`` value -> ``LlamaFileType`` member name.
* ``GGML_TYPES``: ggml type id -> ``GGMLQuantizationType`` member name.
* ``FILENAME_PREFIXES``: prefixes the naming convention puts before ``<BaseName>``.
* ``GGUF_MAX_STRING_LENGTH`` / ``GGUF_MAX_ARRAY_ELEMENTS``: ggml's reader limits.
* ``SOURCES``: entry -> "upstream file, change, date" (what ``ggscope rules`` cites).
"""
from __future__ import annotations

__all__ = ["FILE_TYPES", "GGML_TYPES", "FILENAME_PREFIXES", "GGUF_MAX_STRING_LENGTH",
           "GGUF_MAX_ARRAY_ELEMENTS", "SOURCES"]

# llama.cpp include/llama.h enum llama_ftype: LLAMA_FTYPE_MOSTLY_Q2_0 = 41 (PR #24448,
# commit bec4772f, 2026-07-07, release b9916).  gguf 0.19.0 stops at MOSTLY_Q1_0 = 40.
FILE_TYPES: dict[int, str] = {41: "MOSTLY_Q2_0"}

# ggml include/ggml.h enum ggml_type: GGML_TYPE_Q2_0 = 42 (same change, 2026-07-07).
# gguf 0.19.0's GGMLQuantizationType stops at Q1_0 = 41.
GGML_TYPES: dict[int, str] = {42: "Q2_0"}

# ggml docs/gguf.md naming convention: an optional "Sidecar" prefix before <BaseName>,
# "mmproj-" (multimodal projector) or "mtp-" (multi-token-prediction heads): ggml commit
# a7b74205 "docs : add Sidecar prefix slot (mmproj, mtp)" (#1496), 2026-05-21.
FILENAME_PREFIXES: tuple[str, ...] = ("mmproj-", "mtp-")

# ggml src/gguf.cpp: #define GGUF_MAX_STRING_LENGTH (1024*1024*1024) and
# GGUF_MAX_ARRAY_ELEMENTS (1024*1024*1024); gguf_reader::read refuses a longer string or
# array (ggml commit 4773cde1 "gguf : sync", 2026-02-27).  gguf-py's reader has no limit.
GGUF_MAX_STRING_LENGTH = 1024 * 1024 * 1024
GGUF_MAX_ARRAY_ELEMENTS = 1024 * 1024 * 1024

SOURCES: dict[str, str] = {
    "file_type 41 MOSTLY_Q2_0": "llama.cpp include/llama.h llama_ftype, PR #24448 (bec4772f), 2026-07-07",
    "ggml type 42 Q2_0": "ggml include/ggml.h ggml_type, llama.cpp PR #24448 (bec4772f), 2026-07-07",
    "filename prefixes mmproj-, mtp-": "ggml docs/gguf.md Sidecar prefix, ggml a7b74205 (#1496), 2026-05-21",
    "string limit 1 GiB": "ggml src/gguf.cpp GGUF_MAX_STRING_LENGTH, ggml 4773cde1, 2026-02-27",
    "array limit 2^30 elements": "ggml src/gguf.cpp GGUF_MAX_ARRAY_ELEMENTS, ggml 4773cde1, 2026-02-27",
}
