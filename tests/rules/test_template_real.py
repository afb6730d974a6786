"""No false error and no unjustified warning on the chat templates llama.cpp ships.

llama.cpp keeps the real templates of the models it supports in
``models/templates/*.jinja``; ``python -m tools.fetch_llama_templates`` extracts them
from llama-cpp-python 0.3.36's sdist into ``.cache/llama-templates`` (CI does it in
``.ci/run``), or ``GGSCOPE_LLAMA_TEMPLATES`` names the folder.  Each is put into the bundled example as its ``tokenizer.chat_template``
and validated with the template family: none may get an error, and none a warning from
the security codes (the warnings about special tokens the tiny example vocabulary lacks
are about that file, not the template).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import ggscope
from ggscope.rules.templates import RULES as TEMPLATE_RULES
from ggscope.validate.runner import validate
from template_corpus import SECURITY_CODES, Case, write_case

REPO = Path(__file__).resolve().parents[2]
# GGSCOPE_LLAMA_TEMPLATES names another folder (e.g. llama.cpp's own models/templates)
TEMPLATES = Path(os.environ.get("GGSCOPE_LLAMA_TEMPLATES", REPO / ".cache" / "llama-templates"))
EXAMPLE = REPO / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
FILES = sorted(TEMPLATES.glob("*.jinja"))


@pytest.mark.slow
@pytest.mark.skipif(not FILES, reason=f"no templates in {TEMPLATES}: run python -m tools.fetch_llama_templates")
def test_real_templates_get_no_error_and_no_security_warning(tmp_path):
    assert len(FILES) >= 70            # 70 templates (the folder's 71st file is its README.md)
    bad = {}
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        gguf = write_case(EXAMPLE, Case(path.stem, "real", "none", template=text), tmp_path / f"{path.stem}.gguf")
        for f in validate(ggscope.open(str(gguf)), TEMPLATE_RULES):
            if f.severity.value == "error" or (f.severity.value == "warning" and f.code in SECURITY_CODES):
                bad.setdefault(path.name, []).append(f"{f.code} {f.message}")
    assert not bad, bad
