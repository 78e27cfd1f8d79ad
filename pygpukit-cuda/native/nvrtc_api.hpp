// NVRTC, opened with dlopen from the first of several candidate paths, and one compile call.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_types.hpp"

namespace pgk {

// A failed NVRTC call (not a compile error: those come back in CompileResult).
class NvrtcError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

#define PGK_NVRTC_FUNCTIONS(X)                                                               \
    X(nvrtcVersion, (int*, int*))                                                            \
    X(nvrtcCreateProgram,                                                                    \
      (nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*)) \
    X(nvrtcDestroyProgram, (nvrtcProgram*))                                                  \
    X(nvrtcCompileProgram, (nvrtcProgram, int, const char* const*))                          \
    X(nvrtcGetProgramLogSize, (nvrtcProgram, size_t*))                                       \
    X(nvrtcGetProgramLog, (nvrtcProgram, char*))                                             \
    X(nvrtcGetPTXSize, (nvrtcProgram, size_t*))                                              \
    X(nvrtcGetPTX, (nvrtcProgram, char*))                                                    \
    X(nvrtcGetCUBINSize, (nvrtcProgram, size_t*))                                            \
    X(nvrtcGetCUBIN, (nvrtcProgram, char*))                                                  \
    X(nvrtcGetNumSupportedArchs, (int*))                                                     \
    X(nvrtcGetSupportedArchs, (int*))

struct NvrtcApi {
#define PGK_DECLARE(name, params) nvrtcResult(*name) params = nullptr;
    PGK_NVRTC_FUNCTIONS(PGK_DECLARE)
#undef PGK_DECLARE
    const char* (*nvrtcGetErrorString)(nvrtcResult) = nullptr;
};

// Try each candidate path in order (a folder means "the libnvrtc.so* inside it"); the
// first that opens and has every entry point wins. Returns false (status says why) if none.
bool load_nvrtc(const std::vector<std::string>& candidates);
bool nvrtc_loaded();
// The library file actually opened, or "" when none was.
const std::string& nvrtc_path();
const std::string& nvrtc_status();
// (major, minor), or throws when NVRTC is missing.
std::pair<int, int> nvrtc_version();
std::vector<int> nvrtc_supported_archs();

struct CompileResult {
    bool ok = false;
    std::string image;  // CUBIN bytes or PTX text
    std::string log;
};

// Compile `source` with `options`; cubin=false asks for PTX. A source error gives ok=false
// with NVRTC's log; any other failure throws NvrtcError naming the call.
CompileResult compile(const std::string& source, const std::string& name,
                      const std::vector<std::string>& options, bool cubin);

}  // namespace pgk
