// One kernel launch: the packed argument buffer goes through cuLaunchKernel's `extra`.
#include "launch.hpp"

#include "driver_api.hpp"
#include "launch_gate.hpp"

namespace pgk {

void launch(const Context& ctx, CUfunction func, Dim3 grid, Dim3 block, unsigned shared_bytes,
            CUstream stream, const void* args, size_t args_size) {
    ctx.make_current();
    LaunchGuard gate(stream);
    size_t size = args_size;
    void* extra[] = {PGK_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(args),
                     PGK_LAUNCH_PARAM_BUFFER_SIZE, &size, PGK_LAUNCH_PARAM_END};
    check(driver().cuLaunchKernel(func, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                  shared_bytes, stream, nullptr, args_size ? extra : nullptr),
          "cuLaunchKernel");
}

}  // namespace pgk
