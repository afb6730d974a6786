"""``ggscope diff --corpus``: llama-perplexity's KL-divergence block, as text and JSON.

Why: people compare quantizations by the block ``llama-perplexity --kl-divergence``
prints, line by line; ggscope prints the same lines under the same names and the same
formats (llama.cpp as vendored in llama-cpp-python 0.3.36,
tools/perplexity/perplexity.cpp, the end of ``kl_divergence``), so the two reports can
be laid side by side or diffed.  ``as_json`` names every figure as issue 28 lists
them: ``ppl_base``, ``ppl_quant`` ({value, uncertainty}), ``ln_ppl_ratio``,
``kld_mean``, ``kld_percentiles`` ("max", "99.9", ..., "median", ..., "min"),
``dp_rms_pct``, ``same_top_p_pct``, ``n_chunk``, and the rest of the block; below it,
when both models ran, each layer's output error on the first chunk (``layers``) and,
with --attribute, the tensors ranked by the KLD their base weights recover (``tensors``).

Contract: ``plain(report) -> str`` (numbers, and notes escaped by ``core.escape``);
``as_json(report) -> dict``.
"""
from __future__ import annotations

from typing import Any

from ggscope.core.escape import escape_text, json_text
from ggscope.forward.perplexity import DP_PERCENTILES, PERCENTILES, KLDReport

__all__ = ["plain", "as_json", "KLD_LABELS", "DP_LABELS", "TOP_TENSORS"]

TOP_TENSORS = 15            # tensors listed in the text; --json lists all

# llama-perplexity's line labels for each percentile key.
KLD_LABELS = {"max": "Maximum KLD", "99.9": "99.9%   KLD", "99.0": "99.0%   KLD",
              "95.0": "95.0%   KLD", "90.0": "90.0%   KLD", "median": "Median  KLD",
              "10.0": "10.0%   KLD", "5.0": " 5.0%   KLD", "1.0": " 1.0%   KLD",
              "0.1": " 0.1%   KLD", "min": "Minimum KLD"}
DP_LABELS = {"max": "Maximum Δp", "99.9": "99.9%   Δp", "99.0": "99.0%   Δp", "95.0": "95.0%   Δp",
             "90.0": "90.0%   Δp", "75.0": "75.0%   Δp", "median": "Median  Δp",
             "25.0": "25.0%   Δp", "10.0": "10.0%   Δp", "5.0": " 5.0%   Δp", "1.0": " 1.0%   Δp",
             "0.1": " 0.1%   Δp", "min": "Minimum Δp"}


def _pair(p: tuple[float, float]) -> dict[str, float]:
    return {"value": p[0], "uncertainty": p[1]}


def as_json(r: KLDReport) -> dict[str, Any]:
    return {"n_ctx": r.n_ctx, "n_chunk": r.n_chunk, "n_scored": r.count,
            "ppl_quant": _pair(r.ppl_quant), "ppl_base": _pair(r.ppl_base),
            "cor_ln_ppl_pct": 100.0 * r.cor_ln_ppl,
            "ln_ppl_ratio": _pair(r.ln_ppl_ratio), "ppl_ratio": _pair(r.ppl_ratio),
            "ppl_diff": _pair(r.ppl_diff), "kld_mean": _pair(r.kld_mean),
            "kld_percentiles": {k: r.kld_percentiles[k] for k, _ in PERCENTILES},
            "dp_mean_pct": _pair(r.dp_mean_pct),
            "dp_percentiles_pct": {k: r.dp_percentiles_pct[k] for k, _ in DP_PERCENTILES},
            "dp_rms_pct": _pair(r.dp_rms_pct), "same_top_p_pct": _pair(r.same_top_p_pct),
            "identical": r.identical, "notes": list(r.notes),
            "layers": [{"layer": e.layer, "rel_error": e.rel_error, "cosine": e.cosine}
                       for e in r.layers],
            "tensors": [{"name": json_text(g.name), "kld": g.kld, "recovered": g.recovered}
                        for g in r.tensors]}


def plain(r: KLDReport) -> str:
    """The block as llama-perplexity prints it after its per-chunk table."""
    out = [f"KL divergence over {r.n_chunk} chunks of {r.n_ctx} tokens "
           f"({r.count} positions scored)", ""]
    out.append("====== Perplexity statistics ======")
    out.append("Mean PPL(Q)                   : %10.6f ± %10.6f" % r.ppl_quant)
    out.append("Mean PPL(base)                : %10.6f ± %10.6f" % r.ppl_base)
    out.append("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2f%%" % (100.0 * r.cor_ln_ppl))
    out.append("Mean ln(PPL(Q)/PPL(base))     : %10.6f ± %10.6f" % r.ln_ppl_ratio)
    out.append("Mean PPL(Q)/PPL(base)         : %10.6f ± %10.6f" % r.ppl_ratio)
    out.append("Mean PPL(Q)-PPL(base)         : %10.6f ± %10.6f" % r.ppl_diff)
    out += ["", "====== KL divergence statistics ======"]
    out.append("Mean    KLD: %10.6f ± %10.6f" % r.kld_mean)
    out += ["%s: %10.6f" % (KLD_LABELS[k], r.kld_percentiles[k]) for k, _ in PERCENTILES]
    out += ["", "====== Token probability statistics ======"]
    out.append("Mean    Δp: %6.3f ± %5.3f %%" % r.dp_mean_pct)
    out += ["%s: %6.3f%%" % (DP_LABELS[k], r.dp_percentiles_pct[k]) for k, _ in DP_PERCENTILES]
    out.append("RMS Δp    : %6.3f ± %5.3f %%" % r.dp_rms_pct)
    out.append("Same top p: %6.3f ± %5.3f %%" % r.same_top_p_pct)
    if r.layers:
        out += ["", "====== Per-layer error (first chunk, scored positions) ======",
                "layer   ||h_Q-h_base||/||h_base||    cosine"]
        out += ["%5d   %26.6f   %9.6f" % (e.layer, e.rel_error, e.cosine) for e in r.layers]
    if r.tensors:
        out += ["", "====== Tensors by KLD recovered with the base's weights (first chunk) ======",
                "recovered KLD   KLD then   tensor"]
        out += ["%13.6f   %8.6f   %s" % (g.recovered, g.kld, escape_text(g.name))
                for g in r.tensors[:TOP_TENSORS]]
        if len(r.tensors) > TOP_TENSORS:
            out.append(f"... {len(r.tensors) - TOP_TENSORS} more in --json")
    out += [escape_text(n) for n in r.notes]
    return "\n".join(out)
