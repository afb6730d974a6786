"""The ``ggscope`` command line: a dispatcher over ``ggscope.commands.<name>``.

``ggscope FILE`` (no subcommand) opens the interactive browser; ``ggscope SUBCOMMAND
...`` runs one of the commands below; ``ggscope help [COMMAND]`` prints the help of
either, and a first word that is neither a command nor a file gets "did you mean".
Shell completion comes from argcomplete: ``ggscope completion bash|zsh|fish`` prints the
script to source.  Each command module exposes ``HELP`` (one line),
``add_arguments(parser)`` and ``run(args) -> int``.  stdout carries data only; notices
and errors go to stderr.  Exit status: 0 success, 1 the command's "found something"
result (validate: error-level findings; diff: files differ), 2 usage, I/O or
damaged-input errors.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ggscope.core.errors import GGScopeError
from ggscope.core.escape import escape_text
from ggscope.core import progress

__all__ = ["main", "COMMANDS"]

# name -> module in ggscope.commands, in the order --help lists them
COMMANDS: tuple[str, ...] = ("info", "validate", "stats", "diff", "hash", "run", "fit", "rules", "explain",
                            "template", "tui")

EPILOG = """\
examples:
  ggscope model.gguf                      browse a file interactively
  ggscope info model.gguf                 header, metadata and tensor table
  ggscope info --json model.gguf | jq .metadata
  ggscope validate models/*.gguf          CI gate: exit 1 on error-level findings
  ggscope stats model.gguf blk.0.attn_q.weight
  ggscope diff model-f16.gguf model-q4_k.gguf
  ggscope run model.gguf --prompt "Hello"
  ggscope help validate                   the help of one command
  eval "$(ggscope completion bash)"       tab completion (also zsh, fish)

formats: GGUF v1-v3 (little/big-endian), GGML/GGMF/GGJT v1-v3, ggml example files,
rwkv.cpp (100/101), chatglm.cpp, BIT1.
exit status: 0 ok, 1 findings/differences, 2 usage, I/O or damaged input.
network: GGSCOPE_HTTP_TIMEOUT=S (default 30) bounds every wait, then 64 KiB/s at least;
redirects stay on the URL's host unless GGSCOPE_ALLOW_REDIRECTS=HOST,*.DOMAIN,* allows more.
"""


def _available(only: str | None = None) -> dict[str, object]:
    """The command modules, or with ``only`` just that one: a one-shot command does not
    pay for importing and describing the others (``validate`` alone pulls in the config
    loader)."""
    return {name: importlib.import_module(f"ggscope.commands.{name}") for name in ((only,) if only else COMMANDS)}


class _Parser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a mistyped subcommand and, for arguments a
    subcommand does not know, that subcommand's usage rather than the top level's."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.subparsers: dict[str, argparse.ArgumentParser] = {}

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            owner = self.subparsers.get(getattr(ns, "command", None) or "", self)
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return ns


def build_parser(mods: dict[str, object]) -> argparse.ArgumentParser:
    from ggscope.commands.helptext import HelpFormatter  # start-up: one-shot commands load only what they use
    parser = _Parser(
        prog="ggscope",
        description="Inspect, validate and diff ggml-family model files.",
        epilog=EPILOG, formatter_class=HelpFormatter)
    from ggscope import __version__  # the root package: already loaded, named here to keep the version one fact
    parser.add_argument("-V", "--version", action="version", version=f"ggscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, mod in mods.items():
        p = sub.add_parser(name, help=mod.HELP, description=getattr(mod, "DESCRIPTION", mod.HELP),
                           epilog=getattr(mod, "EPILOG", None),
                           formatter_class=HelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
        parser.subparsers[name] = p
    if len(mods) > 1 or "help" in mods:
        sub.add_parser("help", help="show the help of ggscope or of one command").add_argument(
            "topic", nargs="?", metavar="COMMAND", choices=[*COMMANDS, "help", "completion"])
        comp = sub.add_parser("completion", help="print the shell completion script (bash, zsh or fish)",
                              description="Print the script that gives ggscope tab completion in your shell.",
                              epilog='examples:\n  eval "$(ggscope completion bash)"      # in ~/.bashrc\n'
                                     '  eval "$(ggscope completion zsh)"       # in ~/.zshrc\n'
                                     '  ggscope completion fish | source       # in ~/.config/fish/config.fish',
                              formatter_class=HelpFormatter)
        comp.add_argument("shell", choices=("bash", "zsh", "fish"))
    return parser


_BUILT: dict[tuple[str, ...], argparse.ArgumentParser] = {}


def _parser_for(mods: dict[str, object]) -> argparse.ArgumentParser:
    """``build_parser(mods)``, built once per set of commands in a process: a program that
    calls ``main`` per file (a server, a test harness, ``benchmarks/validate_vs_c.py``) paid
    0.1-0.2 ms a call for the same parser (validate's options cost 86 us more than
    info's).  A parser keeps nothing of one call for the next: ``parse_args`` makes a
    fresh namespace, and help and usage are formatted when printed."""
    key = tuple(mods)
    parser = _BUILT.get(key)
    if parser is None:
        parser = _BUILT[key] = build_parser(mods)
    return parser


def _looks_like_input(word: str) -> bool:
    """A first argument the browser should open: an existing path, a URL or a glob."""
    return ("://" in word or os.path.exists(word) or any(c in word for c in "*?[")
            or os.sep in word or word.lower().endswith((".gguf", ".bin", ".ggml", ".bit1")))


def _not_a_command(word: str) -> int:
    import difflib
    close = difflib.get_close_matches(word, (*COMMANDS, "help", "completion"), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else "; see 'ggscope --help'"
    print(f"ggscope: '{escape_text(word)}' is neither a command nor a file{hint}", file=sys.stderr)
    return 2


def _help(parser: _Parser, topic: str | None) -> int:
    if topic in (None, "help"):
        parser.print_help()
    elif topic == "completion":
        return main(["completion", "--help"])
    else:
        return main([topic, "--help"])
    return 0


def _completion(shell: str) -> int:
    from argcomplete import shellcode
    sys.stdout.write(shellcode(["ggscope"], shell=shell))
    return 0


def _complete() -> None:
    """Under argcomplete's shell hook (``_ARGCOMPLETE`` set): answer and exit."""
    import argcomplete
    argcomplete.autocomplete(build_parser(_available()))


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None and os.environ.get("_ARGCOMPLETE"):
        _complete()                                    # exits when it has answered
    argv = list(sys.argv[1:] if argv is None else argv)
    first = argv[0] if argv else None
    if first in ("info", "validate", "stats", "hash", "rules", "explain", "template") and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")  # no BLAS here: OpenBLAS's threads sleep at once, not spin 0.1 s at import
    if argv in (["--version"], ["-V"]):               # start-up: no command module is needed
        from ggscope import __version__  # the root package: already loaded, named here to keep the version one fact
        print(f"ggscope {__version__}")
        return 0
    # the parser holds only the command the arguments name (`ggscope FILE` names tui);
    # without one (`ggscope --help`, a typo) all of them
    if first in COMMANDS:
        mods = _available(first)
    elif first is None or (not first.startswith("-") and first not in ("help", "completion")):
        if first is not None and not _looks_like_input(first):
            return _not_a_command(first)
        mods = _available("tui")
        argv = ["tui", *argv]          # `ggscope FILE` and bare `ggscope` open the browser
    else:
        mods = _available()
    parser = _parser_for(mods)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:      # argparse: --help exits 0, usage errors exit 2
        return int(exc.code or 0)
    if args.command == "help":
        return _help(parser, args.topic)
    if args.command == "completion":
        return _completion(args.shell)
    if not getattr(args, "_run", None):
        parser.print_help(sys.stderr)
        return 2
    from ggscope.report.progress import terminal_reporter  # start-up: one-shot commands load only what they use
    from ggscope.source.changes import changed_since, checkpoint, guard_mapped_reads  # start-up: one-shot commands load only what they use
    guard_mapped_reads()                           # a mapped page gone (the file shrank): one line, exit 2
    mark = checkpoint()
    try:
        with progress.use(terminal_reporter()):    # bars only when stderr is a terminal
            status = int(args._run(args))
        for line in changed_since(mark):           # a file rewritten under the command: no result stands
            print(f"ggscope: {line}", file=sys.stderr)
            status = 2
        return status
    except KeyboardInterrupt:
        print("ggscope: interrupted", file=sys.stderr)
        return 130
    except GGScopeError as exc:   # e.g. a remote read that fails while tensor data streams
        print(f"ggscope: {escape_text(exc)}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
