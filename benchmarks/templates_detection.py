"""Detection and false findings of the template checks, side by side with three peers.

Why: issue 24 asks how many hostile templates and metadata texts ggscope catches, at
what severity, and how many real templates it flags wrongly - next to the scanners
people use for the same job, on the same files.

Files:
* the corpus ``tests/rules/template_corpus.py`` (families x variants, each the bundled
  example with one change), written to a temporary folder;
* llama.cpp's real chat templates (``--llama-templates``, default
  ``.cache/llama-templates``: ``python -m tools.fetch_llama_templates``), each put into
  the bundled example as its ``tokenizer.chat_template``.

Verdicts: ggscope - the worst severity among the security codes (``SECURITY_CODES``:
the vocabulary warnings GG1308/GG1309 are about the tiny example file); c4nary - WARN
or FAIL; modelaudit - warning or critical; hayward - above info (the definitions of
``../shared/fixtures/templates/MANIFEST.md``).  Each peer runs alone on each file with
telemetry off and ``--timeout`` seconds; a timeout or crash counts as "not flagged".
Peers come from a separate virtual environment (``--peers-bin``, e.g. a venv's bin
folder holding c4nary, modelaudit and hayward); without it only ggscope runs.

Run: python benchmarks/templates_detection.py --peers-bin PEERS_VENV/bin [--out result.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "rules"))

from template_corpus import CASES, SECURITY_CODES, Case, write_case  # noqa: E402

EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
_RANK = {"none": 0, "info": 0, "warning": 1, "error": 2}
ENV = {**os.environ, "DO_NOT_TRACK": "1", "PROMPTFOO_DISABLE_TELEMETRY": "1", "MODELAUDIT_TELEMETRY": "0",
       "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"}


def ggscope_verdict(path: Path) -> str:
    import ggscope
    from ggscope.rules.templates import RULES
    from ggscope.validate.runner import validate
    sev = max((f.severity.value for f in validate(ggscope.open(str(path)), RULES) if f.code in SECURITY_CODES),
              key=_RANK.get, default="none")
    return "none" if sev == "info" else sev


def _run(argv: list[str], timeout: float) -> str | None:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=ENV)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return r.stdout


def _json(text: str | None):
    if not text:
        return None
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        return None


def c4nary(bin_dir: Path, path: Path, timeout: float) -> bool:
    d = _json(_run([str(bin_dir / "c4nary"), "scan", str(path), "--json", "--fail-on", "none"], timeout))
    return bool(d) and any(f.get("severity") in ("WARN", "FAIL") and not f.get("suppressed") for f in d.get("findings", []))


def modelaudit(bin_dir: Path, path: Path, timeout: float) -> bool:
    d = _json(_run([str(bin_dir / "modelaudit"), "scan", str(path), "--format", "json", "--no-cache"], timeout))
    return bool(d) and any(i.get("severity") in ("warning", "critical") for i in d.get("issues", []))


def hayward(bin_dir: Path, path: Path, timeout: float) -> bool:
    d = _json(_run([str(bin_dir / "hayward"), "scan", str(path), "--format", "json", "--fail-on", "never"], timeout))
    return bool(d) and any(f.get("severity") not in ("info", None) for f in d.get("findings", []))


PEERS = {"c4nary": c4nary, "modelaudit": modelaudit, "hayward": hayward}


def judge(path: Path, peers_bin: Path | None, timeout: float) -> dict:
    row = {"ggscope": ggscope_verdict(path)}
    if peers_bin is not None:
        for name, fn in PEERS.items():
            row[name] = fn(peers_bin, path, timeout)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers-bin", type=Path, help="bin folder of a venv with c4nary, modelaudit and hayward")
    ap.add_argument("--llama-templates", type=Path, default=REPO / ".cache" / "llama-templates")
    ap.add_argument("--timeout", type=float, default=90.0)
    ap.add_argument("--out", type=Path, help="write every verdict as JSON here")
    args = ap.parse_args(argv)
    rows = {"corpus": [], "real": []}
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            p = write_case(EXAMPLE, case, Path(tmp) / f"{case.name}.gguf")
            rows["corpus"].append({"case": case.name, "family": case.family, "expected": case.expected,
                                   **judge(p, args.peers_bin, args.timeout)})
            print(f"corpus {case.name}: {rows['corpus'][-1]}", file=sys.stderr, flush=True)
        for t in sorted(args.llama_templates.glob("*.jinja")):
            p = write_case(EXAMPLE, Case(t.stem, "real", "none", template=t.read_text(encoding="utf-8")),
                           Path(tmp) / f"real-{t.stem}.gguf")
            rows["real"].append({"case": t.name, **judge(p, args.peers_bin, args.timeout)})
            print(f"real {t.name}: {rows['real'][-1]}", file=sys.stderr, flush=True)
    tools = ["ggscope", *(PEERS if args.peers_bin else [])]
    print(f"load average {os.getloadavg()[0]:.2f}; ggscope cells: caught as error/warning; peers: flagged")
    print(f"{'family':<20} {'expected':<8} {'n':>3}  " + "  ".join(f"{t:>12}" for t in tools))
    fam = defaultdict(list)
    for r in rows["corpus"]:
        fam[(r["family"], r["expected"])].append(r)
    for (family, expected), rs in fam.items():
        cells = []
        for t in tools:
            if t == "ggscope":
                e = sum(r["ggscope"] == "error" for r in rs)
                w = sum(r["ggscope"] == "warning" for r in rs)
                cells.append(f"{e}E+{w}W")
            else:
                cells.append(str(sum(bool(r[t]) for r in rs)))
        print(f"{family:<20} {expected:<8} {len(rs):>3}  " + "  ".join(f"{c:>12}" for c in cells))
    if rows["real"]:
        n = len(rows["real"])
        cells = []
        for t in tools:
            if t == "ggscope":
                cells.append(f"{sum(r['ggscope'] == 'error' for r in rows['real'])}E+"
                             f"{sum(r['ggscope'] == 'warning' for r in rows['real'])}W")
            else:
                cells.append(str(sum(bool(r[t]) for r in rows["real"])))
        print(f"{'real templates':<20} {'none':<8} {n:>3}  " + "  ".join(f"{c:>12}" for c in cells))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
