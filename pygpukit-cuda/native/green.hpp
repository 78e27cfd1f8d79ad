// SM partitions of one GPU through green contexts: a set of SMs reserved for some work and
// the remainder for the rest, each with its own streams. Optional: drivers before CUDA 12.4
// lack the entry points (green_status() says why), and the caller falls back to priorities.
#pragma once

#include <memory>
#include <utility>

#include "context.hpp"

namespace pgk {

// The device's SMs as green contexts see them: how many, the smallest partition and the
// alignment of partition sizes (0 when the driver does not report them).
struct SmInfo {
    unsigned sms = 0;
    unsigned min_partition = 0;
    unsigned alignment = 0;
};

// Throws std::runtime_error (with green_status()) when green contexts are unavailable.
SmInfo sm_info(const Context& ctx);

// One green context: a partition of the device's SMs, sharing the primary context's memory.
class GreenContext {
public:
    GreenContext(std::shared_ptr<Context> primary, CUgreenCtx green);
    ~GreenContext();
    GreenContext(const GreenContext&) = delete;
    GreenContext& operator=(const GreenContext&) = delete;

    CUgreenCtx handle() const { return green_; }
    // The green context as a CUcontext (for cuCtxSetCurrent).
    CUcontext context() const { return ctx_; }
    unsigned sm_count() const { return sms_; }
    const std::shared_ptr<Context>& primary() const { return primary_; }
    void make_current() const;

private:
    std::shared_ptr<Context> primary_;
    CUgreenCtx green_ = nullptr;
    CUcontext ctx_ = nullptr;
    unsigned sms_ = 0;
};

// Split the device into `sms` SMs (at least; the driver rounds up to its granularity) and
// the remainder: (reserved, rest). Throws std::invalid_argument when nothing would remain.
std::pair<std::shared_ptr<GreenContext>, std::shared_ptr<GreenContext>> split_sms(
    const std::shared_ptr<Context>& primary, unsigned sms);

}  // namespace pgk
