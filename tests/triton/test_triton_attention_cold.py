"""Attention tuning on the host (program and clock stubbed): candidates are timed on copies
of q, k and v in turn (inputs out of L2, as the benchmark rotates them), the copies keep
the originals' bytes, offsets, strides and alignment, the stored choice says it was timed
cold, and the call after tuning launches exactly the pick, with its grid, on the caller's
own arrays."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pygpukit as gp
import pytest

pytest.importorskip("pygpukit_cuda")
ka = pytest.importorskip("pygpukit.triton.kernels.attention")
cold = pytest.importorskip("pygpukit.triton.cold")


class Program:
    """Records each launch: grid, constexprs, warps, stages and the q, k, v, out addresses."""

    def __init__(self) -> None:
        self.launches: list[dict[str, Any]] = []

    def __call__(self, grid: tuple[int, ...], args: Any, types: Any, consts: Any,
                 num_warps: int = 4, num_stages: int = 2) -> None:  # fmt: skip
        self.launches.append({
            "grid": grid, "consts": dict(consts), "warps": num_warps, "stages": num_stages,
            "ptrs": tuple(a._buffer.ptr + a._offset for a in args[:4]),
            "rest": tuple(args[4:]),
        })  # fmt: skip


def _ptr(a: gp.GPUArray) -> int:
    return int(a._buffer.ptr + a._offset)


@pytest.fixture
def tuner(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    from pygpukit_cuda import cubin

    t = ka.autotune
    monkeypatch.setattr(ka, "interpret", lambda: False)
    monkeypatch.setattr(t.availability, "interpret", lambda: False)
    monkeypatch.setattr(cubin, "is_capturing", lambda index: False)
    monkeypatch.setattr(t, "_device_name", lambda index: "Test GPU")
    monkeypatch.setattr(t, "_memory", {})
    monkeypatch.setattr(t, "_chosen", {})
    monkeypatch.setattr(t, "_loaded_from", None)
    with gp.config.use(cache_dir=str(tmp_path)):
        yield t


def _qkv(d: int = 128, s: int = 256) -> list[gp.GPUArray]:
    rng = np.random.default_rng(0)
    return [gp.asarray(rng.standard_normal((1, 16, s, d)).astype(np.float32)).astype("float16")
            for _ in range(4)]  # fmt: skip


def test_tuning_rotates_copies_and_the_call_runs_exactly_the_pick(
    tuner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    prog = Program()
    monkeypatch.setattr(ka, "_program", prog)
    pick = 2  # the fake clock makes this candidate the fastest
    configs = ka.CONFIGS_D128

    def clock(run: Any, count: int) -> float:
        before = len(prog.launches)
        for _ in range(count):
            run()
        ran = prog.launches[before:]
        c = (ran[0]["consts"]["BM"], ran[0]["consts"]["BN"], ran[0]["warps"], ran[0]["stages"],
             ran[0]["consts"]["PAIR"])  # fmt: skip
        return (0.04 if configs.index(c) == pick else 0.05) * count

    monkeypatch.setattr(tuner, "_time", clock)
    q, k, v, out = _qkv()
    own = (_ptr(q), _ptr(k), _ptr(v), _ptr(out))
    ka.sdpa_causal(q, k, v, out, 0.125)
    *tuning, call = prog.launches
    # the call after tuning: the pick, its grid, the caller's arrays
    bm = configs[pick][0]
    assert call["ptrs"] == own
    assert (call["consts"]["BM"], call["consts"]["BN"], call["warps"], call["stages"],
            call["consts"]["PAIR"]) == configs[pick]  # fmt: skip
    assert call["grid"] == ka.grid(configs[pick], 16, 256) == (16, -(-256 // bm))
    # timed launches went to copies of q, k and v (the output stays), several in turn
    timed = tuning[len(configs) :]  # the first launch of each candidate compiles it
    inputs = {x["ptrs"][:3] for x in timed}
    assert len(inputs) == cold.MAX_SETS and {x["ptrs"][3] for x in timed} == {own[3]}
    assert all(x["rest"] == call["rest"] for x in tuning)  # the same shapes and strides
    # consecutive timed launches never reuse the copy just used
    assert all(a["ptrs"] != b["ptrs"] for a, b in itertools.pairwise(timed))
    ((full, entry),) = tuner.table().items()
    assert "|cold|" in full and entry["pick"] == pick
    # the next call takes the stored pick: one launch, the same as the first call's
    prog.launches.clear()
    ka.sdpa_causal(q, k, v, out, 0.125)
    assert prog.launches == [call]


def test_copies_keep_bytes_layout_and_shared_buffers() -> None:
    base = gp.asarray(np.arange(3 * 16 * 8 * 32, dtype=np.float32).reshape(3, 16, 8, 32))
    q, k, v = base[0], base[1], base[2]  # one buffer, three offsets (a fused projection)
    t = gp.asarray(np.arange(16 * 8 * 64, dtype=np.float32).reshape(16, 8, 64))[..., 32:]
    sets = cold.sets([q, k, v, t], l2=base.nbytes * 2)
    assert len(sets) > 1 and sets[0] == [q, k, v, t]
    for copy in sets[1:]:
        assert copy[0]._buffer is copy[1]._buffer is copy[2]._buffer  # shared, copied once
        assert copy[0]._buffer is not q._buffer and copy[3]._buffer is not t._buffer
        for a, b in zip([q, k, v, t], copy, strict=True):
            assert (b.shape, b.strides, b.dtype) == (a.shape, a.strides, a.dtype)
            assert (_ptr(b) - _ptr(a)) % 16 == 0
            np.testing.assert_array_equal(b.to_numpy(), a.to_numpy())


def test_how_many_spans_four_l2_within_caps() -> None:
    l2 = 50 << 20
    assert cold.how_many(25 << 20, l2) == 8  # d128 bf16 2048: as the benchmark's rotation
    assert cold.how_many(300 << 20, l2) == 1  # one set already overflows L2
    assert cold.how_many(1 << 10, l2) == cold.MAX_SETS
    assert cold.how_many(200 << 20, 1 << 30) * (200 << 20) <= cold.MAX_BYTES + (200 << 20)
    assert cold.how_many(0, l2) == 1
