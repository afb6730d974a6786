"""``ggscope info --json`` against the open it reports on (issue 18, item 5).

The file is the Llama-3-sized header of ``open_header.py`` (408,000 strings, 256,000
numbers in arrays, 291 tensor infos).  Timed in one process, median of N:

* open: ``ggscope.open`` alone (the peer the goal is stated against: within 3x);
* info --json: open + ``report.info.write_json`` to /dev/null (what the command does);
* before: open + a per-element conversion walk + ``json.dump`` to /dev/null (Python's
  pure-Python encoder), the way the command worked before issue 18.

Also the wall time of whole ``ggscope info`` and ``ggscope info --json`` processes.

Run: python benchmarks/info_json.py [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import median_ms  # noqa: E402
from open_header import write_header  # noqa: E402


def old_jsonable(v):
    """The conversion before issue 18: one Python call per element of every array."""
    import math
    from collections.abc import Mapping, Sequence

    import numpy as np
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, Mapping):
        return {str(k): old_jsonable(x) for k, x in v.items()}
    if hasattr(v, "tolist"):
        return [old_jsonable(x) for x in v.tolist()]
    if isinstance(v, Sequence):
        return [old_jsonable(x) for x in v]
    return str(v)



def wall(args: list[str], runs: int) -> float:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "ggscope", *args], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    import ggscope
    from ggscope.report import info as render
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llama3-header.gguf"
        write_header(path)
        ggscope.open(path)

        def new():
            with open(os.devnull, "w", encoding="utf-8") as out:
                render.write_json(ggscope.open(path), out)

        def old():
            mf = ggscope.open(path)
            obj = render.as_json(mf)
            obj["metadata"] = {k: old_jsonable(v) for k, v in mf.metadata.items()}
            with open(os.devnull, "w", encoding="utf-8") as out:
                json.dump(obj, out, ensure_ascii=False, allow_nan=False)

        t_open = median_ms(lambda: ggscope.open(path), args.runs)
        t_new = median_ms(new, args.runs)
        t_old = median_ms(old, args.runs)
        print(f"open (peer):                         {t_open:7.1f} ms")
        print(f"info --json now (open + write_json):   {t_new:7.1f} ms  = {t_new / t_open:.1f}x the open (goal <= 3x)")
        print(f"before (per-element walk + json.dump): {t_old:7.1f} ms = {t_old / t_open:.1f}x the open")
        w_info = wall(["info", str(path)], args.runs)
        w_json = wall(["info", "--json", str(path)], args.runs)
        print(f"process wall: ggscope info {w_info:.0f} ms, ggscope info --json {w_json:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
