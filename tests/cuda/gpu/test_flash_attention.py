"""The tensor-core causal attention path (float16/bfloat16, head_dim 64/128) against a
float64 NumPy reference: tile edges, a KV cache longer than the queries, GQA, decoding,
(B, S, H, D) views, and the fallback for layouts it does not take."""

from __future__ import annotations

import math

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit.testing import poison
from pygpukit_cuda import linalg_nn

pytestmark = pytest.mark.gpu

TOL = {"float16": 4e-3, "bfloat16": 2e-2}


def _draw(rng: np.random.Generator, shape: tuple[int, ...], name: str) -> np.ndarray:
    return rng.standard_normal(shape).astype(dt.as_dtype(name).to_numpy_dtype())


def _ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    g = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    sq, skv = q.shape[-2], k.shape[-2]
    s = np.where(np.arange(skv)[None, :] > np.arange(sq)[:, None] + (skv - sq), -np.inf, s)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    g = np.asarray(got, np.float64)
    assert np.isfinite(g).all(), "unwritten (poisoned) or non-finite output"
    return float(np.linalg.norm(g - want) / np.linalg.norm(want))


SHAPES = [
    ((1, 2, 64, 64), (1, 2, 64, 64)),  # exactly one tile
    ((2, 3, 130, 64), (2, 3, 130, 64)),  # ragged last tiles
    ((1, 4, 37, 128), (1, 4, 300, 128)),  # KV cache longer than the queries
    ((1, 8, 200, 128), (1, 2, 200, 128)),  # GQA, 4 query heads per key head
    ((3, 4, 1, 64), (3, 4, 257, 64)),  # decoding one token
    ((2, 129, 128), (1, 129, 128)),  # no batch dims
]


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
@pytest.mark.parametrize(("qs", "ks"), SHAPES, ids=[str(s[0]) for s in SHAPES])
def test_flash_path_matches_float64(name: str, qs: tuple[int, ...], ks: tuple[int, ...]) -> None:
    rng = np.random.default_rng(sum(qs) * 7 + sum(ks))
    q, k, v = _draw(rng, qs, name), _draw(rng, ks, name), _draw(rng, ks, name)
    gq, gk, gv = (gp.asarray(x, device="cuda") for x in (q, k, v))
    out = poison(gp.empty(qs, dtype=name, device="cuda"))
    assert linalg_nn._flash_strides(gq, gk, gv, out) is not None, "flash path not taken"
    scale = 1.0 / math.sqrt(qs[-1])
    linalg_nn.sdpa_causal(gq, gk, gv, out, scale)
    assert _rel(out.to_numpy(), _ref(q, k, v, scale)) < TOL[name]


def test_flash_path_on_bshd_views_through_the_op() -> None:
    rng = np.random.default_rng(3)
    b, s, h, d = 2, 150, 4, 128
    parent = _draw(rng, (b, s, 3, h, d), "bfloat16")  # a fused qkv projection's output
    g = gp.asarray(parent, device="cuda")
    q, k, v = (g[:, :, i].transpose((0, 2, 1, 3)) for i in range(3))
    assert linalg_nn._flash_strides(q, k, v, gp.empty((b, h, s, d), dtype="bfloat16",
                                                      device="cuda")) is not None  # fmt: skip
    got = gp.sdpa_causal(q, k, v)
    want = _ref(*(parent[:, :, i].transpose(0, 2, 1, 3) for i in range(3)), 1 / math.sqrt(d))
    assert _rel(got.to_numpy(), want) < TOL["bfloat16"]


def test_layouts_the_flash_path_refuses_still_work() -> None:
    rng = np.random.default_rng(4)
    q = _draw(rng, (1, 2, 40, 128), "float16")
    gq = gp.asarray(q, device="cuda")
    odd = gp.asarray(_draw(rng, (1, 2, 40, 129), "float16"), device="cuda")[..., 1:]
    out = gp.empty((1, 2, 40, 128), dtype="float16", device="cuda")
    assert linalg_nn._flash_strides(gq, odd, gq, out) is None  # misaligned rows
    got = gp.sdpa_causal(gq, odd, gq)
    assert _rel(got.to_numpy(), _ref(q, odd.to_numpy(), q, 1 / math.sqrt(128))) < 4e-3
