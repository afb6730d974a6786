"""Finding and loading the .ksy specs shipped with ggscope.

The specs live in the repository's ``formats/`` folder, installed as the package
``ggscope.formats`` so a non-editable install has them too.  Each spec is parsed and
compiled once per process.
"""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import yaml

from .model import Spec, compile_spec

__all__ = ["load_spec", "spec_path", "load_ksy_file"]

try:
    _Loader = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _Loader = yaml.SafeLoader


def spec_path(format_id: str) -> Path:
    """Path of ``formats/<format_id>.ksy`` (inside the installed package)."""
    return Path(str(resources.files("ggscope.formats").joinpath(f"{format_id}.ksy")))


def load_ksy_file(path: str | Path) -> Spec:
    with open(path, encoding="utf-8") as fh:
        return compile_spec(yaml.load(fh, Loader=_Loader))


@lru_cache(maxsize=None)
def load_spec(format_id: str) -> Spec:
    return load_ksy_file(spec_path(format_id))
