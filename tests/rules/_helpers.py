"""Shared helpers of the rule tests: write a file with gguf-py and return its findings."""
from __future__ import annotations

from pathlib import Path

import ggscope
from ggscope.validate.runner import selected_rules, validate
from gguf_writers import write_gguf_py


def findings(path, *, deep: bool = False, select=()):
    mf = ggscope.open(str(path))
    out = validate(mf, selected_rules(select=select, deep=deep))
    assert not [f for f in out if f.code == "GG000"], out
    return out


def codes(path, **kw) -> set[str]:
    return {f.code for f in findings(path, **kw)}


def gguf(tmp_path: Path, name: str = "m.gguf", **kw) -> Path:
    return write_gguf_py(tmp_path / name, **kw)
