"""String arrays of any content scan exactly, whichever path the scanner takes.

Empty strings, strings of 256 bytes or more and mixes of them defeat the candidate trick;
past a few thousand exact steps the numpy route switches to a compiled walk, and the C
walker (ksy._cscan) does all of it when built.  Every route must give exactly what a
one-by-one walk (written here, independently) gives, including where a damaged array
stops; the compact StringArray must give back every offset and string.
"""
from __future__ import annotations

import struct

import numpy as np
import pytest

import ggscope.ksy.scan as scan_mod
from ggscope.ksy.scan import ScanStop, StringArray, scan_length_prefixed


@pytest.fixture(params=["compiled", "numpy"])
def route(request, monkeypatch):
    """Each test runs over the C walker and over the numpy route."""
    if request.param == "compiled" and scan_mod._cscan is None:
        pytest.skip("ggscope.ksy._cscan not built")
    if request.param == "numpy":
        monkeypatch.setattr(scan_mod, "_cscan", None)
    return request.param


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
def test_exact_for_any_content(width, le, tail, mix, route):
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
    lens, end = scan_length_prefixed(arr, 3, n, width, le, len(data), tail)
    want_starts, want_end = _naive(data, 3, n, width, le, tail)
    assert end == want_end == len(data)
    assert lens.tolist() == [len(s) for s in strings]
    assert lens.dtype == (np.uint16 if mix == "random" else np.uint8)      # the narrowest that holds them
    sa = StringArray(arr, 3, lens, width, "utf-8", tail=tail)
    assert sa.offsets().tolist() == want_starts
    for lo, hi in ((0, 1), (4095, 4097), (5000, 13000), (n - 1, n)):      # across the random-access marks
        assert sa.offsets(lo, hi).tolist() == want_starts[lo:hi]
    assert [sa.raw(i) for i in (0, 4096, 12345, n - 1)] == [strings[i] for i in (0, 4096, 12345, n - 1)]
    assert sa.tolist() == [s.decode("utf-8", "surrogateescape") for s in strings]
    bad = [i for i, s in enumerate(strings) if s == b"\xff\xfe"]
    assert sa.invalid_utf8() == bad


@pytest.mark.parametrize("n_good", [10, 10_000])
def test_stops_exactly_where_an_element_does_not_fit(n_good, route):
    strings = [b""] * n_good + [b"abc"]
    data = _build(strings, 8, True)
    data = data[:-2]                                   # the last string is cut
    arr = np.frombuffer(data, np.uint8)
    with pytest.raises(ScanStop) as e:
        scan_length_prefixed(arr, 3, n_good + 1, 8, True, len(data))
    assert e.value.index == n_good and e.value.offset == 3 + 8 * n_good
