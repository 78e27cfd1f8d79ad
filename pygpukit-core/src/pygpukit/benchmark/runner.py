"""Running one array case: check pygpukit's result, then time it and each peer.

The order for every case: make the host inputs; ask `gp.explain` which provider serves
the call (none: a "missing" row); run the call once and compare it with a float64
reference (wrong: a FAIL row, not timed); time it on rotating copies of the inputs; then
check and time each peer the same way. Nothing a case allocates outlives it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .cases import ArrayCase, Expected
from .peers import Peer, stored
from .results import ERROR, FAIL, MISSING, PASS, PeerResult, Row
from .timing import Clock, EventClock, HostClock, Rotation, Stats, copies_for, measure


@dataclass
class Bench:
    """Everything a case needs to know about this run."""

    device: Any  # pygpukit Device
    peers: list[Peer]
    repeats: int = 15
    warmup: int = 2
    #: seconds of sampling per library and case before stopping early (3 samples at least)
    budget_s: float = 10.0
    #: bytes of cache to defeat by rotating input copies
    cache_bytes: int = 64 << 20
    seed: int = 0
    _host: dict[tuple[str, tuple[int, ...]], np.ndarray] = field(default_factory=dict)
    _clock: Clock | None = None

    @property
    def backend(self) -> Any:
        from .._placement import backend_of

        return backend_of(self.device)

    def sync(self) -> None:
        self.backend.synchronize(self.device)

    def clock(self) -> Clock:
        """Device events for pygpukit's CUDA device, the host clock (after a sync) else."""
        if self._clock is None:
            self._clock = _cuda_event_clock(self.device, self.sync) or HostClock(self.sync)
        return self._clock

    def host(self, kind: str, shape: tuple[int, ...]) -> np.ndarray:
        """Seeded float32 host data, kept while a family runs (cases share their inputs)."""
        key = (kind, shape)
        data = self._host.get(key)
        if data is None:
            rng = np.random.default_rng([self.seed, len(shape), *shape, kind == "uniform"])
            if kind == "uniform":
                data = rng.random(shape, dtype=np.float32)
            elif kind == "complex":  # both parts standard normal
                re = rng.standard_normal(shape, dtype=np.float32)
                data = (re + 1j * rng.standard_normal(shape, dtype=np.float32)).astype(np.complex64)
            elif kind in ("spectrum1", "spectrum2"):  # rfft(n) of a real signal: Hermitian
                axes = (-1,) if kind == "spectrum1" else (-2, -1)
                signal = rng.standard_normal((*shape[:-1], 2 * (shape[-1] - 1)))
                data = np.fft.rfftn(signal, axes=axes).astype(np.complex64)
            else:
                data = rng.standard_normal(shape, dtype=np.float32)
            self._host[key] = data
        return data

    def forget_host_data(self) -> None:
        self._host.clear()

    def release(self) -> None:
        """Return cached device memory of pygpukit and every loaded peer."""
        import pygpukit as gp

        gc.collect()
        with contextlib.suppress(Exception):
            gp.memory.free_all_cached(self.device)
        for p in self.peers:
            if p.xp is not None:
                with contextlib.suppress(Exception):
                    p.free()


def _cuda_event_clock(device: Any, sync: Callable[[], None]) -> Clock | None:
    if device.type != "cuda":
        return None
    try:
        from pygpukit_cuda._loader import driver
        from pygpukit_cuda.device import context
    except ImportError:
        return None
    ctx = context(device.index)
    mod = driver()

    class _Event:
        def __init__(self) -> None:
            self.event = mod.Event(ctx, True)

        def record(self) -> None:
            self.event.record(0)  # pygpukit launches on the default stream

        def synchronize(self) -> None:
            self.event.synchronize()

    return EventClock(_Event, lambda s, e: e.event.elapsed_since(s.event), sync)


# -- checking ---------------------------------------------------------------------------
def compare(got: np.ndarray, want: Expected) -> tuple[float, str]:
    """(error, problem): the error measure of `want.how`, and a reason when it can't be
    measured (shape, NaN). The error is max |got - want| / max |want| for 'close'."""
    got = np.asarray(got)
    if want.how == "argmax":
        data = want.value
        if got.shape != () or not np.issubdtype(got.dtype, np.integer):
            return float("inf"), f"argmax gave {got.dtype} of shape {got.shape}, not an index"
        i = int(got)
        if not 0 <= i < data.size:
            return float("inf"), f"argmax gave index {i}, outside 0..{data.size - 1}"
        return (0.0, "") if data.reshape(-1)[i] == data.max() else (1.0, "not a maximum")
    ref = want.value
    if want.rows is not None:
        got = got[want.rows] if got.ndim >= 1 and got.shape[0] > want.rows.max() else got
    if got.shape != ref.shape:
        return float("inf"), f"shape {got.shape}, want {ref.shape}"
    g = got.astype(np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(ref) else np.float64)
    if np.isnan(g).any() and not np.isnan(ref).any():
        return float("inf"), "NaN in the result"
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    diff = float(np.max(np.abs(g - ref))) if ref.size else 0.0
    return (diff / scale if scale else diff), ""


