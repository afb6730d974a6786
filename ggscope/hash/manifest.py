"""Manifests: the lines ``llama-gguf-hash`` prints, and its ``--check`` verdict.

Source: llama.cpp as vendored in llama-cpp-python 0.3.36, examples/gguf-hash/gguf-hash.cpp.
A line is ``printf("%-8s  %-s  %s\\n", type, hex, name)``: the algorithm, the digest, and
``FILE:TENSOR`` for a tensor or ``FILE`` for the whole data, FILE exactly as given on
the command line.  ``--check MANIFEST`` reads the manifest with ``getline`` and ``>>``:
a line counts when it has three whitespace-separated words, and the *first* line with
the same type and name decides Ok or Mismatch (none: Not Found).  Without a hash option
the check picks the strongest type the manifest holds (sha256, sha1, xxh64, uuid); the
exit status is 0 success, 1 a mismatch, 3 no entry for the file at all, 4 a manifest of
no known type, 5 a manifest that cannot be opened.  One quirk is kept on purpose, for
identical results: the tool looks the uuid up under the type ``sha256``.

ggscope adds, for split sets only (the tool knows none): one ``shard`` line per shard,
``Ok``, ``Changed`` (a digest of it mismatched), ``Missing`` (the shard cannot be read,
or the manifest names a shard of the set's prefix that the set does not have) or
``Extra`` (the manifest has nothing for it), after the shards' own lines.

Contract: text is bytes (names are compared byte for byte, as the tool does); ``line``
formats one line; ``Manifest.read(path)`` raises ``ManifestError`` (``code`` 4 or 5, and
the tool's message); ``check_set(set_hash, manifest)`` returns a ``Verdict`` with the
lines to print, the exit status and the facts (per tensor, per file, per shard) that
``--json`` and the validate rules report.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ggscope.core.errors import GGScopeError
from ggscope.core.escape import raw_bytes
from ggscope.hash.digests import ALGOS, TOOL_NAMES
from ggscope.hash.engine import FileHash, SetHash

__all__ = ["ManifestError", "Manifest", "Verdict", "line", "check_set", "plain_lines", "EXIT_TEXT",
           "STRENGTH"]

OK, MISMATCH, NOT_FOUND = "Ok", "Mismatch", "Not Found"
EXIT_TEXT = {0: "Success", 1: "Failure", 2: "Mismatch", 3: "Manifest Missing Entry",
             4: "Manifest Unknown Hash", 5: "Manifest File Error"}
HEADER_ORDER = ("sha256", "sha1", "xxh64", "xxh3", "uuid")      # the tool's "manifest  M  ..." order
STRENGTH = ("sha256", "sha1", "xxh64", "xxh3", "uuid")          # its pick when no hash option is given
LOOKUP_TYPE = {"uuid": "sha256"}                                # the tool's quirk, kept (module docstring)
_KNOWN = {a.name.encode() for a in ALGOS}


class ManifestError(GGScopeError):
    def __init__(self, code: int, message: bytes) -> None:
        self.code = code
        self.message = message                 # exactly what the tool prints (no newline)
        super().__init__(message.decode("utf-8", "surrogateescape"))


def line(algo: str, hexdigest: str, name: bytes, result: str | None = None) -> bytes:
    head = f"{algo:<8}  {hexdigest}  ".encode() + name
    return head + (f"  -  {result}\n".encode() if result is not None else b"\n")


def _b(path: str) -> bytes:
    return os.fsencode(path)


@dataclass(frozen=True)
class Manifest:
    path: str
    entries: dict                         # (type, name) -> digest of the first such line (bytes)
    types: tuple[str, ...]                # known first words, in the tool's header order

    @classmethod
    def read(cls, path: str) -> "Manifest":
        entries: dict = {}
        firsts: set[bytes] = set()
        # the tool's ifstream opens a directory (and reads no line from it); a FIFO or
        # device would block or never end: refused as "cannot open", not a hang
        if not os.path.isdir(path):
            try:
                if not stat.S_ISREG(os.stat(path).st_mode):
                    raise OSError(path)
                fh = open(path, "rb")     # noqa: SIM115 - closed by the with below
            except OSError:
                raise ManifestError(5, b"ERROR cannot open manifest " + _b(path)) from None
            with fh:
                for raw in fh:
                    words = raw.rstrip(b"\n").split()
                    if words:
                        firsts.add(words[0])
                    if len(words) >= 3:
                        entries.setdefault((words[0], words[2]), words[1])
        types = tuple(t for t in HEADER_ORDER if t.encode() in firsts)
        if not types:
            raise ManifestError(4, b"ERROR manifest does not have any known hash format in " + _b(path))
        return cls(path, entries, types)

    def lookup(self, algo: str, hexdigest: str, name: bytes, *, quirk: bool = True) -> str:
        """Ok, Mismatch or Not Found; ``quirk=False`` looks a uuid up as a uuid."""
        want = self.entries.get(((LOOKUP_TYPE.get(algo, algo) if quirk else algo).encode(), name))
        if want is None:
            return NOT_FOUND
        return OK if want == hexdigest.encode() else MISMATCH

    def header(self) -> bytes:
        return b"manifest  " + _b(self.path) + b"".join(b"  " + t.encode() for t in self.types) + b"\n"

    def pick(self) -> tuple[str, ...]:
        """The algorithm the tool checks when no hash option is given."""
        return next(((t,) for t in STRENGTH if t in self.types))

    def name_for(self, path: str) -> bytes | None:
        """The name this manifest gives the file at ``path``: ``path`` itself, else the one
        file name it holds with the same final component, else None."""
        files = self.files()
        exact = _b(path)
        if exact in files:
            return exact
        base = exact.rsplit(b"/", 1)[-1]
        same = [f for f in files if f.rsplit(b"/", 1)[-1] == base]
        return same[0] if len(same) == 1 else None

    def files(self) -> set[bytes]:
        """Names of whole-data entries (the files the manifest describes)."""
        return {name for (_, name) in self.entries if b":" not in name} | \
            {name.split(b":", 1)[0] for (_, name) in self.entries if b":" in name}


@dataclass(frozen=True)
class TensorCheck:
    file: str
    tensor: str
    algo: str
    result: str                            # Ok, Mismatch, Not Found


@dataclass(frozen=True)
class Verdict:
    lines: tuple[bytes, ...]
    code: int
    tensors: tuple[TensorCheck, ...]                 # per tensor and algorithm
    whole: tuple[tuple[str, str, str], ...]          # (file, algo, result)
    shards: tuple[tuple[str, str], ...]              # (path, Ok|Changed|Missing|Extra); split sets only
    absent: tuple[tuple[str, str], ...]              # (file, tensor name) the manifest names, the file lacks


def plain_lines(fh: FileHash) -> list[bytes]:
    """What the tool prints for ``fh`` without a manifest."""
    name = _b(fh.path)
    out = [line(a, h, name + b":" + raw_bytes(t.name)) for t in fh.tensors for a, h in t.digests]
    return out + [line(a, h, name) for a, h in fh.whole]


def _check_file(fh: FileHash, m: Manifest) -> tuple[list[bytes], int, list[TensorCheck], list]:
    """The tool's ``gguf_hash`` in manifest mode, for one file: lines and exit status."""
    name = _b(fh.path)
    out: list[bytes] = []
    checks: list[TensorCheck] = []
    whole: list[tuple[str, str, str]] = []
    layer_in = layer_bad = model_in = model_bad = False
    for t in fh.tensors:
        tname = name + b":" + raw_bytes(t.name)
        for a, h in t.digests:
            r = m.lookup(a, h, tname)
            layer_in |= r != NOT_FOUND
            layer_bad |= r == MISMATCH
            out.append(line(a, h, tname, r))
            checks.append(TensorCheck(fh.path, t.name, a, r))
    for a, h in fh.whole:
        r = m.lookup(a, h, name)
        model_in |= r != NOT_FOUND
        model_bad |= r == MISMATCH
        out.append(line(a, h, name, r))
        whole.append((fh.path, a, r))
    if not model_in:
        code = 3 if not layer_in else 1 if layer_bad else 0
    else:
        code = 1 if (layer_in and layer_bad) or model_bad else 0
    return out, code, checks, whole


