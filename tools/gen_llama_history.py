"""Record which llama.cpp release first knows each architecture, ggml type and file type.

Why: a file converted with a new llama.cpp names an architecture, a tensor type or a file
type that older builds refuse ("unknown model architecture", "invalid ggml type"); the
pinned tree ggscope's loader rules come from says nothing about which release a user needs.
llama.cpp's git history is the source of that fact, but its repository cannot be had here
whole.  What can be had, from the npm registry by its ordinary client, is node-llama-cpp:
every version carries ``llama/llama.cpp.info.json`` (the llama.cpp release tag it is built
from, ``bNNNN`` - the build number - or, since llama.cpp took semantic versions, ``vX.Y.Z``)
and ``llama/gitRelease.bundle``, a one-commit git bundle of that tag's full source.  So each
served node-llama-cpp version is one dated, tagged llama.cpp source tree.

Two steps, so CI needs no network:

* ``record`` (network): ``npm pack node-llama-cpp@V`` for every version the registry serves
  (or those named), unbundle the source, and extract per release tag the three lists -
  ``LLM_ARCH_NAMES`` (src/llama-arch.cpp, earlier src/llama.cpp or llama.cpp), ``enum
  ggml_type`` (ggml/include/ggml.h, earlier ggml.h) and ``enum llama_ftype``
  (include/llama.h, earlier llama.h) - into ``fixtures/llama_history/releases.json``.
* ``generate`` (default): derive ``ggscope/facts/llama_history.py`` from that record,
  deterministically; ``--check`` exits 1 when the checked-in module differs.

What the table's fields mean (a release sample is not every release): ``since`` is the
earliest *recorded* release tag whose source has the item and ``before`` the latest
recorded tag before it that lacks it (``None`` when the earliest recorded release already
has it, i.e. the item is at least that old).  The true first release lies in
``(before, since]``: ``since`` or later is certain to know it.  ``removed`` is the first
recorded tag after ``since`` that lacks it again (a type id llama.cpp retired), if any.

A third input, ``fixtures/llama_history/forks.json``, lists the ggml type ids forks give
another meaning (``record-forks``, from the forks' git directories: ``tools.fork_types``).

Usage: ``python -m tools.gen_llama_history [--check]``;
``python -m tools.gen_llama_history record [--work DIR] [--versions 3.5.0 3.6.0 ...]``;
``python -m tools.gen_llama_history record --tree LLAMA_CPP_DIR --label SHORTCOMMIT --package TEXT``
(a source tree newer than the newest recorded tag, appended after it - ggscope records the
pinned llama.cpp 0c1e570 of llama-cpp-python 0.3.36 this way);
``python -m tools.gen_llama_history record-forks OWNER/NAME=GIT_DIR@REF ...``.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
from pathlib import Path

from tools.fork_types import fork_archs, fork_history

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "fixtures" / "llama_history" / "releases.json"
FORKS = ROOT / "fixtures" / "llama_history" / "forks.json"
OUT = ROOT / "ggscope" / "facts" / "llama_history.py"
PACKAGE = "node-llama-cpp"

_ARCH_FILES = ("src/llama-arch.cpp", "src/llama.cpp", "llama.cpp")
_GGML_FILES = ("ggml/include/ggml.h", "ggml.h")
_FTYPE_FILES = ("include/llama.h", "llama.h")
_PROJ_FILES = ("tools/mtmd/clip-impl.h", "examples/llava/clip-impl.h", "examples/llava/clip.cpp")


# --- reading one source tree ----------------------------------------------------------
def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _enum_body(text: str, name: str) -> str:
    m = re.search(r"enum\s+" + name + r"\s*(?::\s*\w+\s*)?\{", text)
    if not m:
        raise ValueError(f"enum {name} not found")
    end = text.index("}", m.end())
    return text[m.end():end]


def arch_names(text: str) -> list[str]:
    """The architecture names of ``LLM_ARCH_NAMES`` (the strings ``general.architecture`` takes)."""
    m = re.search(r"LLM_ARCH_NAMES\s*=\s*\{", text)
    if not m:
        raise ValueError("LLM_ARCH_NAMES not found")
    body = _strip_comments(text[m.end():text.index("};", m.end())])
    return [name for enum, name in re.findall(r"\{\s*LLM_ARCH_(\w+)\s*,\s*\"([^\"]*)\"\s*\}", body)
            if enum != "UNKNOWN"]


def enum_values(text: str, name: str, prefix: str) -> dict[int, str]:
    """``{value: NAME}`` of a C enum whose members carry explicit values (prefix stripped)."""
    body = _strip_comments(_enum_body(text, name))
    out: dict[int, str] = {}
    for member, value in re.findall(r"\b" + prefix + r"(\w+)\s*=\s*(\d+)", body):
        out.setdefault(int(value), member)
    return out


def projector_names(text: str) -> list[str]:
    """The ``clip.projector_type`` values of ``PROJECTOR_TYPE_NAMES`` (clip.cpp's projector types)."""
    m = re.search(r"PROJECTOR_TYPE_NAMES\s*=\s*\{", text)
    if not m:
        raise ValueError("PROJECTOR_TYPE_NAMES not found")
    body = _strip_comments(text[m.end():text.index("};", m.end())])
    return [name for _enum, name in re.findall(r"\{\s*PROJECTOR_TYPE_(\w+)\s*,\s*\"([^\"]*)\"\s*\}", body)]


def read_tree(show) -> dict:
    """The three lists from a source tree; ``show(path)`` returns a file's text or None."""
    def first(paths, parse):
        for p in paths:
            text = show(p)
            if text is not None:
                try:
                    return parse(text)
                except ValueError:
                    continue
        raise ValueError(f"none of {paths} parses")
    ggml = first(_GGML_FILES, lambda t: enum_values(t, "ggml_type", "GGML_TYPE_"))
    ftype = first(_FTYPE_FILES, lambda t: enum_values(t, "llama_ftype", "LLAMA_FTYPE_"))
    try:                                    # projectors came to llama.cpp with examples/llava
        proj = sorted(set(first(_PROJ_FILES, projector_names)))
    except ValueError:
        proj = []
    return {"arch": sorted(set(first(_ARCH_FILES, arch_names))), "projector": proj,
            "ggml_type": {str(k): v for k, v in sorted(ggml.items()) if v != "COUNT"},
            "file_type": {str(k): v for k, v in sorted(ftype.items()) if v != "GUESSED"}}


# --- recording (network) --------------------------------------------------------------
def _served_versions() -> list[str]:
    out = subprocess.run(["npm", "view", PACKAGE, "versions", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return [v for v in json.loads(out) if "-" not in v]        # releases only, no betas


def record_version(version: str, work: Path) -> dict | None:
    subprocess.run(["npm", "pack", "-q", f"{PACKAGE}@{version}"], cwd=work, check=True,
                   capture_output=True)
    tgz = work / f"{PACKAGE}-{version}.tgz"
    try:
        with tarfile.open(tgz) as tf:
            names = set(tf.getnames())
            info = next((n for n in ("package/llama/llama.cpp.info.json", "package/llama/binariesGithubRelease.json")
                         if n in names), None)
            if info is None or "package/llama/gitRelease.bundle" not in names:
                return None
            meta = json.load(tf.extractfile(info))
            tag = meta.get("tag") or meta.get("release")
            bundle = work / "bundle"
            bundle.write_bytes(tf.extractfile("package/llama/gitRelease.bundle").read())
    finally:
        tgz.unlink()
    repo = work / "repo.git"
    subprocess.run(["rm", "-rf", str(repo)], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(bundle), str(repo)], check=True, capture_output=True)

    def show(path: str) -> str | None:
        r = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], capture_output=True)
        return r.stdout.decode("utf-8", "replace") if r.returncode == 0 else None
    lists = read_tree(show)
    return {"tag": tag, "package": f"{PACKAGE} {version}", **lists}


