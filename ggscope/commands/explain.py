"""``ggscope explain CODE|NAME``: one rule in full - what, why, an example, the spec.

Why: a finding's line is short; the rule's docstring (ruff's sections: What it checks,
Why it matters, Example, Reference) is the explanation, and the same text is in
docs/rules.md and in SARIF's ``help``.  Retired codes redirect to their successor.
An unknown code or name is a usage error (exit 2) that suggests close matches.
"""
from __future__ import annotations

import difflib
import sys

from ggscope.commands.common import add_color_argument, console, error, use_rich

HELP = "show one rule's full explanation"
DESCRIPTION = """\
Print one rule's code, name, severity, family and its full explanation: what it
checks, why it matters, an example file that triggers it, the reference, and its
source: the reader or writer behaviour the rule mirrors."""
EPILOG = """\
examples:
  ggscope explain GG101
  ggscope explain duplicate-tensor-name
  ggscope rules                      list every code

exit status: 0 ok, 2 unknown code or name."""


def add_arguments(p) -> None:
    p.add_argument("rule", metavar="CODE|NAME", help="a rule code (GG101) or name (bad-magic)")
    add_color_argument(p)


def render(rule) -> str:
    deep = "; runs only with validate --deep" if rule.needs_tensor_data else ""
    head = f"{rule.code} {rule.name}"
    return (f"{head}\n{'=' * len(head)}\n"
            f"severity: {rule.severity.value}; family: {rule.family}; formats: {', '.join(rule.formats)}{deep}\n"
            f"source: {rule.source_text()}\n\n"
            f"{rule.summary}\n\n{rule.explanation()}\n")


def suggestions(query: str) -> list[str]:
    from ggscope.rules import RULES  # start-up: numpy, asyncio only when this command needs it
    q = query.strip()
    pool = {r.code: r for r in RULES} | {r.name: r for r in RULES}
    hits = difflib.get_close_matches(q.upper(), [r.code for r in RULES], n=3, cutoff=0.6)
    hits += difflib.get_close_matches(q.lower(), [r.name for r in RULES], n=3, cutoff=0.6)
    out = []
    for h in hits:
        label = f"{pool[h].code} ({pool[h].name})"
        if label not in out:
            out.append(label)
    return out


def run(args) -> int:
    from ggscope.rules import REDIRECTS, by_code  # start-up: numpy, asyncio only when this command needs it
    rule = by_code(args.rule.strip())
    if rule is None:
        close = suggestions(args.rule)
        hint = f"; did you mean {', '.join(close)}?" if close else "; `ggscope rules` lists every code"
        error(f'no rule "{args.rule}"{hint}')
        return 2
    if args.rule.strip().upper() in REDIRECTS:
        error(f"{args.rule.strip().upper()} was renamed to {rule.code}")
    if use_rich(args):                 # a terminal: paragraphs wrapped to its width, at word boundaries
        from rich.text import Text
        con = console(args)
        from ggscope.commands.helptext import wrap_help  # start-up: one-shot commands load only what they use
        head, _, body = render(rule).replace("``", "`").partition("\n")
        con.print(Text(head, style="bold"))
        con.print(Text(wrap_help(body.rstrip("\n"), con.width)), soft_wrap=True)
    else:
        sys.stdout.write(render(rule))
    return 0
