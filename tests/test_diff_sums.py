"""diff_sums.pair_sums against numpy float64 arithmetic written out here."""
import numpy as np
import pytest

from ggscope.diff_sums import pair_sums


def _reference(x, y):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    fin = np.isfinite(x64) & np.isfinite(y64)
    a, b = x64[fin], y64[fin]
    d = b - a
    same = (np.isnan(x64) & np.isnan(y64)) | (x64 == y64)
    return ((a * a).sum(), (b * b).sum(), (a * b).sum(), (d * d).sum(), np.abs(d).max() if d.size else 0.0,
            int(fin.sum()), int((~fin).sum()), int((~fin & ~same).sum()))


@pytest.mark.parametrize("plant", ["none", "nan", "inf", "same-nan", "overflow"])
def test_pair_sums_match_float64(plant):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(100_003).astype(np.float32)
    y = (x + rng.standard_normal(x.size).astype(np.float32) * 0.01).astype(np.float32)
    if plant == "nan":
        x[17], y[90_000] = np.nan, np.nan
    elif plant == "inf":
        y[5] = np.inf
    elif plant == "same-nan":
        x[8] = y[8] = np.nan
        x[9] = y[9] = -np.inf
    elif plant == "overflow":                 # finite in float64, inf as a float32 difference
        x[4], y[4] = np.float32(3e38), np.float32(-3e38)
    got, want = pair_sums(x, y), _reference(x, y)
    assert got[5:] == want[5:]
    assert got[4] == want[4]                  # max |b - a| exactly
    for g, w in zip(got[:4], want[:4]):
        assert g == pytest.approx(w, rel=1e-12)
