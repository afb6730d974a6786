"""Rule preconditions (``Rule.only_if``, ``rules.preconditions``): a rule that cannot apply
to a file is not called on it, and skipping it never drops a finding.

Why: ``validate`` paid a call, a context and a generator for each of ~90 rules on every
file, most of which returned at their first line (issue 27 item 3).  What must hold: a
precondition is only ever false where its rule would have found nothing - checked here by
running every gated rule on every file of the project's and the shared fixtures whose
precondition fails, with and without ``--base``.
"""
from __future__ import annotations

import glob

import gguf
import numpy as np
import pytest

from conftest import FIXTURES, SHARED_FIXTURES
from ggscope.model.open import open as open_file
from ggscope.rules import RULES, CheckContext
from ggscope.rules.preconditions import PRECONDITIONS
from ggscope.validate import runner

GATED = [r for r in RULES if r.only_if is not None]


def _files() -> list[str]:
    out = []
    for root in (FIXTURES, SHARED_FIXTURES):
        out += sorted(p for p in glob.glob(str(root / "**" / "*"), recursive=True)
                      if p.endswith((".gguf", ".bin")))
    return out


def test_every_precondition_names_a_rule_and_every_gate_is_known():
    assert {r.only_if for r in GATED} == set(PRECONDITIONS)
    # the families whose rules judge only some files: manifests, templates, sidecars
    assert {r.family for r in GATED} >= {"manifest", "templates", "loader"}
    assert len(GATED) >= 20


def _sidecars(tmp_path) -> list[str]:
    """One file of each sidecar kind (``rules.sidecar.kind_of``) and one with a template:
    where the preconditions hold, so a precondition that failed there would be seen."""
    out = []
    for name, arch, kv in (("mmproj.gguf", "clip", {}), ("cvec.gguf", "controlvector", {}),
                           ("lora.gguf", "llama", {"general.type": "adapter"}),
                           ("imatrix.gguf", "llama", {"general.type": "imatrix"})):
        _write(tmp_path / name, template=None, arch=arch, strings=kv)
        out.append(str(tmp_path / name))
    _write(tmp_path / "chat.gguf", template="{{ messages[0].content.__class__ }}")
    return out + [str(tmp_path / "chat.gguf")]


def test_a_failed_precondition_hides_no_finding(tmp_path):
    base = tmp_path / "base.gguf"
    _write(base, template=None)
    manifest = tmp_path / "other.manifest"               # a manifest of another file: GG1204 says so
    manifest.write_text("xxh64     0123456789abcdef  other.gguf\n")
    opened = 0
    for path in _files() + _sidecars(tmp_path):
        try:
            mf = open_file(path)
        except Exception:  # noqa: BLE001 - a file no format reads is not validate's rules' business
            continue
        opened += 1
        try:
            for options in ({}, {"base": str(base)}, {"manifest": str(manifest)}):
                for rule_cls in GATED:
                    if PRECONDITIONS[rule_cls.only_if](mf, options):
                        continue
                    rule = rule_cls()
                    got = list(rule.check(CheckContext(mf, rule, dict(options))))
                    assert got == [], (path, rule_cls.code, got)
        finally:
            mf.close()
    assert opened >= 20 or not SHARED_FIXTURES.is_dir()


def _write(path, template: str | None, arch: str = "llama", strings: dict | None = None) -> None:
    w = gguf.GGUFWriter(str(path), arch)
    for k, v in (strings or {}).items():
        w.add_string(k, v)
    w.add_block_count(1)
    w.add_embedding_length(8)
    if template is not None:
        w.add_tokenizer_model("llama")
        w.add_token_list(["<s>", "</s>", "a"])
        w.add_chat_template(template)
    w.add_tensor("token_embd.weight", np.zeros((3, 8), np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture
def calls(monkeypatch):
    """code -> how often each gated rule's check() was called."""
    seen: dict[str, int] = {}
    for rule_cls in GATED:
        check = rule_cls.check

        def counted(self, ctx, _check=check, _code=rule_cls.code):
            seen[_code] = seen.get(_code, 0) + 1
            return _check(self, ctx)
        monkeypatch.setattr(rule_cls, "check", counted)
    return seen


TENSOR_RULES = {r.code for r in GATED if r.only_if == "tensors"}
LOADER_RULES = {r.code for r in GATED if r.only_if == "loader-issues"}


def _loader(path) -> set[str]:
    """The loader rules, when llama.cpp's loader (as predicted) stops at something in ``path``."""
    from ggscope.rules import loader_engine
    mf = open_file(str(path))
    return LOADER_RULES if mf.damage is None and loader_engine.predict(mf).issues else set()


def test_a_rule_whose_precondition_fails_is_not_called(tmp_path, calls):
    plain = tmp_path / "plain.gguf"
    _write(plain, template=None)
    mf = open_file(str(plain))
    runner.validate(mf)
    assert set(calls) == TENSOR_RULES | _loader(plain)    # no template, sidecar or --manifest: none of those ran
    calls.clear()
    vocab = tmp_path / "vocab.gguf"        # a vocabulary alone: no tensor info, no tensor rule
    w = gguf.GGUFWriter(str(vocab), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(["<s>", "</s>", "a"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.close()
    runner.validate(open_file(str(vocab)))
    assert calls == {}
    assert len(TENSOR_RULES) >= 15


def test_a_rule_whose_precondition_holds_is_called(tmp_path, calls):
    chat = tmp_path / "chat.gguf"
    _write(chat, template="{% for m in messages %}{{ m.content }}{% endfor %}")
    runner.validate(open_file(str(chat)))
    template_rules = {r.code for r in GATED if r.only_if == "template"}
    assert set(calls) == template_rules | TENSOR_RULES | _loader(chat) and all(n == 1 for n in calls.values())
    calls.clear()
    projector = tmp_path / "mmproj.gguf"
    _write(projector, template=None, arch="clip")
    runner.validate(open_file(str(projector)), options={"manifest": str(tmp_path / "absent.manifest")})
    assert set(calls) == {r.code for r in GATED if r.only_if in ("sidecar", "projector", "manifest", "tensors")} \
        | _loader(projector)


def test_a_precondition_that_raises_leaves_its_rules_to_run(tmp_path, calls, monkeypatch):
    """A hostile file must not turn a precondition's error into a traceback: undecided, the
    rules run and judge it themselves."""
    def broken(mf, options):
        raise ValueError("hostile")
    monkeypatch.setitem(PRECONDITIONS, "template", broken)
    plain = tmp_path / "plain.gguf"
    _write(plain, template=None)
    found = runner.validate(open_file(str(plain)))
    assert set(calls) == {r.code for r in GATED if r.only_if == "template"} | TENSOR_RULES | _loader(plain)
    assert "GG000" not in [f.code for f in found]


def test_the_damage_rules_run_on_a_damaged_file_only(tmp_path, calls):
    """The rules that word a stopped parse run only where the parse stopped - and there
    the one that owns the damage says so."""
    plain = tmp_path / "plain.gguf"
    _write(plain, template=None)
    runner.validate(open_file(str(plain)))
    damage_rules = {r.code for r in GATED if r.only_if == "damaged"}
    assert damage_rules >= {"GG101", "GG117", "GG118"} and not damage_rules & set(calls)
    assert set(calls) - TENSOR_RULES == _loader(plain) and len(LOADER_RULES) >= 10
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(plain.read_bytes()[:60])
    found = runner.validate(open_file(str(cut)))
    assert damage_rules <= set(calls)
    assert "GG117" in {f.code for f in found}
