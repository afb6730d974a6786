"""A model file judged against a manifest, fact by fact, for the validate rules.

Why: ``validate --manifest`` reports the manifest's verdict as findings (changed
tensor, missing tensor, extra tensor, whole-data mismatch) beside the other rules.
The tool's ``--check`` answers one exit status; the rules need each fact, and none of
the tool's quirks (its uuid lookup under ``sha256``).  The file is hashed once with
every algorithm the manifest holds (uuid only when it holds nothing else) and the
four rules share the result.

Contract: ``judge(mf, manifest)`` -> ``FileVerdict``: the name the manifest gives the
file (its path, else the one entry with the same file name; None when it has none),
per tensor the algorithms that mismatched, the tensors the manifest lists that the
file lacks, the file's tensors the manifest does not list, and the whole-data
algorithms that mismatched.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ggscope.core.escape import raw_bytes
from ggscope.hash.engine import hash_file
from ggscope.hash.manifest import MISMATCH, NOT_FOUND, Manifest

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["FileVerdict", "judge"]


@dataclass(frozen=True)
class FileVerdict:
    name: str | None                                      # the file's name in the manifest
    algos: tuple[str, ...]
    changed: tuple[tuple[str, tuple[str, ...]], ...]      # (tensor, algorithms that mismatched)
    missing: tuple[str, ...]                              # listed in the manifest, not in the file
    extra: tuple[str, ...]                                # in the file, not in the manifest
    whole_changed: tuple[str, ...]                        # algorithms whose whole-data digest mismatched
    whole_checked: tuple[str, ...]                        # algorithms with a whole-data entry


def judge(mf: "ModelFile", manifest: Manifest) -> FileVerdict:
    name = manifest.name_for(mf.path)
    algos = tuple(t for t in manifest.types if t != "uuid") or ("uuid",)
    if name is None:
        return FileVerdict(None, algos, (), (), (), (), ())
    fh = dataclasses.replace(hash_file(mf, algos), path=name.decode("utf-8", "surrogateescape"))
    prefix = name + b":"
    changed, extra = [], []
    for t in fh.tensors:
        tname = prefix + raw_bytes(t.name)
        results = {a: manifest.lookup(a, h, tname, quirk=False) for a, h in t.digests}
        bad = tuple(a for a, r in results.items() if r == MISMATCH)
        if bad:
            changed.append((t.name, bad))
        elif all(r == NOT_FOUND for r in results.values()):
            extra.append(t.name)
    have = {raw_bytes(t.name) for t in fh.tensors}
    listed = {n[len(prefix):] for (ty, n) in manifest.entries
              if n.startswith(prefix) and ty.decode("latin-1") in algos}
    missing = tuple(n.decode("utf-8", "surrogateescape") for n in sorted(listed - have))
    whole = {a: manifest.lookup(a, h, name, quirk=False) for a, h in fh.whole}
    return FileVerdict(fh.path, algos, tuple(changed), missing,
                       tuple(extra) if listed else (),
                       tuple(a for a, r in whole.items() if r == MISMATCH),
                       tuple(a for a, r in whole.items() if r != NOT_FOUND))
