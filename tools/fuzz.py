"""Fuzz every command over mutated seeds of every format, each case in a child under limits.

Why: the parsers hold against mutated files, but what acts on a file's claims after
parsing -- the forward pass, ``--deep``, the tokenizer, the renderers, the browser --
broke on single changed integers and strings (issue 23).  This script is the fuzzing
that found those, kept in the repository: it mutates seeds of every format and runs
every command on each case, so a regression shows as a reproducible case id.

Seeds: the bundled examples (ggscope/examples), the project's fixtures (fixtures/*.gguf,
fixtures/malicious), and the real files of ``../shared/fixtures`` when present (or
``--shared DIR``).  Mutations, chosen by ``random.Random("<seed>:<index>")`` so a case id
``S:I`` always makes the same bytes: truncation, appended bytes, an integer field of the
parsed node tree (header fields, counts, lengths, hyperparameters) set to a huge or
edge value (count inflation), a string field overwritten with Rich/Textual markup and
terminal control sequences (the file name then carries markup too), random byte flips.

Each case runs in a child forked from this process (ggscope, numpy and textual are
imported once, before forking) under RLIMIT_AS, RLIMIT_CPU and RLIMIT_FSIZE, with a
wall-clock timeout as the last resort; the child runs, in process: info, info --json,
validate (text, json, sarif, github), validate --deep, stats, diff against the seed,
run (two tokens), and the browser headless (Textual's ``run_test`` pilot).  Reported:

* ``traceback`` -- an exception escaped a command (``main`` must turn every failure into
  an exit status and one line); ``signal`` -- the child died of a signal other than the
  limits'; ``limit`` -- the CPU, memory or file-size limit was hit; ``timeout``;
* ``disagreement`` -- ``ggscope.open()`` calls the file damaged and ``validate`` reports
  no error, or ``info`` exits 2 exactly when ``open()`` does not call it damaged;
* ``unescaped`` -- a raw C0/C1 control character reached text output (only newline and
  tab are ours); ``json`` -- ``--json``/sarif output that is not valid UTF-8 JSON.

Usage::

    python -m tools.fuzz --cases 200 --seed 1          # a longer run
    python -m tools.fuzz --case 1:17 --keep out/        # one case again, its file kept
    python -m tools.fuzz --cases 50 --json              # machine-readable problems

Exit status: 0 no problem, 1 problems found, 2 usage error.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from ggscope.core.confined import confined
from tools.fuzz_cases import DEFAULT_SHARED, REPO, find_seeds, mutate

MAX_OUTPUT = 64 << 20            # bytes of a command's output checked (JSON beyond it: not parsed)
# ggscope's own text output: newline and tab; everything else below 0x20 (and C1) is file text
_RAW_CONTROL = {c for c in range(0x20) if c not in (0x09, 0x0A)} | {0x7F} | set(range(0x80, 0xA0))


@dataclass(frozen=True)
class Problem:
    case: str          # "S:I": python -m tools.fuzz --case S:I reproduces it
    seed_file: str
    mutation: str
    command: str
    kind: str          # traceback, signal, limit, timeout, disagreement, unescaped, json
    detail: str


# ---- one case, in a child ------------------------------------------------------------------

COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("info", ("info", "{f}")),
    ("info --json", ("info", "--json", "{f}")),
    ("validate", ("validate", "--color", "never", "{f}")),
    ("validate --format json", ("validate", "--format", "json", "{f}")),
    ("validate --format sarif", ("validate", "--format", "sarif", "{f}")),
    ("validate --format github", ("validate", "--format", "github", "{f}")),
    ("validate --deep", ("validate", "--deep", "{f}")),
    ("stats", ("stats", "{f}")),
    ("diff", ("diff", "{seed}", "{f}")),
    ("run", ("run", "{f}", "--tokens", "1,2", "--top-k", "3")),
)


@contextmanager
def _captured(out_path: str):
    """fds 1 and 2, and ``sys.stdout``/``sys.stderr`` (under pytest they are not the fds),
    on two files while the block runs; yields them (read them after)."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(out_path + ".1", "w+b") as out, open(out_path + ".2", "w+b") as err:
        saved = os.dup(1), os.dup(2)
        streams = sys.stdout, sys.stderr
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)      # strict, as a terminal's
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
        try:
            yield out, err
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _command(argv: list[str], out_path: str) -> tuple[int | str, bytes, bytes]:
    """``ggscope.cli.main(argv)`` with fds 1 and 2 on files: (status or 'traceback: ...', out, err)."""
    import traceback
    from ggscope.cli import main
    with _captured(out_path) as (out, err):
        try:
            status: int | str = main(argv)
        except SystemExit as exc:
            status = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - what the fuzzer is looking for
            status = "traceback: " + traceback.format_exc(limit=-3).strip().replace("\n", " | ")
    with open(out_path + ".1", "rb") as out, open(out_path + ".2", "rb") as err:
        return status, out.read(MAX_OUTPUT + 1), err.read(MAX_OUTPUT + 1)