def _check(got: np.ndarray, case: ArrayCase, want: Expected) -> tuple[bool, float, str]:
    error, problem = compare(got, want)
    ok = not problem and error <= case.tol
    if ok:
        return True, error, ""
    why = problem or f"error {error:.2e} > tolerance {case.tol:.0e}"
    return False, error, why


# -- one case ---------------------------------------------------------------------------
def run_array_case(case: ArrayCase, bench: Bench) -> Row:
    import pygpukit as gp

    row = Row(case.family, case.op, case.case, unit=case.work.unit, tol=case.tol, note=case.note)
    host = [stored(bench.host(k, s), d) for (k, s), d in zip(case.inputs, case.dtypes, strict=True)]
    want = case.reference(*host)
    copies = copies_for(case.nbytes_per_set(), bench.cache_bytes)
    try:
        _run_ours(case, bench, host, want, copies, row, gp)
    finally:
        bench.release()
    for peer in bench.peers:
        row.peers.append(_run_peer(case, bench, peer, host, want, copies))
        bench.release()
    if row.stats is not None:
        for p in row.peers:
            if p.stats is not None and row.stats.median_ms > 0:
                p.ratio = p.stats.median_ms / row.stats.median_ms
    return row


def _run_ours(
    case: ArrayCase, bench: Bench, host: list[np.ndarray], want: Expected, copies: int,
    row: Row, gp: Any,
) -> None:  # fmt: skip
    from .._dispatch import DispatchError

    first = [gp.asarray(h, device=bench.device) for h in host]
    with gp.config.use(**case.settings):
        expl = gp.explain(case.dispatch, *first)
        if expl.chosen is None:
            row.status = MISSING
            row.note = _join(row.note, _missing_reason(expl))
            return
        row.provider = expl.chosen
        try:
            got = case.ours(*first).to_numpy()
        except (DispatchError, NotImplementedError) as exc:
            row.status, row.note = MISSING, _join(row.note, f"{type(exc).__name__}: {exc}")
            return
        except Exception as exc:  # an op that raises is a finding, not a crash
            row.status, row.note = ERROR, _join(row.note, f"{type(exc).__name__}: {exc}")
            return
        ok, row.error, why = _check(got, case, want)
        del got
        if not ok:
            row.status, row.note = FAIL, _join(row.note, f"wrong result, not timed: {why}")
            return
        sets = [first] + [
            [gp.asarray(h, device=bench.device) for h in host] for _ in range(copies - 1)
        ]
        rotation = Rotation(sets)
        row.stats = measure(
            lambda: case.ours(*rotation()), bench.clock(), bench.repeats, bench.warmup,
            bench.budget_s,
        )  # fmt: skip
    row.status = PASS
    row.rate = case.work.rate(row.stats)
    if copies > 1:
        row.extra["input_copies"] = copies


def _run_peer(
    case: ArrayCase, bench: Bench, peer: Peer, host: list[np.ndarray], want: Expected,
    copies: int,
) -> PeerResult:  # fmt: skip
    result = PeerResult(peer.name)
    if not peer.load():
        result.note = peer.note
        return result
    call = case.peer_call(peer.name)
    if call is None:
        result.note = f"no {peer.name} equivalent"
        return result
    xp = peer.xp
    tf32 = bool(case.settings.get("allow_tf32", False))
    try:
        with peer.precision(tf32) as note:
            result.note = note
            first = [peer.put(h, d) for h, d in zip(host, case.dtypes, strict=True)]
            got = peer.get(call(xp, *first))
            result.error, problem = compare(got, want)
            del got
            if problem or result.error > max(case.tol, 1e-6) * 10:
                result.note = _join(result.note, f"{peer.name} differs from the reference "
                                    f"({problem or f'{result.error:.1e}'})")  # fmt: skip
            sets = [first] + [
                [peer.put(h, d) for h, d in zip(host, case.dtypes, strict=True)]
                for _ in range(copies - 1)
            ]
            rotation = Rotation(sets)
            result.stats = measure(
                lambda: call(xp, *rotation()), peer.clock(), bench.repeats, bench.warmup,
                bench.budget_s,
            )  # fmt: skip
            result.rate = case.work.rate(result.stats)
    except Exception as exc:  # the peer lacks this dtype or op: say so
        result.stats = None
        result.note = _join(result.note, f"{peer.name}: {type(exc).__name__}: {_short(exc)}")
    return result


def _missing_reason(expl: Any) -> str:
    reasons = [f"{c.provider}: {c.reason}" for c in expl.candidates if c.verdict != "not ranked"]
    where = f"no provider has {expl.op}({', '.join(expl.dtypes)}) on {expl.device}"
    return where + (f" ({'; '.join(reasons)})" if reasons else "")


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _short(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextlib.contextmanager
def quiet_numpy() -> Iterator[None]:
    """NumPy warnings (overflow in a reference, say) stay out of the report."""
    with np.errstate(all="ignore"):
        yield


def stats_or_none(samples: list[float]) -> Stats | None:
    return Stats.of(samples) if samples else None
