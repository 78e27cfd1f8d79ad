"""The decode step's fast CUDA paths against float64 references and against the paths they
replace: the one-launch cluster attention (sm_90+), the 16-byte add_rmsnorm, the fused
RoPE + cache write under graph capture. Outputs of direct kernel calls start as NaN, so an
element the kernel misses shows."""

from __future__ import annotations

import math

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu

DEV = "cuda"
TOL = {"bfloat16": 3e-2, "float16": 5e-3}


def _put(a: np.ndarray, dtype: str) -> gp.GPUArray:
    return gp.asarray(a.astype(np.float32), device=DEV).astype(dtype)


def _back(x: gp.GPUArray) -> np.ndarray:
    return x.astype("float64").to_numpy()


def _ref_attention(q, k, v, starts, ends, scale, window):  # type: ignore[no-untyped-def]
    b_, hq, sq, _ = q.shape
    group = hq // k.shape[1]
    out = np.zeros((b_, hq, sq, v.shape[-1]))
    for b, h, i in np.ndindex(b_, hq, sq):
        t = ends[b] - sq + i
        j = np.arange(k.shape[2])
        ok = (j >= starts[b]) & (j <= t)
        if window:
            ok &= t - j < window
        if ok.any():
            s = k[b, h // group][ok] @ q[b, h, i] * scale
            p = np.exp(s - s.max())
            out[b, h, i] = (p / p.sum()) @ v[b, h // group][ok]
    return out


def _cluster_on() -> bool:
    from pygpukit_cuda.device_facts import compute_capability

    return compute_capability(0) >= 90


#: B, Hq, Hkv, Sq, L, D, Dv, starts, ends, window
CASES = [
    (1, 32, 4, 1, 512, 64, 64, [0], [1], 0),  # TinyLlama decode, first step
    (1, 32, 4, 1, 512, 64, 64, [0], [17], 0),  # fewer keys than blocks x 3
    (1, 32, 4, 1, 512, 64, 64, [0], [65], 0),  # one tile plus one key
    (1, 32, 4, 1, 512, 64, 64, [0], [512], 0),  # the full cache: 64 keys a block
    (3, 32, 4, 1, 512, 64, 64, [0, 7, 100], [300, 40, 101], 0),  # rows of their own ranges
    (2, 32, 8, 1, 256, 128, 128, [0, 3], [256, 200], 0),  # Llama-3-8B's heads
    (1, 8, 1, 2, 96, 64, 64, [5], [90], 0),  # 16 query rows (the most), 2 queries a head
    (2, 12, 3, 3, 80, 32, 48, [0, 2], [80, 50], 7),  # window, Sq 3, Dv != D, D < 64
    (1, 4, 4, 1, 4096, 64, 64, [0], [4096], 0),  # the longest cache: 8 tiles a block
    (1, 4, 4, 1, 4096, 64, 64, [0], [3000], 33),  # a window inside a long cache
    (2, 6, 2, 1, 64, 64, 64, [10, 0], [5, 64], 0),  # row 0 sees no key: zeros
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, c[:7])))
def test_cluster_attention_matches_reference_and_old_path(
    case: tuple, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pygpukit_cuda import attend_cluster, decode_ops

    b, hq, hkv, sq, length, d, dv, starts, ends, window = case
    rng = np.random.default_rng(sum(case[:7]))
    q = _put(rng.standard_normal((b, hq, sq, d)), dtype)
    # k: every other head of a wider cache (strided, still 16-byte aligned rows)
    k = _put(rng.standard_normal((b, 2 * hkv, length, d)), dtype)[:, ::2]
    v = _put(rng.standard_normal((b, hkv, length, dv)), dtype)
    st = gp.asarray(np.array(starts, np.int32), device=DEV)
    en = gp.asarray(np.array(ends, np.int64), device=DEV)
    scale = 1 / math.sqrt(d)
    out = gp.full((b, hq, sq, dv), float("nan"), dtype=dtype, device=DEV)
    assert attend_cluster.serves(q, k, v, out) == _cluster_on()
    decode_ops.sdpa_causal_cache(q, k, v, st, en, out, scale, window)
    want = _ref_attention(_back(q), _back(k), _back(v), starts, ends, scale, window)
    got = _back(out)
    assert np.isfinite(got).all()
    err = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
    assert err <= TOL[dtype], err
    if not any(e > s for s, e in zip(starts, ends, strict=True)):
        return
    monkeypatch.setattr(attend_cluster, "ENABLED", False)  # the split-key kernel and merge
    old = gp.sdpa_causal_cache(q, k, v, st, en, window=window)
    np.testing.assert_allclose(got, _back(old), rtol=TOL[dtype], atol=TOL[dtype])


def test_cluster_attention_replays_in_a_graph_with_new_ends() -> None:
    rng = np.random.default_rng(3)
    q = _put(rng.standard_normal((1, 32, 1, 64)), "bfloat16")
    k = _put(rng.standard_normal((1, 4, 512, 64)), "bfloat16")
    v = _put(rng.standard_normal((1, 4, 512, 64)), "bfloat16")
    starts = gp.zeros((1,), dtype=gp.int32, device=DEV)
    ends = gp.asarray(np.array([20], np.int32), device=DEV)
    gp.sdpa_causal_cache(q, k, v, starts, ends)  # compiled and loaded before the capture
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = gp.sdpa_causal_cache(q, k, v, starts, ends)
    for end in (20, 21, 300, 512, 1):
        ends[...] = gp.asarray(np.array([end], np.int32), device=DEV)
        g.replay()
        eager = gp.sdpa_causal_cache(q, k, v, starts, ends)
        np.testing.assert_array_equal(out.to_numpy().view(np.uint16),
                                      eager.to_numpy().view(np.uint16))  # fmt: skip


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("shape", [(1, 2048), (3, 4096), (1, 8), (2, 8192), (1, 2056)])
def test_vector_add_rmsnorm_matches_reference_and_element_kernel(
    shape: tuple[int, int], dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pygpukit_cuda import decode_fused_ops, decode_ops

    rng = np.random.default_rng(shape[1])
    x, y = _put(rng.standard_normal(shape), dtype), _put(rng.standard_normal(shape), dtype)
    gamma = _put(1 + 0.1 * rng.standard_normal(shape[1]), dtype)
    total = gp.full(shape, float("nan"), dtype=dtype, device=DEV)
    out = gp.full(shape, float("nan"), dtype=dtype, device=DEV)
    assert decode_fused_ops.norm_vec_serves(x, y, gamma, total, out)
    decode_ops.add_rmsnorm(x, y, gamma, total, out, 1e-5)
    np.testing.assert_array_equal(_back(total), _back(x + y))  # the same rounding
    s = _back(total)
    ref = s / np.sqrt((s**2).mean(-1, keepdims=True) + 1e-5) * _back(gamma)
    got = _back(out)
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) <= TOL[dtype] / 3
    # the element kernel: only the float32 sum of squares is added in another order, so the
    # outputs differ by at most one unit in the last place, and rarely
    monkeypatch.setattr(decode_fused_ops, "norm_vec_serves", lambda *a: False)
    old_total, old = gp.add_rmsnorm(x, y, gamma, 1e-5)
    np.testing.assert_array_equal(_back(old_total), _back(total))
    bits = lambda a: a.to_numpy().view(np.uint16).astype(np.int32)  # noqa: E731
    ulps = np.abs(bits(old) - bits(out))
    assert ulps.max() <= 1 and (ulps > 0).mean() < 0.01


def test_rope_kv_cache_write_replays_in_a_graph() -> None:
    rng = np.random.default_rng(5)
    fused = _put(rng.standard_normal((1, 1, 40 * 64)), "bfloat16")
    q = fused[:, :, : 32 * 64].reshape((1, 1, 32, 64))
    k = fused[:, :, 32 * 64 : 36 * 64].reshape((1, 1, 4, 64))
    v = fused[:, :, 36 * 64 :].reshape((1, 1, 4, 64))
    angles = rng.uniform(-3, 3, (64, 32))
    cos, sin = _put(np.cos(angles), "bfloat16"), _put(np.sin(angles), "bfloat16")
    keys = _put(rng.standard_normal((1, 4, 64, 64)), "bfloat16")
    values = _put(rng.standard_normal((1, 4, 64, 64)), "bfloat16")
    pos = gp.asarray(np.array([[3]]), device=DEV)
    slots = gp.asarray(np.array([3], np.int32), device=DEV)
    source = fused.copy()
    gp.rope_kv_cache_write(q, k, v, cos, sin, pos, keys, values, slots)  # compiled first
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        gp.rope_kv_cache_write(q, k, v, cos, sin, pos, keys, values, slots)
    for p in (3, 4, 63):
        fused[...] = source
        pos[...] = gp.asarray(np.array([[p]]), device=DEV)
        slots[...] = gp.asarray(np.array([p], np.int32), device=DEV)
        g.replay()
        got = [a.to_numpy().view(np.uint16).copy() for a in (q, k, keys, values)]
        fused[...] = source
        gp.rope_kv_cache_write(q, k, v, cos, sin, pos, keys, values, slots)
        want = [a.to_numpy().view(np.uint16) for a in (q, k, keys, values)]
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_rope_cache_attention_replays_in_a_graph_with_new_slots() -> None:
    # the fused cluster kernel (sm_90) or the two passes: replays equal eager calls on the
    # same inputs, as positions, slots and ends move on
    rng = np.random.default_rng(9)
    fused = _put(rng.standard_normal((1, 1, 40 * 64)), "bfloat16")
    heads = fused.reshape((1, 1, 40, 64))
    q, k, v = heads[:, :, :32], heads[:, :, 32:36], heads[:, :, 36:]
    angles = rng.uniform(-3, 3, (512, 32))
    cos, sin = _put(np.cos(angles), "bfloat16"), _put(np.sin(angles), "bfloat16")
    keys = _put(rng.standard_normal((1, 4, 512, 64)), "bfloat16")
    values = _put(rng.standard_normal((1, 4, 512, 64)), "bfloat16")
    pos = gp.asarray(np.array([[9]]), device=DEV)
    slots = gp.asarray(np.array([9], np.int32), device=DEV)
    starts = gp.zeros((1,), dtype=gp.int32, device=DEV)
    ends = gp.asarray(np.array([10], np.int32), device=DEV)
    args = (q, k, v, cos, sin, pos, keys, values, slots, starts, ends)
    source, cache0 = fused.copy(), (keys.copy(), values.copy())
    gp.rope_cache_attention(*args)  # compiled and loaded before the capture
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = gp.rope_cache_attention(*args)
    for p in (9, 10, 300, 511):
        for target, value in ((pos, [[p]]), (slots, [p]), (ends, [p + 1])):
            target[...] = gp.asarray(np.array(value, target.dtype.to_numpy_dtype()), device=DEV)
        fused[...] = source
        keys[...], values[...] = cache0
        g.replay()
        got = [a.to_numpy().view(np.uint16).copy() for a in (out, fused, keys, values)]
        fused[...] = source
        keys[...], values[...] = cache0
        eager = gp.rope_cache_attention(*args)
        want = [a.to_numpy().view(np.uint16) for a in (eager, fused, keys, values)]
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
