"""When a rule can have something to say, decided once per file for all the rules that ask.

Why: ``validate`` runs about ninety rules on every file.  A rule that judges only a
projector, only a file with a chat template or only a run given ``--manifest`` used to be
called on every other file too, to return at its first line: a rule object, a context
and a generator per rule and file, whatever the file holds.  Now a rule names its
precondition (``Rule.only_if``, a key of ``PRECONDITIONS``); the runner
(``validate.runner``) evaluates each precondition the selected rules name once per file
and calls only the rules whose precondition holds, so a rule that cannot apply costs a
set lookup.  The rule keeps its own guard; a precondition is its first line, lifted:
it holds whenever the rule could yield a finding (tests/rules/test_preconditions.py runs
every gated rule on every fixture whose precondition fails and expects nothing).

Contract: ``PRECONDITIONS[name](mf, options) -> bool``, from the same functions the rules'
guards call (``rules.sidecar.kind_of``, ``model.summary.chat_templates``, once per file: ``rules.common.chat_templates_of``); never raises
for a damaged file.
"""
from __future__ import annotations

from collections.abc import Callable

from ggscope.rules.common import chat_templates_of, per_file, tensor_rows

__all__ = ["PRECONDITIONS"]


def _kind(mf) -> str | None:
    """``rules.sidecar.kind_of``, once per file (five preconditions ask)."""
    def make() -> str | None:
        from ggscope.rules.sidecar import kind_of  # the sidecar family imports the rule base, which names this table
        return kind_of(mf)
    return per_file(mf, "sidecar_kind", make)


def _loader_issues(mf) -> list:
    from ggscope.rules import loader_engine  # the loader family's engine: imported with the rules, not here
    return loader_engine.predict(mf).issues


def _sidecar_is(kind: str) -> Callable[..., bool]:
    return lambda mf, options: _kind(mf) == kind


PRECONDITIONS: dict[str, Callable[..., bool]] = {
    # a --manifest was given (rules.manifest's _verdict: None without one)
    "manifest": lambda mf, options: bool(options.get("manifest")),
    # llama.cpp's loader, as rules.loader_engine predicts it, stops at something (the loader rules
    # each name the issues of their kind; the prediction is made once per file either way)
    "loader-issues": lambda mf, options: mf.damage is None and bool(_loader_issues(mf)),
    # the parse stopped somewhere (ModelFile.damage): the damage rules name its one owner (common.damage_kind)
    "damaged": lambda mf, options: mf.damage is not None,
    # the file holds a tensor info that parsed completely (rules.common.tensor_rows, ModelFile.tensors):
    # the rules that read only those (a vocabulary alone holds none)
    "tensors": lambda mf, options: bool(mf.tensors) or len(tensor_rows(mf)) > 0,
    # the file holds a chat template (rules.templates.sources.templates: one per key)
    "template": lambda mf, options: bool(chat_templates_of(mf)),
    # the file is a sidecar (rules.sidecar.kind_of), or a sidecar of one kind
    "sidecar": lambda mf, options: _kind(mf) is not None,
    "projector": _sidecar_is("projector"),
    "adapter": _sidecar_is("adapter"),
    "control-vector": _sidecar_is("control-vector"),
    "imatrix": _sidecar_is("imatrix"),
}
