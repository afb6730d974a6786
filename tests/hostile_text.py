"""A GGUF whose every text field holds Rich/Textual markup and terminal control sequences.

Shared by the browser's pilot test (tests/tui/test_hostile_text.py) and the CLI's
(tests/commands/test_escaping.py).  The file is written byte by byte (struct), not by
ggscope nor gguf-py (which cannot write bytes that are not UTF-8): the file name, the
metadata keys, string values, a string array, the architecture, the chat template,
the vocabulary and the tensor names all carry ``HOSTILE``.

``HOSTILE`` holds, in this order: a closing tag that crashes a markup parser, a
hyperlink, a click action, an ESC colour and title sequence, C1 controls (CSI U+009B,
NEL U+0085), a bidi override U+202E, a zero-width space U+200B, a byte order mark
U+FEFF and two bytes that are not UTF-8.  ``SHOWN`` is how ggscope's one escaping
(``ggscope.core.escape``) shows it; ``MARKUP`` are the parts that must appear as
written wherever the text is shown, even truncated.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

HOSTILE = ("[/bold][link=https://x.example]L[/link][@click=app.quit]Q[/]".encode()
           + b"\x1b[31mR\x1b]0;T\x07" + "\x9b1m\x85\u202eO\u200bZ\ufeffB".encode() + b"\xff\xfe")
SHOWN = ("[/bold][link=https://x.example]L[/link][@click=app.quit]Q[/]"
         "\\x1b[31mR\\x1b]0;T\\x07\\x9b1m\\x85\\u202eO\\u200bZ\\ufeffB\\xff\\xfe")
MARKUP = ("[/bold]", "[link=https://x.example]", "[@click=app.quit]")
VALID = HOSTILE[:-2].decode("utf-8")         # the same without the bytes that are not UTF-8
# a file name holds no "/": the same markup, controls and an undecodable byte
NAME = os.fsdecode(b"[link=http:x][@click=app.quit][red]\x1b[31m" + "\u202e\u200b".encode() + b"\xff.gguf")
NAME_SHOWN = "[link=http:x][@click=app.quit][red]\\x1b[31m\\u202e\\u200b\\xff.gguf"

# what must never reach a terminal or a screen: controls, format characters, separators,
# and the undecodable bytes Python holds as surrogates
RAW = tuple("\x1b\x07\x9b\x85\u202e\u200b\ufeff\u2028") + ("\udcff", "\udcfe")

F32, STRING, ARRAY, UINT32, INT32, FLOAT32 = 0, 8, 9, 4, 5, 6


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _kv(key: bytes, vtype: int, payload: bytes) -> bytes:
    return _s(key) + struct.pack("<I", vtype) + payload


def _strings(items: list[bytes]) -> bytes:
    return struct.pack("<IQ", STRING, len(items)) + b"".join(_s(x) for x in items)


def hostile_gguf(*, arch: bytes = HOSTILE, tokenizer_model: bytes = b"llama", scale: float = 0.5) -> bytes:
    """The bytes of the hostile GGUF v3 (two 4x4 F32 tensors ``scale * i``, a 5-token
    vocabulary; ``x.valid`` holds ``VALID``, valid UTF-8 with every control)."""
    tokens = [b"<unk>", b"<s>", b"</s>", HOSTILE, b"tok:" + HOSTILE]
    kvs = [
        _kv(b"general.architecture", STRING, _s(arch)),
        _kv(b"general.name", STRING, _s(b"name:" + HOSTILE)),
        _kv(b"general.alignment", UINT32, struct.pack("<I", 32)),
        _kv(b"x." + HOSTILE, STRING, _s(b"value:" + HOSTILE)),
        _kv(b"x.valid", STRING, _s(VALID.encode())),
        _kv(b"x.array", ARRAY, _strings([b"item:" + HOSTILE, HOSTILE])),
        _kv(b"tokenizer.chat_template", STRING, _s(b"{{ '\n' }}tmpl:" + HOSTILE + b"\n{{ x }}")),
        _kv(b"tokenizer.ggml.model", STRING, _s(tokenizer_model)),
        _kv(b"tokenizer.ggml.tokens", ARRAY, _strings(tokens)),
        _kv(b"tokenizer.ggml.scores", ARRAY, struct.pack("<IQ", FLOAT32, len(tokens))
            + struct.pack(f"<{len(tokens)}f", *range(len(tokens)))),
        _kv(b"tokenizer.ggml.token_type", ARRAY, struct.pack("<IQ", INT32, len(tokens))
            + struct.pack(f"<{len(tokens)}i", 2, 3, 3, 1, 1)),
    ]
    names = [b"t:" + HOSTILE, HOSTILE + b".weight"]
    infos = b"".join(_s(n) + struct.pack("<IQQIQ", 2, 4, 4, F32, 64 * i) for i, n in enumerate(names))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(names), len(kvs)) + b"".join(kvs) + infos
    head += b"\0" * (-len(head) % 32)
    data = struct.pack("<16f", *[scale * i for i in range(16)]) * len(names)
    return head + data


def hostile_rwkv() -> bytes:
    """An rwkv.cpp v101 file whose one parameter is named ``HOSTILE`` and has a type
    (Q4_1_O) that v101 does not define: ``info`` reports it among the type errors."""
    head = struct.pack("<4s5I", b"fmgg", 101, 256, 32, 1, 0)
    return head + struct.pack("<4I", 1, len(HOSTILE), 4, 32) + HOSTILE + bytes(24)


def write_hostile(directory: Path, name: str = NAME, **kw) -> Path:
    """The hostile GGUF in ``directory``, under its hostile name by default."""
    p = Path(directory) / name
    p.write_bytes(hostile_gguf(**kw))
    return p


def raw_left(text: str) -> list[str]:
    """The characters of ``RAW`` that are in ``text`` (should be none)."""
    return [repr(c) for c in RAW if c in text]
