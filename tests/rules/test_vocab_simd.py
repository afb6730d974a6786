"""The compiled scan's vector routes (csrc/_cvocab_blocks.h, csrc/_utf8.h): every one gives the definition's answer.

``scan``'s ``simd`` picks a route: 2 (the default) the widest vectors the CPU has -
GGUF's layout hashed eight strings a step with AVX-512, UTF-8 judged 64 bytes a step; 1
at most AVX2 (the scalar hash, buckets in one 32-byte compare, UTF-8 32 bytes a step); 0
none.  The three must agree with each other and with the definition (a dict filled in id
order, Python's codec) on random and hostile arrays: blocks of 1024 strings cut at every
place, lengths stored in 1, 2, 4 and 8 bytes, strings of every length 0..40 among others
that share their ending words, UTF-8 sequences across 32- and 64-byte steps.  And no
route reads outside the buffer: an array filling memory between two PROT_NONE pages,
its first string at the first byte and its last ending at the last, is scanned by every
route in a child process (a stray read is a crash there, not here).
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from test_vocab_bytes import want_bad, want_dup

from ggscope.rules import vocab_bytes

LEVELS = (0, 1, 2)


@pytest.fixture
def cv():
    if vocab_bytes._cvocab is None:
        pytest.skip("ggscope.rules._cvocab is not built (python setup.py build_ext --inplace)")
    return vocab_bytes._cvocab


def gguf(strings: list[bytes], lead: bytes = b"", lsize: int = 8):
    """A GGUF token array (8-byte little-endian lengths) after ``lead``, its lengths
    stored in ``lsize``-byte integers (what the parser narrows them to)."""
    body = lead + b"".join(struct.pack("<Q", len(s)) + s for s in strings)
    lens = np.array([len(s) for s in strings], dtype={1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[lsize])
    return np.frombuffer(body, dtype=np.uint8), len(lead), lens


def scan_all(cv, strings: list[bytes], lead: bytes = b"", lsize: int = 8) -> None:
    """Every route, with and without each check, against the definition."""
    arr, first, lens = gguf(strings, lead, lsize)
    dup, bad = want_dup(strings) or (-1, -1), want_bad(strings)
    for level in LEVELS:
        for dups, utf8 in ((True, True), (True, False), (False, True)):
            got = cv.scan(arr, first, lens, lsize, b"", 0, 8, 0, dups, utf8, -1, level)
            assert got[:2] == (dup if dups else (-1, -1)), (level, dups, utf8)
            assert np.frombuffer(got[2], np.int64).tolist() == (bad if utf8 else []), (level, dups, utf8)


def test_simd_levels_are_checked(cv):
    arr, first, lens = gguf([b"a"])
    for level in (-1, 3):
        with pytest.raises(ValueError, match="simd 0..2"):
            cv.scan(arr, first, lens, 8, b"", 0, 8, 0, True, True, -1, level)


@pytest.mark.parametrize("lsize", [1, 2, 4, 8])
def test_random_arrays_at_every_block_edge(cv, lsize):
    """Distinct random strings of 0..40 bytes (some not UTF-8), then one earlier string
    again at a place around each block edge of the block walk (2048 strings, or 1024 as
    it was) and of its eight-string steps - and with no repeat at all."""
    rng = np.random.default_rng(lsize)
    pool = list(dict.fromkeys(bytes(rng.integers(0, 256 if k % 7 == 0 else 128, size=int(rng.integers(0, 41)),
                                                 dtype=np.uint8)) for k in range(4300)))
    for n in (1, 2, 7, 8, 9, 1023, 1025, 2047, 2048, 2049, 4095, 4097):
        strings = pool[:n]
        scan_all(cv, strings, b"lead", lsize)
        if n > 1:
            for at, of in ((n - 1, 0), (n - 1, n - 2), (n // 2, n // 2 - 1)):
                repeated = strings[:at] + [strings[of]] + strings[at + 1:]
                scan_all(cv, repeated, b"lead", lsize)


def test_every_length_among_strings_with_the_same_ending_words(cv):
    """For each length 0..40: strings that end in the same 16 bytes as a longer or
    shorter neighbour, differ from one another in one byte at each place, follow strings
    of every length (so the bytes before each differ) - then one of them again.  The
    words that end a string are masked to its own bytes, the first string's read as it
    allows (no bytes before it in the array)."""
    tail = bytes(range(0x41, 0x41 + 40))
    for n in range(41):
        base = tail[40 - n:]
        strings = [base] + [base[:k] + b"\x7f" + base[k + 1:] for k in range(n)]
        strings += [tail[40 - m:] for m in range(41) if m != n]                  # the same ending, other lengths
        strings.append(strings[len(strings) // 3])
        for lead in (b"", b"x" * 3, b"y" * 11):
            scan_all(cv, strings, lead)
        scan_all(cv, strings[:-1], b"")


def test_utf8_across_the_vector_steps(cv):
    """Two-, three- and four-byte characters, and each cut short, straddling every
    place around the 32- and 64-byte steps of the span the runs are judged in; the
    string before the last cut after a lead byte, the array's end right after it."""
    chars = ["\u00e9", "\u20ac", "\U0001f600", "\uffff", "\U0010ffff"]
    strings = []
    for pad in range(0, 70):
        for c in chars:
            raw = c.encode()
            strings.append(b"p" * pad + raw)
            strings.append(b"q" * pad + raw[:-1])                                # truncated
    strings += [b"\xed\xa0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"ok", b"\xe2\x82"]
    scan_all(cv, strings, b"")
    for cut in range(1, 40):                                                     # runs ending everywhere
        scan_all(cv, strings[:cut] + [b"\xf0\x9f\x98"], b"ab")


def test_one_string_and_empty_strings_everywhere_by_every_route(cv):
    """Hostile shapes through the block walk: 5000 copies of one string of each length
    up to 17 (every string meets the same bucket), and empty strings."""
    for m in (0, 1, 8, 9, 16, 17):
        arr, first, lens = gguf([b"z" * m] * 5000, b"", 2)
        for level in LEVELS:
            assert cv.scan(arr, first, lens, 2, b"", 0, 8, 0, True, True, -1, level)[:2] == (1, 0)


def test_the_sort_after_the_table_gives_up_reads_every_string(cv):
    """The budget runs out in the second block of the block walk: the sort then needs
    the offsets of the strings of every later block too - noted though nothing is hashed
    any more (another array's offsets, left in the memory the scan keeps, would point
    elsewhere).  The repeat is in the last block."""
    n = 9000
    strings = [b"t%05d" % k for k in range(n)] + [b"t05000"]
    other = [b"other string %d" % k for k in range(n + 1)]                  # longer: other offsets
    for level in LEVELS:
        arr, first, lens = gguf(other)
        assert cv.scan(arr, first, lens, 8, b"", 0, 8, 0, True, True, -1, level)[:2] == (-1, -1)
        arr, first, lens = gguf(strings)
        assert cv.scan(arr, first, lens, 8, b"", 0, 8, 0, True, True, 3000, level)[:2] == (n, 5000), level


GUARDED = textwrap.dedent('''
    import ctypes, mmap, struct, sys
    import numpy as np
    from ggscope.rules import _cvocab

    PAGE = mmap.PAGESIZE
    mem = mmap.mmap(-1, 5 * PAGE)                  # PROT_NONE | 3 readable pages | PROT_NONE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    for page in (0, 4):
        assert libc.mprotect(addr + page * PAGE, PAGE, 0) == 0, ctypes.get_errno()
    view = np.frombuffer(mem, dtype=np.uint8, count=3 * PAGE, offset=PAGE)
    runs = 0
    for last in range(41):                         # the last string: every length, ending at the last byte
        for firsts in ([0], [3], [7], [5, 1], []):  # the first: short, at the first byte
            strings = [b"\\xc3" * k for k in firsts] + [bytes([65 + (k % 26)]) * (k % 41) for k in range(60)]
            strings += [b"\\xe2\\x82" + b"a" * max(0, last - 2) if last >= 2 else b"\\xe2" * last]
            for where in ("start", "end"):
                body = b"".join(struct.pack("<Q", len(s)) + s for s in strings)
                start = 0 if where == "start" else 3 * PAGE - len(body)
                view[:] = 0x55
                view[start:start + len(body)] = np.frombuffer(body, np.uint8)
                buf = view[:start + len(body)] if where == "start" else view
                lens = np.array([len(s) for s in strings], np.uint8)
                for level in (0, 1, 2):
                    for dups, utf8 in ((True, True), (True, False), (False, True)):
                        _cvocab.scan(buf, start, lens, 1, b"", 0, 8, 0, dups, utf8, -1, level)
                        runs += 1
    print(runs)
''')


def test_no_route_reads_outside_the_buffer(cv):
    """Every route over arrays whose first string starts at the buffer's first byte (a
    PROT_NONE page before it) or whose last ends at its last (a PROT_NONE page after
    it), the last of every length 0..40: a read outside is a segmentation fault in the
    child."""
    root = str(Path(vocab_bytes.__file__).resolve().parents[2])             # the ggscope imported here
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", GUARDED], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert int(proc.stdout) == 41 * 5 * 2 * 3 * 3
