"""The decode-step ops (embedding, rope_at_inplace, kv_cache_write, sdpa_causal_cache)
against float64 NumPy references, on the CPU and (skipped without one) on a CUDA GPU."""

from __future__ import annotations

import math

import numpy as np
import pygpukit as gp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[pytest.mark.gpu, pytest.mark.skipif(
        not gp.is_cuda_available(), reason="needs a CUDA GPU")]),
]  # fmt: skip
TOL = {"float64": 1e-11, "float32": 2e-5, "float16": 5e-3, "bfloat16": 3e-2}


def _put(a: np.ndarray, dtype: str, device: str) -> gp.GPUArray:
    return gp.asarray(a.astype(np.float32 if dtype != "float64" else np.float64),
                      device=device).astype(dtype)  # fmt: skip


def _back(x: gp.GPUArray) -> np.ndarray:
    return x.astype("float64").to_numpy()


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    assert np.isfinite(got).all()
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-300))


# -- references ------------------------------------------------------------------------
def ref_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pos: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    c, s = cos[pos][:, :, None, :], sin[pos][:, :, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


def ref_attention(q, k, v, starts, ends, scale, window):  # type: ignore[no-untyped-def]
    b_, hq, sq, _ = q.shape
    group = hq // k.shape[1]
    out = np.zeros((b_, hq, sq, v.shape[-1]))
    for b in range(b_):
        for h in range(hq):
            for i in range(sq):
                t = ends[b] - sq + i
                j = np.arange(k.shape[2])
                ok = (j >= starts[b]) & (j <= t)
                if window:
                    ok &= t - j < window
                if not ok.any():
                    continue
                s = k[b, h // group][ok] @ q[b, h, i] * scale
                p = np.exp(s - s.max())
                out[b, h, i] = (p / p.sum()) @ v[b, h // group][ok]
    return out


# -- embedding -------------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("index", ["int32", "int64"])
def test_embedding_rows(device: str, dtype: str, index: str) -> None:
    rng = np.random.default_rng(1)
    w = rng.standard_normal((37, 24))
    ids = rng.integers(0, 37, size=(3, 5))
    gw = _put(w, dtype, device)
    got = gp.embedding(gw, gp.asarray(ids.astype(index), device=device))
    assert got.shape == (3, 5, 24) and got.dtype == gw.dtype
    np.testing.assert_array_equal(_back(got), _back(gw)[ids])
    # a transposed weight view (the tied lm head's storage) reads through its strides
    wt = _put(w.T.copy(), dtype, device).mT
    np.testing.assert_array_equal(_back(gp.embedding(wt, gp.asarray(ids, device=device))),
                                  _back(wt)[ids])  # fmt: skip


# Out-of-range indices (pygpukit._ops.decode): the CPU kernels raise IndexError; a GPU
# kernel cannot raise from inside a captured graph, so it has a documented answer instead.
@pytest.mark.parametrize("device", DEVICES)
def test_embedding_bad_input(device: str) -> None:
    w = gp.asarray(np.ones((4, 3), np.float32), device=device)
    bad = gp.asarray(np.array([1, 4]), device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="id 4 is outside"):
            gp.embedding(w, bad)
    else:  # a bad id's row is NaN, the good ones are looked up
        got = gp.embedding(w, bad).to_numpy()
        assert np.all(got[0] == 1) and np.all(np.isnan(got[1]))
    with pytest.raises(TypeError, match="int32 or int64"):
        gp.embedding(w, gp.asarray(np.array([1.0]), device=device))
    with pytest.raises(ValueError, match="vocab, hidden"):
        gp.embedding(gp.asarray(np.ones(4, np.float32), device=device),
                     gp.asarray(np.array([1]), device=device))  # fmt: skip


# -- rope_at_inplace -------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_rope_at_matches_reference(device: str, dtype: str) -> None:
    rng = np.random.default_rng(2)
    b, s, hq, hk, d, p = 3, 2, 4, 2, 16, 50
    q, k = rng.standard_normal((b, s, hq, d)), rng.standard_normal((b, s, hk, d))
    angles = rng.uniform(0, 6, (p, d // 2))
    cos, sin = np.cos(angles), np.sin(angles)
    pos = rng.integers(0, p, (b, s))
    gq, gk = _put(q, dtype, device), _put(k, dtype, device)
    want_q = ref_rope(_back(gq), cos, sin, pos)
    want_k = ref_rope(_back(gk), cos, sin, pos)
    gp.rope_at_inplace(gq, gk, _put(cos, "float32", device), _put(sin, "float32", device),
                       gp.asarray(pos.astype(np.int32), device=device))  # fmt: skip
    tol = max(TOL[dtype], 1e-6)
    assert _rel(_back(gq), want_q) <= tol and _rel(_back(gk), want_k) <= tol


@pytest.mark.parametrize("device", DEVICES)
def test_rope_at_equals_rope_inplace_at_shared_positions(device: str) -> None:
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((1, 5, 2, 8)), rng.standard_normal((1, 5, 2, 8))
    angles = rng.uniform(0, 6, (20, 4))
    cos, sin = _put(np.cos(angles), "float32", device), _put(np.sin(angles), "float32", device)
    pos = np.arange(7, 12)[None]
    a = (_put(q, "float32", device), _put(k, "float32", device))
    b = (_put(q, "float32", device), _put(k, "float32", device))
    gp.rope_at_inplace(*a, cos, sin, gp.asarray(pos, device=device))
    gp.rope_inplace(b[0][0], b[1][0], cos[7:12], sin[7:12])
    np.testing.assert_allclose(a[0].to_numpy(), b[0].to_numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_rope_at_bad_input(device: str) -> None:
    ones = np.ones((1, 2, 2, 4), np.float32)
    q, k = gp.asarray(ones, device=device), gp.asarray(ones, device=device)
    table = np.full((3, 2), 0.5, np.float32)
    tab = gp.asarray(table, device=device)
    bad = gp.asarray(np.array([[0, 3]]), device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="position 3 is outside"):
            gp.rope_at_inplace(q, k, tab, tab.copy(), bad)
    else:  # the token at the bad position is left untouched, the other one rotated
        gp.rope_at_inplace(q, k, tab, tab.copy(), bad)
        want = ref_rope(ones.astype(np.float64), table, table, np.array([[0, 0]]))
        want[:, 1] = 1.0
        for x in (q, k):
            np.testing.assert_allclose(x.to_numpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="positions has shape"):
        gp.rope_at_inplace(q, k, tab, tab.copy(), gp.asarray(np.array([0, 1]), device=device))
    with pytest.raises(ValueError, match="head_dim // 2"):
        gp.rope_at_inplace(q, k, tab[:, :1], tab[:, :1],
                           gp.asarray(np.zeros((1, 2), int), device=device))  # fmt: skip


# -- kv_cache_write --------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_kv_cache_write_at_slots(device: str, dtype: str) -> None:
    rng = np.random.default_rng(4)
    cache = rng.standard_normal((2, 3, 10, 8))
    slots = np.array([4, 7])
    gc = _put(cache, dtype, device)
    want = _back(gc)
    # new keys as the model makes them: (B, S, H, D) memory seen as a (B, H, S, D) view
    gn = _put(rng.standard_normal((2, 2, 3, 8)), "float32", device).transpose(0, 2, 1, 3)
    for b, s0 in enumerate(slots):
        want[b, :, s0 : s0 + 2] = _back(gn.astype(dtype))[b]
    gp.kv_cache_write(gc, gn, gp.asarray(slots, device=device))
    np.testing.assert_array_equal(_back(gc), want)


@pytest.mark.parametrize("device", DEVICES)
def test_kv_cache_write_pair_writes_both(device: str) -> None:
    rng = np.random.default_rng(12)
    keys = _put(rng.standard_normal((2, 3, 9, 4)), "bfloat16", device)
    values = _put(rng.standard_normal((2, 3, 9, 4)), "bfloat16", device)
    new_k = _put(rng.standard_normal((2, 1, 3, 4)), "float32", device).transpose(0, 2, 1, 3)
    new_v = _put(rng.standard_normal((2, 3, 1, 4)), "bfloat16", device)
    slots = gp.asarray(np.array([2, 8]), device=device)
    want_k, want_v = keys.copy(), values.copy()
    gp.kv_cache_write(want_k, new_k, slots)
    gp.kv_cache_write(want_v, new_v, slots)
    gp.kv_cache_write_pair(keys, values, new_k, new_v, slots)
    np.testing.assert_array_equal(_back(keys), _back(want_k))
    np.testing.assert_array_equal(_back(values), _back(want_v))
    longer = _put(rng.standard_normal((2, 3, 2, 4)), "bfloat16", device)
    with pytest.raises(ValueError, match="must have one shape"):
        gp.kv_cache_write_pair(keys, values, new_k, longer, slots)


@pytest.mark.parametrize("device", DEVICES)
def test_kv_cache_write_bad_input(device: str) -> None:
    cache = gp.zeros((1, 2, 4, 3), device=device)
    slot = gp.asarray(np.array([2]), device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="slot 2 is outside"):
            gp.kv_cache_write(cache, gp.ones((1, 2, 3, 3), device=device), slot)
    else:  # the slots that fit (2 and 3) are written, the one past the cache is dropped
        gp.kv_cache_write(cache, gp.ones((1, 2, 3, 3), device=device), slot)
        want = np.zeros((1, 2, 4, 3))
        want[:, :, 2:] = 1.0
        np.testing.assert_array_equal(cache.to_numpy(), want)
    with pytest.raises(ValueError, match="must match cache"):
        gp.kv_cache_write(cache, gp.ones((1, 3, 1, 3), device=device),
                          gp.asarray(np.array([0]), device=device))  # fmt: skip


# -- sdpa_causal_cache -----------------------------------------------------------------
def _attention_case(device: str, dtype: str, b: int, hq: int, hkv: int, sq: int,
                    length: int, d: int, starts: list[int], ends: list[int], window: int,
                    seed: int) -> None:  # fmt: skip
    rng = np.random.default_rng(seed)
    q = _put(rng.standard_normal((b, hq, sq, d)), dtype, device)
    k = _put(rng.standard_normal((b, hkv, length, d)), dtype, device)
    v = _put(rng.standard_normal((b, hkv, length, d)), dtype, device)
    st_, en = np.array(starts), np.array(ends)
    got = gp.sdpa_causal_cache(q, k, v, gp.asarray(st_.astype(np.int32), device=device),
                               gp.asarray(en, device=device), window=window)  # fmt: skip
    want = ref_attention(_back(q), _back(k), _back(v), st_, en, 1 / math.sqrt(d), window)
    assert got.shape == want.shape and got.dtype == q.dtype
    assert _rel(_back(got), want) <= TOL[dtype] * 2


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_sdpa_cache_decode_step(device: str, dtype: str) -> None:
    # one query per row at different fill levels, left padding in row 1; the cache is
    # longer than a chunk of the GPU kernel so several chunks merge
    _attention_case(device, dtype, 2, 8, 2, 1, 300, 64, [0, 5], [290, 290], 0, 5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("end", [1, 33, 300, 512])
def test_sdpa_cache_batch1_decode_shape(device: str, dtype: str, end: int) -> None:
    # TinyLlama's decode step: 32 query heads over 4 kv heads, head_dim 64, a 512-slot
    # cache; on the GPU short chunks (many splits) and, for 16-bit keys, 16-byte key loads
    _attention_case(device, dtype, 1, 32, 4, 1, 512, 64, [0], [end], 0, 8)


@pytest.mark.parametrize("device", DEVICES)
def test_sdpa_cache_keys_without_vector_loads(device: str) -> None:
    # head_dim 60 (not a multiple of 8) and a window: the element-by-element key path
    _attention_case(device, "bfloat16", 1, 8, 2, 1, 200, 60, [3], [150], 70, 9)


@pytest.mark.parametrize("device", DEVICES)
def test_sdpa_cache_prefill_window_and_gqa(device: str) -> None:
    _attention_case(device, "float32", 2, 4, 1, 6, 40, 24, [0, 3], [9, 12], 4, 6)


@pytest.mark.parametrize("device", DEVICES)
def test_sdpa_cache_equals_sdpa_causal_on_a_full_cache(device: str) -> None:
    rng = np.random.default_rng(7)
    q = gp.asarray(rng.standard_normal((1, 4, 5, 16)).astype(np.float32), device=device)
    k = gp.asarray(rng.standard_normal((1, 2, 9, 16)).astype(np.float32), device=device)
    v = gp.asarray(rng.standard_normal((1, 2, 9, 16)).astype(np.float32), device=device)
    zero, nine = gp.asarray(np.array([0]), device=device), gp.asarray(np.array([9]), device=device)
    got = gp.sdpa_causal_cache(q, k, v, zero, nine).to_numpy()
    np.testing.assert_allclose(got, gp.sdpa_causal(q, k, v).to_numpy(), rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    b=st.integers(1, 3), groups=st.sampled_from([(2, 1), (4, 2), (3, 3)]), sq=st.integers(1, 4),
    length=st.integers(4, 20), d=st.sampled_from([2, 8, 12]), window=st.integers(0, 6),
    data=st.data(),
)  # fmt: skip
def test_sdpa_cache_property(b: int, groups: tuple[int, int], sq: int, length: int, d: int,
                             window: int, data: st.DataObject) -> None:  # fmt: skip
    sq = min(sq, length)
    ends = [data.draw(st.integers(sq, length)) for _ in range(b)]
    starts = [data.draw(st.integers(0, e - 1)) for e in ends]
    _attention_case("cpu", "float64", b, groups[0], groups[1], sq, length, d, starts, ends,
                    window, data.draw(st.integers(0, 99)))  # fmt: skip


def test_sdpa_cache_bad_input() -> None:
    q = gp.ones((1, 3, 1, 4))
    k = gp.ones((1, 2, 5, 4))
    idx = gp.asarray(np.array([0]))
    with pytest.raises(ValueError, match="multiple"):
        gp.sdpa_causal_cache(q, k, k, idx, idx)
    with pytest.raises(ValueError, match="window"):
        gp.sdpa_causal_cache(gp.ones((1, 2, 1, 4)), k, k, idx, idx, window=-1)
    with pytest.raises(TypeError, match="int32 or int64"):
        gp.sdpa_causal_cache(gp.ones((1, 2, 1, 4)), k, k, gp.ones((1,)), idx)


# -- gather_matmul ---------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_gather_matmul_rows_through_their_groups(device: str, dtype: str) -> None:
    rng = np.random.default_rng(8)
    x = _put(rng.standard_normal((7, 40)), dtype, device)
    w = _put(rng.standard_normal((4, 33, 40)), dtype, device)
    ids = rng.integers(0, 4, 7)
    got = gp.gather_matmul(x, w, gp.asarray(ids.astype(np.int32), device=device))
    xs, ws = _back(x), _back(w)
    want = np.stack([ws[g] @ xs[t] for t, g in enumerate(ids)])
    assert got.shape == (7, 33) and got.dtype == x.dtype
    assert _rel(_back(got), want) <= max(TOL[dtype], 1e-6)
    # strided operands: a column slice of x and transposed expert storage
    wide = _put(rng.standard_normal((7, 50)), dtype, device)[:, 5:45]
    wt = _put(rng.standard_normal((4, 40, 33)), dtype, device).transpose(0, 2, 1)
    got = gp.gather_matmul(wide, wt, gp.asarray(ids, device=device))
    want = np.stack([_back(wt)[g] @ _back(wide)[t] for t, g in enumerate(ids)])
    assert _rel(_back(got), want) <= max(TOL[dtype], 1e-6)


@settings(max_examples=20, deadline=None)
@given(rows=st.integers(1, 9), groups=st.integers(1, 4), n=st.integers(1, 12),
       k=st.integers(1, 70), seed=st.integers(0, 99))  # fmt: skip
def test_gather_matmul_property(rows: int, groups: int, n: int, k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((rows, k)), rng.standard_normal((groups, n, k))
    ids = rng.integers(0, groups, rows)
    got = gp.gather_matmul(gp.asarray(x), gp.asarray(w), gp.asarray(ids)).to_numpy()
    np.testing.assert_allclose(got, np.einsum("tnk,tk->tn", w[ids], x), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_gather_matmul_bad_input(device: str) -> None:
    x, w = gp.ones((2, 4), device=device), gp.ones((3, 5, 4), device=device)
    bad = gp.asarray(np.array([0, 3]), device=device)
    if device == "cpu":
        with pytest.raises(IndexError, match="id 3 is outside"):
            gp.gather_matmul(x, w, bad)
    else:  # a bad id's row is NaN, the good one computed
        got = gp.gather_matmul(x, w, bad).to_numpy()
        assert np.all(got[0] == 4) and np.all(np.isnan(got[1]))
    with pytest.raises(ValueError, match="features"):
        gp.gather_matmul(gp.ones((2, 3), device=device), w,
                         gp.asarray(np.array([0, 1]), device=device))  # fmt: skip
    with pytest.raises(ValueError, match="ids has shape"):
        gp.gather_matmul(x, w, gp.asarray(np.array([0]), device=device))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_silu_mul_is_silu_times_up(device: str, dtype: str) -> None:
    rng = np.random.default_rng(9)
    wide = _put(rng.standard_normal((3, 20)) * 4, dtype, device)
    gate, up = wide[:, :10], wide[:, 10:]  # column views, as the fused projection gives
    got = gp.silu_mul(gate, up)
    g, u = _back(gate), _back(up)
    assert got.shape == (3, 10) and got.dtype == gate.dtype
    assert _rel(_back(got), g / (1 + np.exp(-g)) * u) <= max(TOL[dtype], 1e-7)
    with pytest.raises(ValueError, match="same shape"):
        gp.silu_mul(gate, up[:, :5])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_add_rmsnorm_equals_add_then_rmsnorm(device: str, dtype: str) -> None:
    rng = np.random.default_rng(10)
    x = _put(rng.standard_normal((3, 300)), dtype, device)
    y = _put(rng.standard_normal((3, 300)), dtype, device)
    gamma = _put(1 + 0.1 * rng.standard_normal(300), dtype, device)
    total, out = gp.add_rmsnorm(x, y, gamma, 1e-5)
    want_total = x + y
    np.testing.assert_array_equal(_back(total), _back(want_total))  # the same rounding
    want = gp.rmsnorm(want_total, gamma, 1e-5)
    assert out.dtype == want.dtype and _rel(_back(out), _back(want)) <= max(TOL[dtype], 1e-7)
    s = _back(want_total)
    ref = s / np.sqrt((s**2).mean(-1, keepdims=True) + 1e-5) * _back(gamma)
    assert _rel(_back(out), ref) <= max(TOL[dtype], 1e-7)
    with pytest.raises(ValueError, match="gamma"):
        gp.add_rmsnorm(x, y, gamma[:5])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("h", [2048, 5000])
@pytest.mark.parametrize("dtypes", [("bfloat16", "bfloat16"), ("float32", "bfloat16")])
def test_add_rmsnorm_wide_rows_and_mixed_dtypes(device: str, h: int,
                                                dtypes: tuple[str, str]) -> None:  # fmt: skip
    # 2048: the row sits in registers on the GPU; 5000: past 4 x 1024 elements the rest goes
    # through the element loop; a float32 x: the mixed-dtype (element loop) path throughout
    rng = np.random.default_rng(12)
    x = _put(rng.standard_normal((1, h)), dtypes[0], device)
    y = _put(rng.standard_normal((1, h)), dtypes[1], device)
    gamma = _put(1 + 0.1 * rng.standard_normal(h), "bfloat16", device)
    total, out = gp.add_rmsnorm(x, y, gamma, 1e-5)
    np.testing.assert_array_equal(_back(total), _back(x + y))
    s = _back(total)
    ref = s / np.sqrt((s**2).mean(-1, keepdims=True) + 1e-5) * _back(gamma)
    assert _rel(_back(out), ref) <= TOL[str(out.dtype)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("rows", [1, 3, 8])
def test_linear_rows_is_x_times_weight_transposed(device: str, dtype: str, rows: int) -> None:
    rng = np.random.default_rng(11)
    x = _put(rng.standard_normal((rows, 264)), dtype, device)  # K % 8 == 0: vector path
    w = _put(rng.standard_normal((37, 264)) / 16, dtype, device)
    got = gp.linear_rows(x, w)
    want = _back(x) @ _back(w).T
    assert got.shape == (rows, 37) and got.dtype == x.dtype
    assert _rel(_back(got), want) <= max(TOL[dtype], 1e-7) * 2
    # strided operands (a column slice of x, a transposed weight) take the general path
    xs = _put(rng.standard_normal((rows, 300)), dtype, device)[:, 3:267]
    wt = _put(rng.standard_normal((264, 37)) / 16, dtype, device).mT
    want = _back(xs) @ _back(wt).T
    assert _rel(_back(gp.linear_rows(xs, wt)), want) <= max(TOL[dtype], 1e-7) * 2


def test_linear_rows_bad_input() -> None:
    with pytest.raises(ValueError, match="at most 8"):
        gp.linear_rows(gp.ones((9, 4)), gp.ones((3, 4)))
    with pytest.raises(ValueError, match="in_features"):
        gp.linear_rows(gp.ones((1, 4)), gp.ones((3, 5)))
