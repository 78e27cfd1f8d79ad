// FftCall: one repeated gp.fft transform as one native call. Made for one input layout
// (shape, strides, dtype, device) once the Python path has planned it, run(x) checks x has
// that layout, allocates the output (and the plan's work area, and for complex-to-real the
// private input copy) from the device's pool on the current stream, runs the optional
// scaled copy, the cuFFT plan and the optional scaling, and returns the new GPUArray. It
// declines (NotImplemented) what it was not made for: another layout or device, a misaligned
// input, a graph capture; after retire() it answers None (its plans were forgotten).
#pragma once

#include <Python.h>

#include <memory>

namespace pgk {

class FftPlan;

// Makes the FftCall type (once, at import); `translate` turns the C++ exception being
// handled into a Python error. nullptr with a Python error set on failure.
PyTypeObject* make_fft_call_type(void (*translate)());

// What one FftCall is made of. Borrowed references; new_fft_call takes its own.
struct FftCallSpec {
    PyObject* array_type = nullptr;   // pygpukit's GPUArray
    PyObject* stream_var = nullptr;   // the current-stream ContextVar
    PyObject* in_shape = nullptr;     // what the input must be (compared by value)
    PyObject* in_strides = nullptr;
    PyObject* in_dtype = nullptr;     // compared by identity (dtypes are singletons)
    PyObject* device = nullptr;       // by identity, then by value
    unsigned long long in_align = 1;  // bytes the input address must be a multiple of
    long long device_index = 0;
    PyObject* out_shape = nullptr;
    PyObject* out_strides = nullptr;
    PyObject* out_dtype = nullptr;
    unsigned long long out_nbytes = 0;
    PyObject* allocator = nullptr;  // the device's BufferAllocator
    // the transform: a native FftPlan when `native_plan` is set; a LaunchPlan of our own
    // FFT kernel, called as plan(stream, in, out), when `kernel_plan`; else `plan` is called
    // as plan(stream, in, out, work, direction) (stand-in plans of host tests)
    std::shared_ptr<FftPlan> native_plan;
    PyObject* plan = nullptr;
    bool kernel_plan = false;
    unsigned long long work_bytes = 0;
    int direction = -1;
    // complex-to-real reads a private copy of `copy_bytes` (0: the input itself), made by
    // copy(dst, src, nbytes, stream) or, when the norm scales, pre(stream, dst, src)
    unsigned long long copy_bytes = 0;
    PyObject* copy = nullptr;
    PyObject* pre = nullptr;
    PyObject* post = nullptr;  // post(stream, out): the norm's scaling in place, or nullptr
};

// A new FftCall; nullptr with a Python error set when the spec is incomplete.
PyObject* new_fft_call(const FftCallSpec& spec);

}  // namespace pgk
