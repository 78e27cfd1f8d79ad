// CUDA graphs: stream capture into a graph, instantiation, and replay with one launch.
#pragma once

#include <cstddef>
#include <memory>

#include "context.hpp"

namespace pgk {

// Start capturing the work queued on `stream` (not the legacy default stream); `mode` is a
// CUstreamCaptureMode.
void begin_capture(const Context& ctx, CUstream stream, int mode);
// Whether `stream` is capturing now.
bool is_capturing(const Context& ctx, CUstream stream);

// An instantiated graph: made by ending a capture; destroyed with its executable.
class Graph {
public:
    // End the capture on `stream` and instantiate what it recorded.
    Graph(std::shared_ptr<Context> ctx, CUstream stream);
    ~Graph();
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;

    // Enqueue one replay on `stream`.
    void launch(CUstream stream) const;
    size_t node_count() const { return nodes_; }

private:
    std::shared_ptr<Context> ctx_;
    CUgraph graph_ = nullptr;
    CUgraphExec exec_ = nullptr;
    size_t nodes_ = 0;
};

}  // namespace pgk
