"""First paint of the browser, measured from process start in a real terminal (tmux).

The goal (issue 17): the window is on the screen in under 1 s for any file, and
``ggscope --version`` / ``--help`` answer in under 0.3 s.  Tests never assert times
(the machine is shared); this script reports them.

How: one detached tmux session of the requested size; for each file the pane is
respawned with ``python -m ggscope FILE`` and ``tmux capture-pane`` is polled every
few milliseconds.  Two moments are reported, both from the respawn (process start):

  paint   the footer's key bindings are on the screen (the window is up, keys work);
  filled  the summary line shows the tensor count (the first screen's facts are shown).

And one check: once the summary's tensor count and the overview's contents line are on
the screen they must stay there (no blank gap between the launcher's pre-frame,
``ggscope.tui.preframe``, and Textual's first frame, nor later): the pane is polled until
a second after the window is up and every capture that lacks a fact already seen counts;
the table gives the runs where that happened.

The peer (issue 26.9) is a bare Textual app - a Static and a Footer with a ``q Quit``
binding, nothing else - started the same way in the same session: its window time is
the floor any Textual program pays (interpreter, Textual's import, the first frame).
Each file's "filled" time is reported against it as a ratio; the goal is 1.5x.  The runs
are interleaved (bare app, this checkout, the other one, then again), so a change in
the load falls on all of them alike.  The load average is printed with the table: the
machine is shared.  A GGUF file's facts come from the header peek (``model.peek``),
painted by the launcher before Textual is imported (``tui.preframe``) and repainted in
Textual's first frame, so "filled" can come before "window".

Files: the bundled example (a 180 KB llama, Q8_0), the largest vocabulary file in
../shared/fixtures/llama-vocab (3.8 MiB of tokens and merges) and a sparse 20 GB GGUF
written with gguf-py (a header, then 20 GiB of holes).  Median of ``--runs``.

Run: python benchmarks/first_paint.py [--runs 3] [--size 120x40] [--against CHECKOUT]
(``--against`` measures another checkout too, e.g. ``git archive`` of an older commit,
and prints the ratio.)
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
VOCAB_DIR = ROOT.parent / "shared" / "fixtures" / "llama-vocab"
PAINT = re.compile(r"\bq\s+Quit\b|\^q\s+Quit")      # the footer
FILLED = re.compile(r"\b\d+ tensors?\b")            # the summary line: the tensor count
CONTENTS = re.compile(r"contents\s+\d+ metadata keys?, \d+ tensors?")   # the overview's facts


def sparse_20gb(path: Path) -> Path:
    import numpy as np
    import gguf
    big = 20 * 2**30
    w = gguf.GGUFWriter(path, "llama")
    w.add_tensor_info("huge.weight", [big // 4], np.dtype(np.float32), big, raw_dtype=gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    w.close()
    os.truncate(path, -(-path.stat().st_size // 32) * 32 + big)
    return path


BARE_APP = """\
from textual.app import App
from textual.widgets import Footer, Static


class Bare(App):
    BINDINGS = [("q", "quit", "Quit")]

    def compose(self):
        yield Static("1 tensors")
        yield Footer()


