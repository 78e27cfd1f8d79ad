// Stream capture and graph replay through the driver API.
#include "graph.hpp"

#include "driver_api.hpp"
#include "launch.hpp"
#include "launch_gate.hpp"

namespace pgk {

void begin_capture(const Context& ctx, CUstream stream, int mode) {
    ctx.make_current();
    check(driver().cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture");
    note_capture_begun();
}

bool is_capturing(const Context& ctx, CUstream stream) {
    ctx.make_current();
    int status = CU_STREAM_CAPTURE_STATUS_NONE;
    check(driver().cuStreamIsCapturing(stream, &status), "cuStreamIsCapturing");
    return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

Graph::Graph(std::shared_ptr<Context> ctx, CUstream stream) : ctx_(std::move(ctx)) {
    ctx_->make_current();
    const auto& api = driver();
    const CUresult ended = api.cuStreamEndCapture(stream, &graph_);
    note_capture_ended();  // an invalidated capture ends too (with its error)
    check(ended, "cuStreamEndCapture");
    check(api.cuGraphGetNodes(graph_, nullptr, &nodes_), "cuGraphGetNodes");
    CUresult rc = api.cuGraphInstantiateWithFlags(&exec_, graph_, 0);
    if (rc != CUDA_SUCCESS) {
        api.cuGraphDestroy(graph_);
        graph_ = nullptr;
        check(rc, "cuGraphInstantiateWithFlags");
    }
}

Graph::~Graph() {
    if (!driver_loaded()) return;
    if (exec_ != nullptr) driver().cuGraphExecDestroy(exec_);
    if (graph_ != nullptr) driver().cuGraphDestroy(graph_);
}

void Graph::launch(CUstream stream) const {
    ctx_->make_current();
    LaunchGuard gate(stream);
    check(driver().cuGraphLaunch(exec_, stream), "cuGraphLaunch");
}

}  // namespace pgk