def tag_key(tag: str) -> tuple:
    """Release order: build tags ``bNNNN`` by number, then semantic ``vX.Y.Z`` tags."""
    if re.fullmatch(r"b\d+", tag):
        return (0, int(tag[1:]))
    m = re.fullmatch(r"v(\d+)\.(\d+)\.(\d+)", tag)
    if m:
        return (1, *map(int, m.groups()))
    raise ValueError(f"unrecognised llama.cpp release tag {tag!r}")


def record(versions: list[str], work: Path) -> dict:
    releases: dict[str, dict] = {}
    for v in versions:
        r = record_version(v, work)
        if r is None:
            print(f"{PACKAGE} {v}: no bundled llama.cpp source", file=sys.stderr)
            continue
        print(f"{PACKAGE} {v}: llama.cpp {r['tag']}: {len(r['arch'])} architectures, "
              f"{len(r['ggml_type'])} ggml types, {len(r['file_type'])} file types", file=sys.stderr)
        releases.setdefault(r["tag"], r)        # several package versions may share one tag
    ordered = [releases[t] for t in sorted(releases, key=tag_key)]
    return {"source": f"the llama.cpp source bundled in each served {PACKAGE} version "
                      "(llama/gitRelease.bundle, tag in llama/llama.cpp.info.json)",
            "releases": ordered}


