"""gp.sdpa (attention without a mask) on the GPU against a float64 reference: the tensor-core
path (float16/bfloat16, head_dim 64/128) at Whisper's encoder shape, ragged tiles, fewer
keys than queries and GQA, and the general kernel for float32 and other head dims."""

from __future__ import annotations

import math

import numpy as np
import pygpukit as gp
import pytest
from pygpukit import _dtypes as dt
from pygpukit.testing import poison

linalg_nn = pytest.importorskip("pygpukit_cuda.linalg_nn")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not gp.is_cuda_available(), reason="needs a CUDA GPU (pygpukit-cuda)"),
]

TOL = {"float16": 4e-3, "bfloat16": 2e-2, "float32": 1e-5}


def _ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    g = q.shape[-3] // k.shape[-3]
    k, v = np.repeat(k, g, axis=-3), np.repeat(v, g, axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * scale
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


SHAPES = [
    ((1, 12, 1500, 64), (1, 12, 1500, 64)),  # Whisper small's encoder self-attention
    ((2, 3, 130, 128), (2, 3, 130, 128)),  # ragged last tiles
    ((1, 4, 200, 64), (1, 4, 37, 64)),  # fewer keys than queries
    ((1, 8, 70, 128), (1, 2, 300, 128)),  # GQA, more keys than queries
    ((3, 4, 1, 64), (3, 4, 257, 64)),  # one query
]


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize(("qs", "ks"), SHAPES, ids=[str(s[0]) for s in SHAPES])
def test_unmasked_attention_matches_float64(name: str, qs: tuple[int, ...],
                                            ks: tuple[int, ...]) -> None:  # fmt: skip
    rng = np.random.default_rng(sum(qs) * 5 + sum(ks))
    npd = dt.as_dtype(name).to_numpy_dtype()
    q = rng.standard_normal(qs).astype(npd)
    k, v = rng.standard_normal(ks).astype(npd), rng.standard_normal(ks).astype(npd)
    gq, gk, gv = (gp.asarray(x, device="cuda") for x in (q, k, v))
    scale = 1.0 / math.sqrt(qs[-1])
    want = _ref(q, k, v, scale)
    out = poison(gp.empty(qs, dtype=name, device="cuda"))  # every element must be written
    linalg_nn.sdpa(gq, gk, gv, out, scale)
    for got in (out.to_numpy(), gp.sdpa(gq, gk, gv).to_numpy()):
        g = np.asarray(got, np.float64)
        assert np.isfinite(g).all(), "unwritten (poisoned) or non-finite output"
        assert np.linalg.norm(g - want) / np.linalg.norm(want) <= TOL[name]


def test_unmasked_attention_of_a_transposed_view_and_head_dim_96() -> None:
    rng = np.random.default_rng(7)
    parent = rng.standard_normal((2, 90, 4, 96)).astype(np.float16)  # (B, S, H, D)
    k = rng.standard_normal((2, 4, 50, 96)).astype(np.float16)
    q = gp.asarray(parent, device="cuda").transpose(0, 2, 1, 3)
    got = gp.sdpa(q, gp.asarray(k, device="cuda"), gp.asarray(k, device="cuda")).to_numpy()
    want = _ref(np.transpose(parent, (0, 2, 1, 3)), k, k, 1.0 / math.sqrt(96))
    g = np.asarray(got, np.float64)
    assert np.linalg.norm(g - want) / np.linalg.norm(want) <= TOL["float16"]
