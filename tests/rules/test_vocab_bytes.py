"""ggscope.rules.vocab_bytes: the first duplicate and the non-UTF-8 strings of a string array.

Every answer is held to the definition computed independently here: a dict from each
string's bytes to its first index, filled in id order (what llama.cpp's token_to_id meets),
and Python's strict UTF-8 codec on each string.  Every route runs - the compiled scan
(csrc/_cvocab.c) with its hash table (with the widest vectors, at most AVX2, and none),
with its sort (at once, and taken over from the table midway) and numpy - over the layouts the parser produces: contiguous strings with
8-byte prefixes, with fixed-size fields after each string (not ASCII: each string judged
alone; ASCII: the vectorised check over whole runs), and strings placed at explicit
offsets in any order; and end to end through ``validate`` on GGUF files.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

from ggscope.ksy.strings import StringArray, narrow_unsigned
from ggscope.rules import vocab_bytes

ROUTES = ["compiled", "compiled, AVX2", "compiled, portable", "compiled, sorted", "compiled, sorted midway", "numpy"]


class _Budget:
    """The compiled module with the duplicate search's budget of bucket visits set: 0
    sorts at once; "midway" runs out after half the strings (every string visits at
    least its own bucket) - the route a hash that spreads an input badly takes; -1 (the
    default budget) with ``simd`` 1: vectors up to AVX2 on a CPU that has AVX-512 (the
    scalar hash, UTF-8 32 bytes a step), 0: none (SSE2 buckets, UTF-8 byte by byte)."""

    def __init__(self, module, budget: int | str, simd: int = 1):
        self.module, self.budget, self.simd = module, budget, simd

    def scan(self, *args):
        n = len(args[2]) // args[3]
        return self.module.scan(*args, max(1, n // 2) if self.budget == "midway" else self.budget, self.simd)


@pytest.fixture(params=ROUTES)
def route(request, monkeypatch):
    if request.param.startswith("compiled"):
        if vocab_bytes._cvocab is None:
            pytest.skip("ggscope.rules._cvocab is not built (python setup.py build_ext --inplace)")
        if request.param in ("compiled, portable", "compiled, AVX2"):
            monkeypatch.setattr(vocab_bytes, "_cvocab", _Budget(vocab_bytes._cvocab, -1,
                                                                simd=0 if request.param.endswith("portable") else 1))
        elif request.param != "compiled":
            monkeypatch.setattr(vocab_bytes, "_cvocab", _Budget(vocab_bytes._cvocab, 0 if request.param.endswith("sorted")
                                                                else "midway"))
    else:
        monkeypatch.setattr(vocab_bytes, "_cvocab", None)
    return request.param


def contiguous(strings: list[bytes], tail: int = 0, lead: bytes = b"junk", fill: bytes = b"\xee") -> StringArray:
    """A GGUF-style array: 8-byte little-endian length, the bytes, ``tail`` field bytes
    (``fill``: not ASCII by default, so the compiled scan judges each string alone)."""
    body = b"".join(struct.pack("<Q", len(s)) + s + fill * tail for s in strings)
    arr = np.frombuffer(lead + body + b"trailing", dtype=np.uint8)
    lens = np.array([len(s) for s in strings], dtype=np.int64)
    lens = lens.astype(narrow_unsigned(int(lens.max()) if len(lens) else 0))
    return StringArray(arr, len(lead), lens, 8, "utf-8", tail=tail)


def placed(strings: list[bytes], seed: int = 1) -> StringArray:
    """The same strings stored in a shuffled order and located by explicit offsets."""
    order = np.random.default_rng(seed).permutation(len(strings))
    buf, starts = bytearray(b"xx"), [0] * len(strings)
    for k in order:
        starts[k] = len(buf)
        buf += struct.pack("<Q", len(strings[k])) + strings[k]
    return StringArray.placed(np.frombuffer(bytes(buf), dtype=np.uint8), np.array(starts),
                              np.array([len(s) for s in strings]), 8, "utf-8")


def layouts(strings: list[bytes]) -> list[StringArray]:
    return [contiguous(strings), contiguous(strings, tail=12), contiguous(strings, tail=3, fill=b"\x01"),
            placed(strings)]


def want_dup(strings: list[bytes]):
    seen: dict[bytes, int] = {}
    for i, s in enumerate(strings):
        if s in seen:
            return i, seen[s]
        seen[s] = i
    return None


def want_bad(strings: list[bytes]) -> list[int]:
    bad = []
    for i, s in enumerate(strings):
        try:
            s.decode("utf-8")
        except UnicodeDecodeError:
            bad.append(i)
    return bad


def check(strings: list[bytes]) -> None:
    for sa in layouts(strings):
        assert vocab_bytes.first_duplicate(sa) == want_dup(strings)
        assert vocab_bytes.invalid_utf8(sa) == want_bad(strings)


CASES = {
    "empty tokens": [b"a", b"", b"b", b""],
    "one empty token": [b""],
    "no tokens": [],
    "common prefix, differ at the end": [b"abcdefghijklmnop1", b"abcdefghijklmnop2", b"abcdefghijklmnop3",
                                         b"abcdefghijklmnop2"],
    "prefix of another": [b"abc", b"abcd", b"ab", b"abcd"],
    "same length, differ in the middle": [b"aaaaXaaaa", b"aaaaYaaaa", b"aaaaZaaaa"],
    "non-UTF-8 duplicates": [b"\xff", b"\xfe", b"ok", b"\xff\xfe", b"\xfe"],
    "NUL inside": [b"a\0b", b"a\0c", b"a", b"a\0b"],
    "distinct only by a NUL": [b"a", b"a\0", b"\0a", b"\0"],
    "the last is the first again": [b"x%d" % i for i in range(1000)] + [b"x0"],
    "two pairs: the earlier second wins": [b"p", b"q", b"r", b"q", b"p"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_cases_against_the_definition(route, name):
    check(CASES[name])


UTF8 = [b"\xc0\x80", b"\xc1\xbf", b"\xc2\x80", b"\xdf\xbf", b"\xe0\x80\x80", b"\xe0\x9f\xbf", b"\xe0\xa0\x80",
        b"\xed\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xee\x80\x80", b"\xef\xbf\xbf", b"\xf0\x8f\xbf\xbf",
        b"\xf0\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\xff", b"\x80",
        b"\xe2\x82", b"\xe2\x82\xac", b"\xf0\x9f\x98", b"\xf0\x9f\x98\x80", b"\xe2\x28\xa1", b"\xc3\x28",
        b"abcdefgh\xff", b"abcdefghijklmnop\xc3", b"abcdefghijklmno\xc3\xa9", b"\xc3\xa9abcdefghijklmnop",
        "ünïcødé and ascii past eight bytes".encode(), b"\xffabcdefghijklmno", b"abcdefg\xff", b"abcdefgh\xc3",
        b"\xc3abcdefghijklmno", b"abcdefghijklmnopqrstuvw\xed\xa0\x80"]


def test_utf8_edges_as_pythons_codec(route):
    check(UTF8)


def test_random_bytes_as_the_definition(route):
    rng = np.random.default_rng(27)
    alphabet = np.array([0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC2, 0xC3, 0xA9, 0xE0, 0xA0, 0xED, 0x9F, 0xF0, 0x90, 0xF4,
                         0x8F, 0xFF], dtype=np.uint8)
    strings = [bytes(rng.choice(alphabet, size=int(rng.integers(0, 6)))) for _ in range(3000)]
    check(strings)                       # short strings over a small alphabet: many duplicates
    distinct = list(dict.fromkeys(strings))
    check(distinct)                      # none


def test_long_mostly_ascii_strings_as_the_definition(route):
    """Strings past the eight-byte ASCII stride, one stray byte anywhere in them."""
    rng = np.random.default_rng(3)
    strings = []
    for _ in range(2000):
        s = bytearray(rng.integers(0x20, 0x7F, size=int(rng.integers(0, 40)), dtype=np.uint8).tobytes())
        if s and rng.random() < 0.5:
            s[int(rng.integers(0, len(s)))] = int(rng.choice([0x80, 0xC3, 0xE2, 0xF0, 0xFF]))
        strings.append(bytes(s))
    check(strings)


def test_every_two_byte_string_and_the_three_and_four_byte_edges(route):
    """Every string of two bytes, and three- and four-byte strings over every lead byte
    with the second byte's edges, each after a valid string that moves it through a
    32-byte block: the check over a whole array against Python's codec - alone, so the
    verdict is that string's - and all of them in one array."""
    if route != "compiled":
        pytest.skip("the vectorised check is the compiled route's (the numpy route runs Python's codec itself)")
    two = [bytes([a, b]) for a in range(256) for b in range(256)]
    edges = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xFF]
    three = [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in edges for c in (0x41, 0x80, 0xBF, 0xC3)]
    four = [bytes([a, b, c, d]) for a in range(0xE0, 0x100) for b in edges for c in (0x80, 0xBF, 0x41)
            for d in (0x80, 0xBF, 0x41)]
    for strings in (two, three, four):
        for i, s in enumerate(strings):
            pad = "é".encode() * (i % 23)
            assert vocab_bytes.invalid_utf8(contiguous([pad, s], lead=b"")) == want_bad([pad, s]), s
        for sa in (contiguous(strings), contiguous(strings, tail=3, fill=b"\x01")):
            assert vocab_bytes.invalid_utf8(sa) == want_bad(strings)


