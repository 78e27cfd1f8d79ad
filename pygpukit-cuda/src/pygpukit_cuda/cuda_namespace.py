"""``gp.cuda``: streams, events and graphs under the names CuPy and PyTorch users know."""

from __future__ import annotations

from . import graphs, green, streams
from .errors import CudaContextLostError


class _Namespace:
    """``gp.cuda``: streams, events and CUDA graphs."""

    Stream = streams.Stream
    Event = streams.Event
    Graph = graphs.Graph
    CudaContextLostError = CudaContextLostError
    graph = staticmethod(graphs.graph)
    current_stream = staticmethod(streams.current_stream)
    get_elapsed_time = staticmethod(streams.get_elapsed_time)
    synchronize = staticmethod(streams.synchronize)
    pending_frees = staticmethod(streams.pending_frees)
    stream_priority_range = staticmethod(streams.stream_priority_range)
    SmPartition = green.SmPartition
    sm_partition_unavailable = staticmethod(green.unavailable_reason)
    sm_layout = staticmethod(green.sm_layout)

    def __repr__(self) -> str:
        return (
            "<pygpukit.cuda: Stream, Event, Graph, graph, current_stream, get_elapsed_time, "
            "synchronize>"
        )


namespace = _Namespace()
