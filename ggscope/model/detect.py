"""Which format is this file?  Decided from its first bytes, by one table.

Several ggml-family formats share a magic: ``fmgg`` is GGMF v1 *and* rwkv.cpp (told
apart by the version word: 1 vs 100/101); the raw bytes ``ggml`` (chatglm.cpp) differ
from unversioned GGML, which stores the u32 0x67676d6c little-endian (bytes ``lmgg``);
unversioned GGML files of llama.cpp and of ggml's examples differ in their
hyperparameter block.  Each table row names the magic, the spec (``formats/<spec>.ksy``)
and the view builder; rows whose magic is shared carry a ``sniff`` that looks further.
"""
from __future__ import annotations

from ggscope.model import detect_legacy
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FORMATS", "Detected", "detect", "known_formats"]


@dataclass(frozen=True)
class Format:
    name: str                    # ModelFile.format
    spec: str                    # formats/<spec>.ksy
    view: str                    # module in ggscope.views
    magic: bytes
    sniff: Callable[[bytes, int], bool] | None = None
    description: str = ""


@dataclass(frozen=True)
class Detected:
    format: Format


def _u32(head: bytes, at: int) -> int | None:
    return int.from_bytes(head[at:at + 4], "little") if len(head) >= at + 4 else None


def _legacy_sniff(kind: str) -> Callable[[bytes, int], bool]:
    def sniff(head: bytes, size: int) -> bool:
        return detect_legacy.sniff(head, size) == kind
    return sniff


def _rwkv_sniff(head: bytes, size: int) -> bool:
    return _u32(head, 4) in (100, 101)


def _ggmf_sniff(head: bytes, size: int) -> bool:
    return _u32(head, 4) == 1


FORMATS: tuple[Format, ...] = (
    Format("gguf", "gguf", "gguf", b"GGUF", None, "GGUF v1-v3, little- or big-endian"),
    Format("rwkv.cpp", "rwkv_cpp", "rwkv_cpp", b"fmgg", _rwkv_sniff, "rwkv.cpp model (file version 100/101)"),
    Format("ggmf", "ggml_llama", "ggml_llama", b"fmgg", _ggmf_sniff, "llama.cpp GGMF v1"),
    Format("ggjt", "ggml_llama", "ggml_llama", b"tjgg", None, "llama.cpp GGJT v1-v3"),
    Format("ggml", "ggml_llama", "ggml_llama", b"lmgg", _legacy_sniff("ggml_llama"),
           "unversioned GGML, llama.cpp (2023-03)"),
    Format("ggml", "ggml_example", "ggml_example", b"lmgg", _legacy_sniff("ggml_example"),
           "unversioned GGML of ggml's examples (gpt-2, gpt-j, ...)"),
    Format("chatglm.cpp", "chatglm_cpp", "chatglm_cpp", b"ggml", None, "chatglm.cpp model"),
    Format("bit1", "bit1", "bit1", b"BIT1", None, "BIT1 packed 1-bit model"),
)


def known_formats() -> list[str]:
    return [f"{f.name} ({f.description})" for f in FORMATS]


def detect(head: bytes, size: int) -> Format | None:
    """The format of a file starting with ``head`` (at least 64 bytes when the file has them)."""
    for fmt in FORMATS:
        if head.startswith(fmt.magic) and (fmt.sniff is None or fmt.sniff(head, size)):
            return fmt
    return None
