"""The facts llama.cpp maintains, read from gguf-py (``gguf`` on PyPI) at run time.

Why: architecture names, standard metadata keys and the types llama.cpp's writer gives
them, each architecture's tensor names, and the file-type and tensor-type enums are
maintained in llama.cpp's ``gguf-py/gguf/constants.py`` and ``gguf_writer.py``; a copy
drifts (the 2023 spec text lacked 27 of today's architectures).  So they are read from
the installed gguf-py, plus ``upstream_overlay`` for what upstream added after that
release.  Nothing here is transcribed.

Contract (all computed once, lazily):

* ``arch_names()``: every ``general.architecture`` value llama.cpp knows.
* ``key_types()``: key template (``"{arch}.context_length"``, ``"general.name"``) -> the
  GGUF type name gguf-py's ``GGUFWriter`` writes it with (``"uint32"``, ``"float32"``,
  ``"string"``, ``"bool"``, ``"array[string]"``, ``"array"`` for an array of any
  element type).  Read from the writer's ``add_*`` methods; token-id keys that only the
  special-vocabulary helper writes are ``uint32`` like the writer's own.
* ``tokenizer_keys()``: ``Keys.Tokenizer``'s attribute -> key (``"BOS_ID"`` ->
  ``"tokenizer.ggml.bos_token_id"``).
* ``expected_key_type(key, arch)``: the type of a concrete key, or None.
* ``arch_tensors(arch)``: ``(base names, block names)`` of ``MODEL_TENSORS[arch]``
  (block names without ``blk.{bid}.``), or None for an unknown architecture.
* ``file_types()``: ``general.file_type`` value -> name (``"MOSTLY_Q4_K_M"``).
* ``ggml_type_names()``: ggml type id -> name (``"Q4_K"``).

Computing these parses gguf-py's writer and imports gguf-py (whose package imports yaml):
tens of milliseconds every ``validate`` process paid.  So what gguf-py gives is read once
into one table (``_facts``) kept by ``core.stamped`` in the user cache directory
(``ggscope/facts``) under a name made of the sizes and modification times of gguf-py's
``constants.py`` and ``gguf_writer.py`` and of this module: another gguf-py or another
ggscope computes it anew; a cache that cannot be read or written is computed past.
"""
from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import re
import zlib
from functools import lru_cache

from ggscope.core import stamped
from ggscope.facts import upstream_overlay as overlay

__all__ = ["arch_names", "tokenizer_keys", "key_types", "expected_key_type", "arch_tensors", "file_types",
           "ggml_type_names"]


def _constants():
    import gguf.constants as c
    return c


@lru_cache(maxsize=1)
def arch_names() -> frozenset[str]:
    return frozenset(_facts()["arch_names"])


def _all_keys() -> dict[str, str]:
    """Attribute path ("LLM.CONTEXT_LENGTH") -> key template, for every ``Keys`` class."""
    c = _constants()
    out: dict[str, str] = {}
    for cname, cls in vars(c.Keys).items():
        if isinstance(cls, type):
            for attr, val in vars(cls).items():
                if isinstance(val, str) and not attr.startswith("_"):
                    out[f"{cname}.{attr}"] = val
    return out


_PY_TYPES = {"str": "string", "bytes": "string", "bytearray": "string", "float": "float32",
             "int": "int32", "bool": "bool", "TokenType": "int32"}


def _array_element(annotation: ast.AST | None) -> str | None:
    """``Sequence[float]`` -> "float32" (gguf-py's ``GGUFValueType.get_type`` mapping)."""
    if annotation is None:
        return None
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    kinds = {_PY_TYPES[n] for n in names if n in _PY_TYPES}
    return kinds.pop() if len(kinds) == 1 else None


def _key_of(node: ast.AST, keys: dict[str, str]) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        node = node.func.value
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id == "Keys") or len(parts) != 2:
        return None
    return keys.get(f"{parts[1]}.{parts[0]}")


def _cache_dir() -> str:
    return stamped.area("facts")


