// Finding and opening NVRTC (wheel, PYGPUKIT_NVRTC_PATH, system) and compiling with it.
#include "nvrtc_api.hpp"

#include <dirent.h>
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

namespace pgk {
namespace {

NvrtcApi g_api;
bool g_loaded = false;
std::string g_path;
std::string g_status = "NVRTC not loaded yet (it is opened on first use)";
std::mutex g_mutex;

bool is_dir(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Files in `dir` whose names start with `prefix`, newest version (longest, then last) first.
std::vector<std::string> files_with_prefix(const std::string& dir, const std::string& prefix) {
    std::vector<std::string> found;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            std::string n = e->d_name;
            if (n.rfind(prefix, 0) == 0) found.push_back(dir + "/" + n);
        }
        closedir(d);
    }
    std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() > b.size() : a > b;
    });
    return found;
}

std::string folder_of(const std::string& file) {
    auto slash = file.rfind('/');
    return slash == std::string::npos ? std::string() : file.substr(0, slash);
}

// Open one library file: its builtins first (some NVRTC builds have no RPATH to find them).
void* open_nvrtc(const std::string& file, std::string& why) {
    std::string dir = folder_of(file);
    if (!dir.empty()) {
        for (const auto& builtins : files_with_prefix(dir, "libnvrtc-builtins.so")) {
            if (dlopen(builtins.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr) break;
        }
    }
    void* lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        const char* e = dlerror();
        why = e ? e : "unknown dlopen error";
    }
    return lib;
}

bool resolve_all(void* lib, NvrtcApi& api, std::string& missing) {
#define PGK_RESOLVE(name, params)                                                  \
    api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib, #name));            \
    if (api.name == nullptr) {                                                     \
        missing = #name;                                                           \
        return false;                                                              \
    }
    PGK_NVRTC_FUNCTIONS(PGK_RESOLVE)
    PGK_RESOLVE(nvrtcGetErrorString, ())
#undef PGK_RESOLVE
    return true;
}

void check(nvrtcResult rc, const char* call) {
    if (rc == NVRTC_SUCCESS) return;
    const char* text = g_api.nvrtcGetErrorString ? g_api.nvrtcGetErrorString(rc) : nullptr;
    throw NvrtcError(std::string(call) + " failed: " + (text ? text : "NVRTC error") + " (" +
                     std::to_string(rc) + ")");
}

}  // namespace

bool load_nvrtc(const std::vector<std::string>& candidates) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_loaded) return true;
    std::string tried;
    for (const auto& cand : candidates) {
        std::vector<std::string> files;
        if (is_dir(cand)) {
            for (const auto& f : files_with_prefix(cand, "libnvrtc.so")) files.push_back(f);
            if (files.empty()) {
                tried += "\n  " + cand + ": no libnvrtc.so* in this folder";
                continue;
            }
        } else {
            files.push_back(cand);
        }
        for (const auto& file : files) {
            std::string why;
            void* lib = open_nvrtc(file, why);
            if (lib == nullptr) {
                tried += "\n  " + file + ": " + why;
                continue;
            }
            NvrtcApi api;
            std::string missing;
            if (!resolve_all(lib, api, missing)) {
                tried += "\n  " + file + ": has no " + missing + " (too old)";
                continue;
            }
            g_api = api;
            g_loaded = true;
            // dlopen may have found a bare name through the system search path: ask
            // the loader which file it really opened.
            Dl_info info{};
            g_path = dladdr(reinterpret_cast<void*>(api.nvrtcVersion), &info) && info.dli_fname
                         ? info.dli_fname
                         : file;
            int major = 0, minor = 0;
            api.nvrtcVersion(&major, &minor);
            g_status = "NVRTC " + std::to_string(major) + "." + std::to_string(minor) + " (" +
                       g_path + ")";
            return true;
        }
    }
    g_status = "NVRTC not found; tried:" + (tried.empty() ? std::string(" nothing") : tried);
    return false;
}

bool nvrtc_loaded() { return g_loaded; }
const std::string& nvrtc_path() { return g_path; }
const std::string& nvrtc_status() { return g_status; }

std::pair<int, int> nvrtc_version() {
    if (!g_loaded) throw NvrtcError(g_status);
    int major = 0, minor = 0;
    check(g_api.nvrtcVersion(&major, &minor), "nvrtcVersion");
    return {major, minor};
}

std::vector<int> nvrtc_supported_archs() {
    if (!g_loaded) throw NvrtcError(g_status);
    int n = 0;
    check(g_api.nvrtcGetNumSupportedArchs(&n), "nvrtcGetNumSupportedArchs");
    std::vector<int> archs(static_cast<size_t>(n));
    if (n > 0) check(g_api.nvrtcGetSupportedArchs(archs.data()), "nvrtcGetSupportedArchs");
    return archs;
}

CompileResult compile(const std::string& source, const std::string& name,
                      const std::vector<std::string>& options, bool cubin) {
    if (!g_loaded) throw NvrtcError(g_status);
    nvrtcProgram prog = nullptr;
    check(g_api.nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
    // Destroy the program on every way out.
    struct Guard {
        nvrtcProgram* p;
        ~Guard() { g_api.nvrtcDestroyProgram(p); }
    } guard{&prog};

    std::vector<const char*> opts;
    opts.reserve(options.size());
    for (const auto& o : options) opts.push_back(o.c_str());
    nvrtcResult rc = g_api.nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());

    CompileResult result;
    size_t log_size = 0;
    check(g_api.nvrtcGetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize");
    if (log_size > 1) {
        result.log.resize(log_size);
        check(g_api.nvrtcGetProgramLog(prog, &result.log[0]), "nvrtcGetProgramLog");
        result.log.resize(log_size - 1);  // drop the trailing NUL
    }
    if (rc == NVRTC_ERROR_COMPILATION) return result;
    check(rc, "nvrtcCompileProgram");

    size_t size = 0;
    if (cubin) {
        check(g_api.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
        result.image.resize(size);
        if (size) check(g_api.nvrtcGetCUBIN(prog, &result.image[0]), "nvrtcGetCUBIN");
    } else {
        check(g_api.nvrtcGetPTXSize(prog, &size), "nvrtcGetPTXSize");
        result.image.resize(size);
        if (size) check(g_api.nvrtcGetPTX(prog, &result.image[0]), "nvrtcGetPTX");
    }
    result.ok = true;
    return result;
}

}  // namespace pgk
