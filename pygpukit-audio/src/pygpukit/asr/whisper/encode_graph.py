"""EncoderGraph: Whisper's encoder captured as a CUDA graph per batch size and replayed.

The encoder's input shape never changes (n_mels x 3000 frames), so after one eager pass of
a batch size (which compiles and loads its kernels) the next pass is captured and later
ones replay it: the features are copied into the graph's input array, one launch runs the
~220 kernels, and the output is copied out (the caller owns a new array; the next replay
overwrites the graph's). On an H100 the eager pass is host-bound (~35 us a launch against
~2.5 ms of GPU work in all). A graph keeps its activations' memory for its replays, so
only small batches (the usual one window at a time) are captured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pygpukit as gp
from pygpukit import GPUArray

from .step import graphs_enabled

__all__ = ["MAX_GRAPH_BATCH", "EncoderGraph"]

#: the largest batch captured; larger ones run eagerly (their launches are a smaller share)
MAX_GRAPH_BATCH = 4


class EncoderGraph:
    """Runs `body(x)` (x: (batch, n_mels, frames) in the model's dtype) through a graph
    per batch size on CUDA devices, eagerly elsewhere."""

    def __init__(self, body: Callable[[GPUArray], GPUArray], device: Any) -> None:
        self.body, self.device = body, device
        self._graphs: dict[int, tuple[Any, GPUArray, GPUArray]] = {}
        self._seen: set[int] = set()  # batch sizes that ran eagerly once (kernels warm)
        #: why nothing is captured (None while graphs may be)
        self.refusal: str | None = None if device.type == "cuda" else "not a CUDA device"

    def __call__(self, x: GPUArray) -> GPUArray:
        batch = int(x.shape[0])
        if self.refusal is not None or not graphs_enabled() or batch > MAX_GRAPH_BATCH:
            return self.body(x)
        entry = self._graphs.get(batch)
        if entry is None:
            if batch not in self._seen:
                self._seen.add(batch)
                return self.body(x)
            entry = self._capture(x)
            if entry is None:
                return self.body(x)
        graph, inp, out = entry
        inp[...] = x
        graph.replay()
        return out.copy()

    def _capture(self, x: GPUArray) -> tuple[Any, GPUArray, GPUArray] | None:
        inp = gp.empty(x.shape, dtype=x.dtype, device=x.device)
        graph = gp.cuda.Graph(self.device.index)
        try:
            with gp.cuda.graph(graph):
                out = self.body(inp)
        except Exception as exc:  # not capturable here: every later pass runs eagerly
            self.refusal = f"capture failed: {exc!r}"
            return None
        entry = self._graphs[int(x.shape[0])] = (graph, inp, out)
        return entry

    @property
    def captured(self) -> list[int]:
        """The batch sizes with a graph."""
        return sorted(self._graphs)
