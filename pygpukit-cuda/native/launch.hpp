// cuLaunchKernel with the arguments packed into one buffer (C struct layout).
#pragma once

#include <cstddef>

#include "context.hpp"

namespace pgk {

struct Dim3 {
    unsigned x = 1, y = 1, z = 1;
};

// Launch `func` on `stream` (0 = the default stream). `args` holds every kernel parameter
// at its C offset, as Python's struct module lays them out in native mode. A function
// marked programmatic is launched, while `stream` captures a CUDA graph, with programmatic
// stream serialisation (programmatic dependent launch): it may start while the kernel
// before it finishes, so it must begin with griddepcontrol.wait (pgk_pdl_wait() in our
// kernels' preamble).
void launch(const Context& ctx, CUfunction func, Dim3 grid, Dim3 block, unsigned shared_bytes,
            CUstream stream, const void* args, size_t args_size);

// Mark (or unmark) `func` for programmatic dependent launch; whether it is marked.
void set_programmatic(CUfunction func, bool on);
bool is_programmatic(CUfunction func);
// How many launches went out programmatically so far (tests and probes read it).
unsigned long long programmatic_launches();
// A stream capture began / ended (graph.cpp): only while one is in progress does a launch of
// a marked kernel ask the driver whether its stream captures.
void note_capture_begun();
void note_capture_ended();
long captures_in_progress();

}  // namespace pgk
