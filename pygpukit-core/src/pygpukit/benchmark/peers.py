"""The libraries pygpukit is measured against: NumPy on the CPU, PyTorch and CuPy on a GPU.

Each `Peer` imports its library lazily, says in `note` why it cannot run when it can't
(not installed, no GPU), moves host arrays onto its device and back, and hands out a
`Clock` that times work on that device the way the library's own users would.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as md
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np

from .timing import Clock, EventClock, HostClock

#: storage dtype name -> NumPy dtype (bfloat16 through ml_dtypes)
HOST_DTYPES = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float64": np.dtype(np.float64),
    "complex64": np.dtype(np.complex64),
    "complex128": np.dtype(np.complex128),
}


def stored(host: np.ndarray, dtype: str) -> np.ndarray:
    """`host` rounded to the storage dtype `dtype` (what every library will hold)."""
    return host if host.dtype == HOST_DTYPES[dtype] else host.astype(HOST_DTYPES[dtype])


def distribution_version(*names: str) -> str | None:
    for name in names:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            continue
    return None


def cupy_version() -> str | None:
    """The installed CuPy's version, whatever its wheel is called (cupy-cuda13x, ...)."""
    for dist in md.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == "cupy" or name.startswith("cupy-cuda"):
            return f"{dist.version} ({name})"
    return None


class Peer:
    """A library to time beside pygpukit; `load()` must return True before other calls."""

    name = "peer"

    def __init__(self, device_index: int = 0) -> None:
        self.device_index = device_index
        self.note = ""
        self.xp: Any = None
        self._loaded: bool | None = None

    def load(self) -> bool:
        """Import the library and check it can run here; False (with `note`) if not."""
        if self._loaded is None:
            try:
                self._loaded = self._load()
            except Exception as exc:  # a broken install is a note, not a crash
                self.note = f"{self.name} failed to load: {type(exc).__name__}: {exc}"
                self._loaded = False
        return self._loaded

    def _load(self) -> bool:
        raise NotImplementedError

    def version(self) -> str | None:
        raise NotImplementedError

    def put(self, host: np.ndarray, dtype: str) -> Any:
        """`host` on this peer's device, stored as `dtype`."""
        raise NotImplementedError

    def get(self, x: Any) -> np.ndarray:
        """A peer array back on the host (bfloat16 comes back widened to float32)."""
        raise NotImplementedError

    def sync(self) -> None:
        """Wait for the peer's device."""

    def clock(self) -> Clock:
        return HostClock(self.sync)

    def free(self) -> None:
        """Give cached device memory back, between cases."""

    @contextlib.contextmanager
    def precision(self, allow_tf32: bool) -> Iterator[str]:
        """Run float32 matrix products in TF32 (or exactly); yields a note ("" if none)."""
        yield ""


class NumpyPeer(Peer):
    name = "numpy"

    def _load(self) -> bool:
        self.xp = np
        return True

    def version(self) -> str | None:
        return np.__version__

    def put(self, host: np.ndarray, dtype: str) -> Any:
        return np.array(stored(host, dtype), copy=True)

    def get(self, x: Any) -> np.ndarray:
        return np.asarray(x)

    @contextlib.contextmanager
    def precision(self, allow_tf32: bool) -> Iterator[str]:
        yield "numpy has no TF32: exact float32" if allow_tf32 else ""