def test_long_strings_among_short_ones_as_the_definition(route):
    """Strings of 128 bytes and more, whose length prefixes hold a byte past 0x7F, between
    short ones; invalid bytes at every offset of a 32-byte block, sequences cut at a
    string's end before a string of continuation bytes."""
    rng = np.random.default_rng(11)
    strings = []
    for k in range(600):
        n = int(rng.choice([0, 1, 7, 31, 32, 33, 127, 128, 129, 300, 1000]))
        s = bytearray(("é€😀a" * 400).encode()[:n])
        if s and k % 3 == 0:
            s[int(rng.integers(0, len(s)))] = int(rng.choice([0x80, 0xC0, 0xED, 0xF5, 0xFF]))
        strings.append(bytes(s))
    strings += [b"\xe2\x82", b"\xac", b"\xf0\x9f\x98", b"\x80", "€".encode() * 50, b"\xe2"]
    check(strings)
    check([s for s in strings if not want_bad([s])])           # all valid: the whole-array verdict


def test_262k_tokens(route):
    """A vocabulary of Gemma 3's size: none alike, then one token repeated at the end."""
    toks = [b"\xe2\x96\x81tok%06d" % i for i in range(262_144)]
    sa = contiguous(toks)
    assert vocab_bytes.first_duplicate(sa) is None
    assert vocab_bytes.invalid_utf8(sa) == []
    toks[262_143] = toks[131_072]
    toks[200_000] = b"\xff" + toks[200_000]
    sa = contiguous(toks)
    assert vocab_bytes.first_duplicate(sa) == (262_143, 131_072)
    assert vocab_bytes.invalid_utf8(sa) == [200_000]


