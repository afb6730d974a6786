"""The ``ggscope`` command line: a dispatcher over ``ggscope.commands.<name>``.

``ggscope FILE`` (no subcommand) opens the interactive browser; ``ggscope SUBCOMMAND
...`` runs one of the commands below.  Each command module exposes ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``.  stdout carries data only; notices
and errors go to stderr.  Exit status: 0 success, 1 the command's "found something"
result (validate: error-level findings; diff: files differ), 2 usage, I/O or
damaged-input errors.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from ggscope.core.errors import GGScopeError

__all__ = ["main", "COMMANDS"]

# name -> module in ggscope.commands, in the order --help lists them
COMMANDS: tuple[str, ...] = ("info", "validate", "stats", "diff", "run", "rules", "explain", "template", "tui")

EPILOG = """\
examples:
  ggscope model.gguf                      browse a file interactively
  ggscope info model.gguf                 header, metadata and tensor table
  ggscope info --json model.gguf | jq .metadata
  ggscope validate models/*.gguf          CI gate: exit 1 on error-level findings
  ggscope stats model.gguf blk.0.attn_q.weight
  ggscope diff model-f16.gguf model-q4_k.gguf
  ggscope run model.gguf --prompt "Hello"

formats: GGUF v1-v3 (little/big-endian), GGML/GGMF/GGJT v1-v3, ggml example files,
rwkv.cpp (100/101), chatglm.cpp, BIT1.
exit status: 0 ok, 1 findings/differences, 2 usage, I/O or damaged input.
"""


def _available(only: str | None = None) -> dict[str, object]:
    """The importable command modules, or with ``only`` just that one: a one-shot
    command does not pay for importing and describing the seven others (``validate``
    alone pulls in the config loader)."""
    mods = {}
    for name in (only,) if only else COMMANDS:
        try:
            mods[name] = importlib.import_module(f"ggscope.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ggscope.commands.{name}":
                raise
    return mods


def build_parser(mods: dict[str, object]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ggscope",
        description="Inspect, validate and diff ggml-family model files.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from ggscope import __version__
    parser.add_argument("--version", action="version", version=f"ggscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in mods.items():
        p = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                           epilog=getattr(mod, "EPILOG", None),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # the parser holds only the command the arguments name (`ggscope FILE` names tui);
    # without one (`ggscope --help`, a typo), or if it is not installed, all of them
    named = argv[0] if argv and argv[0] in COMMANDS else "tui" if not argv or not argv[0].startswith("-") else None
    mods = (named and _available(named)) or _available()
    if "tui" in mods and (not argv or (argv[0] not in mods and not argv[0].startswith("-"))):
        argv = ["tui", *argv]     # `ggscope FILE` and bare `ggscope` open the browser
    parser = build_parser(mods)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:      # argparse: --help exits 0, usage errors exit 2
        return int(exc.code or 0)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    from ggscope.core import progress
    from ggscope.report.progress import terminal_reporter
    try:
        with progress.use(terminal_reporter()):    # bars only when stderr is a terminal
            return int(args._run(args))
    except KeyboardInterrupt:
        print("ggscope: interrupted", file=sys.stderr)
        return 130
    except GGScopeError as exc:   # e.g. a remote read that fails while tensor data streams
        print(f"ggscope: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
