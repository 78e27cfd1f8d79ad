"""The cuda FFT kernels' orchestration on the host: layout fitting, axis permutation, scratch
copies, passes over more than three axes, length-1 axes and scaling, for any view.

Host arrays stand in for device memory and each planned execution is carried out by NumPy
on exactly the memory cuFFT's advanced layout would address (sizes, embeddings, strides,
distances): what the kernels hand cuFFT is checked, cuFFT itself is checked on the GPU
(tests/cuda/gpu/test_cuda_fft.py)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygpukit.backends.cpu.views import view

pytest.importorskip("pygpukit_cuda._native")

from pygpukit_cuda import complex_planes, cufft, fft_kernels

_REAL = {cufft.R2C: np.float32, cufft.D2Z: np.float64, cufft.C2R: np.float32,
         cufft.Z2D: np.float64}  # fmt: skip
_COMPLEX = {
    cufft.C2C: np.complex64, cufft.Z2Z: np.complex128, cufft.R2C: np.complex64,
    cufft.D2Z: np.complex128, cufft.C2R: np.complex64, cufft.Z2D: np.complex128,
}  # fmt: skip


def _at(ptr: int, dtype: Any, shape: tuple[int, ...], embed: tuple[int, ...], stride: int,
        dist: int) -> np.ndarray:  # fmt: skip
    """The (batch, *shape) array cuFFT's layout addresses at `ptr` (empty embeddings: the
    basic layout, packed transforms one after another)."""
    if not embed:
        embed, stride, dist = shape[1:], 1, int(np.prod(shape[1:]))
    size = np.dtype(dtype).itemsize
    steps = [stride]
    for e in reversed(embed[1:]):
        steps.insert(0, steps[0] * e)
    extent = (shape[0] - 1) * dist + sum((n - 1) * s for n, s in zip(shape[1:], steps, strict=True))
    raw = (ctypes.c_char * ((extent + 1) * size)).from_address(ptr)
    return np.ndarray(shape, dtype, buffer=raw, strides=tuple(s * size for s in (dist, *steps)))


class _Plan:
    def __init__(self, fft_type: int, *layout: Any) -> None:
        self.type = fft_type
        self.n, self.inembed, self.istride, self.idist, self.onembed, self.ostride, \
            self.odist, self.batch = layout  # fmt: skip


def _execute(plan: _Plan, index: int, in_ptr: int, out_ptr: int, direction: int) -> None:
    n, t = tuple(plan.n), plan.type
    half = (*n[:-1], n[-1] // 2 + 1)
    axes = tuple(range(1, len(n) + 1))
    if t in (cufft.C2C, cufft.Z2Z):
        src = _at(in_ptr, _COMPLEX[t], (plan.batch, *n), plan.inembed, plan.istride, plan.idist)
        result = np.fft.fftn(src, axes=axes) if direction == cufft.FORWARD else \
            np.fft.ifftn(src, axes=axes, norm="forward")  # fmt: skip
        out_dtype, out_shape = _COMPLEX[t], n
    elif t in (cufft.R2C, cufft.D2Z):
        src = _at(in_ptr, _REAL[t], (plan.batch, *n), plan.inembed, plan.istride, plan.idist)
        result, out_dtype, out_shape = np.fft.rfftn(src, axes=axes), _COMPLEX[t], half
    else:
        src = _at(in_ptr, _COMPLEX[t], (plan.batch, *half), plan.inembed, plan.istride,
                  plan.idist)  # fmt: skip
        result = np.fft.irfftn(src, s=n, axes=axes, norm="forward")
        out_dtype, out_shape = _REAL[t], n
        src[...] = np.nan  # cuFFT's c2r overwrites its input: catch a caller who reads it
    out = _at(out_ptr, out_dtype, (plan.batch, *out_shape), plan.onembed, plan.ostride,
              plan.odist)  # fmt: skip
    out[...] = result


@pytest.fixture(autouse=True)
def host_cufft(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cufft, "plan", lambda index, t, *layout: _Plan(t, *layout))
    monkeypatch.setattr(cufft, "execute", _execute)

    def copy(src: gp.GPUArray, out: gp.GPUArray) -> None:
        view(out)[...] = view(src)

    monkeypatch.setattr(complex_planes, "raw_copy", copy)
    monkeypatch.setattr(complex_planes, "copy", copy)
    monkeypatch.setattr(complex_planes, "real", lambda x, out: copy(gp.real(x), out))
    monkeypatch.setattr(fft_kernels, "_scale", lambda out, s: view(out).__imul__(s))


RNG = np.random.default_rng(5)


def _host(a: np.ndarray) -> gp.GPUArray:
    return gp.asarray(a, device="cpu")


def _viewed(a: np.ndarray, perm: list[int], step: int) -> tuple[np.ndarray, gp.GPUArray]:
    """The same view of `a` on both sides: axes permuted, every step-th element of axis 0."""
    x = _host(np.ascontiguousarray(a))
    v = gp.permute_dims(x, tuple(perm))
    npv = np.transpose(a, perm)
    if step > 1 and npv.shape[0] > 1:
        v, npv = v[::step], npv[::step]
    return npv, v


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=5),
    data=st.data(),
)
def test_c2c_any_axes_and_views(shape: list[int], data: st.DataObject) -> None:
    ndim = len(shape)
    k = data.draw(st.integers(1, ndim))
    axes = tuple(data.draw(st.permutations(range(ndim)))[:k])
    perm = data.draw(st.permutations(range(ndim)))
    step = data.draw(st.sampled_from([1, 2]))
    forward = data.draw(st.booleans())
    a = (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex128)
    npv, v = _viewed(a, list(perm), step)
    out = gp.empty(npv.shape, dtype=gp.complex128, device="cpu")
    fft_kernels.fft_c2c(v, out, axes, forward, 0.5)
    want = np.fft.fftn(npv, axes=axes) if forward else np.fft.ifftn(npv, axes=axes, norm="forward")
    np.testing.assert_allclose(view(out), 0.5 * want, atol=1e-10)
    np.testing.assert_array_equal(view(v), npv)  # the input is untouched


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=5),
    data=st.data(),
)
def test_r2c_and_c2r_any_axes_and_views(shape: list[int], data: st.DataObject) -> None:
    ndim = len(shape)
    k = data.draw(st.integers(1, ndim))
    axes = tuple(data.draw(st.permutations(range(ndim)))[:k])
    perm = data.draw(st.permutations(range(ndim)))
    step = data.draw(st.sampled_from([1, 2]))
    a = RNG.standard_normal(shape)
    npv, v = _viewed(a, list(perm), step)
    half = list(npv.shape)
    half[axes[-1]] = npv.shape[axes[-1]] // 2 + 1
    spec = gp.empty(tuple(half), dtype=gp.complex128, device="cpu")
    fft_kernels.fft_r2c(v, spec, axes, 1.0)
    want = np.fft.rfftn(npv, axes=axes)
    np.testing.assert_allclose(view(spec), want, atol=1e-10)
    # back again from a view of the spectrum (c2r must leave it as it was)
    _, sv = _viewed(np.ascontiguousarray(want), list(range(ndim)), 1)
    before = view(sv).copy()
    back = gp.empty(npv.shape, dtype=gp.float64, device="cpu")
    lengths = [npv.shape[ax] for ax in axes]
    fft_kernels.fft_c2r(sv, back, axes, 1.0 / float(np.prod(lengths)))
    np.testing.assert_allclose(view(back), np.fft.irfftn(want, s=lengths, axes=axes), atol=1e-10)
    np.testing.assert_array_equal(view(sv), before)


def test_the_common_cases_run_without_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[tuple[int, ...]] = []
    monkeypatch.setattr(fft_kernels, "_contiguous", lambda x: copies.append(x.shape) or x)
    x = _host(RNG.standard_normal((8, 64)) + 0j)
    out = gp.empty((8, 64), dtype=gp.complex128, device="cpu")
    fft_kernels.fft_c2c(x, out, (1,), True, 1.0)
    fft_kernels.fft_c2c(x, out, (0,), True, 1.0)
    fft_kernels.fft_c2c(x, out, (0, 1), True, 1.0)
    r = _host(RNG.standard_normal((8, 64)))
    fft_kernels.fft_r2c(r, gp.empty((8, 33), dtype=gp.complex128, device="cpu"), (1,), 1.0)
    assert copies == []


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_real_operands_at_odd_offsets_reach_cufft_aligned(
    dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cuFFT answers CUFFT_INVALID_VALUE for a pointer not aligned to the complex element
    # size: a real view starting an odd number of elements into its buffer must go through
    # an aligned scratch array (the conformance suite's guarded output did this on the GPU)
    def strict(plan: _Plan, index: int, in_ptr: int, out_ptr: int, direction: int) -> None:
        complex_size = np.dtype(_COMPLEX[plan.type]).itemsize
        assert in_ptr % complex_size == 0 and out_ptr % complex_size == 0, "unaligned"
        _execute(plan, index, in_ptr, out_ptr, direction)

    monkeypatch.setattr(cufft, "execute", strict)
    cdtype = np.complex64 if dtype == np.float32 else np.complex128
    a = RNG.standard_normal((3, 10)).astype(dtype)
    want = np.fft.rfft(a, axis=1)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for n in (10, 9):  # even, and odd (cropped) output lengths
        spec = _host(np.fft.rfft(a[:, :n], axis=1).astype(cdtype))
        guard = 3
        buffer = _host(np.full(3 * n + 2 * guard, -7.0, dtype))
        out = gp.reshape(buffer[guard : guard + 3 * n], (3, n))
        for _ in range(2):  # the second call takes the cached layout
            fft_kernels.fft_c2r(spec, out, (1,), 1.0 / n)
            np.testing.assert_allclose(view(out), a[:, :n], atol=tol)
            assert (view(buffer)[:guard] == -7).all() and (view(buffer)[-guard:] == -7).all()
    # and the other way: a real input at an odd offset
    buffer = _host(np.concatenate([np.zeros(1, dtype), a.reshape(-1)]))
    x = gp.reshape(buffer[1:], (3, 10))
    spec = gp.empty((3, 6), dtype=gp.complex64 if dtype == np.float32 else gp.complex128,
                    device="cpu")  # fmt: skip
    for _ in range(2):
        fft_kernels.fft_r2c(x, spec, (1,), 1.0)
        np.testing.assert_allclose(view(spec), want, atol=tol * 10)


# -- the fast path's cache: one decision per operand layout, never a wrong one reused --------
def test_fast_path_keys_on_strides_axes_and_direction() -> None:
    fft_kernels._fast_plans.clear()
    a = RNG.standard_normal((8, 8)) + 1j * RNG.standard_normal((8, 8))
    x = _host(a)
    xt = gp.permute_dims(x, (1, 0))  # the same shape, other strides
    calls = [(x, (1,), True), (xt, (1,), True), (x, (0,), True), (x, (1,), False),
             (xt, (0, 1), False), (x, (1,), True), (xt, (1,), True)]  # fmt: skip
    for v, axes, forward in calls:
        npv = a if v is x else a.T
        out = gp.empty((8, 8), dtype=gp.complex128, device="cpu")
        fft_kernels.fft_c2c(v, out, axes, forward, 0.25)
        want = np.fft.fftn(npv, axes=axes) if forward else \
            np.fft.ifftn(npv, axes=axes, norm="forward")  # fmt: skip
        np.testing.assert_allclose(view(out), 0.25 * want, atol=1e-10)
    assert len(fft_kernels._fast_plans) == 5  # one per distinct layout, repeats reused


def test_fast_path_c2r_keys_on_output_length_and_copies_each_call() -> None:
    fft_kernels._fast_plans.clear()
    a = RNG.standard_normal((3, 16))
    for n in (16, 15, 16, 15):  # the same 9-long spectrum, two output lengths
        spec_np = np.fft.rfft(a[:, :n], axis=1)
        spec_np = np.concatenate([spec_np, np.zeros((3, 9 - spec_np.shape[1]))], axis=1)
        spec = _host(spec_np[:, : n // 2 + 1].copy())
        before = view(spec).copy()
        out = gp.empty((3, n), dtype=gp.float64, device="cpu")
        fft_kernels.fft_c2r(spec, out, (1,), 1.0 / n)
        np.testing.assert_allclose(view(out), a[:, :n], atol=1e-10)
        np.testing.assert_array_equal(view(spec), before)  # cuFFT's overwrite hit a copy
    assert len(fft_kernels._fast_plans) == 2


def test_fast_path_takes_the_general_path_where_it_must() -> None:
    fft_kernels._fast_plans.clear()
    # length-1 axes and four axes are the general path's; their entries say so
    a = RNG.standard_normal((2, 1, 3, 4)) + 0j
    out = gp.empty(a.shape, dtype=gp.complex128, device="cpu")
    fft_kernels.fft_c2c(_host(a), out, (0, 1, 2, 3), True, 1.0)
    np.testing.assert_allclose(view(out), np.fft.fftn(a), atol=1e-10)
    out = gp.empty(a.shape, dtype=gp.complex128, device="cpu")
    fft_kernels.fft_c2c(_host(a), out, (1, 3), True, 1.0)
    np.testing.assert_allclose(view(out), np.fft.fftn(a, axes=(1, 3)), atol=1e-10)
    assert list(fft_kernels._fast_plans.values()) == [None, None]


def test_fast_path_c2r_reads_a_strided_spectrum() -> None:
    a = RNG.standard_normal((6, 10))
    spec_t = _host(np.ascontiguousarray(np.fft.rfft(a, axis=1).T))  # (6, 6) stored transposed
    spec = gp.permute_dims(spec_t, (1, 0))
    before = view(spec).copy()
    for _ in range(2):
        out = gp.empty((6, 10), dtype=gp.float64, device="cpu")
        fft_kernels.fft_c2r(spec, out, (1,), 0.1)
        np.testing.assert_allclose(view(out), a, atol=1e-10)
        np.testing.assert_array_equal(view(spec), before)