def test_long_strings_and_many_blocks(route, monkeypatch):
    """Strings past the numpy route's one-by-one length among short ones, and blocks cut
    by bytes: the answer does not depend on where a block ends."""
    monkeypatch.setattr(vocab_bytes, "_BUDGET", 64)
    long = b"L" * 5000
    strings = [b"a", long, b"b" * 100, long + b"x", b"c", b"b" * 100, long]
    check(strings)
    check([b"k%d" % i for i in range(500)] + [b"k250"])


def test_hash_collisions_are_settled_exactly(monkeypatch):
    """The numpy route compares the bytes of every candidate its hash proposes: with every
    hash equal it still names the true first duplicate, or none."""
    monkeypatch.setattr(vocab_bytes, "_cvocab", None)
    monkeypatch.setattr(vocab_bytes, "_block_hashes", lambda sa: np.zeros(len(sa), dtype=np.uint64))
    for strings in ([b"a", b"b", b"c"], [b"a", b"b", b"c", b"b"], [b"", b"x", b""]):
        assert vocab_bytes.first_duplicate(contiguous(strings)) == want_dup(strings)


def test_python_lists_take_the_definition():
    assert vocab_bytes.first_duplicate(["a", "b", "a"]) == (2, 0)
    assert vocab_bytes.first_duplicate(["a", "b"]) is None
    assert vocab_bytes.invalid_utf8(["ok", b"\xff", "\udcff"]) == [1, 2]