def record_forks(specs: list[str], rec: dict) -> dict:
    """Fork type ids named as no recorded mainline release names any type: the ids a fork means otherwise."""
    mainline = {(int(k), v) for r in rec["releases"] for k, v in r["ggml_type"].items()}
    # a mainline type name at another id is mainline's own pre-GGUF numbering the fork inherited
    # (ggml.h of April 2023), not the fork's: only names mainline never had are the fork's own
    names = {v for _, v in mainline}
    rows: list[dict] = []
    archs: list[dict] = []
    known_archs = {a for r in rec["releases"] for a in r["arch"]}
    for spec in specs:                      # OWNER/NAME=GIT_DIR@REF
        repo, _, rest = spec.partition("=")
        git_dir, _, ref = rest.partition("@")
        archs += fork_archs(git_dir, ref or "HEAD", repo, known_archs)
        for row in fork_history(git_dir, ref or "HEAD", repo):
            if (row["id"], row["name"]) not in mainline and row["name"] not in names:
                row["ref"] = ref or "HEAD"
                rows.append(row)
                print(f"{repo}: {row['id']} = {row['name']} ({row['first_date']})", file=sys.stderr)
    return {"source": "each fork's git history of enum ggml_type (ggml/include/ggml.h, earlier ggml.h); "
                      "sizes from type_traits and ggml_nbytes at the last commit that has the id; "
                      "architectures: the fork's newest LLM_ARCH_NAMES",
            "types": rows, "archs": archs}


# --- generating -----------------------------------------------------------------------
def history(rec: dict) -> dict[str, dict]:
    """Per kind, per item: (since, before, removed) over the recorded releases in order."""
    releases = rec["releases"]                  # recorded in release order
    kinds = {"arch": lambda r: set(r["arch"]), "projector": lambda r: set(r.get("projector", ())),
             "ggml_type": lambda r: {(int(k), v) for k, v in r["ggml_type"].items()},
             "file_type": lambda r: {(int(k), v) for k, v in r["file_type"].items()}}
    out: dict[str, dict] = {}
    for kind, items_of in kinds.items():
        table: dict = {}
        prev: set = set()
        for i, r in enumerate(releases):
            cur = items_of(r)
            for item in sorted(cur - prev, key=str):
                key = item if isinstance(item, str) else item[0]
                if key in table and table[key][2] is None:
                    continue                    # renamed in place: keep the first name's dates
                name = item if isinstance(item, str) else item[1]
                table[key] = [name, r["tag"], releases[i - 1]["tag"] if i else None, None]
            for item in prev - cur:
                key = item if isinstance(item, str) else item[0]
                still = key in {(x if isinstance(x, str) else x[0]) for x in cur}
                if not still and table[key][3] is None:
                    table[key][3] = r["tag"]
            prev = cur
        out[kind] = table
    return out


