"""The cases of ``tools.fuzz``: seeds of every format, and one mutation per case id.

Why a module of its own: making a case's bytes (this module) and running every command
on them under limits (``tools.fuzz``) are two jobs.  A case id ``S:I`` seeds
``random.Random("S:I")`` and picks seed ``I`` modulo the number of seeds, so the same id
makes the same bytes wherever the same seed files are present.

Mutations: truncation; appended bytes; bit flips in the first 8 KiB; an integer field
of the seed's parsed node tree (header fields, counts, lengths, hyperparameters) set to
a huge or edge value -- the "one integer changed" of issue 23; a string field
overwritten with Rich/Textual markup or terminal control sequences, the file name then
carrying markup too in about a third of those cases.
"""
from __future__ import annotations

import random
from pathlib import Path

__all__ = ["REPO", "DEFAULT_SHARED", "find_seeds", "mutate"]

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SHARED = REPO / ".." / "shared" / "fixtures"
SEED_MAX_BYTES = 4 << 20          # seeds above this are skipped: a case must stay cheap
MAX_NODES = 4000                  # nodes of a seed's tree looked at for mutation targets
BIG = (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 1 << 32, 1 << 62, (1 << 63) - 1, (1 << 64) - 1)
PAYLOADS = ("[/bold]", "[link=http://169.254.169.254/]x[/link]", "[@click=app.quit]t",
            "\x1b]0;owned\x07", "\x1b[31mred\x1b[0m", "a\nb\rc", "\u202eevil", "\x9b31m",
            "[bold red]", "\x00\x07\x08\x7f")


def find_seeds(shared: Path | None) -> list[Path]:
    """Every seed file, sorted so that a seed number names the same file on every machine
    with the same fixtures."""
    out = sorted((REPO / "ggscope" / "examples").glob("*")) + sorted((REPO / "fixtures").glob("*.gguf"))
    out += sorted((REPO / "fixtures" / "malicious").glob("*"))[:12]
    if shared is not None and shared.is_dir():
        for sub in sorted(p for p in shared.iterdir() if p.is_dir()):
            files = sorted(p for p in sub.rglob("*") if p.is_file() and p.suffix in (".gguf", ".bin")
                           and not p.name.startswith(("logits", "ref-", "expected")))
            out += files[:6]
    return [p for p in out if p.is_file() and 0 < p.stat().st_size <= SEED_MAX_BYTES]


def _targets(data: bytes, name: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(integer fields as (start, width), string fields as (start, end)) of the parsed seed."""
    import ggscope
    ints, strs = [], []
    try:
        mf = ggscope.open_bytes(data, name)
    except Exception:  # noqa: BLE001 - an unparseable seed just has no targets
        return ints, strs
    todo, seen = [mf.root], 0
    while todo and seen < MAX_NODES:
        node = todo.pop()
        seen += 1
        width = (node.end or node.start) - node.start
        if isinstance(node.value, int) and not isinstance(node.value, bool) and width in (4, 8):
            ints.append((node.start, width))
        elif isinstance(node.value, str) and width >= 4:
            strs.append((node.start, node.end))
        try:
            todo.extend(reversed(list(node.children)[:64]))
        except Exception:  # noqa: BLE001
            pass
    return ints, strs


def mutate(data: bytes, name: str, rng: random.Random) -> tuple[bytes, str, str]:
    """(mutated bytes, description, file name) for one case."""
    ints, strs = _targets(data, name)
    kinds = ["truncate", "append", "flip"] + ["integer"] * 3 * bool(ints) + ["string"] * 2 * bool(strs)
    kind = rng.choice(kinds)
    b = bytearray(data)
    out_name = name
    if kind == "truncate":
        at = rng.randrange(len(b))
        del b[at:]
        desc = f"truncate at {at}"
    elif kind == "append":
        extra = bytes(rng.randrange(256) for _ in range(rng.choice((1, 7, 64, 4096))))
        b += extra
        desc = f"append {len(extra)} bytes"
    elif kind == "flip":
        at = [rng.randrange(min(len(b), 8192)) for _ in range(rng.randint(1, 4))]
        for a in at:
            b[a] ^= 1 << rng.randrange(8)
        desc = f"flip bits at {at}"
    elif kind == "integer":
        start, width = rng.choice(ints)
        value = rng.choice(BIG) & ((1 << (8 * width)) - 1)
        b[start:start + width] = value.to_bytes(width, "big" if rng.random() < 0.1 else "little")
        desc = f"integer at {start} ({width} bytes) = {value}"
    else:
        start, end = rng.choice(strs)
        payload = rng.choice(PAYLOADS).encode("utf-8", "surrogatepass")
        span = end - start
        at = start + (span - len(payload) if span > len(payload) + 8 else min(8, span - 1))
        piece = payload[:end - at]
        b[at:at + len(piece)] = piece
        desc = f"string at {at} = {piece!r}"
        if rng.random() < 0.34:      # sometimes the name too (the rest test the content)
            out_name = "[link=http:x][b]" + name      # a file name cannot hold "/"
    return bytes(b), desc, out_name