def test_outside_the_buffer_is_refused():
    if vocab_bytes._cvocab is None:
        pytest.skip("ggscope.rules._cvocab is not built")
    arr = np.frombuffer(struct.pack("<Q", 5) + b"abc", dtype=np.uint8)     # claims 5 bytes, has 3
    with pytest.raises(ValueError):
        vocab_bytes._cvocab.scan(arr, 0, np.array([5], np.uint8), 1, b"", 0, 8, 0, True, True)


# --- end to end: the loader's GG1106 and the values rule's GG202 on a GGUF file ----------

def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def vocab_file(path, tokens: list[bytes]):
    kvs = [_s(b"general.architecture") + struct.pack("<I", 8) + _s(b"llama"),
           _s(b"tokenizer.ggml.model") + struct.pack("<I", 8) + _s(b"llama"),
           _s(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, len(tokens)) + b"".join(map(_s, tokens))]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))
    return path


@pytest.mark.parametrize("tokens, dup", [
    ([b"<unk>", b"", b"abcdefghij1", b"abcdefghij2", b"", b"x"], (4, 1)),
    ([b"<unk>", b"\xff\xfe", b"ab", b"\xff\xfe"], (3, 1)),
    ([b"<unk>", b"abcdefghij1", b"abcdefghij2"], None),
])
def test_validate_reports_the_first_duplicate(route, tmp_path, tokens, dup):
    from _helpers import findings
    found = [f for f in findings(vocab_file(tmp_path / "v.gguf", tokens), select=["GG1106", "GG202"])]
    vocab = [f.message for f in found if f.code == "GG1106"]
    if dup is None:
        assert vocab == []
    else:
        assert len(vocab) == 1 and vocab[0].startswith(f"token {dup[0]} has the same text as token {dup[1]} ("), vocab
    utf8 = [f.message for f in found if f.code == "GG202"]
    bad = want_bad(tokens)
    assert len(utf8) == (1 if bad else 0)
    if bad:
        assert f"{len(bad)} string element(s) are not UTF-8: element {bad[0]} " in utf8[0]


def test_texts_are_what_indexing_gives(route):
    strings = [b"t%d" % i for i in range(20_000)] + [b"", b"\xff\xfe", "ünï".encode()]
    ids = [0, 1, 4095, 4096, 4097, 19_999, 20_000, 20_001, 20_002] + list(range(100, 140))
    for sa in layouts(strings):
        assert vocab_bytes.texts(sa, ids) == [sa[i] for i in ids]
        assert vocab_bytes.texts(sa, ids) == [strings[i].decode("utf-8", "surrogateescape") for i in ids]
    assert vocab_bytes.texts(["a", "b"], [1, 0]) == ["b", "a"]


def test_one_pass_gives_both_through_the_memo(route):
    """The loader's pass over the tokens also judges their UTF-8 and GG202 reads it from
    the memo: the same answer as its own scan."""
    strings = [b"a", b"\xff", b"b", b"\xff", b"c", b"b"]
    for sa in layouts(strings):
        memo: dict = {}
        assert vocab_bytes.first_duplicate(sa, memo) == want_dup(strings) == (3, 1)
        assert vocab_bytes.invalid_utf8(sa, memo) == want_bad(strings)
        other = contiguous([b"x", b"\xfe"])
        assert vocab_bytes.invalid_utf8(other, memo) == [1]                # another array: its own scan


def test_validate_walks_a_vocabulary_once(tmp_path, monkeypatch):
    if vocab_bytes._cvocab is None:
        pytest.skip("ggscope.rules._cvocab is not built")
    from _helpers import findings
    calls = []
    real = vocab_bytes._scan
    monkeypatch.setattr(vocab_bytes, "_scan", lambda sa, d, u: calls.append((len(sa), d, u)) or real(sa, d, u))
    tokens = [b"<unk>", b"a", b"b", b"a"]
    found = findings(vocab_file(tmp_path / "v.gguf", tokens), select=["GG1106", "GG202"])
    assert [f.message.split(" (")[0] for f in found if f.code == "GG1106"] == ["token 3 has the same text as token 1"]
    assert calls == [(4, True, True)]


