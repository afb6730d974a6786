"""The header and metadata part of ``diff``: added, removed and changed keys.

Why: a legacy llama.cpp file's header words are compared under the GGUF keys llama.cpp's
converter gave them, values compare across formats by value (the header's int32 and
GGUF's uint32 are one number) and arrays item by item; that logic is the metadata job
of ``diff`` and nothing else (``ggscope.diff.compare`` documents the contract).

Contract: ``diff_header(a, b)`` -> ``tuple[HeaderChange, ...]`` (format, version,
endian, alignment); ``diff_metadata(a, b)`` -> ``MetadataDiff`` of ``b`` against ``a``.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ggscope.diff.results import FIRST_ITEMS, HeaderChange, ItemDiff, MetaChange, MetadataDiff, MetaEntry
from ggscope.model.modelfile import ModelFile

__all__ = ["diff_header", "diff_metadata"]


def _is_array(v: Any) -> bool:
    return isinstance(v, (list, tuple, np.ndarray)) or (hasattr(v, "tolist") and hasattr(v, "__len__")
                                                        and not isinstance(v, (str, bytes)))


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _scalar_equal(x: Any, y: Any) -> bool:
    x, y = _py(x), _py(y)
    if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
        return True
    if type(x) is not type(y) and {type(x), type(y)} != {int, float}:
        return False
    try:
        return bool(x == y)
    except Exception:
        return False


def _as_items(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.reshape(-1) if v.ndim > 1 else v
    if hasattr(v, "tolist") and not isinstance(v, (list, tuple)):
        return v.tolist()
    return v


def _array_change(key: str, ta: str, tb: str, va: Any, vb: Any) -> MetaChange | None:
    ia, ib = _as_items(va), _as_items(vb)
    la, lb = len(ia), len(ib)
    n = min(la, lb)
    if isinstance(ia, np.ndarray) and isinstance(ib, np.ndarray) and ia.dtype.kind in "biuf" \
            and ib.dtype.kind in "biuf":
        x, y = ia[:n], ib[:n]
        with np.errstate(invalid="ignore"):
            neq = x != y
        if x.dtype.kind == "f" and y.dtype.kind == "f":
            neq &= ~(np.isnan(x) & np.isnan(y))
        idx = np.flatnonzero(neq)
        n_diff = int(idx.size)
        first = tuple(ItemDiff(int(i), _py(ia[i]), _py(ib[i])) for i in idx[:FIRST_ITEMS])
    else:
        n_diff, first_l = 0, []
        for i in range(n):
            if _is_array(ia[i]) or _is_array(ib[i]):
                same = _array_change("", "", "", ia[i], ib[i]) is None
            else:
                same = _scalar_equal(ia[i], ib[i])
            if not same:
                n_diff += 1
                if len(first_l) < FIRST_ITEMS:
                    first_l.append(ItemDiff(i, _py(ia[i]), _py(ib[i])))
        first = tuple(first_l)
    if n_diff == 0 and la == lb and ta == tb:
        return None
    return MetaChange(key, ta, tb, is_array=True, len_a=la, len_b=lb, n_differing=n_diff, first=first)


def _by_gguf_key(mf: ModelFile, other_format: str) -> dict[str, str]:
    """GGUF key -> the file's own key, for every metadata key of ``mf``.  A legacy word
    without a GGUF key (n_mult) is named as in the other file when that is legacy too."""
    from ggscope.model.summary import LEGACY_FORMATS, gguf_key, is_legacy_llama  # lazy: 5 more modules only when used
    arch = str(mf.metadata.get("general.architecture", "llama"))
    llama = is_legacy_llama(mf)
    out = {}
    for k in mf.metadata:
        g = gguf_key(mf.format, k, arch) if llama else k
        if g == k and mf.format in LEGACY_FORMATS and other_format in LEGACY_FORMATS \
                and k.startswith(mf.format + "."):
            g = other_format + k[len(mf.format):]
        out[g] = k
    return out


def diff_metadata(a: ModelFile, b: ModelFile) -> MetadataDiff:
    """Added, removed and changed keys of ``b`` relative to ``a``."""
    ka_of, kb_of = _by_gguf_key(a, a.format), _by_gguf_key(b, a.format)
    ma, mb = a.metadata, b.metadata
    ta, tb = a.metadata_types, b.metadata_types
    cross = a.format != b.format

    def own(name: str, key: str) -> str:
        return "" if name == key else name
    added = tuple(MetaEntry(k, tb.get(kb_of[k], "?"), mb[kb_of[k]], own(kb_of[k], k)) for k in kb_of if k not in ka_of)
    removed = tuple(MetaEntry(k, ta.get(ka_of[k], "?"), ma[ka_of[k]], own(ka_of[k], k)) for k in ka_of
                    if k not in kb_of)
    changed = []
    for k, name_a in ka_of.items():
        if k not in kb_of:
            continue
        name_b = kb_of[k]
        va, vb, typ_a, typ_b = ma[name_a], mb[name_b], ta.get(name_a, "?"), tb.get(name_b, "?")
        names = {"key_a": own(name_a, k), "key_b": own(name_b, k)}
        if _is_array(va) or _is_array(vb):
            if _is_array(va) and _is_array(vb):
                ch = _array_change(k, typ_a, typ_b, va, vb)
                if ch is not None:
                    changed.append(ch)
            else:
                changed.append(MetaChange(k, typ_a, typ_b, a=va, b=vb, **names))
        elif (typ_a != typ_b and not cross) or not _scalar_equal(va, vb):
            changed.append(MetaChange(k, typ_a, typ_b, a=_py(va), b=_py(vb), **names))
    return MetadataDiff(added, removed, tuple(changed))


def diff_header(a: ModelFile, b: ModelFile) -> tuple[HeaderChange, ...]:
    out = []
    for f in ("format", "version", "endian", "alignment"):
        va, vb = getattr(a, f), getattr(b, f)
        if va != vb:
            out.append(HeaderChange(f, va, vb))
    return tuple(out)
