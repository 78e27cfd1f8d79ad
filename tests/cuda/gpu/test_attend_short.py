"""The short-context fused decode attention (sm_90) against a float64 reference and against
the older cluster kernel it runs ahead of (``attend_short.ENABLED = False``): the output, the
rotated q and new keys, the caches written; under graph replay with moving counters."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest

pytestmark = pytest.mark.gpu

DEV = "cuda"
TOL = {"bfloat16": 3e-2, "float16": 5e-3}


def _need_sm90() -> None:
    from pygpukit_cuda.device_facts import compute_capability

    if compute_capability(0) < 90:
        pytest.skip("the short-context kernel is sm_90+")


def _put(a: np.ndarray, dtype: str) -> gp.GPUArray:
    return gp.asarray(a.astype(np.float32), device=DEV).astype(dtype)


def _back(x: gp.GPUArray) -> np.ndarray:
    return x.astype("float64").to_numpy()


def _bits(x: gp.GPUArray) -> np.ndarray:
    return x.to_numpy().view(np.uint16).astype(np.int32)


def _case(dtype: str, b: int, s: int, hq: int, hkv: int, d: int, length: int, seed: int,
          slots: list[int]) -> dict:  # fmt: skip
    """A decoder-like call: q, k, v views of one projection row (B, S, Hq + 2 Hkv, D),
    tables of the cache dtype, random caches, the new tokens at `slots`."""
    rng = np.random.default_rng(seed)
    qkv = _put(rng.standard_normal((b, s, hq + 2 * hkv, d)), dtype)
    angles = rng.uniform(-3, 3, (length + 8, d // 2))
    pos = np.array(slots)[:, None] + np.arange(s)[None, :]
    return {
        "qkv": qkv,
        "cos": _put(np.cos(angles), dtype),
        "sin": _put(np.sin(angles), dtype),
        "keys": _put(rng.standard_normal((b, hkv, length, d)), dtype),
        "values": _put(rng.standard_normal((b, hkv, length, d)), dtype),
        "pos": gp.asarray(pos.astype(np.int64), device=DEV),
        "slots": gp.asarray(np.array(slots, np.int32), device=DEV),
        "split": (hq, hq + hkv),
    }


def _call(c: dict, starts: list[int], ends: list[int], window: int) -> gp.GPUArray:
    a, z = c["split"]
    qkv = c["qkv"]
    return gp.rope_cache_attention(
        qkv[:, :, :a], qkv[:, :, a:z], qkv[:, :, z:], c["cos"], c["sin"], c["pos"],
        c["keys"], c["values"], c["slots"], gp.asarray(np.array(starts, np.int32), device=DEV),
        gp.asarray(np.array(ends, np.int64), device=DEV), window=window)  # fmt: skip


def _rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """x (B, S, H, D) rotated (pairs d, d + D/2) at positions pos (B, S), float64."""
    half = x.shape[-1] // 2
    c, s = cos[pos][:, :, None, :half], sin[pos][:, :, None, :half]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)


def _reference(q, keys, values, starts, ends, window):  # type: ignore[no-untyped-def]
    """q (B, Hq, S, D) over cache slots [starts, ends), float64."""
    b_, hq, sq, _ = q.shape
    group = hq // keys.shape[1]
    out = np.zeros((b_, hq, sq, values.shape[-1]))
    for b, h, i in np.ndindex(b_, hq, sq):
        t = ends[b] - sq + i
        j = np.arange(keys.shape[2])
        ok = (j >= starts[b]) & (j <= t) & ((t - j < window) if window else True)
        if ok.any():
            s = keys[b, h // group][ok] @ q[b, h, i] / np.sqrt(q.shape[-1])
            p = np.exp(s - s.max())
            out[b, h, i] = (p / p.sum()) @ values[b, h // group][ok]
    return out


#: B, S, Hq, Hkv, D, L, slots, starts, window
CASES = [
    (1, 1, 32, 8, 128, 512, [16], [0], 0),  # Llama-3-8B, the benchmark's first step
    (1, 1, 32, 8, 128, 512, [143], [0], 0),  # ... its last (144 keys)
    (1, 1, 32, 8, 128, 512, [511], [0], 0),  # ... the full cache: 64 keys a block
    (1, 1, 32, 4, 64, 512, [0], [0], 0),  # TinyLlama, one key (7 blocks see none)
    (1, 1, 32, 4, 64, 512, [16], [0], 0),
    (1, 1, 32, 4, 64, 512, [300], [0], 0),
    (3, 1, 32, 4, 64, 256, [5, 100, 255], [0, 7, 90], 0),  # rows of their own ranges
    (2, 2, 16, 2, 64, 96, [40, 10], [3, 0], 0),  # 16 query rows, 2 new tokens
    (2, 3, 12, 3, 128, 80, [20, 60], [0, 2], 7),  # window, 3 new tokens, 12 rows (16-row)
    (1, 4, 4, 4, 64, 4096, [3000], [0], 33),  # 4 new tokens, a long cache, a window
    (1, 1, 8, 1, 128, 4096, [4095], [0], 0),  # the longest cache: 8 tiles a block
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(map(str, (*c[:6], c[6][0]))))
def test_short_kernel_matches_reference_and_older_kernel(
    case: tuple, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pygpukit_cuda import attend_short

    _need_sm90()
    b, s, hq, hkv, d, length, slots, starts, window = case
    seed = sum(case[:6]) + slots[0]
    new, old = (_case(dtype, b, s, hq, hkv, d, length, seed, slots) for _ in range(2))
    ends = [t + s for t in slots]
    qkv0, keys0, values0 = (_back(new[n]) for n in ("qkv", "keys", "values"))
    a, z = new["split"]
    args = (new["qkv"][:, :, :a], new["qkv"][:, :, a:z], new["qkv"][:, :, z:], new["cos"],
            new["sin"], new["pos"], new["keys"], new["values"], new["slots"],
            gp.asarray(np.array(starts, np.int32), device=DEV),
            gp.asarray(np.array(ends, np.int64), device=DEV))  # fmt: skip
    out = gp.full((b, hq, s, d), float("nan"), dtype=dtype, device=DEV)
    assert attend_short.serves(*args, out)
    got = _call(new, starts, ends, window)
    monkeypatch.setattr(attend_short, "ENABLED", False)
    want = _call(old, starts, ends, window)
    # the same rotation (1 unit in the last place at most: FMA contraction may differ) and
    # the same cache writes
    for name in ("qkv", "keys", "values"):
        assert np.abs(_bits(new[name]) - _bits(old[name])).max() <= 1, name
    g, w = _back(got), _back(want)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, w, rtol=TOL[dtype], atol=TOL[dtype])
    # float64: the rotated q and new keys, the caches with the new tokens, the attention
    cos, sin, pos = _back(new["cos"]), _back(new["sin"]), new["pos"].to_numpy()
    rq = _rope(qkv0[:, :, :a], cos, sin, pos)
    rk = _rope(qkv0[:, :, a:z], cos, sin, pos)
    np.testing.assert_allclose(_back(new["qkv"])[:, :, :a], rq, rtol=TOL[dtype], atol=TOL[dtype])
    for r, t in enumerate(slots):
        keys0[r, :, t : t + s] = rk[r].transpose(1, 0, 2)
        values0[r, :, t : t + s] = qkv0[r, :, z:].transpose(1, 0, 2)
    np.testing.assert_allclose(_back(new["keys"]), keys0, rtol=TOL[dtype], atol=TOL[dtype])
    np.testing.assert_array_equal(_back(new["values"]), values0)
    ref = _reference(rq.transpose(0, 2, 1, 3), keys0, values0, starts, ends, window)
    err = float(np.linalg.norm(g - ref)) / max(float(np.linalg.norm(ref)), 1e-30)
    assert err <= TOL[dtype], err


def test_short_kernel_replays_in_a_graph_with_moving_counters() -> None:
    # Llama-3-8B heads: replays equal eager calls as positions, slots and ends move on
    _need_sm90()
    c = _case("bfloat16", 1, 1, 32, 8, 128, 512, 4, [9])
    a, z = c["split"]
    qkv = c["qkv"]
    starts = gp.zeros((1,), dtype=gp.int32, device=DEV)
    ends = gp.asarray(np.array([10], np.int32), device=DEV)
    args = (qkv[:, :, :a], qkv[:, :, a:z], qkv[:, :, z:], c["cos"], c["sin"], c["pos"],
            c["keys"], c["values"], c["slots"], starts, ends)  # fmt: skip
    source, cache0 = qkv.copy(), (c["keys"].copy(), c["values"].copy())
    gp.rope_cache_attention(*args)  # compiled and loaded before the capture
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = gp.rope_cache_attention(*args)
    for p in (9, 10, 143, 300, 511):
        for target, value in ((c["pos"], [[p]]), (c["slots"], [p]), (ends, [p + 1])):
            target[...] = gp.asarray(np.array(value, target.dtype.to_numpy_dtype()), device=DEV)
        qkv[...] = source
        c["keys"][...], c["values"][...] = cache0
        g.replay()
        got = [_bits(x).copy() for x in (out, qkv, c["keys"], c["values"])]
        qkv[...] = source
        c["keys"][...], c["values"][...] = cache0
        eager = gp.rope_cache_attention(*args)
        want = [_bits(x) for x in (eager, qkv, c["keys"], c["values"])]
        for x, y in zip(got, want, strict=True):
            np.testing.assert_array_equal(x, y)


#: B, Hq, Hkv, Sq, L, D, starts, ends, window (the plain cache attention)
SDPA_CASES = [
    (1, 32, 8, 1, 512, 128, [0], [17], 0),
    (1, 32, 4, 1, 512, 64, [0], [512], 0),
    (3, 12, 12, 1, 448, 64, [0, 5, 0], [1, 300, 448], 0),  # Whisper-like: one row per head
    (2, 8, 1, 2, 96, 128, [5, 0], [90, 33], 6),  # 16 query rows, a window
    (2, 6, 2, 1, 64, 64, [10, 0], [5, 64], 0),  # row 0 sees no key: zeros
]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", SDPA_CASES, ids=lambda c: "-".join(map(str, c[:6])))
def test_short_kernel_plain_attention_matches_older_kernel(
    case: tuple, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pygpukit_cuda import attend_short, decode_ops

    _need_sm90()
    b, hq, hkv, sq, length, d, starts, ends, window = case
    rng = np.random.default_rng(sum(case[:6]))
    q = _put(rng.standard_normal((b, hq, sq, d)), dtype)
    k = _put(rng.standard_normal((b, 2 * hkv, length, d)), dtype)[:, ::2]  # strided heads
    v = _put(rng.standard_normal((b, hkv, length, d)), dtype)
    st = gp.asarray(np.array(starts, np.int64), device=DEV)
    en = gp.asarray(np.array(ends, np.int32), device=DEV)
    out = gp.full((b, hq, sq, d), float("nan"), dtype=dtype, device=DEV)
    assert attend_short.serves_sdpa(q, k, v, out)
    decode_ops.sdpa_causal_cache(q, k, v, st, en, out, 1 / np.sqrt(d), window)
    got = _back(out)
    assert np.isfinite(got).all()
    ref = _reference(_back(q), _back(k), _back(v), starts, ends, window)
    err = float(np.linalg.norm(got - ref)) / max(float(np.linalg.norm(ref)), 1e-30)
    assert err <= TOL[dtype], err
    monkeypatch.setattr(attend_short, "ENABLED", False)
    old = gp.sdpa_causal_cache(q, k, v, st, en, window=window)
    # the same sums in the same order: equal but for the rare last-place difference of expf
    np.testing.assert_allclose(got, _back(old), rtol=TOL[dtype] / 4, atol=TOL[dtype] / 4)
