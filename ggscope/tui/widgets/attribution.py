"""``AttributionPane``: what quantization cost over a text, in the diff screen.

Why: ``ggscope diff A B --corpus TEXT [--attribute]`` prints llama-perplexity's
KL-divergence report and, on its first chunk, where the error comes from (issue 28
item 3); with ``--tui`` the same report is this tab of the diff screen.  It only lays
out a ``forward.perplexity.KLDReport`` (the numbers are computed and checked there):
one headline (mean KLD ± its uncertainty, the perplexity ratio, same top p, chunks),
the per-layer table (hidden-state relative error and cosine against the base, the
error each layer's output carries) and, when asked with ``--attribute``, the tensors
ranked by the KLD that giving each the base's weights recovers.  Before the report it
says how far the evaluation is; when the evaluation fails, why (one line).
"""
from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from ggscope.tui.format import file_text
from ggscope.tui.widgets.plain_table import PlainTable

__all__ = ["AttributionPane", "headline", "layer_rows", "tensor_rows"]


def headline(rep: Any) -> str:
    """The report's key figures on one line, named as llama-perplexity names them."""
    kld, kld_u = rep.kld_mean
    ratio, ratio_u = rep.ppl_ratio
    top, top_u = rep.same_top_p_pct
    return (f"Mean KLD {kld:.6f} ± {kld_u:.6f} · Mean PPL(Q)/PPL(base) {ratio:.6f} ± {ratio_u:.6f} · "
            f"Same top p {top:.3f} ± {top_u:.3f} % · {rep.n_chunk} chunk{'s' * (rep.n_chunk != 1)} "
            f"of {rep.n_ctx}")


def layer_rows(rep: Any) -> list[tuple[str, str, str]]:
    return [(str(e.layer), f"{e.rel_error:.6f}", f"{e.cosine:.6f}") for e in rep.layers]


def tensor_rows(rep: Any) -> list[tuple[str, str, str, str]]:
    return [(str(i), file_text(g.name), f"{g.recovered:.6f}", f"{g.kld:.6f}")
            for i, g in enumerate(rep.tensors, 1)]


class AttributionPane(Vertical):
    """See the module docstring: ``show_progress``, then ``show_report`` or ``show_error``."""

    DEFAULT_CSS = """
    AttributionPane { height: 1fr; }
    AttributionPane #kld-headline { height: auto; padding: 0 1; }
    AttributionPane Horizontal { height: 1fr; }
    AttributionPane PlainTable { width: 1fr; height: 1fr; }
    AttributionPane #kld-tensors { width: 2fr; }
    """

    def __init__(self, attribute: bool, **kw) -> None:
        super().__init__(**kw)
        self.attribute = attribute
        self.report: Any = None

    def compose(self):
        yield Static(Text("evaluating both models over the text …", style="italic"), id="kld-headline")
        with Horizontal():
            yield PlainTable(id="kld-layers", cursor_type="row", zebra_stripes=True)
            yield PlainTable(id="kld-tensors", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.query_one("#kld-layers", PlainTable).add_columns("layer", "hidden rel error", "cosine")
        self.query_one("#kld-tensors", PlainTable).add_columns("rank", "tensor", "KLD recovered", "KLD with base weights")

    def show_progress(self, done: int, total: int) -> None:
        if self.report is None:
            self.query_one("#kld-headline", Static).update(
                Text(f"evaluating both models over the text: chunk {done}/{total} …", style="italic"))

    def show_error(self, message: str) -> None:
        self.query_one("#kld-headline", Static).update(Text(f"no report: {file_text(message)}", style="bold red"))

    def show_report(self, rep: Any) -> None:
        self.report = rep
        self.query_one("#kld-headline", Static).update(Text(headline(rep), style="bold"))
        layers = self.query_one("#kld-layers", PlainTable)
        layers.clear()
        for row in layer_rows(rep):
            layers.add_row(*row)
        if not rep.layers:
            layers.add_row("", "no per-layer error (the base was read from a file)", "")
        tensors = self.query_one("#kld-tensors", PlainTable)
        tensors.clear()
        for row in tensor_rows(rep):
            tensors.add_row(*row)
        if not rep.tensors:
            tensors.add_row("", "tensors are ranked with --attribute" if not self.attribute
                            else "no weight matrix could be swapped", "", "")
