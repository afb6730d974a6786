"""Findings as SARIF 2.1.0, the format GitHub code scanning uploads.

Why: ``github/codeql-action/upload-sarif`` turns this file into code-scanning alerts
with the rule's explanation attached, so a repository sees model-file problems beside
its code alerts.

Contract: one run; ``tool.driver`` names ggscope and lists every rule of the catalogue
(``id`` = code, ``name``, short and full description, ``help`` = the explanation that
``ggscope explain`` prints, ``defaultConfiguration.level``).  Each result has
``ruleId``/``ruleIndex``, ``level`` (error, warning, note), ``message.text``, one
physical location (the file's path relative to the current directory as a URI, and
the byte range as ``region.byteOffset``/``byteLength``) and one logical location
(the node path, e.g. ``header/version``).  A file that could not be read at all is no
result but a ``toolExecutionNotifications`` entry of the run's one invocation (level
error, the reason, the file's location), and makes ``executionSuccessful`` false.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

from ggscope.rules import RULES, Finding, Rule

__all__ = ["render", "as_sarif", "LEVELS", "SCHEMA"]

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/ggscope/ggscope"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str) -> str:
    """A relative URI when the file is under the current directory, else a file:// URI;
    percent-encoded from the name's exact bytes (also those that are not UTF-8)."""
    p = Path(path)
    try:
        rel = os.path.relpath(p.resolve(), Path.cwd().resolve()) if p.is_absolute() else os.path.normpath(path)
    except ValueError:           # another drive on Windows
        rel = None
    if rel is None or rel.startswith(".."):
        return p.resolve().as_uri()
    return quote(Path(rel).as_posix(), errors="surrogateescape")   # a name's exact bytes, %XX


def _descriptor(rule: type[Rule]) -> dict:
    text = rule.explanation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": text.split("\n\n", 1)[0].replace("\n", " ")},
        "help": {"text": text, "markdown": text},
        "defaultConfiguration": {"level": LEVELS[rule.severity.value]},
        "properties": {"family": rule.family},
    }


def _internal_descriptor(f: Finding) -> dict:
    return {"id": f.code, "name": f.rule or "internal-error",
            "shortDescription": {"text": "A rule crashed: a bug in ggscope."},
            "fullDescription": {"text": "A rule raised an exception; please report it."},
            "help": {"text": "A rule raised an exception; this is a bug in ggscope, not in the file."},
            "defaultConfiguration": {"level": "error"}}


def _result(f: Finding, index: int) -> dict:
    physical: dict = {"artifactLocation": {"uri": _uri(f.file)}}
    if f.start is not None:
        end = f.end if f.end is not None else f.start
        physical["region"] = {"byteOffset": f.start, "byteLength": max(0, end - f.start)}
    location: dict = {"physicalLocation": physical}
    if f.path:
        location["logicalLocations"] = [{"fullyQualifiedName": f.path, "kind": "member"}]
    return {"ruleId": f.code, "ruleIndex": index, "level": LEVELS[f.severity.value],
            "message": {"text": f.message}, "locations": [location]}


def _notification(path: str, reason: str) -> dict:
    return {"level": "error", "message": {"text": reason},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path)}}}]}


def as_sarif(findings: Iterable[Finding], unreadable: Iterable[tuple[str, str]] = ()) -> dict:
    """The SARIF log of ``findings``; ``unreadable`` is (path, reason) of each file that
    could not be checked."""
    from ggscope import __version__  # the root package: already loaded, named here to keep the version one fact
    findings = list(findings)
    unreadable = list(unreadable)
    descriptors = [_descriptor(r) for r in RULES]
    index = {d["id"]: i for i, d in enumerate(descriptors)}
    for f in findings:                 # GG000 (a crashed rule) is in no catalogue
        if f.code not in index:
            index[f.code] = len(descriptors)
            descriptors.append(_internal_descriptor(f))
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "ggscope", "version": __version__,
                                "informationUri": INFORMATION_URI, "rules": descriptors}},
            "invocations": [{"executionSuccessful": not unreadable,
                             "toolExecutionNotifications": [_notification(p, r) for p, r in unreadable]}],
            "results": [_result(f, index[f.code]) for f in findings],
            "columnKind": "unicodeCodePoints",
        }],
    }


def render(findings: Iterable[Finding], unreadable: Iterable[tuple[str, str]] = ()) -> str:
    from ggscope.report.jsonable import dumps  # lazy: loaded only on the path that needs it
    return dumps(as_sarif(findings, unreadable), indent=2)
