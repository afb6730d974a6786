"""``ggscope validate`` in-process: exit codes and the JSON contract."""
from __future__ import annotations

import json

from ggscope.cli import main


def test_exit_codes_and_json(shared_fixtures, tmp_path, capsys):
    d = shared_fixtures / "ggml" / "handcrafted"
    assert main(["validate", "--select", "GG1", str(d / "DATA_SUCCESS.seed43405.gguf")]) == 0
    capsys.readouterr()
    assert main(["validate", "--format", "json", "--select", "GG1", str(d / "HEADER_BAD_VERSION_1.gguf")]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [f["code"] for f in out] == ["GG102"]
    assert set(out[0]) == {"code", "severity", "file", "message", "path", "start", "end"}
    assert out[0]["path"] == "header/version" and out[0]["start"] == 4
    assert main(["validate", str(tmp_path / "missing.gguf")]) == 2
    assert main(["validate", "--format", "nope", "x"]) == 2
    assert main(["validate", "--select", "GG1", str(d / "KV_BAD_TYPE.*.gguf")]) == 1
    text = capsys.readouterr().out.splitlines()
    assert len(text) == 3 and all(" error GG104 [invalid-value-type] " in t for t in text)
