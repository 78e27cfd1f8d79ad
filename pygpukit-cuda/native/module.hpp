// A loaded CUBIN or PTX image and the kernels looked up in it.
#pragma once

#include <memory>
#include <string>

#include "context.hpp"

namespace pgk {

class Module {
public:
    Module(std::shared_ptr<Context> ctx, const std::string& image);
    ~Module();
    Module(const Module&) = delete;
    Module& operator=(const Module&) = delete;

    // The kernel named `name` (an extern "C" name), as a CUfunction.
    CUfunction function(const std::string& name) const;

private:
    std::shared_ptr<Context> ctx_;
    CUmodule module_ = nullptr;
};

// cuFuncGetAttribute / cuFuncSetAttribute of a kernel (CU_FUNC_ATTRIBUTE_* numbers).
int function_attribute(const Context& ctx, CUfunction func, int attr);
void set_function_attribute(const Context& ctx, CUfunction func, int attr, int value);

}  // namespace pgk
