"""Record how llama.cpp tokenizes a set of texts with a vocabulary, for ggscope's tests.

Why: ggscope must feed a model the ids llama.cpp would feed it (``run --prompt``,
``diff --corpus``); CI never builds llama.cpp.  This script asks llama.cpp itself --
the llama-cpp-python 0.3.36 binding on a libllama built from the llama.cpp it vendors,
each vocabulary in a child process (an abort in llama.cpp must not end the recording)
-- to tokenize texts the way ``llama_tokenize(..., add_special=false,
parse_special=false)`` does (what llama-perplexity and a plain prompt get: user-defined
tokens matched in the text, control tokens not), and writes
``fixtures/tokenizer/<name>.json``: the vocabulary's file name, the oracle, and each
text with its ids.

The texts are ``TEXTS`` below (whitespace and control characters, Hangul, accents,
scripts, symbols, special-token spellings) followed by llama.cpp's own test texts
(``<vocab>.inp`` beside the vocabulary, when there is one).

Usage::

    python -m tools.record_tokenizer_oracle --lib DIR --binding DIR NAME=VOCAB.gguf ...

``--lib`` (or $LLAMA_CPP_LIB_PATH) holds libllama.so; ``--binding`` (or
$LLAMA_CPP_PYTHON_DIR) is the unpacked llama-cpp-python 0.3.36 source.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "fixtures" / "tokenizer"
SEP = "\n__ggml_vocab_test__\n"

TEXTS = [
    "a\tb", "a\nb", "a\r\nb", "line one\nline two\n", "\t\tindented", "tab\there\tand\tthere",
    "\r", "x\x0by\x0cz", "nbsp\u00a0here", "ideographic\u3000space", "next\u0085line",
    "zero\u200bwidth\u200cjoin\u200d", "\ufeffbom", "nul\x00byte", "bell\x07 and del\x7f",
    "\ufffd replacement", "soft\u00adhyphen",
    "한국어 문장입니다", "안녕하세요, 세계!", "가나다라마바사", "한 글", "힣",
    "Crème brûlée", "Ångström", "naïve café", "Führer", "a\u0301b", "ﬁne ﬂour", "İstanbul",
    "ΣΊΣΥΦΟΣ", "ǅungla", "Ⅻ ① ⑳", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "Ｆｕｌｌｗｉｄｔｈ",
    "日本語のテキスト", "中文分词测试", "مرحبا بالعالم", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "Привет, мир!", "🦙 llamas 🦙🦙", "👨‍👩‍👧 family",
    "$5 + 3 = 8 ^ ~ | `x`", "<tag attr=\"v\">", "a_b-c.d,e;f:g!h?i", "«quotes» „low“ ‘single’",
    "don't stop", "U.S.A.", "e-mail@example.com", "#hashtag @user", "https://example.org/a?b=c",
    "supercalifragilisticexpialidocious", "1234567890 3.14159 1,000,000",
    "def f(x):\n\treturn x**2\r\n",
    "</s>", "a</s>b", " </s> ", "<s>", "<s>hello</s>", "<unk>", "<|endoftext|>", "<|end|>",
    "<end_of_turn>", "<start_of_turn>user", "<eos>", "<pad>", "[CLS] [SEP] [MASK] [UNK]", "<mask>",
    "<|im_end|>", "<|eot_id|>", "<PRE> <SUF> <MID>",
]


def texts_for(vocab: Path) -> list[str]:
    out = list(TEXTS)
    inp = vocab.with_name(vocab.name + ".inp")
    if inp.is_file():
        more = inp.read_text(encoding="utf-8").split(SEP)
        if more and more[-1] == "":
            more.pop()
        out += [t for t in more if t not in out]
    return out


_CHILD = r"""
import json, os, sys
os.environ["LLAMA_CPP_LIB_PATH"] = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import llama_cpp as L
L.llama_backend_init()
mp = L.llama_model_default_params()
mp.vocab_only = True
model = L.llama_model_load_from_file(sys.argv[3].encode(), mp)
if not model:
    sys.exit("llama.cpp could not load the vocabulary")
vocab = L.llama_model_get_vocab(model)
out = []
for text in json.load(sys.stdin):
    raw = text.encode("utf-8")
    buf = (L.llama_token * (len(raw) + 16))()
    n = L.llama_tokenize(vocab, raw, len(raw), buf, len(buf), False, False)
    out.append(list(buf[:n]) if n >= 0 else None)
json.dump(out, sys.stdout)
"""


def record(name: str, vocab: Path, lib: str, binding: str) -> Path:
    texts = texts_for(vocab)
    done = subprocess.run([sys.executable, "-c", _CHILD, lib, binding, str(vocab)],
                          input=json.dumps(texts), capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"{name}: the llama.cpp child failed ({done.returncode}): {done.stderr[-2000:]}")
    ids = json.loads(done.stdout)
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{name}.json"
    path.write_text(json.dumps({
        "vocab": vocab.name,
        "oracle": "llama_tokenize(add_special=false, parse_special=false), llama.cpp as vendored "
                  "in llama-cpp-python 0.3.36",
        "cases": [{"text": t, "ids": i} for t, i in zip(texts, ids)],
    }, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.environ.get("LLAMA_CPP_LIB_PATH"), help="directory of libllama.so")
    ap.add_argument("--binding", default=os.environ.get("LLAMA_CPP_PYTHON_DIR"),
                    help="the unpacked llama-cpp-python 0.3.36 source")
    ap.add_argument("vocab", nargs="+", metavar="NAME=VOCAB.gguf")
    args = ap.parse_args(argv)
    if not args.lib or not args.binding:
        ap.error("give --lib and --binding (or LLAMA_CPP_LIB_PATH and LLAMA_CPP_PYTHON_DIR)")
    for item in args.vocab:
        name, sep, path = item.partition("=")
        if not sep:
            ap.error(f"{item!r}: expected NAME=VOCAB.gguf")
        print(record(name, Path(path), args.lib, args.binding).name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
