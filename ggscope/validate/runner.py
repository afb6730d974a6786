"""Run the rule catalogue over files and collect findings.

``validate_file(path, select=..., ignore=..., deep=False)`` opens one file and returns
its findings, sorted by byte offset.  A file that cannot be opened at all (missing,
unreadable, unknown format) is not a finding: it raises, and the CLI turns that into
exit 2 - with one exception: a file named ``*.gguf`` whose magic is wrong is a GGUF file
ggml refuses, so it yields finding GG101 (bad-magic) instead.
A rule that crashes is a bug in ggscope; it is reported as finding GG000 so one broken
rule never hides the others' findings, and tests fail on any GG000.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from functools import lru_cache

from ggscope.core.errors import FileChanged, UnknownFormat
from ggscope.model.modelfile import ModelFile
from ggscope.model.open import open as open_file
from ggscope.model.split import shard_paths
from ggscope.rules import REDIRECTS, RULES, CheckContext, Finding, Rule, Severity
from ggscope.rules.preconditions import PRECONDITIONS
from ggscope.rules.structure import BadMagic
from ggscope.source.mapped import open_source

__all__ = ["validate", "validate_file", "validate_set", "set_key", "selected_rules", "check_selectors", "UnknownSelector"]


def _code_prefix(code: str, p: str) -> bool:
    """``GG1`` selects the GG1xx family, not the four-digit GG10xx/GG11xx ones (``GG11`` does)."""
    p = p.upper()
    if not code.startswith(p):
        return False
    return not (len(p) == 3 and len(code) == 6)


def _matches(rule: type[Rule], patterns: Iterable[str]) -> bool:
    for p in patterns:
        p = p.strip()
        if not p:
            continue
        if _code_prefix(rule.code, p) or fnmatch.fnmatch(rule.name, p) or rule.family == p:
            return True
    return False


class UnknownSelector(ValueError):
    """A ``--select``/``--ignore`` word that names no rule: a usage error (exit 2).

    Why: a CI gate whose rules a typo switches off silently is not a gate.
    """

    def __init__(self, word: str, option: str, suggestion: str | None) -> None:
        self.word = word
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        super().__init__(f"{option}: {word!r} is no rule code, code prefix, rule name or family{hint} "
                         "(`ggscope rules` lists them)")


def _vocabulary() -> list[str]:
    words = {r.code for r in RULES} | {r.name for r in RULES} | {r.family for r in RULES}
    return sorted(words | set(REDIRECTS))


def check_selectors(words: Iterable[str], option: str = "--select") -> None:
    """Raise ``UnknownSelector`` for the first word that matches no rule (with a close match)."""
    for w in words:
        w = w.strip()
        if not w or w.upper() in REDIRECTS or any(_matches(r, [w]) for r in RULES):
            continue
        import difflib  # start-up: only for a word that names no rule
        close = difflib.get_close_matches(w, _vocabulary(), n=1, cutoff=0.6)
        if not close:
            close = difflib.get_close_matches(w.upper(), [r.code for r in RULES], n=1, cutoff=0.6)
        raise UnknownSelector(w, option, close[0] if close else None)


def selected_rules(select: Iterable[str] = (), ignore: Iterable[str] = (), deep: bool = False) -> list[type[Rule]]:
    """Rules chosen by code prefix (``GG1``, ``GG501``), name glob or family name.

    Raises ``UnknownSelector`` when a word matches no rule at all.  The choice is made
    once per selection in a process (``validate`` once per file must not match every
    rule against every word again).
    """
    return list(_selected(tuple(select), tuple(ignore), bool(deep)))


@lru_cache(maxsize=64)
def _selected(select: tuple[str, ...], ignore: tuple[str, ...], deep: bool) -> tuple[type[Rule], ...]:
    check_selectors(select, "--select")
    check_selectors(ignore, "--ignore")
    out = []
    for r in RULES:
        if r.needs_tensor_data and not deep:
            continue
        if select and not _matches(r, select):
            continue
        if ignore and _matches(r, ignore):
            continue
        out.append(r)
    return tuple(out)


# (the rules given, a file's format) -> those of its format, and the preconditions they name
_PLANS: dict[tuple[tuple[type[Rule], ...], str], tuple[tuple[type[Rule], ...], tuple[str, ...]]] = {}
# (the rules of a format, which of their preconditions hold) -> the rules to call
_RUNS: dict[tuple[tuple[type[Rule], ...], tuple[bool, ...]], tuple[type[Rule], ...]] = {}


def _plan(rules: tuple[type[Rule], ...], fmt: str) -> tuple[tuple[type[Rule], ...], tuple[str, ...]]:
    key = (rules, fmt)
    hit = _PLANS.get(key)
    if hit is None:
        mine = tuple(r for r in rules if fmt in r.formats or "*" in r.formats)
        hit = mine, tuple(dict.fromkeys(r.only_if for r in mine if r.only_if is not None))
        if len(_PLANS) < 256:
            _PLANS[key] = hit
    return hit


def _to_call(mf: ModelFile, rules: tuple[type[Rule], ...], options: dict) -> tuple[type[Rule], ...]:
    """The rules of ``mf``'s format whose precondition (``Rule.only_if``) holds for it: each
    precondition evaluated once, the list made once per combination of outcomes."""
    mine, names = _plan(rules, mf.format)
    if not names:
        return mine
    holds = tuple(_holds(n, mf, options) for n in names)
    key = (mine, holds)
    hit = _RUNS.get(key)
    if hit is None:
        failed = {n for n, h in zip(names, holds) if not h}
        hit = tuple(r for r in mine if r.only_if not in failed)
        if len(_RUNS) < 1024:
            _RUNS[key] = hit
    return hit


def _holds(name: str, mf: ModelFile, options: dict) -> bool:
    try:
        return bool(PRECONDITIONS[name](mf, options))
    except Exception:  # noqa: BLE001 - undecided: the rules run and judge the file (or report GG000) themselves
        return True


# rule class -> its one instance (rules keep nothing between calls: what they share per
# file lives in the file's cache, ``rules.common.file_cache``)
_INSTANCES: dict[type[Rule], Rule] = {}


def validate(mf: ModelFile, rules: Iterable[type[Rule]] | None = None, options: dict | None = None) -> list[Finding]:
    """The findings of the rules (default: ``selected_rules()``) on one open file, sorted
    by byte offset.  Only the rules of the file's format whose precondition holds are
    called (``rules.preconditions``)."""
    findings: list[Finding] = []
    options = {} if options is None else options
    given = _selected((), (), False) if rules is None else tuple(rules)
    # one context for the file, pointed at each rule in turn (a rule's findings are all
    # made before the next rule starts); a rule holds no state, so one object per class
    ctx = CheckContext(mf, None, options)
    for rule_cls in _to_call(mf, given, options):
        rule = _INSTANCES.get(rule_cls)
        if rule is None:
            rule = _INSTANCES[rule_cls] = rule_cls()
        ctx.rule = rule
        try:
            findings.extend(rule.check(ctx))
        except FileChanged:                 # the file changed under the rules: no finding stands
            raise
        except Exception as exc:  # noqa: BLE001 - a broken rule must not hide the others
            findings.append(Finding("GG000", Severity.ERROR, mf.path,
                                    f"internal error in rule {rule_cls.code} ({rule_cls.name}): "
                                    f"{type(exc).__name__}: {exc}", rule="internal-error"))
    findings.sort(key=lambda f: (f.start if f.start is not None else -1, f.code))
    return findings


def _bad_magic(path: str, rules: list[type[Rule]]) -> list[Finding] | None:
    """GG101 for a ``.gguf`` file that is no known format, or None to re-raise."""
    if not str(path).lower().endswith(".gguf"):
        return None
    if BadMagic not in rules:
        return []
    first = open_source(path).read(0, 4)
    return [BadMagic.finding_for(str(path), first)]


def validate_file(path: str, *, select: Iterable[str] = (), ignore: Iterable[str] = (), deep: bool = False,
                  options: dict | None = None) -> list[Finding]:
    """Findings of ``path``; a shard of a split model gives the findings of its whole set
    (``validate_set``), whichever shard is named."""
    rules = selected_rules(select, ignore, deep)
    try:
        mf = open_file(path)
    except UnknownFormat:
        found = _bad_magic(path, rules)
        if found is None:
            raise
        return found
    paths = shard_paths(mf.path) if mf.format == "gguf" else None
    if paths and len(paths) > 1:
        return validate_set(mf, paths, rules, options)
    try:
        return validate(*_secondary_shard(mf, rules), options)
    finally:
        mf.close()


def set_key(path: str) -> tuple[str, ...]:
    """What two paths share when they name the same model: its shard paths (normalised
    when local), or the path itself.  ``validate`` checks one path per key."""
    import os

    from ggscope.model.split import shard_paths  # lazy: loaded only on the path that needs it
    from ggscope.source.local import is_remote  # start-up: the network module only for a URL
    paths = shard_paths(path) or [path]
    return tuple(p if is_remote(p) else os.path.abspath(p) for p in paths)


def validate_set(given: ModelFile, paths: list[str], rules: list[type[Rule]],
                 options: dict | None = None) -> list[Finding]:
    """One split model, one set of findings, the same from any of its shards.

    Every shard present is checked (the first with the model-level rules and the whole
    model's tensors, the others as ``_secondary_shard`` says) and the set itself once,
    on the first shard present (GG803).  A shard that is missing or unreadable is
    GG803's one finding; llama.cpp's loader stops at it ("failed to load GGUF split"),
    so the loader's predictions, which would list every tensor of the missing shard as
    missing, are left out."""
    from ggscope.model.open import open as open_file  # lazy: loaded only on the path that needs it
    from ggscope.rules.filename import SplitSetIncomplete  # lazy: loaded only on the path that needs it
    opened: list[ModelFile] = []
    for p in paths:
        if p == given.path:
            opened.append(given)
            continue
        try:
            opened.append(open_file(p))
        except Exception:  # noqa: BLE001 - a missing or unreadable shard is GG803's finding
            continue
    incomplete = len(opened) < len(paths)
    findings: list[Finding] = []
    try:
        for i, mf in enumerate(opened):
            own = [r for r in rules if not (r is SplitSetIncomplete and i > 0)
                   and not (incomplete and r.family == "loader")]
            findings += validate(*_secondary_shard(mf, own), options)
    finally:
        for mf in opened:
            mf.close()
    return findings


MODEL_LEVEL_FAMILIES = ("schema", "tokenizer", "loader")


def _secondary_shard(mf: ModelFile, rules: list[type[Rule]]) -> tuple[ModelFile, list[type[Rule]]]:
    """A shard after the first of a split model, checked as llama.cpp's loader sees it.

    gguf-split writes the model's metadata into the first shard only; llama.cpp reads
    metadata from the first shard and only ``split.no`` from the others.  So a later
    shard is not checked for the model-level keys and tensors (schema, tokenizer, loader:
    the first shard's check covers them), and its other rules see the first shard's keys under its own.
    """
    import dataclasses

    no = mf.metadata.get("split.no")
    if not isinstance(no, int) or isinstance(no, bool) or no < 1:     # no later shard: its name is not parsed
        return mf, rules
    paths = shard_paths(mf.path) if mf.format == "gguf" else None
    if not paths or len(paths) < 2:
        return mf, rules
    rules = [r for r in rules if r.family not in MODEL_LEVEL_FAMILIES]
    try:
        first = open_file(paths[0])
    except Exception:  # noqa: BLE001 - a missing first shard is GG803's finding
        return mf, rules
    meta = {**first.metadata, **mf.metadata}
    types = {**first.metadata_types, **mf.metadata_types}
    return dataclasses.replace(mf, metadata=meta, metadata_types=types, _by_name={}), rules
