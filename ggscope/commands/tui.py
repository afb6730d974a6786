"""``ggscope [tui] [FILE]``: browse a file interactively (a Textual app).

With no FILE the bundled example model opens.  A damaged file still opens (the tree
shows the error node, the findings pane lists it); a file that cannot be read or is
no ggml-family format prints one paragraph on stderr and exits 2 -- checked from its
first bytes before the window opens, so the window never flashes for a wrong path.
The file itself is parsed inside the app, after the window is up.  Without a terminal
(stdin or stdout not a TTY) no browser starts: ``info``'s text is printed instead.
"""
from __future__ import annotations

from pathlib import Path

from ggscope.commands.common import error
from ggscope.core.errors import GGScopeError, UnknownFormat

HELP = "browse a file interactively (the default when the first argument is a file)"
DESCRIPTION = """\
Open an interactive browser: the structure tree, metadata, tensors (with statistics
computed in the background) and the validator's findings beside a hex view that
highlights the selected field's bytes.  Without FILE, the bundled example model opens."""
EPILOG = """\
examples:
  ggscope model.gguf            same as `ggscope tui model.gguf`
  ggscope                       open the bundled example (a tiny llama, Q8_0)

keys: 1-5 switch panes (overview, metadata, tensors, findings, structure),
g go to offset, / search (key, tensor, text or x:47 47), n next match, c copy the
value, [ / ] page through a long value, s / x start / cancel statistics, home / end
first / last byte, + / - pane width, z zoom the focused pane, q quit.  Mouse works too.
exit status: 0 ok, 2 unreadable or unknown file."""

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def add_arguments(p) -> None:
    p.add_argument("file", nargs="?", default=None,
                   help=f"model file (default: the bundled example {EXAMPLE.name})")


def _refusal(path: str) -> str | None:
    """Why ``path`` cannot be shown (unreadable, or no known format), from its head."""
    import os
    if "://" in path:             # not a local file: the app's loader opens it (or says why not)
        return None
    from ggscope.model.detect import detect, known_formats  # start-up: one-shot commands load only what they use
    from ggscope.source.local import check_regular_file  # start-up: one-shot commands load only what they use
    try:
        check_regular_file(path)          # a FIFO or device would block the open below
    except GGScopeError as exc:
        return f"cannot read {exc}"
    try:
        with open(path, "rb") as fh:       # read-only, like ByteSource; no numpy before the window
            size = os.fstat(fh.fileno()).st_size
            head = fh.read(4096)
    except IsADirectoryError:
        return f"cannot read {path}: is a directory"
    except OSError as exc:
        return f"cannot read {path}: {exc.strerror or exc}"
    if detect(head, size) is None:
        return str(UnknownFormat(path, head, known_formats()))
    return None


def _has_terminal() -> bool:
    """A browser needs a terminal to draw on and keys to read."""
    import sys
    return all(getattr(s, "isatty", lambda: False)() for s in (sys.stdin, sys.stdout))


def run(args) -> int:
    path = args.file or str(EXAMPLE)
    why = _refusal(path)
    if why is not None:
        error(why)
        return 2
    if not _has_terminal():
        # no terminal (a pipe, a script, CI): what `info` prints, then exit - a browser
        # would write escape codes into the pipe and wait for keys that never come
        import argparse
        from ggscope.commands import info
        error("no terminal: printing `ggscope info` (run it in a terminal to browse)")
        return info.run(argparse.Namespace(files=[path], json=False, hex=False, color="never"))
    from ggscope.core import progress  # start-up: one-shot commands load only what they use
    from ggscope.tui.run import run_app  # start-up: one-shot commands load only what they use
    with progress.use(None):            # the browser draws its own progress, not bars on stderr
        return run_app(path)