def _cache_file(name: str) -> tuple[str, str] | None:
    """Where ``name`` computed from the installed gguf-py is kept and the stamp that record
    must hold (gguf-py's ``constants.py`` and ``gguf_writer.py`` and this module), or None
    (no gguf-py found).  The stamp is checked on reading: the name's checksum only spreads
    the files."""
    try:
        spec = importlib.util.find_spec("gguf")      # locates the package without importing it
        where = list(spec.submodule_search_locations or []) if spec else []
    except (ImportError, ValueError):
        return None
    if not where:
        return None
    st = stamped.stamp([os.path.join(where[0], "constants.py"), os.path.join(where[0], "gguf_writer.py"), __file__])
    if st is None:
        return None
    return os.path.join(_cache_dir(), f"{name}-{zlib.crc32(st.encode('utf-8', 'surrogateescape')):08x}.json"), st


def _compute_facts() -> dict:
    """Everything this module reads from gguf-py, as JSON-able data."""
    c = _constants()
    tensors: dict[str, list[list[str]]] = {}
    for member, arch in c.MODEL_ARCH_NAMES.items():
        base, block = set(), set()
        for t in c.MODEL_TENSORS.get(member, ()):
            name = c.TENSOR_NAMES.get(t)
            if name is None:
                continue
            if name.startswith("blk.{bid}."):
                block.add(name[len("blk.{bid}."):])
            elif "{" not in name:
                base.add(name)
        tensors[arch] = [sorted(base), sorted(block)]
    return {"key_types": _key_types(),
            "tokenizer_keys": {a: k for a, k in vars(c.Keys.Tokenizer).items()
                               if isinstance(k, str) and not a.startswith("_")},
            "arch_names": list(c.MODEL_ARCH_NAMES.values()),
            "arch_tensors": tensors,
            "file_types": [[int(m.value), m.name] for m in c.LlamaFileType],
            "ggml_types": [[int(m.value), m.name] for m in c.GGMLQuantizationType]}


_SHAPE = {"key_types": dict, "tokenizer_keys": dict, "arch_names": list, "arch_tensors": dict, "file_types": list,
          "ggml_types": list}


@lru_cache(maxsize=1)
def _facts() -> dict:
    """``_compute_facts()``, read from the cache file when one is there (see the module)."""
    where = _cache_file("facts")
    if where is not None:
        facts = stamped.read(*where)
        if isinstance(facts, dict) and all(isinstance(facts.get(k), t) for k, t in _SHAPE.items()):
            return facts
    out = _compute_facts()
    if where is not None:
        stamped.write(where[0], where[1], out)
    return out


@lru_cache(maxsize=1)
def tokenizer_keys() -> dict[str, str]:
    return dict(_facts()["tokenizer_keys"])


@lru_cache(maxsize=1)
def key_types() -> dict[str, str]:
    return dict(_facts()["key_types"])


def _key_types() -> dict[str, str]:
    import gguf.gguf_writer as gw
    keys = _all_keys()
    tree = ast.parse(inspect.getsource(gw))
    found: dict[str, set[str]] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        args = {a.arg: a.annotation for a in fn.args.args}
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id == "self"
                    and call.func.attr.startswith("add_") and len(call.args) >= 2):
                continue
            key = _key_of(call.args[0], keys)
            if key is None:
                continue
            kind = call.func.attr[4:]
            if kind == "array":
                val = call.args[1]
                elem = _array_element(args.get(val.id)) if isinstance(val, ast.Name) else None
                kind = f"array[{elem}]" if elem else "array"
            found.setdefault(key, set()).add(kind)
    out: dict[str, str] = {}
    for key, kinds in found.items():
        if len(kinds) == 1:
            out[key] = kinds.pop()
        else:           # a scalar or a per-layer array ({arch}.feed_forward_length, ...)
            scalars = sorted(k for k in kinds if not k.startswith("array"))
            out[key] = scalars[0] + "|array" if len(scalars) == 1 else "any"
    for attr, key in keys.items():   # special token ids the writer sets through SpecialVocab
        if key not in out and attr.startswith("Tokenizer.") and attr.endswith("_ID"):
            out[key] = "uint32"
    return out


