"""The transfer family: host->device and device->host copies of float32 arrays.

Each direction is timed on the host clock from the call to the data being usable (a
device synchronize after the calls for uploads; a download returns with the data), since
the host memcpy is part of what a copy costs. Ours: ``gp.asarray(x)`` and ``a.to_numpy()``;
PyTorch: ``torch.from_numpy(x).to('cuda')`` and ``t.cpu().numpy()``; CuPy:
``cupy.asarray(x)`` and ``cupy.asnumpy(a)`` (``a.get()``). Every result is checked for
exact equality first; the host array is pageable NumPy memory on every side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .cases import SpecialCase
from .peers import Peer
from .results import ERROR, FAIL, MISSING, PASS, PeerResult, Row, Work
from .runner import Bench, _short
from .timing import Stats, per_call

#: calls per sample: enough that small copies are not all clock overhead
_TARGET_BYTES = 64 << 20


def _calls_for(nbytes: int) -> int:
    return max(1, min(100, _TARGET_BYTES // max(nbytes, 1)))


def _time(fn: Callable[[], Any], sync: Callable[[], None], nbytes: int, bench: Bench) -> Stats:
    return per_call(fn, sync, _calls_for(nbytes), warmup=bench.warmup, repeats=bench.repeats,
                    budget_s=bench.budget_s)  # fmt: skip


def _exact(got: np.ndarray, want: np.ndarray) -> bool:
    return got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)


def run_transfer(case: SpecialCase, bench: Bench) -> Row:
    n = int(case.params["n"])
    to_device = case.params["direction"] == "h2d"
    host = bench.host("normal", (n,))
    work = Work("GB/s", 4 * n)
    row = Row(case.family, case.op, case.case, unit="GB/s", tol=0.0)
    try:
        _ours(row, host, to_device, work, bench)
    except Exception as exc:  # report, don't crash
        row.status, row.note = ERROR, f"{type(exc).__name__}: {_short(exc)}"
    finally:
        bench.release()
    for peer in bench.peers:
        row.peers.append(_peer(peer, host, to_device, work, bench))
        bench.release()
    if row.stats is not None and row.stats.median_ms > 0:
        for p in row.peers:
            if p.stats is not None:
                p.ratio = p.stats.median_ms / row.stats.median_ms
    return row


def _ours(row: Row, host: np.ndarray, to_device: bool, work: Work, bench: Bench) -> None:
    import pygpukit as gp

    if bench.device.type == "cpu":
        row.status, row.note = MISSING, "the CPU device has no host<->device copy to time"
        return
    row.provider = bench.device.type
    x = gp.asarray(host, device=bench.device)
    if not _exact(x.to_numpy(), host):
        row.status, row.error, row.note = FAIL, float("inf"), "round trip not exact, not timed"
        return
    row.error = 0.0
    if to_device:
        row.stats = _time(lambda: gp.asarray(host, device=bench.device), bench.sync,
                          host.nbytes, bench)  # fmt: skip
    else:
        row.stats = _time(x.to_numpy, bench.sync, host.nbytes, bench)
    row.rate = work.rate(row.stats)
    row.status = PASS
    stats = _copier_stats(bench.device)
    if stats:
        row.extra["copier"] = stats


def _copier_stats(device: Any) -> dict[str, Any]:
    try:
        from pygpukit_cuda import transfers
    except ImportError:
        return {}
    try:
        return transfers.stats(device.index)
    except Exception:
        return {}


def _peer(peer: Peer, host: np.ndarray, to_device: bool, work: Work, bench: Bench) -> PeerResult:
    result = PeerResult(peer.name)
    if not peer.load():
        result.note = peer.note
        return result
    if peer.name == "numpy":
        result.note = "numpy has no device"
        return result
    try:
        a = peer.put(host, "float32")
        result.error = 0.0 if _exact(peer.get(a), host) else 1.0
        if to_device:
            result.stats = _time(lambda: peer.put(host, "float32"), peer.sync, host.nbytes, bench)
        else:
            result.stats = _time(lambda: peer.get(a), peer.sync, host.nbytes, bench)
        result.rate = work.rate(result.stats)
    except Exception as exc:
        result.note = f"{peer.name}: {type(exc).__name__}: {_short(exc)}"
    return result