def _absent(fh: FileHash, m: Manifest, algos: tuple[str, ...]) -> list[tuple[str, str]]:
    """Tensors the manifest lists for this file under a checked algorithm that it does not hold."""
    prefix = _b(fh.path) + b":"
    have = {raw_bytes(t.name) for t in fh.tensors}
    want = {n[len(prefix):] for (ty, n) in m.entries if n.startswith(prefix) and ty.decode("latin-1") in algos}
    return [(fh.path, n.decode("utf-8", "surrogateescape")) for n in sorted(want - have)]


def check_set(sh: SetHash, m: Manifest, algos: tuple[str, ...]) -> Verdict:
    """The tool's verdict for each file of ``sh`` and ggscope's for the set (module docstring)."""
    lines: list[bytes] = [m.header()]
    codes: list[int] = []
    checks: list[TensorCheck] = []
    whole: list = []
    absent: list = []
    status: dict[str, str] = {}
    for fh in sh.files:
        out, code, c, w = _check_file(fh, m)
        lines += out
        codes.append(code)
        checks += c
        whole += w
        absent += _absent(fh, m, algos)
        status[fh.path] = {0: "Ok", 1: "Changed", 3: "Extra"}[code]
    shards: list[tuple[str, str]] = []
    if sh.is_split:
        from ggscope.model.split import SHARD_RE  # start-up: numpy only when used
        for p, _reason in sh.missing:
            status[p] = "Missing"
        prefix = SHARD_RE.match(sh.paths[0])
        named = sorted(n.decode("utf-8", "surrogateescape") for n in m.files())
        for n in named:
            mm = SHARD_RE.match(n)
            if prefix and mm and mm.group("prefix") == prefix.group("prefix") and n not in status:
                status[n] = "Missing"           # a shard of another count: the set lost or gained shards
        shards = [(p, status[p]) for p in [*sh.paths, *sorted(set(status) - set(sh.paths))]]
        lines += [f"{'shard':<8}  ".encode() + _b(p) + f"  -  {s}\n".encode() for p, s in shards]
        if any(s in ("Missing", "Changed", "Extra") for _, s in shards):
            code = 1 if any(s != "Extra" for _, s in shards if s != "Ok") or 0 in codes else 3
        else:
            code = 0
    else:
        code = codes[0] if codes else 1
    lines.append(b"\nVerification results for " + _b(m.path) + f" - {EXIT_TEXT[code]}\n".encode())
    return Verdict(tuple(lines), code, tuple(checks), tuple(whole), tuple(shards), tuple(absent))
