"""The GGUF metadata schema: which keys are standard and the type each is written with.

Why: the schema rules (GG6xx), the tokenizer rules (GG7xx) and the key-naming rules
(GG4xx) need to know which keys llama.cpp standardizes and what type its writer gives
them.  That fact is maintained in llama.cpp's gguf-py (``gguf.constants.Keys`` and the
``GGUFWriter.add_*`` methods), so it is read from the installed package at run time by
``ggscope.facts.upstream``; this module only adds the comparison helpers.

Contract:

* ``expected_type(key, arch)`` -> the type gguf-py writes ``key`` with ("uint32",
  "float32", "string", "bool", "array[string]", "array" for an array of any element type,
  "uint32|array" for a scalar-or-per-layer-array key), or None when not standard.
* ``type_matches(expected, file_type)`` -> "ok", "width" (same kind, other width) or
  "kind" (a different kind of value: string for a number, ...).
* ``TOKEN_ID_RE``: the special token id keys (``tokenizer.ggml.<name>_token_id``).
"""
from __future__ import annotations

import re

from ggscope.facts import upstream

__all__ = ["TOKEN_ID_RE", "expected_type", "type_matches", "kind"]

TOKEN_ID_RE = re.compile(r"tokenizer\.ggml\.[a-z0-9_]+_token_id")

_KINDS = {"uint8": "int", "int8": "int", "uint16": "int", "int16": "int", "uint32": "int",
          "int32": "int", "uint64": "int", "int64": "int", "float32": "float", "float64": "float",
          "bool": "bool", "string": "string"}


def kind(type_name: str) -> str:
    """"int", "float", "bool", "string", "array[<kind>]", "array" or "unknown"."""
    if type_name == "array":
        return "array"
    if type_name.startswith("array[") and type_name.endswith("]"):
        return f"array[{kind(type_name[6:-1])}]"
    return _KINDS.get(type_name, "unknown")


def expected_type(key: str, arch: str | None = None) -> str | None:
    """The type gguf-py writes ``key`` with (None when gguf-py does not define the key)."""
    return upstream.expected_key_type(key, arch)


def type_matches(expected: str, file_type: str) -> str:
    """"ok", "width" (same kind, another width) or "kind" (another kind of value)."""
    options = expected.split("|")
    if file_type in options or ("array" in options and file_type.startswith("array")):
        return "ok"
    if any(kind(o) == kind(file_type) for o in options):
        return "width"
    return "kind"
