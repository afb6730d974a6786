"""What several rules read of one file is read once per file, not once per rule.

Why: ten rules walk the metadata entries and six ask for the templates; each walk is
small, but per file they added up to a tenth of what ``validate`` costs beyond ``info``
on a vocabulary file (issue 27 item 3).  The answers are held to a fresh walk.
"""
from __future__ import annotations

import sys
from pathlib import Path

import ggscope
from ggscope.ksy.node import Node
from ggscope.rules import common
from ggscope.rules.templates import sources
from ggscope.validate.runner import selected_rules, validate

EXAMPLE = Path(__file__).resolve().parents[2] / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"


def test_the_metadata_entries_are_walked_once_per_file(monkeypatch):
    mf = ggscope.open(str(EXAMPLE))
    walks = []
    real = Node.children

    def children(node):
        if node.name == "metadata_kv" and sys._getframe(1).f_code.co_name == "kv_nodes":
            walks.append(node)                  # a walk for the rules (finding locations are apart)
        return real.fget(node)

    monkeypatch.setattr(Node, "children", property(children))
    validate(mf, selected_rules())
    assert len(walks) == 1
    monkeypatch.setattr(Node, "children", real)
    fresh = ggscope.open(str(EXAMPLE))
    assert [kv.path for kv in common.kv_nodes(mf)] == [kv.path for kv in common.kv_nodes(fresh)]


def test_the_templates_are_gathered_once_per_file():
    mf = ggscope.open(str(EXAMPLE))
    first = sources.templates(mf)
    assert sources.templates(mf) is first
    assert [t.key for t in first] == [k for k in mf.metadata if k == "tokenizer.chat_template"
                                      or k.startswith("tokenizer.chat_template.")]
