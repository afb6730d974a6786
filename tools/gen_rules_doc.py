"""Regenerate docs/rules.md from the rule catalogue (``ggscope.report.rules_doc.render``).

    python -m tools.gen_rules_doc          # rewrite docs/rules.md
    python -m tools.gen_rules_doc --check  # exit 1 if it is stale
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ggscope.report.rules_doc import DOC_PATH, render
from ggscope.rules import RULES


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.gen_rules_doc", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/rules.md is not current")
    ap.add_argument("--output", type=Path, default=DOC_PATH, help=f"where to write (default {DOC_PATH})")
    args = ap.parse_args(argv)
    text = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.is_file() else ""
        if current != text:
            print(f"{args.output} is stale; run python -m tools.gen_rules_doc", file=sys.stderr)
            return 1
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(f"wrote {args.output} ({len(RULES)} rules)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