class TorchPeer(Peer):
    name = "torch"

    def _load(self) -> bool:
        try:
            torch = importlib.import_module("torch")
        except ImportError:
            self.note = "torch is not installed"
            return False
        if not torch.cuda.is_available():
            self.note = f"torch {torch.__version__} sees no CUDA GPU"
            return False
        self.xp = torch
        self.device = torch.device("cuda", self.device_index)
        return True

    def version(self) -> str | None:
        if self.xp is not None:
            return f"{self.xp.__version__} (CUDA {self.xp.version.cuda})"
        return distribution_version("torch")

    def put(self, host: np.ndarray, dtype: str) -> Any:
        torch = self.xp
        data = stored(host, dtype)
        if dtype == "bfloat16":  # torch can't read ml_dtypes arrays: move the bits
            bits = torch.from_numpy(np.ascontiguousarray(data).view(np.uint16))
            return bits.to(self.device).view(torch.bfloat16)
        return torch.from_numpy(np.ascontiguousarray(data)).to(self.device)

    def get(self, x: Any) -> np.ndarray:
        torch = self.xp
        if x.dtype == torch.bfloat16:
            x = x.float()
        return x.detach().cpu().numpy()

    def sync(self) -> None:
        self.xp.cuda.synchronize(self.device)

    def clock(self) -> Clock:
        torch = self.xp
        return EventClock(
            lambda: torch.cuda.Event(enable_timing=True),
            lambda start, end: start.elapsed_time(end),
            self.sync,
        )

    def free(self) -> None:
        self.xp.cuda.empty_cache()

    @contextlib.contextmanager
    def precision(self, allow_tf32: bool) -> Iterator[str]:
        flags = self.xp.backends.cuda.matmul
        before = flags.allow_tf32
        flags.allow_tf32 = allow_tf32
        try:
            yield ""
        finally:
            flags.allow_tf32 = before


class CupyPeer(Peer):
    name = "cupy"

    def _load(self) -> bool:
        try:
            cupy = importlib.import_module("cupy")
        except ImportError:
            self.note = "cupy is not installed"
            return False
        try:
            count = cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # no driver / no GPU
            self.note = f"cupy {cupy.__version__} sees no CUDA GPU ({exc})"
            return False
        if count <= self.device_index:
            self.note = f"cupy sees {count} GPU(s), not cuda:{self.device_index}"
            return False
        self.xp = cupy
        cupy.cuda.Device(self.device_index).use()
        return True

    def version(self) -> str | None:
        if self.xp is not None:
            return str(self.xp.__version__)
        return cupy_version()

    def put(self, host: np.ndarray, dtype: str) -> Any:
        return self.xp.asarray(stored(host, dtype))

    def get(self, x: Any) -> np.ndarray:
        out = self.xp.asnumpy(x)
        return out.astype(np.float32) if out.dtype == HOST_DTYPES["bfloat16"] else out

    def sync(self) -> None:
        self.xp.cuda.Device(self.device_index).synchronize()

    def clock(self) -> Clock:
        cuda = self.xp.cuda
        return EventClock(cuda.Event, cuda.get_elapsed_time, self.sync)

    def free(self) -> None:
        self.xp.get_default_memory_pool().free_all_blocks()

    @contextlib.contextmanager
    def precision(self, allow_tf32: bool) -> Iterator[str]:
        # CuPy reads CUPY_TF32 once at import; its linear-algebra module can be switched.
        try:
            linalg = importlib.import_module("cupy._core._routines_linalg")
            get, put = linalg.get_compute_type, linalg.set_compute_type
            wanted = linalg.COMPUTE_TYPE_TF32 if allow_tf32 else linalg.COMPUTE_TYPE_DEFAULT
        except (ImportError, AttributeError):
            yield "cupy: could not set TF32 (no set_compute_type); its default mode"
            return
        before = get(np.float32)
        put(np.float32, wanted)
        try:
            yield ""
        finally:
            put(np.float32, before)


PEERS: dict[str, type[Peer]] = {"numpy": NumpyPeer, "torch": TorchPeer, "cupy": CupyPeer}


def default_peers(device_type: str) -> list[str]:
    return ["numpy"] if device_type == "cpu" else ["torch", "cupy"]


def make_peers(names: list[str], device_type: str, device_index: int) -> list[Peer]:
    peers = []
    for name in names:
        cls = PEERS.get(name)
        if cls is None:
            raise ValueError(f"unknown peer {name!r}; known: {', '.join(PEERS)}")
        if name != "numpy" and device_type == "cpu":
            raise ValueError(f"peer {name!r} runs on a GPU; on the cpu device the peer is numpy")
        if name == "numpy" and device_type != "cpu":
            raise ValueError("numpy runs on the host; on a GPU device the peers are torch, cupy")
        peers.append(cls(device_index))
    return peers
