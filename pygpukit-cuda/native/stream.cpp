// Stream and event wrappers: create on construction, destroy on destruction, check every call.
#include "stream.hpp"

#include "driver_api.hpp"

namespace pgk {

Stream::Stream(std::shared_ptr<Context> ctx, int priority, bool non_blocking)
    : ctx_(std::move(ctx)), priority_(priority) {
    ctx_->make_current();
    check(driver().cuStreamCreateWithPriority(&stream_, non_blocking ? CU_STREAM_NON_BLOCKING : 0,
                                              priority),
          "cuStreamCreateWithPriority");
}

Stream::Stream(std::shared_ptr<GreenContext> green, int priority)
    : ctx_(green->primary()), green_(std::move(green)), priority_(priority) {
    ctx_->make_current();
    // green-context streams must be non-blocking
    check(green_api().cuGreenCtxStreamCreate(&stream_, green_->handle(), CU_STREAM_NON_BLOCKING,
                                             priority),
          "cuGreenCtxStreamCreate");
}

Stream::~Stream() {
    if (stream_ == nullptr || !driver_loaded()) return;
    // Wait for the stream's work first: the pool keeps blocks cached under this handle, and
    // a stream made later may get the same handle (errors are moot here).
    driver().cuStreamSynchronize(stream_);
    driver().cuStreamDestroy(stream_);
}

void Stream::synchronize() const {
    ctx_->make_current();
    check(driver().cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

bool Stream::query() const {
    ctx_->make_current();
    CUresult rc = driver().cuStreamQuery(stream_);
    if (rc == CUDA_ERROR_NOT_READY) return false;
    check(rc, "cuStreamQuery");
    return true;
}

Event::Event(std::shared_ptr<Context> ctx, bool timing) : ctx_(std::move(ctx)) {
    ctx_->make_current();
    check(driver().cuEventCreate(&event_, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
          "cuEventCreate");
}

Event::~Event() {
    if (event_ != nullptr && driver_loaded()) driver().cuEventDestroy(event_);
}

void Event::record(CUstream stream) const {
    ctx_->make_current();
    check(driver().cuEventRecord(event_, stream), "cuEventRecord");
}

void Event::synchronize() const {
    ctx_->make_current();
    check(driver().cuEventSynchronize(event_), "cuEventSynchronize");
}

bool Event::query() const {
    ctx_->make_current();
    CUresult rc = driver().cuEventQuery(event_);
    if (rc == CUDA_ERROR_NOT_READY) return false;
    check(rc, "cuEventQuery");
    return true;
}

float Event::elapsed_since(const Event& start) const {
    ctx_->make_current();
    float ms = 0.0f;
    check(driver().cuEventElapsedTime(&ms, start.event_, event_), "cuEventElapsedTime");
    return ms;
}

void Event::wait_on(CUstream stream) const {
    ctx_->make_current();
    check(driver().cuStreamWaitEvent(stream, event_, 0), "cuStreamWaitEvent");
}

}  // namespace pgk