Bare().run()
"""


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", "ggscope-bench", *args], check=True, capture_output=True,
                          text=True).stdout


def first_paint(root: Path, session: str, path: Path, timeout: float = 30.0,
                cmd: str | None = None, hold: float = 1.0,
                watch: tuple[re.Pattern, ...] = (FILLED, CONTENTS)) -> tuple[float, float, int]:
    """(window, filled, vanished) of one start: the moments the footer and the summary's
    tensor count are first on the screen, and how many captures lacked one of ``watch``
    (the summary's count, the overview's contents line) after it had appeared - polled
    until ``hold`` seconds after the window is up (Textual's first frames over the
    pre-frame, and the parse's repaint)."""
    cmd = cmd or f"env PYTHONPATH={root} {sys.executable} -m ggscope {path}"
    tmux("respawn-pane", "-k", "-t", session, "clear")
    time.sleep(0.3)
    t0 = time.perf_counter()
    tmux("respawn-pane", "-k", "-c", str(root), "-t", session, cmd)     # cwd = the checkout measured
    paint = filled = None
    vanished, seen = 0, set()
    while time.perf_counter() - t0 < timeout:
        screen = tmux("capture-pane", "-p", "-t", session)
        now = time.perf_counter() - t0
        if paint is None and PAINT.search(screen):
            paint = now
        if filled is None and FILLED.search(screen):
            filled = now
        shown = {p for p in watch if p.search(screen)}
        vanished += bool(seen - shown)      # a fact was on the screen and is not now
        seen |= shown
        if paint is not None and filled is not None and now > paint + hold:
            break
        time.sleep(0.005)
    tmux("send-keys", "-t", session, "q")
    time.sleep(0.3)
    return (paint if paint is not None else float("nan"), filled if filled is not None else float("nan"),
            vanished)


def command_time(root: Path, args: list[str], runs: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(root))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ggscope", *args], env=env, capture_output=True, check=True,
                       cwd=root)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--size", default="120x40", help="terminal COLSxROWS")
    ap.add_argument("--against", type=Path, default=None, metavar="CHECKOUT",
                    help="also measure another ggscope checkout (an older commit), side by side")
    args = ap.parse_args(argv)
    roots = [("this", ROOT)] + ([("against", args.against.resolve())] if args.against else [])
    cols, rows = args.size.split("x")
    for name, root in roots:
        print(f"{name}: {root}")

    def row(label: str, values: list[float], goal: str) -> None:
        cells = "".join(f"{v * 1e3:10.0f} ms" for v in values)
        ratio = f"   against/this {values[1] / values[0]:4.1f}" if len(values) == 2 and values[0] > 0 else ""
        print(f"  {label:<34}{cells}{ratio}" + (f"   goal {goal}" if goal else ""))

    print(f"{'':<36}" + "".join(f"{name:>13}" for name, _ in roots))
    for flag in ("--version", "--help"):
        row(f"ggscope {flag}", [command_time(root, [flag], 5) for _, root in roots], "< 300 ms")
    if shutil.which("tmux") is None:
        print("tmux is not installed: no first-paint figures")
        return 0
    with tempfile.TemporaryDirectory() as d:
        files = [("bundled example", EXAMPLE)]
        vocab = sorted(VOCAB_DIR.glob("*.gguf"), key=lambda p: p.stat().st_size)
        if vocab:
            files.append((f"vocabulary {vocab[-1].stat().st_size / 2**20:.1f} MiB", vocab[-1]))
        else:
            print(f"{VOCAB_DIR} is absent: no vocabulary figure")
        files.append(("sparse 20 GB", sparse_20gb(Path(d) / "big.gguf")))
        session = "fp"
        tmux("new-session", "-d", "-s", session, "-x", cols, "-y", rows, "sleep 1000")
        tmux("set-option", "-t", session, "remain-on-exit", "on")
        try:
            print(f"first paint in tmux {cols}x{rows}, from process start, median of {args.runs} "
                  f"(window: the footer is drawn; filled: the summary shows the tensor count); "
                  f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            bare_py = Path(d) / "bare_app.py"
            bare_py.write_text(BARE_APP)
            bare_cmd = f"{sys.executable} {bare_py}"
            for label, path in files:
                bares: list[float] = []
                results: dict[str, list] = {name: [] for name, _ in roots}
                for _ in range(args.runs):      # interleaved: a change in the load hits every program alike
                    bares.append(first_paint(ROOT, session, path, cmd=bare_cmd, hold=0.0, watch=(FILLED,))[0])
                    for name, root in roots:
                        results[name].append(first_paint(root, session, path))
                bare = statistics.median(bares)
                row(f"{label}: window", [statistics.median(r[0] for r in results[n]) for n, _ in roots], "< 1000 ms")
                filled = [statistics.median(r[1] for r in results[n]) for n, _ in roots]
                row(f"{label}: filled", filled, "")
                row("  bare Textual app, same run", [bare] * len(roots), "")
                print(f"  {'  filled / bare app':<34}" + "".join(f"{v / bare:13.2f}" for v in filled)
                      + "   goal <= 1.50")
                print(f"  {'  runs where the facts vanished':<34}"
                      + "".join(f"{sum(r[2] > 0 for r in results[n]):>7}/{len(results[n])}  " for n, _ in roots)
                      + "   goal 0 (once shown, they stay)")
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            subprocess.run(["tmux", "-L", "ggscope-bench", "kill-server"], capture_output=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
