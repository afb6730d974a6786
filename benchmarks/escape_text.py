"""What the one escaping (``ggscope.core.escape``) costs, side by side with its peers.

Why: every output passes file text through it once - ``info --json`` the whole
vocabulary through ``json_safe``, the text outputs every name through ``escape_text`` -
so its cost is stated against what the output costs anyway, measured in one run:

* ``json_safe`` over the JSON text of the Llama-3-sized header of ``open_header.py``
  (408,000 strings), against ``json.dumps`` of the same values (the serialisation it
  follows): as the file is (ASCII: ``str.isascii``), with a "Ġ" in every string (printable
  text that is not ASCII, as byte-level BPE vocabularies are: ``str.isprintable``) and
  with a no-break space in every string (unprintable: the regular expression runs);
* ``escape_text`` of each of the 128,256 tokens, against ``repr`` of each (the C-coded
  escaping Python has, and which ggscope must not show: it prints ``'\\udcff'``).

Ratios below 1 mean the escaping costs less than its peer.  The load average is printed
with the numbers: on a shared machine, compare ratios of one run, not times of two.

Run: python benchmarks/escape_text.py [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import median_ms  # noqa: E402
from open_header import write_header  # noqa: E402



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args(argv)
    import ggscope
    from ggscope.core.escape import escape_text, json_safe
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "llama3-header.gguf"
        write_header(path)
        mf = ggscope.open(path)
        strings = {k: list(v.tolist()) for k, v in mf.metadata.items() if hasattr(v, "tolist")
                   and len(v) and isinstance(v[0], str)}
    tokens = strings["tokenizer.ggml.tokens"]
    n = sum(len(v) for v in strings.values())
    print(f"load average {os.getloadavg()[0]:.2f}; {n:,} strings, {len(tokens):,} tokens; median of {args.runs}")
    for label, values in (("as in the file (ASCII)", strings),
                          ("a Ġ in each (byte-level BPE)", {k: ["Ġ" + s for s in v] for k, v in strings.items()}),
                          ("a no-break space in each", {k: [s + "\u00a0" for s in v] for k, v in strings.items()})):
        dumped = json.dumps(values, ensure_ascii=False)
        t_dump = median_ms(lambda: json.dumps(values, ensure_ascii=False), args.runs)
        t_safe = median_ms(lambda: json_safe(dumped), args.runs)
        print(f"json_safe, {label:<30} {t_safe:8.1f} ms   json.dumps (peer) {t_dump:8.1f} ms   "
              f"ratio {t_safe / t_dump:.2f}")
    t_esc = median_ms(lambda: [escape_text(s) for s in tokens], args.runs)
    t_repr = median_ms(lambda: [repr(s) for s in tokens], args.runs)
    print(f"escape_text of each token              {t_esc:8.1f} ms   repr (peer)       {t_repr:8.1f} ms   "
          f"ratio {t_esc / t_repr:.2f}")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
