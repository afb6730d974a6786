"""Differential parsing oracle: the official Kaitai Struct compiler parses the same bytes.

Why: ggscope interprets ``formats/*.ksy`` with its own engine.  The only independent
judge of what a ``.ksy`` *means* is the reference compiler (kaitai-struct-compiler 0.11,
the npm build, run by node).  This module compiles a spec to Python **in debug mode**,
parses a file with the generated parser and flattens the result into ``Record``s that
use ggscope's node-path convention, so a test can diff them against ggscope's tree.

Contract
--------
* ``compile_ksy(ksy_path) -> module``: the generated Python module.  Raises
  ``KaitaiUnavailable`` (a ``unittest.SkipTest``, so pytest reports a *skip*) when node
  or the npm packages are missing, and ``KaitaiCompileError`` when the compiler rejects
  the spec (that is a real failure: every spec must compile).  Generated sources are
  cached in the temp dir, keyed by the hash of the ksy text.
* ``kaitai_records(ksy_path, file_path) -> list[Record]``: every seq field, every array
  element (``id[i]``) and every instance that has a ``pos`` (accessed to trigger its
  parse), depth first in file order of the spec.  ``start``/``end`` are absolute file
  offsets: substreams (``size`` + ``type``, ``io:``) are rebased onto the file.
  Values: int, float, str, bytes; enums as their integer; structures ``None``; arrays
  of primitives the list of element values.
* ``compare(records, root, paths=None, ignore=()) -> list[str]``: human-readable mismatches
  (missing path, start/end differ, value differs) against a ggscope ``Node`` tree.

Where the npm packages live: ``<repo>/.cache/ksc/node_modules`` (``.ci/install_ksc.sh``
puts them there), else ``/tmp/ksc/node_modules``.
"""
from __future__ import annotations

import enum
import hashlib
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

__all__ = ["Record", "KaitaiUnavailable", "KaitaiCompileError", "compile_ksy",
           "kaitai_records", "compare", "node_modules_dir"]

REPO = Path(__file__).resolve().parents[1]
NODE_MODULE_DIRS = (REPO / ".cache" / "ksc" / "node_modules", Path("/tmp/ksc/node_modules"))
CACHE_DIR = Path(tempfile.gettempdir()) / "ggscope-ksc-cache"
COMPILE_TIMEOUT_S = 180

# Runs inside node: reads the .ksy, compiles it to Python with debug on, prints JSON
# {filename: source}.  Imports resolve next to the .ksy (ggscope's specs use none).
_COMPILE_JS = r"""
const [modDir, ksyPath] = process.argv.slice(1);
const path = require('path'), fs = require('fs');
const KSC = require(path.join(modDir, 'kaitai-struct-compiler'));
const yaml = require(path.join(modDir, 'js-yaml'));
const load = (p) => yaml.load(fs.readFileSync(p, 'utf8'));
const importer = { importYaml: (name, mode) =>
    Promise.resolve(load(path.resolve(path.dirname(ksyPath), name + '.ksy'))) };
const compiler = (typeof KSC === 'function') ? new KSC() : KSC;
compiler.compile('python', load(ksyPath), importer, true)
  .then((files) => process.stdout.write(JSON.stringify(files)))
  .catch((e) => { process.stderr.write(String(e && e.stack ? e + '\n' + e.stack : e)); process.exit(3); });
"""


class KaitaiUnavailable(unittest.SkipTest):
    """node or the kaitai-struct-compiler npm package is missing: tests skip."""


class KaitaiCompileError(RuntimeError):
    """The reference compiler rejected a spec (or its output did not import)."""


@dataclass(frozen=True)
class Record:
    """One field as the reference parser saw it; offsets absolute and half-open."""

    path: str
    start: int
    end: int
    value: Any = None


# ---------------------------------------------------------------------------- compile

def node_modules_dir() -> Path:
    """The node_modules folder holding kaitai-struct-compiler and js-yaml, or skip."""
    for d in NODE_MODULE_DIRS:
        if (d / "kaitai-struct-compiler").is_dir() and (d / "js-yaml").is_dir():
            return d
    raise KaitaiUnavailable(
        "kaitai-struct-compiler 0.11 + js-yaml not found in "
        + " or ".join(str(d) for d in NODE_MODULE_DIRS) + "; run .ci/install_ksc.sh")


def _node_binary() -> str:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        raise KaitaiUnavailable("node is not on PATH: cannot run the official Kaitai compiler")
    return node


