"""get_window against scipy.signal.get_window, and pad_center."""

from __future__ import annotations

import numpy as np
import pytest
from pygpukit.audio import get_window, pad_center

# reference libraries: absent on the GPU machine, where this module then skips
scipy = pytest.importorskip("scipy")
pytest.importorskip("scipy.signal")  # binds scipy.signal

NAMES = ["hann", "hamming", "blackman", "blackmanharris", "nuttall", "flattop", "boxcar",
         "triang", "bartlett", "cosine", ("kaiser", 8.6), ("gaussian", 7.0), ("tukey", 0.3),
         "tukey", 4.0]  # fmt: skip


@pytest.mark.parametrize("window", NAMES, ids=str)
@pytest.mark.parametrize("n", [1, 2, 7, 400, 512])
@pytest.mark.parametrize("fftbins", [True, False])
def test_matches_scipy(window: object, n: int, fftbins: bool) -> None:
    want = scipy.signal.get_window(window, n, fftbins=fftbins)
    got = get_window(window, n, fftbins=fftbins)  # type: ignore[arg-type]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_callable_and_array_windows() -> None:
    np.testing.assert_array_equal(get_window(np.hanning, 5), np.hanning(5))
    np.testing.assert_array_equal(get_window([1.0, 2.0, 3.0], 3), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        get_window(np.ones(3), 4)


def test_bad_window_names() -> None:
    with pytest.raises(ValueError, match="unknown window 'hanx'"):
        get_window("hanx", 8)
    with pytest.raises(ValueError, match="kaiser window needs a parameter"):
        get_window("kaiser", 8)


def test_pad_center() -> None:
    np.testing.assert_array_equal(pad_center(np.ones(3), size=6), [0, 1, 1, 1, 0, 0])
    with pytest.raises(ValueError, match="smaller"):
        pad_center(np.ones(3), size=2)
