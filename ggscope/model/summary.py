"""What a file is, in a dozen facts: the browser's overview and the summary of ``diff``.

Both screens answer the same first question (format, architecture, name, parameter
count, file type, size, bits per weight, which tensor types), so the facts are
computed once here from a ``ModelFile``; callers only lay them out.

Legacy llama.cpp files (GGML / GGMF / GGJT) keep their hyperparameters in a header
that ``ggscope.model.views`` exposes as ``<format>.n_embd`` etc.  ``gguf_key`` names the GGUF
key each one became when llama.cpp's ``convert_llama_ggml_to_gguf.py`` converted such a
file (n_embd -> embedding_length, n_layer -> block_count, n_head ->
attention.head_count, n_rot -> rope.dimension_count, ftype -> general.file_type,
n_vocab -> vocab_size), so a GGJT file and its GGUF conversion compare like with like.
``n_mult`` has no GGUF key (the converter read the feed-forward width from a tensor
shape instead) and keeps its legacy name.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ggscope.facts.ggml_types import GGML_FTYPE, LLAMA_FTYPE, type_by_id
from ggscope.facts.legacy_tensors import LEGACY_FORMATS

if TYPE_CHECKING:
    from ggscope.model.modelfile import ModelFile

__all__ = ["Summary", "summarize", "file_type_name", "gguf_key", "LEGACY_FORMATS", "bits_per_weight",
           "is_legacy_llama", "chat_templates", "CHAT_TEMPLATE_KEY"]

# gguf-py Keys.Tokenizer.CHAT_TEMPLATE and CHAT_TEMPLATE_N ("tokenizer.chat_template.{name}"):
# llama.cpp's llama_model_chat_template (src/llama-model.cpp) reads the named key for any name
CHAT_TEMPLATE_KEY = "tokenizer.chat_template"


def chat_templates(metadata) -> list[tuple[str, str]]:
    """(name, key) of every chat template a runtime may render, in file order: "default"
    for ``tokenizer.chat_template``, the name for ``tokenizer.chat_template.<name>``
    (listed in ``tokenizer.chat_templates`` or not: a runtime asked for it reads it)."""
    return [("default" if k == CHAT_TEMPLATE_KEY else k[len(CHAT_TEMPLATE_KEY) + 1:], k)
            for k, v in metadata.items()
            if isinstance(v, str) and isinstance(k, str)
            and (k == CHAT_TEMPLATE_KEY or k.startswith(CHAT_TEMPLATE_KEY + "."))]

# legacy llama header word -> GGUF key ("{arch}" is the architecture, llama for these files)
_LEGACY_TO_GGUF = {
    "n_vocab": "{arch}.vocab_size",
    "n_embd": "{arch}.embedding_length",
    "n_head": "{arch}.attention.head_count",
    "n_layer": "{arch}.block_count",
    "n_rot": "{arch}.rope.dimension_count",
    "ftype": "general.file_type",
}


def is_legacy_llama(mf: "ModelFile") -> bool:
    """A GGML/GGMF/GGJT llama.cpp file (its header has n_mult), not a ggml example file."""
    return mf.format in LEGACY_FORMATS and f"{mf.format}.n_mult" in mf.metadata


def gguf_key(fmt: str, key: str, arch: str = "llama") -> str:
    """The GGUF key a legacy llama.cpp hyperparameter became on conversion (``fmt`` is
    the file's format; call it for legacy llama.cpp files only); other keys unchanged."""
    prefix, _, rest = key.partition(".")
    if fmt in LEGACY_FORMATS and prefix == fmt and rest in _LEGACY_TO_GGUF:
        return _LEGACY_TO_GGUF[rest].format(arch=arch)
    return key


def file_type_name(code: Any, table: dict[int, str] = LLAMA_FTYPE) -> str | None:
    """llama.cpp's name for a ``general.file_type`` / legacy ``ftype`` value ("Q8_0"),
    or None when there is no value; an unknown number says so.  ``table`` is
    ``GGML_FTYPE`` for the ggml example programs' files."""
    if code is None:
        return None
    try:
        n = int(code)
    except (TypeError, ValueError):
        return None
    name = table.get(n)
    if name is None:
        return f"unknown file type {n}"
    return name.removeprefix("MOSTLY_")


def _own_architecture(mf: "ModelFile") -> str | None:
    """What an rwkv.cpp or chatglm.cpp file says it is, in ggscope's spelling.

    rwkv.cpp: "rwkv" + the version its loader derives from the tensors (``extra
    ["arch_version"]``, rwkv.cpp's rwkv_model_loading.inc): rwkv4, rwkv5.1, rwkv5.2,
    rwkv6, rwkv7 - the names ``ggscope run`` knows them by.  chatglm.cpp: its header's
    model type (enum ModelType in chatglm.h: CHATGLM, CHATGLM2, CHATGLM3, BAICHUAN7B,
    ...) in lower case; a file of the first header generation (no model type) was
    written by convert.py of the first commit, which converted ChatGLM-6B only."""
    if mf.format == "rwkv.cpp":
        version = str(mf.extra.get("arch_version") or mf.metadata.get("rwkv_cpp.arch_version") or "")
        major, _, minor = version.partition(".")
        if not major:
            return None
        return f"rwkv{major}" if minor in ("", "0") else f"rwkv{major}.{minor}"
    if mf.format == "chatglm.cpp":
        name = mf.extra.get("model_type_name")
        if isinstance(name, str) and name:
            return name.lower()
        return "chatglm" if "chatglm_cpp.model_type" not in mf.metadata else None
    return None


def _file_type(mf: "ModelFile") -> str | None:
    if mf.format == "rwkv.cpp":              # rwkv.cpp's own name of its data type: FP16, Q5_1 ...
        name = mf.extra.get("data_type_name")
        return name if isinstance(name, str) and name else None
    if mf.format == "chatglm.cpp":           # the header's dtype is a ggml_type
        code = mf.metadata.get("chatglm_cpp.dtype")
        try:
            return type_by_id(code).name if isinstance(code, int) else None
        except (KeyError, ValueError, IndexError):
            return None
    if "general.file_type" in mf.metadata:
        return file_type_name(mf.metadata["general.file_type"])
    if is_legacy_llama(mf):
        return file_type_name(mf.metadata.get(f"{mf.format}.ftype"))
    if mf.format in LEGACY_FORMATS:          # ggml's example programs: enum ggml_ftype
        return file_type_name(mf.metadata.get(f"{mf.format}.ftype"), GGML_FTYPE)
    return None


def bits_per_weight(nbytes: int, n_elements: int) -> float | None:
    return 8.0 * nbytes / n_elements if n_elements else None


@dataclass
class Summary:
    format: str
    version: int
    endian: str
    architecture: str | None
    name: str | None
    n_params: int
    file_type: str | None             # llama.cpp's name, "Q8_0"
    file_size: int                    # a split model's: every shard's
    tensor_bytes: int
    bpw: float | None                 # bits per weight over all tensors
    census: list[tuple[str, int, int]] = field(default_factory=list)   # (type, tensors, bytes), most bytes first
    n_tensors: int = 0
    n_keys: int = 0
    templates: list[str] = field(default_factory=list)   # chat template names ("default", "tool_use", ...)


def summarize(mf: "ModelFile") -> Summary:
    census: Counter = Counter()
    sizes: Counter = Counter()
    n_params = nbytes = 0
    for t in mf.tensors:
        census[t.type] += 1
        sizes[t.type] += t.nbytes
        n_params += t.n_elements
        nbytes += t.nbytes
    arch = mf.metadata.get("general.architecture")
    if arch is None and is_legacy_llama(mf):
        arch = "llama"
    if arch is None:
        arch = _own_architecture(mf)
    if arch is None:
        arch = mf.extra.get("architecture") if isinstance(mf.extra.get("architecture"), str) else None
    name = mf.metadata.get("general.name")
    return Summary(
        format=mf.format, version=mf.version, endian=mf.endian,
        architecture=str(arch) if arch is not None else None,
        name=str(name) if name is not None else None,
        n_params=n_params, file_type=_file_type(mf),
        file_size=sum(mf.extra.get("shard_sizes") or [mf.source.size]), tensor_bytes=nbytes, bpw=bits_per_weight(nbytes, n_params),
        census=sorted(((k, census[k], sizes[k]) for k in census), key=lambda r: (-r[2], r[0])),
        n_tensors=len(mf.tensors), n_keys=len(mf.metadata),
        templates=[name for name, _ in chat_templates(mf.metadata)])


def human_count(n: int) -> str:
    """1234567 -> "1.23 M" (parameter counts as model cards write them)."""
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return str(n)
