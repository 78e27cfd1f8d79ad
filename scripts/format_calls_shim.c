// LD_PRELOAD shim for scripts/probe_cublaslt_host.cu: counts the printf-family formatting
// calls (vsnprintf, vsprintf and their _chk forms, and the variadic ones through them) made
// while the program sets `shim_on`, their TSC cycles, and the first distinct format strings.
// On the lent H100 it showed cuBLASLt 13.1 formatting one nvjet kernel name per
// cublasLtMatmul call ("nvjet_sm90_%s_%dx%d_..."), 3,800-5,000 TSC cycles each. Build:
//
//     gcc -O2 -shared -fPIC -o /tmp/format_calls_shim.so scripts/format_calls_shim.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>
int shim_on = 0;
long shim_calls = 0;
unsigned long long shim_cycles = 0;
const char* shim_formats[16];
long shim_format_counts[16];
static void note(const char* fmt, unsigned long long c) {
  shim_calls++; shim_cycles += c;
  for (int i = 0; i < 16; ++i) {
    if (shim_formats[i] == fmt) { shim_format_counts[i]++; return; }
    if (!shim_formats[i]) { shim_formats[i] = fmt; shim_format_counts[i] = 1; return; }
  }
}
#define WRAP_V(name, ret, params, args, fmtarg)                      \
  ret name params {                                                   \
    static ret (*real) params;                                        \
    if (!real) real = dlsym(RTLD_NEXT, #name);                        \
    if (!shim_on) return real args;                                   \
    unsigned long long a = __rdtsc(); ret r = real args;              \
    note(fmtarg, __rdtsc() - a); return r;                            \
  }
WRAP_V(vsnprintf, int, (char* s, size_t n, const char* f, va_list ap), (s, n, f, ap), f)
WRAP_V(vsprintf, int, (char* s, const char* f, va_list ap), (s, f, ap), f)
WRAP_V(__vsnprintf_chk, int, (char* s, size_t n, int fl, size_t sl, const char* f, va_list ap), (s, n, fl, sl, f, ap), f)
WRAP_V(__vsprintf_chk, int, (char* s, int fl, size_t sl, const char* f, va_list ap), (s, fl, sl, f, ap), f)
int sprintf(char* s, const char* f, ...) { va_list ap; va_start(ap, f); int r = vsprintf(s, f, ap); va_end(ap); return r; }
int snprintf(char* s, size_t n, const char* f, ...) { va_list ap; va_start(ap, f); int r = vsnprintf(s, n, f, ap); va_end(ap); return r; }
int __sprintf_chk(char* s, int fl, size_t sl, const char* f, ...) { va_list ap; va_start(ap, f); int r = __vsprintf_chk(s, fl, sl, f, ap); va_end(ap); return r; }
int __snprintf_chk(char* s, size_t n, int fl, size_t sl, const char* f, ...) { va_list ap; va_start(ap, f); int r = __vsnprintf_chk(s, n, fl, sl, f, ap); va_end(ap); return r; }
