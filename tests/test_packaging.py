"""A non-editable install carries the .ksy specs and the bundled examples."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_wheel_contains_specs_and_examples(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(REPO)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("ggscope-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    for ksy in sorted((REPO / "formats").glob("*.ksy")):
        assert f"ggscope/formats/{ksy.name}" in names
    assert any(n.startswith("ggscope/examples/") and n.endswith(".gguf") for n in names)
    assert "ggscope/ksy/engine.py" in names
