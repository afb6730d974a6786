"""``ggscope validate FILE...``: run the rule catalogue; a CI gate.

Exit status: 0 no error-level finding, 1 at least one, 2 usage error or a path that
cannot be read or opened.  Findings go to stdout; the summary and problems to stderr.
"""
from __future__ import annotations

import glob
import os
import sys

from ..errors import GGScopeError
from ..report import findings_json, findings_text
from .common import add_color_argument, error

HELP = "check files against the rule catalogue (exit 1 on error-level findings)"
DESCRIPTION = """\
Check model files against ggscope's rules: what ggml's reader refuses (GG1xx), what
the spec forbids (GG2xx), alignment (GG3xx), key naming (GG4xx), tensors (GG5xx) and
more; `ggscope rules` lists them, `ggscope explain CODE` explains one."""
EPILOG = """\
examples:
  ggscope validate models/*.gguf
  ggscope validate --select GG1 model.gguf          only ggml's reader rules
  ggscope validate --ignore GG801,key-not-namespaced 'models/**/*.gguf'
  ggscope validate --format json model.gguf | jq '.[] | select(.severity == "error")'

text: one line per finding, `file:start: severity CODE [name] message (path)`.
json: one array of {"code", "severity", "file", "message", "path", "start", "end"}.
exit status: 0 no error-level finding, 1 some, 2 usage error or unreadable path."""

FORMATS = ("text", "json")


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help="model files or glob patterns")
    p.add_argument("--format", choices=FORMATS, default=None, help="output format (default text)")
    p.add_argument("--select", default="", help="comma-separated codes, code prefixes, names or families to run")
    p.add_argument("--ignore", default="", help="comma-separated codes, code prefixes, names or families to skip")
    p.add_argument("--deep", action="store_true", help="also run rules that read tensor data")
    add_color_argument(p)


def _expand(patterns: list[str]) -> tuple[list[str], list[str]]:
    files, missing = [], []
    for pat in patterns:
        if glob.has_magic(pat):
            hits = sorted(glob.glob(pat, recursive=True))
            (files.extend(hits) if hits else missing.append(pat))
        else:
            files.append(pat)
    return files, missing


def _split(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def run(args) -> int:
    from ..validate import validate_file
    files, missing = _expand(args.files)
    status = 0
    for pat in missing:
        error(f"no file matches {pat}")
        status = 2
    findings = []
    for path in files:
        if not os.path.isfile(path):
            error(f"cannot read {path}: no such file")
            status = 2
            continue
        try:
            findings.extend(validate_file(path, select=_split(args.select), ignore=_split(args.ignore),
                                          deep=args.deep))
        except (GGScopeError, OSError) as exc:
            error(str(exc))
            status = 2
    fmt = args.format or "text"
    if fmt == "json":
        sys.stdout.write(findings_json.render(findings) + "\n")
    else:
        colour = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                            and not os.environ.get("NO_COLOR"))
        sys.stdout.write(findings_text.render(findings, colour))
        print(findings_text.summary(findings, len(files)), file=sys.stderr)
    if status:
        return status
    return 1 if any(f.severity.value == "error" for f in findings) else 0