def test_joined_texts_are_the_texts_joined(route):
    """One decode of the gathered bytes gives what decoding each string and joining them
    gives: str elements with surrogate escapes, bytes elements with U+FFFD, a cut sequence
    at a string's end kept to that string."""
    strings = [b"t%d" % i for i in range(3000)] + [b"", b"\xff\xfe", "ünï".encode(), b"\xe2\x82", b"\xac",
                                                    b"\xf0\x9f\x98\x80", b"a\nb", b"\0"]
    many = list(range(0, 3000, 37)) + list(range(3000, len(strings)))
    for sa in layouts(strings) + [StringArray(contiguous(strings)._arr, 4, contiguous(strings).lens, 8, None),
                                  StringArray(contiguous(strings)._arr, 4, contiguous(strings).lens, 8, "UTF-8")]:
        # ascending (the compiled gather's own walk), with repeats, few, and in any order
        for ids in (many, [0, 0, 3001, 3001, 3007], [3003], [3007, 2, 3001, 2, 0] + many):
            want = "\n".join(t if isinstance(t, str) else t.decode("utf-8", "replace")
                             for t in vocab_bytes.texts(sa, ids))
            assert vocab_bytes.joined_texts(sa, ids) == want, ids
    assert vocab_bytes.joined_texts(["a", b"\xff"], [1, 0]) == "\ufffd\na"
    assert vocab_bytes.joined_texts(contiguous(strings), []) == ""


def _special_vocab(path, hidden: str | None):
    """A llama vocabulary of 4,000 tokens, 600 of them control tokens (type 3), one of
    which holds ``hidden`` when given."""
    import gguf
    tokens = [f"<|ctl_{i}|>" if i < 600 else f"tok{i}" for i in range(4000)]
    if hidden is not None:
        tokens[321] = f"<|ctl{hidden}_321|>"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_types([3 if i < 600 else 1 for i in range(4000)])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_hidden_characters_reads_special_tokens_without_a_str_each(tmp_path, monkeypatch):
    """GG1310 judges the 600 control tokens of a vocabulary from their bytes joined and
    decoded once: no str per token unless one of them hides something, and then the
    same finding as a per-token read - the texts split from that one decode (no token
    holds a newline), not read again by id (``texts``)."""
    from _helpers import findings
    calls = []
    real = vocab_bytes.texts
    monkeypatch.setattr(vocab_bytes, "texts", lambda sa, ids: calls.append(len(ids)) or real(sa, ids))
    assert findings(_special_vocab(tmp_path / "clean.gguf", None), select=["GG1310"]) == []
    assert calls == []
    found = findings(_special_vocab(tmp_path / "hidden.gguf", "\u200b"), select=["GG1310"])
    assert [f.message for f in found] == ['special token 321 "<|ctl\\u200b_321|>": 1 invisible character '
                                          "(U+200B ZERO WIDTH SPACE)"]
    assert calls == []


