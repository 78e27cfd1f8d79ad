"""cuFFT without a GPU: where the library is looked for, what dispatch says without it, and
the mapping of strided views onto cuFFT's advanced layout (checked element by element)."""

from __future__ import annotations

import itertools

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pygpukit_cuda._native")

from fake_device_arrays import fake_array
from pygpukit_cuda import cufft, fft_kernels
from pygpukit_cuda.provider import make_provider


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cufft, "_tried", False)
    monkeypatch.setattr(cufft, "_lib", None)


def test_env_path_comes_first_then_what_pathfinder_finds(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    lib = tmp_path / "libcufft.so.12"
    lib.write_bytes(b"not a library")
    monkeypatch.setenv("PYGPUKIT_CUFFT_PATH", str(tmp_path))
    monkeypatch.setattr(cufft, "_pathfinder_path", lambda: "/wheel/libcufft.so.12")
    assert cufft.candidates() == [str(lib), "/wheel/libcufft.so.12"]


def test_a_broken_library_is_named_and_dispatch_says_what_to_install(
    fresh: None, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "libcufft.so.12"
    bad.write_bytes(b"not a library")
    monkeypatch.setenv("PYGPUKIT_CUFFT_PATH", str(bad))
    monkeypatch.setattr(cufft, "_pathfinder_path", lambda: None)
    assert cufft.library() is None
    why = cufft.missing()
    assert why is not None and "nvidia-cufft" in why and str(bad) in why
    kernel = make_provider().kernels["fft_c2c"]
    assert kernel.refusal((gp.complex64,)) == why


def test_disabled_by_env(fresh: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYGPUKIT_CUFFT", "0")
    assert cufft.library() is None
    assert "PYGPUKIT_CUFFT=0" in cufft.status()


def test_the_wheel_opens_when_installed(fresh: None) -> None:
    if cufft._pathfinder_path() is None:
        pytest.skip("the nvidia-cufft wheel is not installed")
    assert cufft.library() is not None
    assert cufft.status().startswith("cuFFT ") and cufft.missing() is None


def test_kernels_take_their_dtypes_only() -> None:
    kernels = make_provider().kernels
    assert kernels["fft_r2c"].dtypes == frozenset({gp.float32, gp.float64})
    assert kernels["fft_c2c"].dtypes == frozenset({gp.complex64, gp.complex128})


def test_axis_groups_put_the_last_axis_first() -> None:
    assert fft_kernels._groups((0,)) == [(0,)]
    assert fft_kernels._groups((0, 1, 2, 3, 4)) == [(2, 3, 4), (0, 1)]
    assert fft_kernels._groups((3, 0, 2, 1)) == [(0, 2, 1), (3,)]


def _offsets(arr: gp.GPUArray, axes: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Element offsets of arr, batch index (other axes, C order) by transform index."""
    size = arr.dtype.itemsize
    others = [a for a in range(arr.ndim) if a not in axes]
    out = []
    for b in itertools.product(*(range(arr.shape[a]) for a in others)):
        row = []
        for t in itertools.product(*(range(arr.shape[a]) for a in axes)):
            idx = [0] * arr.ndim
            for a, v in zip(others, b, strict=True):
                idx[a] = v
            for a, v in zip(axes, t, strict=True):
                idx[a] = v
            row.append(sum(i * s for i, s in zip(idx, arr.strides, strict=True)) // size)
        out.append(tuple(row))
    return out


def _cufft_offsets(shape: list[int], embed: tuple[int, ...], stride: int, dist: int,
                   batch: int) -> list[tuple[int, ...]]:  # fmt: skip
    """Where cuFFT's layout puts each element, batch by transform index (empty
    embeddings: the basic layout, packed transforms one after another)."""
    if not embed:
        embed, stride, dist = tuple(shape), 1, int(np.prod(shape))
    out = []
    for b in range(batch):
        row = []
        for t in itertools.product(*(range(n) for n in shape)):
            lin = 0
            for k, v in enumerate(t):
                lin = lin * (embed[k] if k else 1) + v
            row.append(b * dist + lin * stride)
        out.append(tuple(row))
    return out


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_a_fitted_layout_addresses_every_element_as_the_view_does(
    shape: list[int], data: st.DataObject
) -> None:
    ndim = len(shape)
    rank = data.draw(st.integers(1, min(3, ndim)))
    axes = tuple(data.draw(st.permutations(range(ndim)))[:rank])
    perm = data.draw(st.permutations(range(ndim)))
    step = data.draw(st.sampled_from([1, 2]))
    # a view: a permutation of a contiguous parent, every `step`-th element of its last axis
    parent = [shape[p] for p in perm]
    parent[-1] *= step
    strides = list(np.empty(parent, dtype=np.complex64).strides)
    strides[-1] *= step
    view_strides = [0] * ndim
    for i, p in enumerate(perm):
        view_strides[p] = strides[i]
    src = fake_array(tuple(shape), gp.complex64, 1 << 20, tuple(view_strides))
    dst = fake_array(tuple(shape), gp.complex64, 1 << 30)
    lay = fft_kernels._layout(src, dst, axes, tuple(shape[a] for a in axes))
    if lay is None:
        return  # the kernels copy such a view first; nothing to check here
    n, inembed, istride, idist, onembed, ostride, odist, batch = lay
    assert list(n) == [shape[a] for a in axes]
    assert _offsets(src, axes) == _cufft_offsets(list(n), inembed, istride, idist, batch)
    assert _offsets(dst, axes) == _cufft_offsets(list(n), onembed, ostride, odist, batch)


def test_common_layouts_need_no_copy() -> None:
    x = fake_array((8, 1024), gp.float32, 1 << 20)
    z = fake_array((8, 513), gp.complex64, 1 << 30)
    # contiguous operands get cuFFT's basic layout (no embeddings), as torch plans them
    assert fft_kernels._layout(x, z, (1,), (1024,)) == ((1024,), (), 1, 1024, (), 1, 513, 8)
    # a padded row (a column slice) keeps the advanced layout
    wide = fake_array((8, 1024), gp.float32, 1 << 20, (4 * 2048, 4))
    assert fft_kernels._layout(wide, z, (1,), (1024,)) == (
        (1024,), (1024,), 1, 2048, (513,), 1, 513, 8,
    )  # fmt: skip
    col = fake_array((64, 5), gp.complex64, 1 << 20)  # axis 0 of a matrix: stride 5, dist 1
    assert fft_kernels._layout(col, col, (0,), (64,))[1:] == ((64,), 5, 1, (64,), 5, 1, 5)
    # batch axes that do not merge into one distance have no layout
    cube = fake_array((3, 4, 5), gp.complex64, 1 << 20)
    assert fft_kernels._layout(cube, cube, (1,), (4,)) is None
