"""``ggscope rules``: the rule catalogue as a table (or JSON).

Why: a user choosing ``--select``/``--ignore`` or reading a finding's code needs the
list of codes, names, severities and families in one place; ``ggscope explain CODE``
then shows one rule in full.  The data is ``ggscope.rules.RULES``, nothing else.  On a
terminal the table wraps to its width at word boundaries; piped, every column is kept
on one line per rule.
"""
from __future__ import annotations

import sys

from ggscope.commands.common import add_color_argument, console, error, use_rich

HELP = "list the validator's rules: code, name, severity, family, summary"
DESCRIPTION = """\
List every rule `ggscope validate` knows: its stable code, its name (both work in
--select/--ignore and in `ggscope explain`), default severity, family, a one-line
summary and its source - the reader or writer behaviour it mirrors (ggml's gguf.cpp,
llama.cpp's model loader, gguf-py, the spec).  Rules marked deep read tensor data and
run only with `validate --deep`."""
EPILOG = """\
examples:
  ggscope rules
  ggscope rules --family structure
  ggscope rules --json | jq -r '.[] | select(.severity == "error") | .code'
  ggscope explain GG101

JSON: one array of {"code", "name", "severity", "family", "summary", "source",
"formats", "deep"}.
exit status: 0 ok, 2 unknown family."""

COLUMNS = ("code", "name", "severity", "family", "summary", "source")


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON array of rules")
    p.add_argument("--family", metavar="F", help="only this family (the family column of `ggscope rules`)")
    add_color_argument(p)


def as_json(rule) -> dict:
    return {"code": rule.code, "name": rule.name, "severity": rule.severity.value, "family": rule.family,
            "summary": rule.summary, "source": rule.source_text(), "formats": list(rule.formats),
            "deep": bool(rule.needs_tensor_data)}


def table(rules) -> str:
    rows = [COLUMNS] + [(r.code, r.name + (" (deep)" if r.needs_tensor_data else ""), r.severity.value,
                         r.family, r.summary, r.source_text()) for r in rules]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    return "".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n" for row in rows)


WIDE = 140          # below this many columns the source column gives way to the summary


def rich_table(rules, width: int):
    """The catalogue for a terminal of ``width`` columns: summaries (and sources, when
    wide enough) wrap at word boundaries inside their cells; nothing runs past the edge."""
    from rich.table import Table
    from rich.text import Text
    wide = width >= WIDE
    table = Table(caption=None if wide else "left out for width: " + ("source" if width >= 100 else "family, source")
                  + "; `ggscope explain CODE` and --json have them",
                  caption_justify="left", show_lines=False)
    table.add_column("code", no_wrap=True, style="bold")
    table.add_column("name", overflow="fold")
    table.add_column("severity", no_wrap=True)
    if width >= 100:
        table.add_column("family", no_wrap=True)
    table.add_column("summary", ratio=3, overflow="fold")
    if wide:
        table.add_column("source", ratio=2, overflow="fold")
    style = {"error": "red", "warning": "yellow", "info": "cyan"}
    for r in rules:
        cells = [Text(r.code), Text(r.name + (" (deep)" if r.needs_tensor_data else "")),
                 Text(r.severity.value, style=style.get(r.severity.value, "")),
                 *([Text(r.family)] if width >= 100 else []), Text(r.summary)]
        table.add_row(*cells, *([Text(r.source_text())] if wide else []))
    return table


def run(args) -> int:
    from ggscope.rules import FAMILIES  # start-up: numpy, asyncio only when this command needs it
    from ggscope.report.rules_doc import ordered  # start-up: numpy, asyncio only when this command needs it
    rules = ordered()
    if args.family:
        if args.family not in FAMILIES:
            error(f"unknown family \"{args.family}\"; families: {', '.join(FAMILIES)}")
            return 2
        rules = [r for r in rules if r.family == args.family]
    if args.json:
        from ggscope.report.jsonable import dumps  # start-up: numpy only when this command needs it
        sys.stdout.write(dumps([as_json(r) for r in rules]) + "\n")
    elif use_rich(args):
        con = console(args)
        con.print(rich_table(rules, con.width))
    else:
        sys.stdout.write(table(rules))
    return 0
