"""Project defaults for ``ggscope validate`` from ``[tool.ggscope]`` in pyproject.toml.

Why: a repository that gates its model files in CI states its choices once (which
rules, ``--deep``, output format, jobs) instead of repeating flags in every workflow
and pre-commit hook.  Flags given on the command line override these defaults.

Contract: ``find_pyproject(start)`` walks from ``start`` (default: the current
directory) upward and returns the nearest ``pyproject.toml`` that has a
``[tool.ggscope]`` table, as ruff does (a file without the word "ggscope" is not parsed:
validate's start-up pays for TOML only where the table can be); ``load(start)`` returns its ``Config`` (all
defaults when there is none).  A file that is not valid TOML, an unknown key or a
value of the wrong type raises ``ConfigError``; the CLI reports it and exits 2.
A pyproject.toml read once is kept by path, inode, modification time and size (``_SEEN``),
and the Config made from it with it: a process that runs ``validate`` once per file (a
server, a test suite, the in-process benchmark) reads and parses it once, and again only
when it changes.  A file modified less than ``_SETTLED_NS`` ago is read every time (as git
treats a racily clean index): a file system's clock ticks coarsely, and an edit of equal
size within one tick would otherwise go unseen.

    [tool.ggscope]
    select = ["GG1", "GG5"]        # codes, code prefixes, rule names or families
    ignore = ["key-not-namespaced"]
    deep = false
    format = "text"                # text | json | sarif | github
    jobs = 2
"""
from __future__ import annotations

import io
import os
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Config", "ConfigError", "FORMATS", "find_pyproject", "load", "parse"]

FORMATS: tuple[str, ...] = ("text", "json", "sarif", "github")


class ConfigError(ValueError):
    """``[tool.ggscope]`` cannot be used as written (a usage error: exit 2)."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    deep: bool = False
    format: str | None = None
    jobs: int = 1
    source: str | None = None      # the pyproject.toml it came from, None for defaults


def _read_toml(path: Path, data: bytes) -> dict:
    """``data``, the bytes ``_table`` read from ``path``, as TOML (the file is read once)."""
    try:
        import tomllib    # start-up: only for a pyproject.toml that names ggscope
    except ModuleNotFoundError:  # Python 3.10
        raise ConfigError(f"{path}: reading [tool.ggscope] needs Python 3.11 or newer (tomllib)") from None
    try:
        return tomllib.load(io.BytesIO(data))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


# pyproject.toml path -> ((inode, st_mtime_ns, st_size), its [tool.ggscope] table or None, its Config once parsed)
_SEEN: dict[str, tuple[tuple[int, int, int], dict | None, list]] = {}
_SETTLED_NS = 2_000_000_000


def _table(candidate: str) -> tuple[dict | None, list] | None:
    """``candidate``'s ``[tool.ggscope]`` table (None: it has none) and the one-slot list
    that keeps its parsed Config, read again only when its time or size changed; None when
    it is no regular file."""
    if not os.access(candidate, os.F_OK):     # most directories have none: no exception raised and caught
        return None
    try:
        st = os.stat(candidate)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    key, seen = candidate, (st.st_ino, st.st_mtime_ns, st.st_size)
    hit = _SEEN.get(key)
    if hit is not None and hit[0] == seen:
        return hit[1], hit[2]
    try:
        with open(candidate, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ConfigError(f"{candidate}: cannot read: {exc.strerror or exc}") from None
    # no [tool.ggscope] table can be in a file without the word: not parsed (nor tomllib imported)
    table = _read_toml(Path(candidate), data).get("tool", {}).get("ggscope") if b"ggscope" in data else None
    kept: list = []
    if time.time_ns() - st.st_mtime_ns > _SETTLED_NS:
        _SEEN[key] = (seen, table, kept)
    else:
        _SEEN.pop(key, None)
    return table, kept


def _here() -> str:
    """The current directory as ``realpath`` gives it.  Linux's getcwd is the path the
    kernel resolved, symbolic links and all, so it is taken as it is there (``realpath``
    costs an lstat per component: half of a run's look-up); elsewhere it is resolved."""
    cwd = os.getcwd()
    return cwd if sys.platform.startswith("linux") else os.path.realpath(cwd)


def _nearest(start: str | os.PathLike | None) -> tuple[Path, dict, list] | None:
    d = os.path.realpath(start) if start is not None else _here()     # os.path: a run per file pays this walk
    while True:
        candidate = os.path.join(d, "pyproject.toml")
        found = _table(candidate)
        if found is not None and found[0] is not None:
            return Path(candidate), found[0], found[1]
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent


def find_pyproject(start: str | os.PathLike | None = None) -> tuple[Path, dict] | None:
    """The nearest pyproject.toml with a ``[tool.ggscope]`` table, and that table."""
    found = _nearest(start)
    return None if found is None else (found[0], found[1])


def _codes(value, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings (codes, prefixes, names or families)")
    return tuple(v.strip() for v in value if v.strip())


def parse(table: dict, where: str = "[tool.ggscope]") -> Config:
    """Check a ``[tool.ggscope]`` table and turn it into a Config."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.ggscope] must be a table")
    known = {"select", "ignore", "deep", "format", "jobs"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} in [tool.ggscope]: "
                          f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
    deep = table.get("deep", False)
    if not isinstance(deep, bool):
        raise ConfigError(f"{where}: deep must be true or false")
    fmt = table.get("format")
    if fmt is not None and fmt not in FORMATS:
        raise ConfigError(f"{where}: format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    jobs = table.get("jobs", 1)
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"{where}: jobs must be a positive integer, not {jobs!r}")
    select, ignore = _codes(table.get("select", []), "select", where), _codes(table.get("ignore", []), "ignore", where)
    from ggscope.validate.runner import UnknownSelector, check_selectors  # start-up: numpy, asyncio only when used
    try:
        check_selectors(select, "select")
        check_selectors(ignore, "ignore")
    except UnknownSelector as exc:
        raise ConfigError(f"{where}: [tool.ggscope] {exc}") from None
    return Config(select, ignore, deep, fmt, jobs, where)


def load(start: str | os.PathLike | None = None) -> Config:
    """The Config for a run started in ``start`` (defaults when no pyproject.toml has one)."""
    found = _nearest(start)
    if found is None:
        return Config()
    path, table, kept = found
    if not kept:
        kept.append(parse(table, str(path)))        # a ConfigError is raised again on every load
    return kept[0]
