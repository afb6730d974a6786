"""What every command does the same way: opening files, reporting errors, output mode.

Errors are one paragraph on stderr naming file, offset and field path; they map to
exit status 2.  ``error`` is where such a paragraph leaves: it escapes it once
(``core.escape.escape_text``), whatever file text it quotes.  Colour and rich tables only when stdout is a terminal (and
``NO_COLOR`` is not set) unless ``--color`` says otherwise.
"""
from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from ggscope.core.errors import GGScopeError, UnknownFormat, UnreadableFile
from ggscope.core.escape import escape_text

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["expand_files", "open_or_report", "damage_message", "add_color_argument", "use_rich", "console", "error",
           "forward_module"]


def error(msg: str) -> None:
    print(f"ggscope: {escape_text(msg)}", file=sys.stderr)


def expand_files(patterns: list[str]) -> tuple[list[str], list[str]]:
    """Every command's file arguments: a glob pattern (``**`` recurses) becomes the files
    it matches, sorted; a path or URL stays itself (a file really named ``[x].gguf`` too).
    Returns (files, patterns that matched nothing)."""
    import glob
    files, missing = [], []
    for pat in patterns:
        if "://" not in pat and glob.has_magic(pat) and not os.path.lexists(pat):
            hits = sorted(glob.glob(pat, recursive=True))
            (files.extend(hits) if hits else missing.append(pat))
        else:
            files.append(pat)
    return files, missing


def damage_message(mf: ModelFile) -> str:
    d = mf.damage
    assert d is not None
    path = mf.path                   # escaped where the paragraph is printed (``error``)
    return (f"{path}: damaged {mf.format} file: parsing stopped at offset {d.start} ({d.start:#x}) "
            f"in field {d.path or '/'}: {d.error}. Everything before that offset "
            f"parsed; run `ggscope validate {path}` for every finding.")


def open_or_report(path: str, *, allow_damage: bool = False) -> ModelFile | None:
    """Open ``path`` (a shard opens its whole split model); on failure print one paragraph
    and return None."""
    from ggscope.model.split import open_model  # start-up: numpy only when this command needs it
    try:
        mf = open_model(path)
    except UnreadableFile as exc:
        error(f"cannot read {exc}")
        return None
    except UnknownFormat as exc:
        error(str(exc))
        return None
    except GGScopeError as exc:
        error(str(exc))
        return None
    if mf.damage is not None and not allow_damage:
        error(damage_message(mf))
        return None
    return mf


def add_color_argument(parser: Any) -> None:
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour and tables: auto (only on a terminal), always, never")


def use_rich(args: Any) -> bool:
    mode = getattr(args, "color", "auto")
    if mode == "always":
        return True
    if mode == "never":
        return False
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def console(args: Any):
    from rich.console import Console
    return Console(force_terminal=getattr(args, "color", "auto") == "always" or None,
                   no_color=bool(os.environ.get("NO_COLOR")), highlight=False)


def forward_module(mf: ModelFile):
    """``forward.module_for(mf)`` for ``run`` and ``diff --logits``; a file the forward
    pass has no name for is refused under the architecture it states (``model.summary``:
    chatglm2, not 'unknown')."""
    from ggscope import forward as F  # start-up: numpy only when a forward pass is asked for
    from ggscope.model.summary import summarize  # start-up: one-shot commands load only what they use
    try:
        return F.module_for(mf)
    except F.UnsupportedArchitecture as exc:
        stated = summarize(mf).architecture if exc.arch == "unknown" else None
        if not stated:
            raise
        raise F.UnsupportedArchitecture(mf.path, stated, mf.format) from None
