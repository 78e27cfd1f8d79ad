// Green contexts (see green.hpp): split the device's SM resource, make a context per part.
#include "green.hpp"

#include <stdexcept>
#include <string>

#include "driver_api.hpp"

namespace pgk {
namespace {

const GreenApi& green_or_throw() {
    const GreenApi& api = green_api();
    if (api.cuGreenCtxCreate == nullptr) {
        throw std::runtime_error("green contexts are unavailable: " + green_status());
    }
    return api;
}

CUdevResource device_sms(const Context& ctx) {
    const GreenApi& api = green_or_throw();
    CUdevResource sms{};
    check(api.cuDeviceGetDevResource(ctx.device(), &sms, CU_DEV_RESOURCE_TYPE_SM),
          "cuDeviceGetDevResource");
    return sms;
}

std::shared_ptr<GreenContext> make_green(const std::shared_ptr<Context>& primary,
                                         CUdevResource& part) {
    const GreenApi& api = green_or_throw();
    CUdevResourceDesc desc = nullptr;
    check(api.cuDevResourceGenerateDesc(&desc, &part, 1), "cuDevResourceGenerateDesc");
    CUgreenCtx green = nullptr;
    check(api.cuGreenCtxCreate(&green, desc, primary->device(), CU_GREEN_CTX_DEFAULT_STREAM),
          "cuGreenCtxCreate");
    return std::make_shared<GreenContext>(primary, green);
}

}  // namespace

SmInfo sm_info(const Context& ctx) {
    ctx.make_current();
    const CUdevResource sms = device_sms(ctx);
    return SmInfo{sms.sm.smCount, sms.sm.minSmPartitionSize, sms.sm.smCoscheduledAlignment};
}

GreenContext::GreenContext(std::shared_ptr<Context> primary, CUgreenCtx green)
    : primary_(std::move(primary)), green_(green) {
    const GreenApi& api = green_api();
    try {
        check(api.cuCtxFromGreenCtx(&ctx_, green_), "cuCtxFromGreenCtx");
        CUdevResource mine{};
        check(api.cuGreenCtxGetDevResource(green_, &mine, CU_DEV_RESOURCE_TYPE_SM),
              "cuGreenCtxGetDevResource");
        sms_ = mine.sm.smCount;
    } catch (...) {
        api.cuGreenCtxDestroy(green_);
        throw;
    }
}

GreenContext::~GreenContext() {
    if (green_ != nullptr && driver_loaded() && green_api().cuGreenCtxDestroy != nullptr) {
        green_api().cuGreenCtxDestroy(green_);
    }
}

void GreenContext::make_current() const {
    check(driver().cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
}

std::pair<std::shared_ptr<GreenContext>, std::shared_ptr<GreenContext>> split_sms(
    const std::shared_ptr<Context>& primary, unsigned sms) {
    primary->make_current();
    const GreenApi& api = green_or_throw();
    CUdevResource input = device_sms(*primary);
    if (sms == 0 || sms >= input.sm.smCount) {
        throw std::invalid_argument("cannot reserve " + std::to_string(sms) + " of the device's " +
                                    std::to_string(input.sm.smCount) +
                                    " SMs: some must remain for the rest");
    }
    CUdevResource reserved{};
    CUdevResource rest{};
    unsigned groups = 1;
    check(api.cuDevSmResourceSplitByCount(&reserved, &groups, &input, &rest, 0, sms),
          "cuDevSmResourceSplitByCount");
    if (groups != 1 || rest.sm.smCount == 0) {
        throw std::invalid_argument("reserving " + std::to_string(sms) + " SMs of " +
                                    std::to_string(input.sm.smCount) +
                                    " leaves none for the rest after rounding");
    }
    auto first = make_green(primary, reserved);
    auto second = make_green(primary, rest);
    return {std::move(first), std::move(second)};
}

}  // namespace pgk