def render(rec: dict, forks: dict) -> str:
    h = history(rec)
    tags = [r["tag"] for r in rec["releases"]]
    lines = ['"""Which llama.cpp release first knows each architecture, projector type, ggml type id and file type id.',
             "",
             "Generated by tools/gen_llama_history.py from fixtures/llama_history/releases.json - do not edit.",
             *textwrap.wrap(f"Source: {rec['source']}.", 100),
             "",
             "``ARCH``: ``general.architecture`` names (src/llama-arch.cpp LLM_ARCH_NAMES); ``PROJECTOR``:",
             "``clip.projector_type`` names (PROJECTOR_TYPE_NAMES of tools/mtmd/clip-impl.h, earlier",
             "examples/llava); ``GGML_TYPE``: ``enum ggml_type`` ids; ``FILE_TYPE``: ``enum llama_ftype`` ids.",
             "Each entry is ``Since(name, since, before, removed)``: ``since`` is the earliest recorded llama.cpp",
             "release tag whose source has the item, ``before`` the latest recorded tag before it that lacks it",
             "(None: the earliest recorded release already has it), so the first release that knows it lies in",
             "(before, since] and ``since`` or later certainly does; ``removed`` is the first recorded tag after",
             "``since`` that lacks it again (None: still there in the newest recorded release).  ``ORDER`` lists the",
             "recorded releases oldest first (a tag, or the short commit of a source tree recorded after the",
             "newest tag, e.g. the pinned llama.cpp of llama-cpp-python); ``tag_key`` orders them.",
             "",
             "``FORK_TYPES``: ggml type ids forks define with a meaning no recorded mainline release gives the id",
             *textwrap.wrap(f"(source: {forks['source']}):", 100),
             "``ForkType(id, name, fork, first_date, commit, path, line, current, blck, bytes, nbytes)`` -",
             "``commit``/``path``/``line`` where the fork first defines it, ``current``",
             "whether the fork's newest commit still has it, ``blck`` elements per block and ``bytes`` per block",
             "(None: the source does not state it), ``nbytes`` the name of a special size rule of the fork's",
             "ggml_nbytes (\"n/4+32\": a quarter byte per element plus 32; \"tl2\") or None for whole blocks.",
             '"""',
             "from __future__ import annotations",
             "",
             "from typing import NamedTuple",
             "",
             '__all__ = ["Since", "ForkType", "ORDER", "COMMITS", "ARCH", "PROJECTOR", "GGML_TYPE", "FILE_TYPE",',
             '           "FORK_TYPES", "FORK_ARCHS", "tag_key"]',
             "",
             "",
             "class Since(NamedTuple):",
             "    name: str",
             "    since: str",
             "    before: str | None",
             "    removed: str | None",
             "",
             "",
             "class ForkType(NamedTuple):",
             "    id: int",
             "    name: str",
             "    fork: str",
             "    first_date: str",
             "    commit: str",
             "    path: str",
             "    line: int",
             "    current: bool",
             "    blck: int | None",
             "    bytes: int | None",
             "    nbytes: str | None",
             "",
             "",
             "def tag_key(tag: str) -> int:",
             '    """The position of a recorded release, oldest first (``ValueError`` for a tag not recorded)."""',
             "    return ORDER.index(tag)",
             "",
             "",
             "ORDER: tuple[str, ...] = ("]
    lines += [f"    {t!r}," for t in tags]
    lines.append(")")
    lines += ["", "# recorded source trees that are not release tags: what carries each", "COMMITS: dict[str, str] = {"]
    lines += [f"    {r['tag']!r}: {r['package']!r}," for r in rec["releases"] if "after" in r]
    lines.append("}")
    for var, kind, keyfmt in (("ARCH", "arch", repr), ("PROJECTOR", "projector", repr),
                              ("GGML_TYPE", "ggml_type", str), ("FILE_TYPE", "file_type", str)):
        ktype = "str" if kind in ("arch", "projector") else "int"
        lines += ["", f"{var}: dict[{ktype}, Since] = {{"]
        for key in sorted(h[kind]):
            name, since, before, removed = h[kind][key]
            lines.append(f"    {keyfmt(key)}: Since({name!r}, {since!r}, {before!r}, {removed!r}),")
        lines.append("}")
    lines += ["", "# architecture names a fork knows and no recorded mainline release does: (name, fork, first date,",
              "# first commit, path and line in the fork's newest source)",
              "FORK_ARCHS: tuple[tuple[str, str, str | None, str | None, str, int], ...] = ("]
    for a in forks.get("archs", []):
        lines.append(f"    ({a['name']!r}, {a['fork']!r}, {a['first_date']!r}, {a['first_commit']!r},")
        lines.append(f"     {a['path']!r}, {a['line']}),")
    lines.append(")")
    lines += ["", "FORK_TYPES: tuple[ForkType, ...] = ("]
    for r in sorted(forks["types"], key=lambda r: (r["id"], r["first_date"], r["fork"], r["name"])):
        lines.append(f"    ForkType({r['id']}, {r['name']!r}, {r['fork']!r}, {r['first_date']!r},")
        lines.append(f"             {r['first_commit']!r}, {r['path']!r}, {r['line']}, {r['current']},")
        lines.append(f"             {r['blck']}, {r['bytes']}, {r['nbytes']!r}),")
    lines.append(")")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.gen_llama_history", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    rp = sub.add_parser("record", help="download node-llama-cpp versions and record the lists (network)")
    rp.add_argument("--work", type=Path, help="scratch directory (default: a temporary one)")
    rp.add_argument("--versions", nargs="*", help="node-llama-cpp versions (default: every served release)")
    rp.add_argument("--out", type=Path, default=RECORD)
    rp.add_argument("--tree", type=Path, help="instead: append one llama.cpp source tree to the record")
    rp.add_argument("--label", help="with --tree: its short commit, e.g. 0c1e570")
    rp.add_argument("--package", help="with --tree: what carries it, e.g. 'llama-cpp-python 0.3.36'")
    fp = sub.add_parser("record-forks", help="record fork type ids from the forks' git directories")
    fp.add_argument("forks", nargs="+", metavar="OWNER/NAME=GIT_DIR@REF",
                    help="e.g. ikawrakow/ik_llama.cpp=/path/to/ik_llama.cpp/.git@main")
    fp.add_argument("--out", type=Path, default=FORKS)
    ap.add_argument("--check", action="store_true", help="exit 1 when the checked-in module differs")
    args = ap.parse_args(argv)
    if args.cmd == "record" and args.tree:
        rec = json.loads(args.out.read_text())

        def show(path: str) -> str | None:
            f = args.tree / path
            return f.read_text(errors="replace") if f.is_file() else None
        rec["releases"] = [r for r in rec["releases"] if r["tag"] != args.label]
        rec["releases"].append({"tag": args.label, "package": args.package, "after": rec["releases"][-1]["tag"],
                                **read_tree(show)})
        args.out.write_text(json.dumps(rec, indent=1) + "\n")
        return 0
    if args.cmd == "record":
        with tempfile.TemporaryDirectory() as tmp:
            work = args.work or Path(tmp)
            work.mkdir(parents=True, exist_ok=True)
            rec = record(args.versions or _served_versions(), work)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(rec, indent=1, sort_keys=False) + "\n")
        return 0
    if args.cmd == "record-forks":
        forks = record_forks(args.forks, json.loads(RECORD.read_text()))
        args.out.write_text(json.dumps(forks, indent=1) + "\n")
        return 0
    text = render(json.loads(RECORD.read_text()), json.loads(FORKS.read_text()))
    if args.check:
        return 0 if OUT.exists() and OUT.read_text() == text else 1
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