@lru_cache(maxsize=1)
def _templates() -> tuple[dict[str, tuple[int, str]], tuple[tuple[int, str, str, str], ...],
                          dict[str, tuple[int, str]], tuple[tuple[int, str, str, str], ...]]:
    """The key templates read once, independent of any file: exact keys and patterns
    (``(place, literal prefix, regex source, type)``: ``_pattern`` compiles a source the
    first time a key starts with its prefix) for templates with other fields
    (``general.base_model.{id}.name``), each split into global templates and ``{arch}.``
    templates (held without the ``{arch}.`` prefix), each entry tagged with its place in
    ``key_types()``.  The architecture a file names is never compiled into a pattern: it
    is compared as a prefix (issue 23, item 6)."""
    g_exact: dict[str, tuple[int, str]] = {}
    a_exact: dict[str, tuple[int, str]] = {}
    g_pat: list[tuple[int, str, str, str]] = []
    a_pat: list[tuple[int, str, str, str]] = []
    for i, (tmpl, t) in enumerate(key_types().items()):
        per_arch = tmpl.startswith("{arch}.")
        if per_arch:
            tmpl = tmpl[len("{arch}."):]
        if "{" not in tmpl:
            (a_exact if per_arch else g_exact)[tmpl] = (i, t)
        else:
            rx = "".join(r"\d+" if part.startswith("{") else re.escape(part)
                         for part in re.split(r"(\{[a-z_]+\})", tmpl) if part)
            (a_pat if per_arch else g_pat).append((i, tmpl.split("{", 1)[0], rx, t))
    return g_exact, tuple(g_pat), a_exact, tuple(a_pat)


@lru_cache(maxsize=None)
def _pattern(rx: str) -> re.Pattern:
    """One template's pattern, compiled the first time a key starts with its literal
    prefix (a file of standard keys compiles none; one odd key compiles the few patterns
    it could match, not all of them: each costs a compile of its own)."""
    return re.compile(rx)


def _first_match(pats: tuple[tuple[int, str, str, str], ...], key: str) -> list[tuple[int, str]]:
    for i, prefix, rx, t in pats:
        if key.startswith(prefix) and _pattern(rx).fullmatch(key):
            return [(i, t)]
    return []


def expected_key_type(key: str, arch: str | None = None) -> str | None:
    """The type gguf-py writes ``key`` with (None: not a standard key).

    ``{arch}.`` templates apply to keys that start with ``arch`` and a dot; when a global
    and an architecture template both name the key, the later template in
    ``key_types()`` wins (as one dict of expanded templates would have it).  The work is
    one prefix comparison and dictionary lookups, whatever the length of ``arch``.
    """
    g_exact, g_pat, a_exact, a_pat = _templates()
    rest = key[len(arch) + 1:] if arch and key.startswith(arch) and key[len(arch):len(arch) + 1] == "." else None
    hits = [h for h in (g_exact.get(key), a_exact.get(rest) if rest is not None else None) if h is not None]
    if hits:
        return max(hits)[1]
    found = _first_match(g_pat, key)
    if rest is not None:
        found += _first_match(a_pat, rest)
    return min(found)[1] if found else None


@lru_cache(maxsize=None)
def arch_tensors(arch: str) -> tuple[frozenset[str], frozenset[str]] | None:
    entry = _facts()["arch_tensors"].get(arch)
    return None if entry is None else (frozenset(entry[0]), frozenset(entry[1]))


@lru_cache(maxsize=1)
def file_types() -> dict[int, str]:
    out = {int(v): str(n) for v, n in _facts()["file_types"]}
    for v, n in overlay.FILE_TYPES.items():
        out.setdefault(v, n)
    return out


@lru_cache(maxsize=1)
def ggml_type_names() -> dict[int, str]:
    out = {int(v): str(n) for v, n in _facts()["ggml_types"]}
    for v, n in overlay.GGML_TYPES.items():
        out.setdefault(v, n)
    return out
