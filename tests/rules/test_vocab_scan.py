"""The compiled scan (csrc/_cvocab.c) on hostile arrays: what its one fused walk must still refuse and find.

The walk checks each string's bounds in the same step that hashes it and judges its
UTF-8 run, and stops hashing at the first duplicate: a string outside the buffer after
that duplicate must still be refused, lengths near 2**64 must not wrap, and arrays of one
string repeated or of invalid bytes everywhere get the definition's answer by every route
(the bucketed table, the sort at once and the sort taken over halfway).  A length whose
bytes pass 0x7F ends a run of strings judged as one.  Short strings
are hashed from the eight bytes that end them (the length prefix's bytes shifted out):
duplicates at every length up to past two words are found in each layout.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest
from test_vocab_bytes import contiguous, layouts, route, want_bad, want_dup  # noqa: F401 - route is a fixture

from ggscope.ksy.strings import StringArray
from ggscope.rules import vocab_bytes


def _compiled():
    if vocab_bytes._cvocab is None:
        pytest.skip("ggscope.rules._cvocab is not built (python setup.py build_ext --inplace)")
    return vocab_bytes._cvocab


def _args(sa: StringArray, dups: bool, utf8: bool) -> tuple:
    lens = np.ascontiguousarray(sa.lens)
    return sa._arr, sa.first, lens, lens.itemsize, b"", 0, sa.width, sa.tail, dups, utf8


@pytest.mark.parametrize("dups, utf8", [(True, True), (True, False), (False, True)])
def test_a_string_outside_after_the_first_duplicate_is_refused(dups, utf8):
    """The duplicate is string 1; string 43, well past the strings hashed ahead of the
    table, claims more bytes than remain."""
    cv = _compiled()
    strings = [b"ab", b"ab"] + [b"s%d" % k for k in range(40)] + [b"\xff"]
    body = b"".join(struct.pack("<Q", len(s)) + s for s in strings) + struct.pack("<Q", 50) + b"xyz"
    arr = np.frombuffer(body, dtype=np.uint8)
    lens = np.array([len(s) for s in strings] + [50], np.uint8)
    with pytest.raises(ValueError, match="string 43 lies outside"):
        cv.scan(arr, 0, lens, 1, b"", 0, 8, 0, dups, utf8)
    dup, of, bad = cv.scan(arr, 0, lens[:-1], 1, b"", 0, 8, 0, dups, utf8)
    assert (dup, of) == ((1, 0) if dups else (-1, -1))
    assert np.frombuffer(bad, np.int64).tolist() == ([42] if utf8 else [])


@pytest.mark.parametrize("size", [0x80, 0xA9, 0x1BF, 0xFF, 0x100, 0x8000])
@pytest.mark.parametrize("cut", [b"a\xc3", b"\xe2\x82", b"\xf0\x9f\x98"])
def test_a_length_byte_past_0x7f_ends_a_run(route, size, cut):
    """A string cut after a lead byte, then one whose length prefix starts with a byte
    past 0x7F (a continuation byte: it completes the cut sequence if the two are judged
    as one run), and nothing else invalid: every string judged as itself - by the UTF-8
    pass alone (runs found from the lengths) and by the walk beside the duplicate search
    (the memo)."""
    strings = [b"ok", cut, b"b" * size, b"\xe2\x82\xac"]
    assert want_bad(strings) == [1]
    for sa in layouts(strings):
        assert vocab_bytes.invalid_utf8(sa) == [1]
        memo: dict = {}
        assert vocab_bytes.first_duplicate(sa, memo) is None
        assert vocab_bytes.invalid_utf8(sa, memo) == [1]


def test_lengths_near_two_to_the_64_do_not_wrap():
    cv = _compiled()
    arr = np.frombuffer(struct.pack("<Q", 1) + b"a" + struct.pack("<Q", 2**64 - 1) + b"b", dtype=np.uint8)
    for lens in (np.array([1, 2**64 - 1], np.uint64), np.array([1, 2**64 - 9], np.uint64)):
        for tail in (0, 2**62):
            with pytest.raises(ValueError):
                cv.scan(arr, 0, lens, 8, b"", 0, 8, tail, True, True)
    with pytest.raises(ValueError):                          # the first offset past the buffer
        cv.scan(arr, 2**62, np.array([0], np.uint8), 1, b"", 0, 8, 0, True, True)


def test_duplicates_at_every_length(route):
    """At each length 0..40: strings that differ from one another in one byte at every
    position, then one of them again - the eight-byte loads of a short string see all of
    its bytes and none of its neighbours'."""
    for n in range(41):
        base = bytes(range(0x41, 0x41 + n))
        strings = [base] + [base[:k] + b"\x7f" + base[k + 1:] for k in range(n)] + [b"\x80" * n]
        strings.append(strings[len(strings) // 2])
        for sa in layouts(strings):
            assert vocab_bytes.first_duplicate(sa) == want_dup(strings), n
            assert vocab_bytes.invalid_utf8(sa) == want_bad(strings), n
        distinct = strings[:-1]
        for sa in layouts(distinct):
            assert vocab_bytes.first_duplicate(sa) == want_dup(distinct), n


def test_one_string_everywhere(route):
    """2**18 copies of one invalid string: the first repeat is string 1, every string is
    reported as not UTF-8 - in one pass, by every route."""
    n = 1 << 18
    sa = contiguous([b"\xff"] * n)
    assert vocab_bytes.first_duplicate(sa) == (1, 0)
    bad = vocab_bytes.invalid_utf8(sa)
    assert len(bad) == n and bad[:3] == [0, 1, 2] and bad[-1] == n - 1
    empty = contiguous([b""] * n)
    assert vocab_bytes.first_duplicate(empty) == (1, 0)
    assert vocab_bytes.invalid_utf8(empty) == []


def test_distinct_then_one_repeat_among_many(route):
    """2**17 distinct strings of every length up to 24 bytes, the last one repeating an
    early one: the answer does not depend on how full the table is or where it sorts."""
    rng = np.random.default_rng(5)
    strings = list(dict.fromkeys(bytes(rng.integers(0x20, 0x7F, size=int(rng.integers(1, 25)), dtype=np.uint8))
                                 for _ in range(1 << 17)))
    strings.append(strings[7])
    sa = contiguous(strings)
    assert vocab_bytes.first_duplicate(sa) == (len(strings) - 1, 7)
    assert vocab_bytes.first_duplicate(sa.part(0, len(strings) - 1)) is None


@pytest.mark.slow
def test_two_to_the_24_empty_strings_take_the_sort():
    """2**24 strings: past what the table's slots index, so the search sorts at once -
    and still answers string 1, with no string judged invalid."""
    cv = _compiled()
    n = 1 << 24
    arr = np.zeros(8 * n, dtype=np.uint8)                 # every prefix says 0: all empty strings
    dup, of, bad = cv.scan(arr, 0, np.zeros(n, np.uint8), 1, b"", 0, 8, 0, True, True)
    assert (dup, of, bad) == (1, 0, b"")


@pytest.mark.parametrize("long", [0xA9, 0x1A9, 0x80A9])
def test_runs_split_at_every_long_length_in_a_long_array(long):
    """The UTF-8 pass alone finds the strings whose length has a byte past 0x7F 64
    lengths at a time.  Among 700 short strings, one such string - at a block edge (63,
    64, 127, 128), inside a block, last - right after a string cut two bytes into a
    three-byte sequence that the long string's first length byte (0xA9) would complete
    if the two were judged as one run: the cut string is found, alone and with all the
    other pairs beside it."""
    at = (1, 63, 64, 65, 127, 128, 129, 300, 301, 699)
    base = [b"s%d" % i for i in range(700)]
    every = list(base)
    for i in at:
        one = list(base)
        for arr in (one, every):
            arr[i] = b"a" * long
            arr[i - 1] = b"x\xe2\x82"                      # E2 82 A9 would be U+20A9
        assert want_bad(one) == [i - 1]                      # Python's codec, string by string
        assert vocab_bytes.invalid_utf8(contiguous(one)) == [i - 1], i
    assert vocab_bytes.invalid_utf8(contiguous(every)) == want_bad(every)
