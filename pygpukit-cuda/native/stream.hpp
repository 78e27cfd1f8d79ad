// Streams (with priorities) and events of one context.
#pragma once

#include <memory>

#include "context.hpp"
#include "green.hpp"

namespace pgk {

class Stream {
public:
    // priority: lower numbers run first (see Context::stream_priority_range).
    Stream(std::shared_ptr<Context> ctx, int priority, bool non_blocking);
    // A stream of a green context: its kernels run on that context's SMs (non-blocking).
    Stream(std::shared_ptr<GreenContext> green, int priority);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    CUstream handle() const { return stream_; }
    int priority() const { return priority_; }
    void synchronize() const;
    bool query() const;  // true when all queued work has finished

private:
    std::shared_ptr<Context> ctx_;
    std::shared_ptr<GreenContext> green_;  // kept alive while its stream lives
    CUstream stream_ = nullptr;
    int priority_;
};

class Event {
public:
    Event(std::shared_ptr<Context> ctx, bool timing);
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    CUevent handle() const { return event_; }
    void record(CUstream stream) const;
    void synchronize() const;
    bool query() const;
    // Milliseconds from `start` to this event (both recorded and finished).
    float elapsed_since(const Event& start) const;
    // Make `stream` wait for this event before running later work.
    void wait_on(CUstream stream) const;

private:
    std::shared_ptr<Context> ctx_;
    CUevent event_ = nullptr;
};

}  // namespace pgk
