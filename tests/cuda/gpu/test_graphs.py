"""gp.cuda.Graph: capture, replay bit-identical to eager, inputs changed in place between
replays, the graph's private pool, and clear errors for what cannot be captured."""

from __future__ import annotations

import numpy as np
import pygpukit as gp
import pytest
from pygpukit.benchmark.launch_path import HIDDEN, decoder_step, decoder_weights

pytestmark = pytest.mark.gpu


def _used() -> int:
    return int(gp.memory.stats("cuda")["used"])


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8)


def test_replay_matches_eager_bit_for_bit_and_follows_new_inputs() -> None:
    rng = np.random.default_rng(1)
    a = gp.asarray(rng.standard_normal((64, 96)).astype(np.float32))
    b = gp.asarray(rng.standard_normal((96, 32)).astype(np.float32))
    w = gp.asarray(rng.uniform(0.5, 1.5, 32).astype(np.float32))
    base = _used()  # with the inputs

    def region() -> gp.GPUArray:
        h = gp.matmul(a, b)
        h = gp.rmsnorm(gp.silu(h) + 1.0, w)
        return gp.sum(h * h, axis=1)

    eager = region().to_numpy()
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        out = region()
    assert g.node_count >= 4
    g.replay()
    assert np.array_equal(_bits(out.to_numpy()), _bits(eager))
    new_a = rng.standard_normal((64, 96)).astype(np.float32)
    a[...] = gp.asarray(new_a)  # the graph reads a's memory: change it in place, then replay
    g.replay()
    want = region().to_numpy()
    assert np.array_equal(_bits(out.to_numpy()), _bits(want))
    del g, out, eager, want
    assert _used() == base  # the graph's arrays never were the device pool's


def test_decoder_sequence_of_300_ops_replays_identically() -> None:
    weights = decoder_weights(gp, lambda v: gp.asarray(v).astype("bfloat16"))
    x = gp.asarray(np.random.default_rng(2).standard_normal((1, HIDDEN)).astype(np.float32))
    x = x.astype("bfloat16")
    eager = decoder_step(gp, x, weights).to_numpy()
    g = gp.cuda.Graph()
    y = g.capture(decoder_step, gp, x, weights)
    g.replay()
    layers = len(weights["layers"])
    assert layers * 14 >= 300  # decoder_step's ops: 14 a layer
    # a node per op, but one for the rotation of q and k together (a product that cuBLASLt
    # splits over K adds its reduction's node: more, never fewer)
    assert g.node_count >= layers * 13
    assert np.array_equal(eager.view(np.uint16), y.to_numpy().view(np.uint16))


def test_user_kernels_are_captured() -> None:
    src = r"""
    extern "C" __global__ void scale(float* x, float f, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] *= f;
    }"""
    if not gp.is_nvrtc_available():
        pytest.skip("no NVRTC")
    k = gp.jit(src, func="scale")
    x = gp.asarray(np.ones(1000, dtype=np.float32))
    k(x, f=2.0, n=x.size)  # compiled and loaded before the capture
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        k(x, f=3.0, n=x.size)
    np.testing.assert_array_equal(x.to_numpy(), 2.0)  # captured, not run
    g.replay()
    g.replay()
    np.testing.assert_array_equal(x.to_numpy(), 18.0)


@pytest.mark.parametrize(
    "what,call",
    [
        ("to_numpy", lambda x: x.to_numpy()),
        ("gp.cuda.synchronize", lambda x: gp.cuda.synchronize()),
        ("host-to-device", lambda x: gp.asarray(np.ones(4, dtype=np.float32))),
    ],
)
def test_what_cannot_be_captured_is_named_and_the_graph_stays_unusable(what: str, call) -> None:  # type: ignore[no-untyped-def]
    x = gp.asarray(np.arange(8, dtype=np.float32))
    g = gp.cuda.Graph()
    with pytest.raises(RuntimeError, match="graph"), gp.cuda.graph(g):
        y = x + 1.0
        call(y)
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()
    # the stream and pool are back to normal: eager work runs
    np.testing.assert_array_equal((x * 2.0).to_numpy(), np.arange(8) * 2.0)


def test_bad_uses_are_refused() -> None:
    g = gp.cuda.Graph()
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()
    with pytest.raises(ValueError, match="capture_error_mode"):
        g.capture_begin(capture_error_mode="loose")
    with pytest.raises(ValueError, match="created stream"):
        g.capture_begin(stream=gp.cuda.current_stream())
    x = gp.asarray(np.ones(4, dtype=np.float32))
    with gp.cuda.graph(g):
        x += 1.0
    with pytest.raises(RuntimeError, match="captured already"), gp.cuda.graph(g):
        pass


def test_graph_memory_is_private_and_released_with_the_graph() -> None:
    x = gp.asarray(np.ones(1 << 16, dtype=np.float32))
    base = _used()
    g = gp.cuda.Graph()
    with gp.cuda.graph(g):
        y = x * 2.0
        z = y + 1.0  # y is freed inside: its block stays in the graph's pool
        del y
    # the graph's arrays are not the device pool's
    assert _used() == base
    assert g.memory_stats()["used"] >= z.nbytes
    g.replay()
    np.testing.assert_array_equal(z.to_numpy(), 3.0)
    del g, z
    assert _used() == base