def _browser(path: str) -> str | None:
    """Open the browser headless, visit every tab; the error text, or None."""
    from ggscope.tui.app import GGScopeApp

    async def flow():
        app = GGScopeApp(path, auto_stats=False)
        async with app.run_test(size=(100, 30)) as pilot:
            for key in ("2", "3", "down", "4", "5", "1"):
                await pilot.press(key)
            await pilot.pause()
        return app
    try:
        asyncio.run(flow())          # a file it cannot show ends it with status 2: not a problem
    except BaseException as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"[:400]
    return None


def _check_output(name: str, out: bytes, err: bytes) -> list[tuple[str, str]]:
    found = []
    for stream, text in (("stdout", out), ("stderr", err)):
        bad = sorted({c for c in text if c in _RAW_CONTROL and c < 0x80})
        try:
            decoded = text.decode("utf-8")
            bad += sorted({ord(c) for c in decoded if 0x80 <= ord(c) < 0xA0})
        except UnicodeDecodeError:
            decoded = None
        if bad and not (name.endswith("--format json") or name.endswith("sarif") or name == "info --json"):
            found.append(("unescaped", f"{stream} holds raw control characters {[hex(c) for c in bad[:6]]}"))
        if (stream == "stdout" and name in ("info --json", "validate --format json", "validate --format sarif")
                and out and len(out) <= MAX_OUTPUT):
            try:
                json.loads(decoded if decoded is not None else out.decode("utf-8"))
            except (ValueError, UnicodeDecodeError) as exc:
                found.append(("json", f"not valid UTF-8 JSON: {exc}"[:200]))
    return found


def _child(path: str, seed_path: str, browser: bool, write) -> None:
    """Runs in the forked child: every command, one JSON line per finding on ``write``."""
    import ggscope
    damaged: bool | None
    try:
        damaged = ggscope.open(path).damage is not None
    except Exception:  # noqa: BLE001 - an unknown format: info and validate must refuse it
        damaged = None
    statuses: dict[str, int | str] = {}
    for name, argv in COMMANDS:
        write({"start": name})
        args = [a.format(f=path, seed=seed_path) for a in argv]
        status, out, err = _command(args, path)
        statuses[name] = status
        if isinstance(status, str):
            write({"kind": "traceback", "command": name, "detail": status[-600:]})
        for kind, detail in _check_output(name, out, err):
            write({"kind": kind, "command": name, "detail": detail})
        if name == "validate --format json" and isinstance(status, int) and damaged is not None:
            try:
                found = json.loads(out) if out.strip() else []
            except ValueError:
                found = []
            errors = sorted({f["code"] for f in found if f.get("severity") == "error"})
            if damaged and not (errors or status == 2):
                write({"kind": "disagreement", "command": name,
                       "detail": f"open() says damaged, validate reports no error: "
                                 f"{sorted({f['code'] for f in found})[:8]}"})
    if damaged is not None and isinstance(statuses.get("info"), int) and (statuses["info"] == 2) != damaged:
        write({"kind": "disagreement", "command": "info",
               "detail": f"open() damaged={damaged}, info exit {statuses['info']}"})
    if browser:
        write({"start": "browser"})
        with _captured(path):            # Textual prints its own tracebacks there
            error = _browser(path)
        if error is not None:
            write({"kind": "traceback", "command": "browser", "detail": error})


@dataclass(frozen=True)
class Limits:
    memory: int = 2 << 30         # bytes of address space above the parent's
    cpu: int = 60                 # seconds of CPU per case
    wall: float = 180.0           # seconds of wall clock per case (the last resort)
    fsize: int = 256 << 20        # bytes per output file


def run_case(case: str, seeds: list[Path], limits: Limits, browser: bool = True,
             keep: Path | None = None) -> list[Problem]:
    """Make case ``S:I``'s file and run every command on it in a forked child."""
    s, _, i = case.partition(":")
    rng = random.Random(f"{s}:{i}")
    seed_path = seeds[int(i) % len(seeds)]
    data, desc, name = mutate(seed_path.read_bytes(), seed_path.name, rng)
    with tempfile.TemporaryDirectory(prefix="ggscope-fuzz-") as tmp:
        path = os.path.join(keep or tmp, f"{s}-{i}-{name}")
        Path(path).write_bytes(data)
        events = _fork(path, str(seed_path), browser, limits)
    rel = os.path.relpath(seed_path, REPO)
    return [Problem(case, rel, desc, e.get("command", "?"), e["kind"], e.get("detail", "")) for e in events]


