"""Studies and renders kept across processes (rules.templates.kept over core.stamped).

A second validate of a file whose template was seen before gives the same findings and
imports no Jinja2; a damaged or foreign record is computed past, never trusted.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ggscope.rules.templates import kept, sources

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "ggscope" / "examples" / "TinyLlama-Test-164K-v1.0-Q8_0.gguf"
_PROBE = ("import json, sys\n"
          "from ggscope.validate.runner import validate_file\n"
          "found = sorted((f.code, f.message) for f in validate_file(sys.argv[1]) if f.code.startswith('GG13'))\n"
          "print(json.dumps({'jinja2': 'jinja2' in sys.modules, 'found': found}))\n")


def _probe(cache: Path, cached: str = "1") -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache), GGSCOPE_CACHE=cached, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", _PROBE, str(EXAMPLE)], env=env, capture_output=True, text=True,
                         check=True, timeout=120)
    return json.loads(out.stdout)


def test_a_template_seen_before_costs_no_jinja2(tmp_path):
    first, second = _probe(tmp_path), _probe(tmp_path)
    assert first["jinja2"] and not second["jinja2"]
    assert first["found"] == second["found"] and first["found"]          # the example has GG1308/GG1309
    assert _probe(tmp_path, cached="0")["jinja2"]                        # GGSCOPE_CACHE=0: always a first look
    records = list((tmp_path / "ggscope" / "templates").glob("*.json"))
    assert sorted(p.name.split("-")[0] for p in records) == ["renders", "study"]


def test_damaged_or_foreign_records_are_computed_past(tmp_path, monkeypatch):
    monkeypatch.setenv("GGSCOPE_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    text = "{% for m in messages %}{{ m.content.__class__ }}{% endfor %}"
    sources.clear_caches()
    want = sources.issues_of(text)
    assert any(i.fatal for i in want)
    (record,) = (tmp_path / "ggscope" / "templates").glob("study-*.json")
    for damage in ('{"stamp": 1', json.dumps({"stamp": kept._stamp(), "value": {"issues": [[1]], "literals": 0}}),
                   json.dumps({"stamp": "another jinja2", "value": {"issues": [], "literals": ""}})):
        record.write_text(damage)
        sources.clear_caches()
        assert sources.issues_of(text) == want, damage
    sources.clear_caches()


@pytest.mark.parametrize("text", ["{{ 'x' }}\udcff", "\u202e{{ bos_token }}"])
def test_keys_may_hold_any_text(tmp_path, monkeypatch, text):
    monkeypatch.setenv("GGSCOPE_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    kept.put("study", text, {"issues": [], "literals": text})
    assert kept.get("study", text) == {"issues": [], "literals": text}


def test_records_sharing_a_file_name_are_never_each_others(tmp_path, monkeypatch):
    """Two keys whose checksums name one file evict each other: a miss, never the other
    key's record."""
    monkeypatch.setenv("GGSCOPE_CACHE", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(kept, "_path", lambda kind, key: str(tmp_path / f"{kind}-same.json"))
    kept.put("study", "template A", {"issues": [], "literals": "A"})
    assert kept.get("study", "template A") == {"issues": [], "literals": "A"}
    kept.put("study", "template B", {"issues": [], "literals": "B"})
    assert kept.get("study", "template A") is None
    assert kept.get("study", "template B") == {"issues": [], "literals": "B"}
