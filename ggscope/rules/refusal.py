"""Whether llama.cpp's loader refuses a file, as one line: the gate before a forward pass.

Why: ``ggscope run`` and the deep rule GG1003 act on what a file
claims -- its block count, head counts, widths -- and build layers, caches and tables
from those numbers.  llama.cpp's ``llama_model_load`` checks the same claims against
each other and against the tensors before it builds anything, and refuses the file
when they do not hold; the loader rules (``ggscope.rules.loader``, GG11xx) predict that
verdict.  A forward pass on a file llama.cpp refuses computes nothing anyone runs, and
its claims are exactly the ones nothing backs (``llama.block_count = 2**31`` with two
blocks of tensors), so it is refused here first, with the loader's own words.

Contract: ``loader_refusal(mf)`` returns ``None`` when the loader rules find nothing
(also for formats and architectures they do not predict: the forward modules then bound
their own work by the tensors present), else one line naming the first issue in
llama.cpp's order -- the stage at which its loader stops -- and the rule that reports
it, e.g. ``llama.cpp's loader refuses the file: n > N_MAX: 2147483648 > 512 for key
llama.feed_forward_length (GG1105 hparam-invalid)``.  The prediction is the loader
rules' own, computed once per file (``loader_engine.predict``).
"""
from __future__ import annotations

from ggscope.core.escape import escape_text
from ggscope.rules import loader, loader_engine

__all__ = ["loader_refusal"]

# issue kind -> "GGxxxx name" of the loader rule that reports it
_RULE_OF_KIND = {r.kind: f"{r.code} {r.name}" for r in loader.RULES if getattr(r, "kind", "")}


def loader_refusal(mf) -> str | None:
    """One line when llama.cpp's loader refuses ``mf`` (see the module docstring)."""
    if mf.damage is not None or mf.format != "gguf":
        return None
    issues = loader_engine.predict(mf).issues
    if not issues:
        return None
    first = issues[0]
    rule = _RULE_OF_KIND.get(first.kind, "GG11xx")
    more = f"; {len(issues) - 1} more loader findings" if len(issues) > 1 else ""
    return (f"llama.cpp's loader refuses the file: {escape_text(first.message)} "
            f"({rule}{more})")