def test_positions_and_gathering_refuse_what_the_array_cannot_back():
    sa = contiguous([b"ab", b"c", b"def"])
    for arr in (sa, placed([b"ab", b"c", b"def"])):
        want = [int(arr.offsets(i, i + 1)[0]) for i in (0, 2, 2, 1)]
        assert arr.starts(np.array([0, 2, 2, 1])).tolist() == want        # any order, repeats
        for ids in ([3], [-1], [0, 5]):                                  # past the end, negative
            with pytest.raises(IndexError):
                arr.starts(np.array(ids))
    at = sa.starts([0, 2, 2])
    assert at.tolist() == [4, 23, 23]                      # after "junk"; 8 + 2 and 8 + 1 bytes further
    if vocab_bytes._cvocab is None:
        pytest.skip("ggscope.rules._cvocab is not built")
    cv = vocab_bytes._cvocab
    assert cv.gather(sa._arr, at, np.array([2, 3, 3], np.int64), 8) == b"ab\ndef\ndef"
    with pytest.raises(ValueError):                          # a length past the buffer's end
        cv.gather(sa._arr, at[:1], np.array([len(sa._arr)], np.int64), 8)
    lens = np.ascontiguousarray(sa.lens)

    def by_ids(ids, lens=lens, tail=0, first=4):
        return cv.gather_ids(sa._arr, first, lens, lens.itemsize, 8, tail, np.array(ids, np.int64))
    assert by_ids([0, 2, 2]) == b"ab\ndef\ndef" and by_ids([]) == b"" and by_ids([1]) == b"c"
    for ids in ([3], [-1], [2, 0], [0, 2, 1]):               # past the end, negative, out of order
        with pytest.raises(ValueError, match="out of range or out of order"):
            by_ids(ids)
    for lens_, tail, first in ((np.array([2, 1, 40], np.uint8), 0, 4),            # the last string too long
                               (np.array([2, 2**64 - 1, 3], np.uint64), 0, 4),    # a length that would wrap
                               (np.array([2, 1, 3], np.uint8), 2**62, 4),         # fields that would wrap
                               (np.array([2, 1, 3], np.uint8), 0, 2**40)):        # the first past the end
        with pytest.raises(ValueError, match="outside the buffer"):
            by_ids([0, 2] if first < 2**40 else [0], lens_, tail, first)


@pytest.mark.parametrize("group", [64, 1])
def test_take_is_indexing_at_many_ids(group, monkeypatch):
    """The batched read every caller shares: positions over the blocks the ids fall in
    (ids in several 4096-element blocks, the short last block, any order, repeats; the
    blocks summed all at once or one at a time), one decode unless a string holds a NUL."""
    strings = [b"t%d" % i for i in range(9000)] + [b"", b"\xff\xfe", "\u00fcn\u00ef".encode(), b"a\nb"]
    ids = [9002, 0, 4095, 4096, 4097, 8191, 8192, 9003, 9001, 9000, 5, 5] + list(range(100, 140))
    monkeypatch.setattr("ggscope.ksy.strings._GROUP", group)        # the blocks summed a group at a time
    for sa in layouts(strings) + [StringArray(contiguous(strings)._arr, 4, contiguous(strings).lens, 8, None)]:
        assert sa.take(ids) == [sa[i] for i in ids]
        assert sa.take(ids[:3]) == [sa[i] for i in ids[:3]]
        assert sa.take([]) == []
    with_nul = strings + [b"x\0y"]
    for sa in layouts(with_nul):
        assert sa.take(list(range(len(with_nul) - 20, len(with_nul)))) == [sa[i] for i in range(len(with_nul) - 20,
                                                                                                len(with_nul))]


def test_is_token_is_whole_token_equality(route):
    """A needle is a token when one string equals it byte for byte: not a prefix, a
    suffix or a stretch across two tokens - whatever bytes the tokens hold."""
    strings = [b"<|im_start|>", b"<|im_end|>", b"a\0<|x|>", b"<|y|>\0b", b"", b"\xff", "ü".encode(), b"ab", b"b"]
    needles = [b"<|im_start|>", b"<|im_end", b"im_end|>", b"<|x|>", b"<|y|>", b"", b"\xff", "ü".encode(), b"ab",
               b"a", b"ba", b"\0"]
    want = [n in set(strings) for n in needles]
    for sa in layouts(strings):
        assert vocab_bytes.is_token(sa, needles) == want
    assert vocab_bytes.is_token(["ab", "ü"], [b"ab", "ü".encode(), b"a"]) == [True, True, False]


def test_template_token_lookup_reads_no_copy_of_the_vocabulary(tmp_path, monkeypatch):
    """GG1308 asks whether a template's special tokens are tokens: compared with the
    tokens of the same length, not by joining the whole vocabulary (``joined``)."""
    import gguf
    from _helpers import findings
    path = tmp_path / "chat.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<|im_start|>", "<|im_end|>"] + [f"tok{i}" for i in range(500)])
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|><|eot_id|>{% endfor %}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    monkeypatch.setattr(StringArray, "joined", lambda self, *a, **k: pytest.fail("the vocabulary was joined"))
    found = findings(path, select=["GG1308"])
    assert [f.message for f in found] == ['tokenizer.chat_template writes "<|eot_id|>", not one token of the vocabulary']