_modules: dict[str, Any] = {}


def compile_ksy(ksy_path: str | os.PathLike[str]) -> Any:
    """Compile ``ksy_path`` with the reference compiler (debug mode) and import it."""
    ksy_path = Path(ksy_path)
    text = ksy_path.read_bytes()
    key = hashlib.sha256(b"ksc-0.11-python-debug\0" + text).hexdigest()[:20]
    if key in _modules:
        return _modules[key]
    out_dir = CACHE_DIR / key
    main_name = _main_filename(text)
    if not (out_dir / main_name).is_file():
        files = _run_compiler(ksy_path)
        tmp = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=_ensure_dir(CACHE_DIR)))
        for name, source in files.items():
            (tmp / name).write_text(source, encoding="utf-8")
        try:
            tmp.rename(out_dir)          # atomic; a concurrent winner is just as good
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        if not (out_dir / main_name).is_file():
            raise KaitaiCompileError(f"compiler output for {ksy_path} has no {main_name}: {sorted(files)}")
    module = _import_generated(out_dir, main_name, key)
    _modules[key] = module
    return module


def _ensure_dir(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    return d


def _main_filename(ksy_text: bytes) -> str:
    spec = yaml.safe_load(ksy_text)
    try:
        return f"{spec['meta']['id']}.py"
    except (TypeError, KeyError) as e:
        raise KaitaiCompileError(f"spec has no meta/id: {e}") from None


def _run_compiler(ksy_path: Path) -> dict[str, str]:
    mods = node_modules_dir()
    node = _node_binary()
    try:
        proc = subprocess.run([node, "-e", _COMPILE_JS, str(mods), str(ksy_path.resolve())],
                              capture_output=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise KaitaiCompileError(f"kaitai-struct-compiler timed out on {ksy_path}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        if "Cannot find module" in err:
            raise KaitaiUnavailable(f"node could not load the compiler from {mods}: {err[:300]}")
        raise KaitaiCompileError(f"kaitai-struct-compiler rejected {ksy_path}:\n{err}")
    return json.loads(proc.stdout)


def _import_generated(out_dir: Path, main_name: str, key: str) -> Any:
    try:
        import kaitaistruct  # noqa: F401  (the generated code needs the runtime)
    except ImportError:
        raise KaitaiUnavailable("the kaitaistruct Python runtime is not installed") from None
    # Imported specs compile to sibling modules imported by bare name.
    if str(out_dir) not in sys.path:
        sys.path.append(str(out_dir))
    name = f"_ksc_{key}_{main_name[:-3]}"
    spec = importlib.util.spec_from_file_location(name, out_dir / main_name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # the generated code itself failed: report, don't hide
        raise KaitaiCompileError(f"generated parser {out_dir / main_name} failed to import: {e!r}") from e
    return module


# ---------------------------------------------------------------------------- records

def _class_name(type_id: str) -> str:
    """Kaitai's upper camel case of a type id (``gguf_str`` -> ``GgufStr``)."""
    return "".join(p[:1].upper() + p[1:] for p in type_id.split("_"))


def _pos_instances(spec: dict, cls: type, table: dict[type, list[tuple[str, dict]]]) -> None:
    """Map each generated class to its positional instances (id, spec), in spec order."""
    inst = spec.get("instances") or {}
    table[cls] = [(iid, ispec) for iid, ispec in inst.items()
                  if isinstance(ispec, dict) and "pos" in ispec]
    for tid, tspec in (spec.get("types") or {}).items():
        sub = getattr(cls, _class_name(tid), None)
        if sub is not None and isinstance(tspec, dict):
            _pos_instances(tspec, sub, table)


def kaitai_records(ksy_path: str | os.PathLike[str], file_path: str | os.PathLike[str], *,
                   max_array: int | None = None) -> list[Record]:
    """Parse ``file_path`` with the compiled ``ksy_path`` and flatten it (see module doc).

    ``max_array`` caps how many element records each array emits (the array's own
    record still carries every value).
    """
    from kaitaistruct import KaitaiStream

    module = compile_ksy(ksy_path)
    spec = yaml.safe_load(Path(ksy_path).read_text(encoding="utf-8"))
    root_cls = getattr(module, _class_name(spec["meta"]["id"]))
    table: dict[type, list[tuple[str, dict]]] = {}
    _pos_instances(spec, root_cls, table)
    with open(file_path, "rb") as f:
        data = f.read()
    io = KaitaiStream(_bytes_io(data))
    root = root_cls(io)
    calculated_endian = hasattr(root_cls, "_read_le") and hasattr(root_cls, "_read_be")
    if calculated_endian:
        # ksc 0.11 quirk: an instance the root's `endian: switch-on` reads (such as a
        # version probe typed `u4le`) is generated as `if self._is_le: ... else: ...`
        # and raises AttributeError before the switch has decided.  Both branches of
        # an explicitly typed probe are identical, so a neutral None lets it run.
        root._is_le = None
    root._read()
    if calculated_endian and root._is_le is None:
        raise KaitaiCompileError(f"{ksy_path}: the root's endian switch matched no case for {file_path}")
    return _Walker(table, max_array).run(root, io)


def _bytes_io(data: bytes):
    from io import BytesIO
    return BytesIO(data)


class _Walker:
    """Depth-first flattening of a debug-mode Kaitai object tree.

    Offsets in ``_debug`` are relative to the stream an object was read from.  The
    absolute base of each stream is learnt while walking: the root stream is 0, a
    substream starts where its field's bytes start.  An instance with ``io:`` may read
    from a stream the walk has not reached yet (a tensor info pointing into the data
    section parsed later), so the walk repeats until every stream is placed.
    """

    MAX_PASSES = 4

    def __init__(self, table: dict[type, list[tuple[str, dict]]], max_array: int | None) -> None:
        self.table = table
        self.max_array = max_array
        self.bases: dict[int, int] = {}   # id(KaitaiStream) -> absolute offset of its byte 0
        self.keep: list[Any] = []         # keeps streams alive so their ids stay unique
        self.records: list[Record] = []
        self.unplaced: list[str] = []

    def run(self, root: Any, io: Any) -> list[Record]:
        self.place(io, 0)
        for _ in range(self.MAX_PASSES):
            self.records, self.unplaced = [], []
            self.visit(root, "", 0)
            if not self.unplaced:
                return self.records
        raise KaitaiCompileError("cannot place the streams of instances "
                                 + ", ".join(sorted(set(self.unplaced))))

    def place(self, io: Any, base: int) -> None:
        if id(io) not in self.bases:
            self.bases[id(io)] = base
            self.keep.append(io)

    def visit(self, obj: Any, prefix: str, base: int) -> None:
        debug = obj._debug
        for fid in getattr(type(obj), "SEQ_FIELDS", []):
            info = debug.get(fid)
            if info is None or "start" not in info:      # `if` was false
                continue
            self.field(obj._io, base, info, getattr(obj, fid, None), _join(prefix, fid))
        for iid, ispec in self.table.get(type(obj), ()):
            value = getattr(obj, iid)                      # triggers the positional parse
            info = debug.get(f"_m_{iid}")
            if info is None or "start" not in info:
                continue
            io, io_base = obj._io, base
            if "io" in ispec:
                io = _eval_io(obj, ispec["io"])
                io_base = self.bases.get(id(io))
                if io_base is None:                        # placed by a later part of the walk
                    self.unplaced.append(_join(prefix, iid))
                    continue
            self.field(io, io_base, info, value, _join(prefix, iid))

    def field(self, io: Any, base: int, info: dict, value: Any, path: str) -> None:
        if "arr" in info and isinstance(value, list):
            start = base + info["start"]
            end = base + info.get("end", info["start"])
            self.records.append(Record(path, start, end, _array_value(value)))
            for i, (elem, einfo) in enumerate(zip(value, info["arr"])):
                if self.max_array is not None and i >= self.max_array:
                    break
                self.element(io, base, einfo, elem, f"{path}[{i}]")
            return
        self.element(io, base, info, value, path)

    def element(self, io: Any, base: int, info: dict, value: Any, path: str) -> None:
        start = base + info["start"]
        end = base + info.get("end", info["start"])
        if _is_struct(value):
            self.records.append(Record(path, start, end, None))
            # A substream (size/terminator + type) starts where the field's bytes start.
            if value._io is not io:
                self.place(value._io, start)
            self.visit(value, path, self.bases.get(id(value._io), start))
        else:
            self.records.append(Record(path, start, end, _plain(value)))


def _eval_io(obj: Any, expr: str) -> Any:
    """Evaluate an instance's ``io:`` expression such as ``_root._io`` or ``hdr._io``."""
    cur = obj
    for part in str(expr).split("."):
        cur = getattr(cur, part)
    return cur


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _is_struct(value: Any) -> bool:
    return hasattr(value, "_debug") and hasattr(value, "_io")


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return int(value.value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _array_value(values: list) -> list | None:
    if any(_is_struct(v) for v in values):
        return None
    return [_plain(v) for v in values]


# ---------------------------------------------------------------------------- compare

def compare(records: Sequence[Record], root: Any, *, paths: Collection[str] | None = None,
            ignore: Collection[str] = ()) -> list[str]:
    """Mismatches between reference ``records`` and a ggscope node tree, as sentences.

    ``paths`` limits the check to those paths and everything under them; ``ignore``
    leaves out paths (and everything under them), e.g. helper instances ggscope hides.
    """
    from ggscope.ksy.node import find

    problems: list[str] = []
    for rec in records:
        if paths is not None and not _selected(rec.path, paths):
            continue
        if ignore and _selected(rec.path, ignore):
            continue
        node = find(root, rec.path)
        if node is None:
            problems.append(f"{rec.path}: missing in ggscope (kaitai has [{rec.start:#x}, {rec.end:#x}))")
            continue
        if node.error is not None:
            problems.append(f"{rec.path}: ggscope reports an error node ({node.error}); "
                            f"kaitai parsed [{rec.start:#x}, {rec.end:#x})")
            continue
        if node.start != rec.start or node.end != rec.end:
            problems.append(f"{rec.path}: range differs: kaitai [{rec.start:#x}, {rec.end:#x}), "
                            f"ggscope [{node.start:#x}, {_hex(node.end)})")
        why = _value_mismatch(rec.value, node.value)
        if why:
            problems.append(f"{rec.path}: value differs: {why}")
    return problems


def _selected(path: str, paths: Collection[str]) -> bool:
    for p in paths:
        if path == p or path.startswith(p + "/") or path.startswith(p + "["):
            return True
    return False


def _hex(v: int | None) -> str:
    return "None" if v is None else f"{v:#x}"


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _value_mismatch(expected: Any, got: Any) -> str | None:
    """None when ``got`` (ggscope) equals ``expected`` (kaitai), else the reason."""
    if expected is None:                      # a structure: its children carry the values
        return None
    if isinstance(expected, list):
        if got is None:                       # arrays of structs or element-only nodes
            return None
        try:
            n = len(got)
        except TypeError:
            return f"kaitai has an array of {len(expected)}, ggscope {_short(got)}"
        if n != len(expected):
            return f"length {len(expected)} (kaitai) vs {n} (ggscope)"
        if isinstance(got, np.ndarray) and expected and not isinstance(expected[0], (bytes, str)):
            want = np.asarray(expected, dtype=got.dtype if got.dtype.kind in "iuf" else None)
            same = (want == got) | (_isnan(want) & _isnan(got))
            if not bool(np.all(same)):
                i = int(np.argmin(same))
                return f"element {i}: kaitai {expected[i]!r}, ggscope {got[i]!r}"
            return None
        for i, e in enumerate(expected):
            why = _value_mismatch(e, got[i])
            if why:
                return f"element {i}: {why}"
        return None
    if isinstance(expected, bytes):
        if isinstance(got, (bytes, bytearray, memoryview)):
            got_b = bytes(got)
        elif isinstance(got, np.ndarray) and got.dtype == np.uint8:
            got_b = got.tobytes()
        else:
            return f"kaitai has {len(expected)} bytes {_short(expected)}, ggscope {_short(got)}"
        return None if got_b == expected else f"kaitai {_short(expected)}, ggscope {_short(got_b)}"
    if isinstance(expected, str):
        return None if got == expected else f"kaitai {expected!r}, ggscope {_short(got)}"
    if isinstance(expected, float):
        try:
            g = float(got)
        except (TypeError, ValueError):
            return f"kaitai {expected!r}, ggscope {_short(got)}"
        if g == expected or (math.isnan(g) and math.isnan(expected)):
            return None
        return f"kaitai {expected!r}, ggscope {g!r}"
    if isinstance(expected, (bool, int)):
        if isinstance(got, enum.Enum):
            got = got.value
        if isinstance(got, (int, np.integer)) and not isinstance(got, bool) and int(got) == expected:
            return None
        return f"kaitai {expected!r}, ggscope {_short(got)}"
    return None if got == expected else f"kaitai {_short(expected)}, ggscope {_short(got)}"


def _isnan(a: np.ndarray) -> np.ndarray:
    return np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)
