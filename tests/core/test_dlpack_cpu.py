"""DLPack on the CPU device: NumPy reads a GPUArray zero-copy (legacy and versioned
capsules, strided views), capsules are freed consumed or not, and CPU arrays have no
__cuda_array_interface__."""

from __future__ import annotations

import gc

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dlpack


def cpu(h: np.ndarray) -> gp.GPUArray:
    return gp.asarray(h, device="cpu")


def test_numpy_reads_cpu_arrays_without_a_copy() -> None:
    x = cpu(np.arange(12.0).reshape(3, 4))
    assert x.__dlpack_device__() == (1, 0)
    v = np.from_dlpack(x[:, ::2])
    assert v.ctypes.data == x.buffer.ptr and v.strides == (32, 16)
    v[1, 1] = -1.0
    assert x.to_numpy()[1, 2] == -1.0
    t = np.from_dlpack(x.T)
    np.testing.assert_array_equal(t, x.to_numpy().T)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "int64", "float16",
                                   "float32", "float64"])  # fmt: skip
def test_dtypes_round_trip(dtype: str) -> None:
    h = (np.arange(6) % 3).astype(dtype)
    np.testing.assert_array_equal(np.from_dlpack(cpu(h)), h)


def test_capsules_consumed_or_not_release_the_array() -> None:
    before = _dlpack.live_exports()
    x = cpu(np.ones(5, dtype=np.float32))
    for kwargs in ({}, {"max_version": (1, 0)}):
        cap = x.__dlpack__(**kwargs)
        assert _dlpack.live_exports() == before + 1
        del cap
        gc.collect()
        assert _dlpack.live_exports() == before
    imported = _dlpack.consume(x.__dlpack__(max_version=(1, 0)))
    assert imported.shape == (5,) and imported.dtype.name == "float32"
    del imported
    gc.collect()
    assert _dlpack.live_exports() == before


def test_import_reads_numpy_strides_and_offsets() -> None:
    h = np.arange(12.0).reshape(3, 4)[::-1, 1::2]
    imp = _dlpack.consume(h.__dlpack__(), h)
    assert imp.shape == (3, 2) and imp.strides == (-32, 16)
    assert imp.owner.ptr + imp.offset == h.ctypes.data
    assert imp.owner.nbytes == 88


def test_copy_and_device_requests() -> None:
    x = cpu(np.arange(4.0))
    c = np.from_dlpack(x, copy=True) if np.lib.NumpyVersion(np.__version__) >= "2.1.0" else None
    if c is not None:
        c[0] = 9.0
        assert x.to_numpy()[0] == 0.0
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))


def test_cpu_arrays_have_no_cuda_array_interface() -> None:
    assert not hasattr(cpu(np.zeros(2)), "__cuda_array_interface__")
