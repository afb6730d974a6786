"""What ``../shared/fixtures/rwkv/MANIFEST.md`` and legacy-formats.md §6.6 say each file holds.

Why: the rwkv.cpp tests compare ggscope (and the Kaitai-compiled spec) against facts
written by others: the MANIFEST's table (version, n_embd, n_layer, file type, tensor
count, per-type counts; read from the MANIFEST at run time, never copied) and the
tensor names rwkv.cpp's loader requires per architecture (§6.6, written down here as
the documents state them).
"""
from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ManifestRow", "manifest_rows", "arch_of", "required_names", "not_quantized"]

# MANIFEST: "Architecture per name: 4v0 = RWKV v4, 5v1 = v5.1, 5v2 = v5.2, 6v0 = v6, 7v0 = v7".
ARCH_BY_TAG = {"4v0": "4", "5v1": "5.1", "5v2": "5.2", "6v0": "6", "7v0": "7"}


@dataclass(frozen=True)
class ManifestRow:
    file: str
    nbytes: int
    version: int
    n_embd: int
    n_layer: int
    file_type: int
    n_tensors: int
    type_counts: dict


def manifest_rows(rwkv_dir: Path) -> dict[str, ManifestRow]:
    """The model-file table of MANIFEST.md, by file name."""
    rows = {}
    for line in (rwkv_dir / "MANIFEST.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| tiny-rwkv-"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        file, nbytes, _sha, ver, n_embd, n_layer, ftype, n_t, counts = cells
        rows[file] = ManifestRow(file, int(nbytes), int(ver), int(n_embd), int(n_layer),
                                 int(re.match(r"\d+", ftype).group()), int(n_t),
                                 dict(ast.literal_eval(counts)))
    return rows


def arch_of(file_name: str) -> str:
    tag = re.search(r"tiny-rwkv-(\dv\d)-", file_name).group(1)
    return ARCH_BY_TAG[tag]


def required_names(arch: str, n_layer: int) -> set[str]:
    """Every parameter name rwkv.cpp's loader needs for ``arch`` (legacy-formats §6.6)."""
    names = {"emb.weight", "blocks.0.ln0.weight", "blocks.0.ln0.bias",
             "ln_out.weight", "ln_out.bias", "head.weight"}
    w = ("key", "value", "receptance", "output")
    att = {
        "4": ["time_mix_k", "time_mix_v", "time_mix_r", "time_first", "time_decay",
              *(f"{x}.weight" for x in w)],
        "5.2": ["time_mix_k", "time_mix_v", "time_mix_r", "time_mix_g", "time_faaaa",
                "time_decay", *(f"{x}.weight" for x in w), "gate.weight",
                "ln_x.weight", "ln_x.bias"],
        "6": ["time_maa_x", "time_maa_w", "time_maa_k", "time_maa_v", "time_maa_r",
              "time_maa_g", "time_maa_w1", "time_maa_w2", "time_faaaa", "time_decay",
              "time_decay_w1", "time_decay_w2", *(f"{x}.weight" for x in w),
              "gate.weight", "ln_x.weight", "ln_x.bias"],
        "7": ["x_rwkvag", "w0", "w1", "w2", "a0", "a1", "a2", "g1", "g2", "r_k", "k_k",
              "k_a", *(f"{x}.weight" for x in w), "ln_x.weight", "ln_x.bias"],
    }
    att["5.1"] = att["4"] + ["ln_x.weight", "ln_x.bias"]
    ffn_mix = {"6": ["time_maa_k", "time_maa_r"], "7": ["x_k"]}.get(arch, ["time_mix_k", "time_mix_r"])
    for i in range(n_layer):
        b = f"blocks.{i}."
        names |= {b + n for n in ("ln1.weight", "ln1.bias", "ln2.weight", "ln2.bias",
                                  "ffn.key.weight", "ffn.value.weight")}
        if arch != "7":
            names.add(b + "ffn.receptance.weight")
        names |= {b + "att." + n for n in att[arch]}
        if arch == "7" and i > 0:
            names |= {b + "att.v0", b + "att.v1", b + "att.v2"}
        names |= {b + "ffn." + n for n in ffn_mix}
    return names


# MANIFEST: "only 2-D matrices are quantized, except emb.weight and head.weight ... and the
# v7 low-rank matrices att.w1/w2/a1/a2/v1/v2/g1/g2 and att.r_k".
_KEEP = re.compile(r"^(emb|head)\.weight$|\.att\.(w1|w2|a1|a2|v1|v2|g1|g2|r_k)$")


def not_quantized(name: str, ndims: int) -> bool:
    """True when the quantizer leaves this parameter in its source precision."""
    return ndims != 2 or bool(_KEEP.search(name))


def type_counts(types: list[str]) -> dict:
    return dict(Counter(types))
