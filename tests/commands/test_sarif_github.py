"""``ggscope validate`` outputs (SARIF 2.1.0, GitHub annotations), --jobs, config, rules/explain.

The files with findings are written independently of ggscope: a GGUF v1 file by
tests/gguf_writers (ggml refuses v1: "GGUFv1 is no longer supported") and, when the
shared fixtures are present, ggml's own test-gguf files with ggml's verdicts.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from ggscope.cli import main
from ggscope.report import github
from ggscope.rules import RULES, Finding, Severity
from gguf_writers import KV, T, TensorSpec, V, write_gguf_py, write_gguf_v1_v2


@pytest.fixture(autouse=True)
def _plain_env(monkeypatch, tmp_path):
    """No GitHub auto-detection and no pyproject.toml config unless a test sets them."""
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def v1_file(tmp_path) -> Path:
    kvs = [KV("general.architecture", V.STRING, "llama")]
    tensors = [TensorSpec("tok", T.F32, np.ones((2, 4), np.float32))]
    return write_gguf_v1_v2(tmp_path / "old.gguf", 1, kvs, tensors)


@pytest.fixture
def good_files(tmp_path) -> list[Path]:
    out = []
    for i in range(4):
        p = tmp_path / f"good{i}.gguf"
        write_gguf_py(p, kvs=[KV("general.architecture", V.STRING, "llama")],
                      tensors=[TensorSpec(f"t{i}", T.F32, np.full((2, 8), i, np.float32))])
        out.append(p)
    return out


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(map(str, argv)))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_sarif_structure(v1_file, capsys):
    code, out, _ = _run(capsys, "validate", "--format", "sarif", "--select", "GG1", "old.gguf")
    assert code == 1
    doc = json.loads(out)
    assert doc["version"] == "2.1.0" and "sarif-2.1.0" in doc["$schema"]
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ggscope" and driver["version"] and driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert set(ids) >= {r.code for r in RULES} and len(ids) == len(set(ids))
    for d in driver["rules"]:
        assert {"id", "name", "shortDescription", "fullDescription", "help", "defaultConfiguration"} <= set(d)
        assert d["defaultConfiguration"]["level"] in ("error", "warning", "note")
        assert d["shortDescription"]["text"] and d["help"]["text"]
    gg101 = driver["rules"][ids.index("GG101")]
    assert "What it checks:" in gg101["help"]["text"]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["GG102"]
    res = results[0]
    assert driver["rules"][res["ruleIndex"]]["id"] == "GG102"
    assert res["level"] == "error" and "no longer supported" in res["message"]["text"]
    loc = res["locations"][0]
    assert loc["physicalLocation"]["artifactLocation"]["uri"] == "old.gguf"
    # GGUF header: magic (4 bytes) then the uint32 version at byte 4
    assert loc["physicalLocation"]["region"] == {"byteOffset": 4, "byteLength": 4}
    assert loc["logicalLocations"][0]["fullyQualifiedName"] == "header/version"


def test_sarif_levels_and_relative_uri(tmp_path, capsys, shared_fixtures):
    d = shared_fixtures / "ggml" / "handcrafted"
    code, out, _ = _run(capsys, "validate", "--format", "sarif", "--select", "GG1",
                        str(d / "HEADER_BAD_MAGIC.gguf"), str(d / "DATA_SUCCESS.seed43405.gguf"))
    assert code == 1
    (res,) = json.loads(out)["runs"][0]["results"]
    assert res["ruleId"] == "GG101"
    uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file://") and uri.endswith("HEADER_BAD_MAGIC.gguf")   # outside the cwd


def test_github_annotation_format_and_escaping(v1_file, capsys):
    code, out, err = _run(capsys, "validate", "--format", "github", "--select", "GG1", "old.gguf")
    assert code == 1
    (line,) = out.splitlines()
    assert line.startswith("::error file=old.gguf,title=GG102 unsupported-version::")
    assert line.endswith("(header/version, bytes 4-8)")
    assert "1 file checked" in err
    f = Finding("GG999", Severity.WARNING, "dir,a:b%.gguf", "50% bad\r\nnext, line: x", "a/b", 1, 3,
                rule="some-rule")
    assert github.line(f) == ("::warning file=dir%2Ca%3Ab%25.gguf,title=GG999 some-rule::"
                              "50%25 bad%0D%0Anext, line: x (a/b, bytes 1-3)")
    info = Finding("GG998", Severity.INFO, "x.gguf", "m", rule="r")
    assert github.line(info) == "::notice file=x.gguf,title=GG998 r::m"


def test_github_selected_by_environment(v1_file, capsys, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    _, out, _ = _run(capsys, "validate", "--select", "GG1", "old.gguf")
    assert out.startswith("::error ")
    _, out, _ = _run(capsys, "validate", "--format", "text", "--select", "GG1", "old.gguf")
    assert out.startswith("old.gguf:4: error GG102")


def test_jobs_output_equals_serial(good_files, v1_file, capsys):
    files = [*good_files[:2], v1_file, *good_files[2:], "missing.gguf"]
    serial = _run(capsys, "validate", "--format", "json", *files)
    parallel = _run(capsys, "validate", "--format", "json", "--jobs", "2", *files)
    assert serial[0] == parallel[0] == 2            # the missing path wins
    assert serial[1] == parallel[1]
    found = json.loads(serial[1])
    assert "GG102" in [f["code"] for f in found]
    assert "missing.gguf" in parallel[2]
    assert _run(capsys, "validate", "--jobs", "0", "old.gguf")[0] == 2


def test_config_defaults_and_overrides(v1_file, tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.ggscope]\nselect = ["GG1"]\nformat = "json"\njobs = 2\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    os.chdir(sub)                                     # found from a subdirectory too
    code, out, _ = _run(capsys, "validate", "../old.gguf")
    assert code == 1 and [f["code"] for f in json.loads(out)] == ["GG102"]
    code, out, _ = _run(capsys, "validate", "--format", "text", "--ignore", "GG102", "../old.gguf")
    assert code == 0 and out == ""                   # flags override the config
    (tmp_path / "pyproject.toml").write_text('[tool.ggscope]\nselct = ["GG1"]\n')
    code, _, err = _run(capsys, "validate", "../old.gguf")
    assert code == 2 and "selct" in err
    (tmp_path / "pyproject.toml").write_text('[tool.ggscope\n')
    assert _run(capsys, "validate", "../old.gguf")[0] == 2
    (tmp_path / "pyproject.toml").write_text('[tool.ggscope]\njobs = "many"\n')
    assert _run(capsys, "validate", "../old.gguf")[0] == 2


def test_config_ignore_silences(v1_file, tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.ggscope]\nignore = ["unsupported-version"]\n')
    code, out, _ = _run(capsys, "validate", "--select", "GG1", "old.gguf")
    assert code == 0 and out == ""


def test_rules_and_explain(capsys):
    code, out, _ = _run(capsys, "rules")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["code", "name", "severity", "family"] and lines[0].split()[-1] == "source"
    assert len(lines) == len(RULES) + 1 and any(l.startswith("GG101 ") for l in lines)
    code, out, _ = _run(capsys, "rules", "--json", "--family", "structure")
    rows = json.loads(out)
    assert code == 0 and rows and all(r["family"] == "structure" for r in rows)
    assert {"code", "name", "severity", "family", "summary", "source"} <= set(rows[0])
    assert all(r["source"] for r in rows)
    assert _run(capsys, "rules", "--family", "nope")[0] == 2
    code, out, _ = _run(capsys, "explain", "GG101")
    assert code == 0 and out.startswith("GG101 bad-magic") and "Why it matters:" in out
    assert "source: " in out and "gguf.cpp" in out
    assert _run(capsys, "explain", "bad-magic")[1] == out
    code, out, err = _run(capsys, "explain", "GG999")
    assert code == 2 and out == ""
    code, _, err = _run(capsys, "explain", "bad-magik")
    assert code == 2 and "GG101" in err


def test_unreadable_files_count_in_the_summary_and_in_sarif(good_files, tmp_path, capsys):
    (tmp_path / "empty.gguf").mkdir()                     # a directory: not a file
    code, _, err = _run(capsys, "validate", good_files[0], "empty.gguf", "absent.gguf")
    assert code == 2 and "1 file checked, 2 unreadable:" in err
    code, out, _ = _run(capsys, "validate", "--format", "sarif", good_files[0], "empty.gguf", "absent.gguf")
    (inv,) = json.loads(out)["runs"][0]["invocations"]
    assert code == 2 and inv["executionSuccessful"] is False
    notes = inv["toolExecutionNotifications"]
    assert [n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for n in notes] == \
        ["empty.gguf", "absent.gguf"]
    assert all(n["level"] == "error" and n["message"]["text"] for n in notes)
    _, out, _ = _run(capsys, "validate", "--format", "sarif", good_files[0])
    assert json.loads(out)["runs"][0]["invocations"] == [{"executionSuccessful": True,
                                                          "toolExecutionNotifications": []}]