def _fork(path: str, seed_path: str, browser: bool, limits: Limits) -> list[dict]:
    def work(write) -> None:
        pipe = lambda e: write((json.dumps(e) + "\n").encode())  # noqa: E731
        try:
            _child(path, seed_path, browser, pipe)
        except BaseException as exc:  # noqa: BLE001 - the fuzzer's own failure, reported
            pipe({"kind": "fuzzer", "detail": f"{type(exc).__name__}: {exc}"})

    out = confined(work, memory=limits.memory, cpu=limits.cpu, cpu_grace=5, wall=limits.wall, fsize=limits.fsize)
    events, current = [], "start"
    for line in out.data.split(b"\n"):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:                               # the last line, cut off by a kill
            continue
        if "start" in event:
            current = event["start"]
        else:
            events.append(event)
    if out.killed:
        events.append({"kind": "timeout", "command": current, "detail": f"over {limits.wall:.0f} s of wall clock"})
    elif out.signal is not None:
        kind = "limit" if out.signal in (signal.SIGXCPU, signal.SIGXFSZ) else "signal"
        events.append({"kind": kind, "command": current, "detail": f"killed by {signal.Signals(out.signal).name}"})
    for e in events:
        if e["kind"] == "traceback" and "MemoryError" in e.get("detail", ""):
            e["kind"] = "limit"
    return events


def run(n_cases: int, seed: int, seeds: list[Path], limits: Limits, browser_every: int = 1,
        progress=None) -> list[Problem]:
    """Cases ``seed:0`` .. ``seed:n_cases-1``, every command on each (the browser on every
    ``browser_every``-th, 0: never); their problems."""
    _preload()
    problems: list[Problem] = []
    for i in range(n_cases):
        if progress is not None:
            progress(i, n_cases)
        problems += run_case(f"{seed}:{i}", seeds, limits, bool(browser_every) and i % browser_every == 0)
    return problems


def _preload() -> None:
    """Import what every case uses before forking, so no child pays for it."""
    import numpy  # noqa: F401

    import ggscope.cli  # noqa: F401
    from ggscope.commands import info, run as run_cmd, stats, validate  # noqa: F401
    try:
        import ggscope.tui.app  # noqa: F401
    except ImportError:
        pass


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="examples:\n  python -m tools.fuzz --cases 200 --seed 1\n"
                                       "  python -m tools.fuzz --case 1:17 --keep out/")
    p.add_argument("--cases", type=int, default=50, help="how many cases (default 50)")
    p.add_argument("--seed", type=int, default=0, help="the run's seed: cases are SEED:0, SEED:1, ...")
    p.add_argument("--case", help="run one case again, e.g. 0:17")
    p.add_argument("--keep", type=Path, help="with --case: keep the mutated file in this directory")
    p.add_argument("--shared", type=Path, default=DEFAULT_SHARED, help="real files to use as seeds, if present")
    p.add_argument("--no-browser", action="store_true", help="skip the headless browser")
    p.add_argument("--memory-mib", type=int, default=2048, help="address space per case above the parent's")
    p.add_argument("--cpu", type=int, default=60, help="CPU seconds per case")
    p.add_argument("--json", action="store_true", help="print the problems as JSON lines")
    args = p.parse_args(argv)
    if args.cases < 0 or (args.keep is not None and args.case is None):
        p.error("--cases must not be negative; --keep needs --case")
    if args.case is not None and not all(part.isdigit() for part in args.case.partition(":")[::2]):
        p.error(f"--case wants SEED:INDEX, e.g. 0:17 (got {args.case!r})")
    seeds = find_seeds(args.shared)
    limits = Limits(memory=args.memory_mib << 20, cpu=args.cpu)
    t0, c0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    if args.case:
        if args.keep is not None:
            args.keep.mkdir(parents=True, exist_ok=True)
        _preload()
        problems = run_case(args.case, seeds, limits, not args.no_browser, args.keep)
        n = 1
    else:
        problems = run(args.cases, args.seed, seeds, limits, 0 if args.no_browser else 1,
                       lambda i, n: print(f"\r{i}/{n}", end="", file=sys.stderr))
        n = args.cases
    c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    for pr in problems:
        print(json.dumps(asdict(pr), ensure_ascii=True) if args.json else
              f"{pr.case} {pr.kind} [{pr.command}] {pr.seed_file}: {pr.mutation}: "
              f"{pr.detail!r}")
    cpu = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)
    print(f"\n{n} cases over {len(seeds)} seeds, {len(COMMANDS) + (not args.no_browser)} commands each: "
          f"{len(problems)} problems; {cpu:.1f} s CPU in the children, "
          f"{time.monotonic() - t0:.0f} s wall, load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
