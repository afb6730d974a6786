"""String arrays of any content scan exactly, whichever path the scanner takes.

Empty strings, strings of 256 bytes or more and mixes of them defeat the candidate trick;
past a few thousand exact steps the scanner switches to a compiled walk.  Both must give
exactly what a one-by-one walk (written here, independently) gives, including where a
damaged array stops.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

from ggscope.ksy.scan import ScanStop, StringArray, scan_length_prefixed


def _build(strings, width, le, tail=0):
    fmt = ("<" if le else ">") + {4: "I", 8: "Q"}[width]
    out = bytearray(b"\x07" * 3)                     # some bytes before the array
    for s in strings:
        out += struct.pack(fmt, len(s)) + s + b"\x01" * tail
    return bytes(out)


def _naive(data, start, n, width, le, tail):
    p, starts = start, []
    for _ in range(n):
        ln = int.from_bytes(data[p:p + width], "little" if le else "big")
        starts.append(p)
        p += width + ln + tail
    return starts, p


@pytest.mark.parametrize("width, le, tail", [(8, True, 0), (4, True, 4), (8, False, 0), (4, False, 0)])
@pytest.mark.parametrize("mix", ["empty", "alternating", "random"])
def test_exact_for_any_content(width, le, tail, mix):
    rng = np.random.default_rng(1)
    n = 20_000
    if mix == "empty":
        strings = [b""] * n
    elif mix == "alternating":
        strings = [b"" if i % 2 else b"a" for i in range(n)]
    else:
        choices = [b"", b"x", b"\xff\xfe", b"y" * 255, b"z" * 256, b"w" * 700, "é".encode()]
        strings = [choices[k] for k in rng.integers(0, len(choices), n)]
    data = _build(strings, width, le, tail)
    arr = np.frombuffer(data, np.uint8)
    starts, lens, end = scan_length_prefixed(arr, 3, n, width, le, len(data), tail)
    want_starts, want_end = _naive(data, 3, n, width, le, tail)
    assert starts.tolist() == want_starts and end == want_end == len(data)
    assert lens.tolist() == [len(s) for s in strings]
    sa = StringArray(arr, starts, lens, width, "utf-8")
    assert sa.tolist() == [s.decode("utf-8", "surrogateescape") for s in strings]
    bad = [i for i, s in enumerate(strings) if s == b"\xff\xfe"]
    assert sa.invalid_utf8() == bad


@pytest.mark.parametrize("n_good", [10, 10_000])
def test_stops_exactly_where_an_element_does_not_fit(n_good):
    strings = [b""] * n_good + [b"abc"]
    data = _build(strings, 8, True)
    data = data[:-2]                                   # the last string is cut
    arr = np.frombuffer(data, np.uint8)
    with pytest.raises(ScanStop) as e:
        scan_length_prefixed(arr, 3, n_good + 1, 8, True, len(data))
    assert e.value.index == n_good and e.value.offset == 3 + 8 * n_good
