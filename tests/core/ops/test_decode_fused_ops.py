"""The fused decode-step ops (rope_kv_cache_write, decode_advance) against float64 NumPy
references and against the separate ops they replace, on the CPU and (skipped without one)
on a CUDA GPU; caches are filled with random data first, so a write to a wrong slot or a
missed one shows."""

from __future__ import annotations

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
TOL = {"float64": 1e-12, "float32": 2e-6, "float16": 2e-3, "bfloat16": 1.6e-2}


def _put(a: np.ndarray, dtype: str, device: str) -> gp.GPUArray:
    return gp.asarray(a.astype(np.float64), device=device).astype(dtype)


def _back(x: gp.GPUArray) -> np.ndarray:
    return x.astype("float64").to_numpy()


def _rope_ref(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """x (B, S, H, D) rotated by table rows pos (B, S), half-split pairing, in float64."""
    half = x.shape[-1] // 2
    c, s = cos[pos][:, :, None, :], sin[pos][:, :, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


def _case(device: str, dtype: str, b: int, s: int, hq: int, hk: int, d: int, length: int,
          seed: int, table: str | None = None) -> dict:  # fmt: skip
    rng = np.random.default_rng(seed)
    # q, k, v as column views of one fused projection (B, S, (Hq + 2 Hk) D), as the step has
    fused = _put(rng.standard_normal((b, s, (hq + 2 * hk) * d)), dtype, device)
    q = fused[:, :, : hq * d].reshape((b, s, hq, d))
    k = fused[:, :, hq * d : (hq + hk) * d].reshape((b, s, hk, d))
    v = fused[:, :, (hq + hk) * d :].reshape((b, s, hk, d))
    angles = rng.uniform(-np.pi, np.pi, (length + 3, d // 2))
    cos = _put(np.cos(angles), table or dtype, device)
    sin = _put(np.sin(angles), table or dtype, device)
    slots = rng.integers(0, length - s + 1, size=b)
    pos = slots[:, None] + np.arange(s)[None, :] + rng.integers(0, 3, size=(b, 1))
    keys = _put(rng.standard_normal((b, hk, length, d)), dtype, device)
    values = _put(rng.standard_normal((b, hk, length, d)), dtype, device)
    return dict(q=q, k=k, v=v, cos=cos, sin=sin, pos=pos, slots=slots, keys=keys,
                values=values, device=device)  # fmt: skip


def _run(c: dict, index: str = "int32") -> None:
    dev = c["device"]
    pos = gp.asarray(c["pos"].astype(index), device=dev)
    slots = gp.asarray(c["slots"].astype(index), device=dev)
    gp.rope_kv_cache_write(c["q"], c["k"], c["v"], c["cos"], c["sin"], pos, c["keys"],
                           c["values"], slots)  # fmt: skip


def _check_against_reference(c: dict, dtype: str) -> None:
    q0, k0, v0 = _back(c["q"]), _back(c["k"]), _back(c["v"])
    keys0, values0 = _back(c["keys"]), _back(c["values"])
    cos, sin = _back(c["cos"]), _back(c["sin"])
    _run(c)
    want_q, want_k = _rope_ref(q0, cos, sin, c["pos"]), _rope_ref(k0, cos, sin, c["pos"])
    want_keys, want_values = keys0.copy(), values0.copy()
    s = q0.shape[1]
    for b, slot in enumerate(c["slots"]):
        want_keys[b, :, slot : slot + s] = want_k[b].transpose(1, 0, 2)
        want_values[b, :, slot : slot + s] = v0[b].transpose(1, 0, 2)
    tol = TOL[dtype]
    np.testing.assert_allclose(_back(c["q"]), want_q, rtol=tol, atol=tol * 4)
    np.testing.assert_allclose(_back(c["k"]), want_k, rtol=tol, atol=tol * 4)
    # the cache holds exactly what k holds after the rotation, and exactly v
    got_keys = _back(c["keys"])
    for b, slot in enumerate(c["slots"]):
        np.testing.assert_array_equal(got_keys[b, :, slot : slot + s],
                                      _back(c["k"])[b].transpose(1, 0, 2))  # fmt: skip
    np.testing.assert_allclose(got_keys, want_keys, rtol=tol, atol=tol * 4)
    np.testing.assert_array_equal(_back(c["values"]), want_values)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64"])
def test_rope_kv_cache_write_decode_step(device: str, dtype: str) -> None:
    # TinyLlama's decode step: 32 query heads, 4 kv heads, head_dim 64, one token per row
    _check_against_reference(_case(device, dtype, 2, 1, 32, 4, 64, 40, 1), dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_rope_kv_cache_write_prefill_block_and_float32_tables(device: str) -> None:
    # several positions per row, tables wider than the data (the float32 math path)
    _check_against_reference(_case(device, "bfloat16", 3, 4, 6, 2, 16, 12, 2, "float32"),
                             "bfloat16")  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_rope_kv_cache_write_equals_the_two_ops(device: str, dtype: str) -> None:
    a, b = (_case(device, dtype, 2, 2, 8, 2, 32, 20, 3) for _ in range(2))
    _run(a, "int64")
    pos = gp.asarray(b["pos"], device=device)
    gp.rope_at_inplace(b["q"], b["k"], b["cos"], b["sin"], pos)
    gp.kv_cache_write_pair(b["keys"], b["values"], b["k"].transpose(0, 2, 1, 3),
                           b["v"].transpose(0, 2, 1, 3),
                           gp.asarray(b["slots"], device=device))  # fmt: skip
    for name in ("q", "k", "keys", "values"):
        np.testing.assert_array_equal(_back(a[name]), _back(b[name]), err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_rope_kv_cache_write_mixed_dtypes(device: str) -> None:
    # float32 q/k/v into a bfloat16 cache: the values are rounded as kv_cache_write rounds
    a, b = (_case(device, "float32", 1, 1, 4, 2, 8, 6, 4) for _ in range(2))
    for c in (a, b):
        c["keys"], c["values"] = c["keys"].astype("bfloat16"), c["values"].astype("bfloat16")
    _run(a)
    pos, slots = gp.asarray(b["pos"], device=device), gp.asarray(b["slots"], device=device)
    gp.rope_at_inplace(b["q"], b["k"], b["cos"], b["sin"], pos)
    gp.kv_cache_write_pair(b["keys"], b["values"], b["k"].transpose(0, 2, 1, 3),
                           b["v"].transpose(0, 2, 1, 3), slots)  # fmt: skip
    for name in ("q", "k", "keys", "values"):
        np.testing.assert_array_equal(_back(a[name]), _back(b[name]), err_msg=name)


@settings(max_examples=25, deadline=None)
@given(b=st.integers(1, 3), s=st.integers(1, 3), heads=st.sampled_from([(2, 1), (4, 2), (3, 3)]),
       d=st.sampled_from([2, 8, 12]), extra=st.integers(0, 5), seed=st.integers(0, 99))  # fmt: skip
def test_rope_kv_cache_write_property(b: int, s: int, heads: tuple[int, int], d: int,
                                      extra: int, seed: int) -> None:  # fmt: skip
    _check_against_reference(_case("cpu", "float64", b, s, heads[0], heads[1], d, s + extra,
                                   seed), "float64")  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
def test_rope_kv_cache_write_bad_input(device: str) -> None:
    c = _case(device, "float32", 1, 2, 2, 1, 4, 5, 5)
    before = {n: _back(c[n]) for n in ("q", "k", "keys", "values")}
    bad_pos = c["pos"].copy()
    bad_pos[0, 1] = c["cos"].shape[0]
    bad_slots = np.array([4])  # 2 positions from slot 4 run past the 5-slot cache
    for pos, slots, match in ((bad_pos, c["slots"], "position"), (c["pos"], bad_slots, "slot")):
        c2 = dict(c, pos=pos, slots=slots)
        if device == "cpu":  # nothing is written when an index is bad
            with pytest.raises(IndexError, match=f"{match} .* is outside"):
                _run(c2)
            for n, want in before.items():
                np.testing.assert_array_equal(_back(c[n]), want, err_msg=n)
    one = gp.asarray(np.array([0]), device=device)
    with pytest.raises(ValueError, match="must have k's shape"):
        gp.rope_kv_cache_write(c["q"], c["k"], c["v"][:, :1], c["cos"], c["sin"],
                               gp.asarray(c["pos"], device=device), c["keys"], c["values"],
                               one)  # fmt: skip
    with pytest.raises(ValueError, match="separate caches"):
        gp.rope_kv_cache_write(c["q"], c["k"], c["v"], c["cos"], c["sin"],
                               gp.asarray(c["pos"], device=device), c["keys"], c["keys"],
                               one)  # fmt: skip
    with pytest.raises(TypeError, match="int32 or int64"):
        gp.rope_kv_cache_write(c["q"], c["k"], c["v"], c["cos"], c["sin"],
                               gp.asarray(c["pos"], device=device), c["keys"], c["values"],
                               gp.asarray(np.array([0.0]), device=device))  # fmt: skip


@pytest.mark.gpu
@pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU")
def test_rope_kv_cache_write_bad_indices_on_the_gpu() -> None:
    # a bad position leaves its pairs unrotated (k is still written); a slot past the cache
    # drops that write; the graph-safe kernel does not raise
    c = _case("cuda", "float32", 2, 1, 2, 1, 4, 5, 6)
    k0, keys0 = _back(c["k"]), _back(c["keys"])
    pos = c["pos"].copy()
    pos[1, 0] = 10_000
    c["pos"], c["slots"] = pos, np.array([1, 5])
    _run(c)
    np.testing.assert_array_equal(_back(c["k"])[1], k0[1])
    got = _back(c["keys"])
    np.testing.assert_array_equal(got[1], keys0[1])  # slot 5 is past the cache
    np.testing.assert_array_equal(got[0, :, 1], _back(c["k"])[0, 0])


# -- decode_advance --------------------------------------------------------------------
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("rows", [1, 3])
def test_decode_advance_feeds_back_and_counts(device: str, rows: int) -> None:
    rng = np.random.default_rng(7)
    chosen = rng.integers(0, 50_000, rows)
    counters = [rng.integers(0, 100, (rows, 1)), rng.integers(0, 100, rows).astype(np.int32),
                rng.integers(0, 100, rows).astype(np.int32)]  # fmt: skip
    tokens = gp.asarray(rng.integers(0, 9, (rows, 1)), device=device)
    arrays = [gp.asarray(c, device=device) for c in counters]
    gp.decode_advance(tokens, gp.asarray(chosen, device=device), *arrays)
    np.testing.assert_array_equal(tokens.to_numpy(), chosen[:, None])
    for got, before in zip(arrays, counters, strict=True):
        np.testing.assert_array_equal(got.to_numpy(), before + 1)
        assert got.dtype == gp.from_numpy(before).dtype
    # a column view (every other element of a wider array) is advanced in place
    wide = gp.asarray(np.arange(2 * rows, dtype=np.int64), device=device)
    gp.decode_advance(tokens, gp.asarray(chosen, device=device), wide[::2], *arrays[1:])
    np.testing.assert_array_equal(
        wide.to_numpy(), np.arange(2 * rows) + (np.arange(2 * rows) % 2 == 0)
    )


@pytest.mark.parametrize("device", DEVICES)
def test_decode_advance_bad_input(device: str) -> None:
    ids = gp.asarray(np.array([1, 2]), device=device)
    other = [gp.asarray(np.array([1, 2]), device=device) for _ in range(4)]
    with pytest.raises(ValueError, match="one value per row"):
        gp.decode_advance(other[0], ids, other[1], other[2], gp.asarray(np.arange(3),
                                                                        device=device))  # fmt: skip
    with pytest.raises(ValueError, match="separate arrays"):
        gp.decode_advance(other[0], ids, other[0], other[1], other[2])
    with pytest.raises(TypeError, match="int32 or int64"):
        gp.decode_advance(other[0], gp.asarray(np.array([1.0, 2.0]), device=device),
                          *other[1:])  # fmt: skip


# -- rope_cache_attention ----------------------------------------------------------------
def _attention_ref(q, keys, values, starts, ends, scale, window):  # type: ignore[no-untyped-def]
    """q (B, Hq, S, D) over cache slots [starts, ends), float64."""
    b_, hq, sq, _ = q.shape
    group = hq // keys.shape[1]
    out = np.zeros((b_, hq, sq, values.shape[-1]))
    for b, h, i in np.ndindex(b_, hq, sq):
        t = ends[b] - sq + i
        j = np.arange(keys.shape[2])
        ok = (j >= starts[b]) & (j <= t) & ((t - j < window) if window else True)
        if ok.any():
            s = keys[b, h // group][ok] @ q[b, h, i] * scale
            p = np.exp(s - s.max())
            out[b, h, i] = (p / p.sum()) @ values[b, h // group][ok]
    return out


def _attend(c: dict, starts: np.ndarray, window: int = 0) -> gp.GPUArray:
    dev = c["device"]
    ends = c["slots"] + c["q"].shape[1]  # the new tokens are the last ones seen
    return gp.rope_cache_attention(
        c["q"], c["k"], c["v"], c["cos"], c["sin"], gp.asarray(c["pos"], device=dev),
        c["keys"], c["values"], gp.asarray(c["slots"].astype(np.int32), device=dev),
        gp.asarray(starts, device=dev), gp.asarray(ends, device=dev), window=window)  # fmt: skip


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("shape", [(1, 1, 32, 4, 64, 512), (3, 1, 8, 2, 64, 40),
                                   (2, 3, 4, 2, 32, 30), (1, 1, 32, 8, 128, 96)])  # fmt: skip
def test_rope_cache_attention_equals_the_two_ops_and_the_reference(
    device: str, dtype: str, shape: tuple[int, ...]
) -> None:
    b, s, hq, hk, d, length = shape
    a, c = (_case(device, dtype, b, s, hq, hk, d, length, 11) for _ in range(2))
    starts = np.minimum(np.arange(b) * 3, a["slots"])
    window = 7 if s > 1 else 0
    q0, k0, keys0, values0 = (_back(a[n]) for n in ("q", "k", "keys", "values"))
    got = _attend(a, starts, window)
    # the two ops on a second copy of the same data
    _run(c)
    st_, en = gp.asarray(starts, device=device), gp.asarray(c["slots"] + s, device=device)
    want2 = gp.sdpa_causal_cache(c["q"].transpose(0, 2, 1, 3), c["keys"], c["values"], st_, en,
                                 window=window)  # fmt: skip
    assert got.shape == (b, hq, s, d) and got.dtype == a["q"].dtype
    tol = TOL[dtype]
    for name in ("q", "k", "keys", "values"):  # the same rotation and writes (1 ulp at most)
        np.testing.assert_allclose(_back(a[name]), _back(c[name]), rtol=tol / 2, atol=tol / 2)
    np.testing.assert_allclose(_back(got), _back(want2), rtol=2 * tol, atol=2 * tol)
    # float64 reference on the rotated q and updated caches (as stored)
    cos, sin = _back(a["cos"]), _back(a["sin"])
    want_keys = keys0.copy()
    want_values = values0.copy()
    rk = _rope_ref(k0, cos, sin, a["pos"])
    for r, slot in enumerate(a["slots"]):
        want_keys[r, :, slot : slot + s] = rk[r].transpose(1, 0, 2)
        want_values[r, :, slot : slot + s] = _back(a["v"])[r].transpose(1, 0, 2)
    rq = _rope_ref(q0, cos, sin, a["pos"]).transpose(0, 2, 1, 3)
    ref = _attention_ref(rq, want_keys, want_values, starts, a["slots"] + s, 1 / np.sqrt(d),
                         window)  # fmt: skip
    err = np.linalg.norm(_back(got) - ref) / np.linalg.norm(ref)
    assert err <= 2 * max(tol, 1e-6), err


@settings(max_examples=20, deadline=None)
@given(b=st.integers(1, 3), s=st.integers(1, 3), heads=st.sampled_from([(2, 1), (4, 2), (3, 3)]),
       d=st.sampled_from([2, 8]), extra=st.integers(0, 5), window=st.integers(0, 4),
       seed=st.integers(0, 99))  # fmt: skip
def test_rope_cache_attention_property(b: int, s: int, heads: tuple[int, int], d: int,
                                       extra: int, window: int, seed: int) -> None:  # fmt: skip
    a, c = (_case("cpu", "float64", b, s, heads[0], heads[1], d, s + extra, seed)
            for _ in range(2))  # fmt: skip
    starts = np.zeros(b, np.int64)
    got = _attend(a, starts, window).to_numpy()
    _run(c)
    want = gp.sdpa_causal_cache(c["q"].transpose(0, 2, 1, 3), c["keys"], c["values"],
                                gp.asarray(starts, device="cpu"),
                                gp.asarray(c["slots"] + s, device="cpu"),
                                window=window).to_numpy()  # fmt: skip
    np.testing.assert_array_equal(got, want)
    for name in ("q", "k", "keys", "values"):
        np.testing.assert_array_equal(_back(a[name]), _back(c[name]))


@pytest.mark.parametrize("device", DEVICES)
def test_rope_cache_attention_bad_input(device: str) -> None:
    c = _case(device, "float32", 1, 1, 4, 2, 8, 6, 12)
    with pytest.raises(ValueError, match="multiple"):
        gp.rope_cache_attention(c["q"][:, :, :3], c["k"], c["v"], c["cos"], c["sin"],
                                gp.asarray(c["pos"], device=device), c["keys"], c["values"],
                                gp.asarray(c["slots"], device=device),
                                gp.asarray(np.array([0]), device=device),
                                gp.asarray(np.array([1]), device=device))  # fmt: skip
    with pytest.raises(ValueError, match="window"):
        _attend(c, np.array([0]), window=-1)
