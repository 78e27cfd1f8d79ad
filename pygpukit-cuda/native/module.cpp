// cuModuleLoadData / cuModuleGetFunction, with the kernel's name in the error.
#include "module.hpp"

#include "driver_api.hpp"

namespace pgk {

Module::Module(std::shared_ptr<Context> ctx, const std::string& image) : ctx_(std::move(ctx)) {
    ctx_->make_current();
    // PTX must be NUL-terminated; CUBIN is self-describing. std::string guarantees the NUL.
    check(driver().cuModuleLoadData(&module_, image.c_str()), "cuModuleLoadData");
}

Module::~Module() {
    if (module_ != nullptr && driver_loaded()) driver().cuModuleUnload(module_);
}

CUfunction Module::function(const std::string& name) const {
    ctx_->make_current();
    CUfunction f = nullptr;
    CUresult rc = driver().cuModuleGetFunction(&f, module_, name.c_str());
    if (rc != CUDA_SUCCESS) {
        throw CudaError("cuModuleGetFunction(\"" + name + "\") failed: " + error_text(rc) +
                            " (is the kernel declared extern \"C\"?)",
                        rc);
    }
    return f;
}

int function_attribute(const Context& ctx, CUfunction func, int attr) {
    ctx.make_current();
    int v = 0;
    check(driver().cuFuncGetAttribute(&v, attr, func), "cuFuncGetAttribute");
    return v;
}

void set_function_attribute(const Context& ctx, CUfunction func, int attr, int value) {
    ctx.make_current();
    check(driver().cuFuncSetAttribute(func, attr, value), "cuFuncSetAttribute");
}

}  // namespace pgk
