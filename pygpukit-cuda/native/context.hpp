// One GPU's primary context: device facts, memory, host transfers, synchronization.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "cuda_types.hpp"

namespace pgk {

int device_count();
int driver_version();

class Context {
public:
    explicit Context(int ordinal);
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    // Make this context current on the calling thread (cheap when it already is).
    void make_current() const;

    int ordinal() const { return ordinal_; }
    CUdevice device() const { return device_; }
    std::string name() const;
    int attribute(int attr) const;
    size_t total_memory() const;
    std::pair<size_t, size_t> memory_info() const;  // (free, total)

    CUdeviceptr alloc(size_t nbytes) const;
    void free(CUdeviceptr ptr) const;
    void upload(CUdeviceptr dst, const void* src, size_t nbytes) const;
    void download(void* dst, CUdeviceptr src, size_t nbytes) const;
    void copy(CUdeviceptr dst, CUdeviceptr src, size_t nbytes) const;
    void memset8(CUdeviceptr dst, unsigned char value, size_t nbytes) const;
    void synchronize() const;
    std::pair<int, int> stream_priority_range() const;  // (least, greatest)

private:
    int ordinal_;
    CUdevice device_ = 0;
    CUcontext ctx_ = nullptr;
};

}  // namespace pgk
