// What the CUDA driver's own launch is made of on this host, with no Python and none of our
// code: the floor under every library's tiny op. Five parts, each printed as it ends:
//
//   clock     the core's effective clock: a chain of dependent 3-cycle multiplies, timed;
//   syscalls  system calls made by every thread of a child process while its main thread
//             issues bursts of launches (ptrace; the syncs between bursts are not counted);
//   mutexes   pthread mutex lock/unlock calls per launch and their cycles (this program's
//             own definitions interpose on libc's for libcuda: link with -rdynamic);
//   hot       where the launching thread's time lands: its instruction pointer sampled at
//             10 kHz during bursts, by module and symbol, and the hottest addresses;
//   busy      host time per launch with the GPU idle against the GPU held by a spinning
//             kernel (the launches queue behind it) and a spinning kernel on another stream.
//
// On the lent H100 (driver 580, a KVM guest) it read: a core clock of 2.5-2.7 GHz at the
// median (this build machine's: 3.3-3.45); no system call in 6400 launches (other threads: 0-1); 6 mutex pairs a
// launch, a lock 210-330 TSC cycles and an unlock 190-210 (a private pair: 25-27 ns once
// CUDA runs in the process; 7-9 ns in another process without CUDA); the launch 8,800-11,200 TSC cycles (2.1 GHz) with the
// counting on; a quarter of the samples in libc's mutex code; the GPU's state moved the launch
// by 2-4% (benchmarks/h100-2026-11-25e-launch-floor.md). Build and run there:
//
//     nvcc -O2 -arch=sm_90 -Xlinker --export-dynamic -o /tmp/pdli scripts/probe_driver_launch_inside.cu -lcuda
//     /tmp/pdli              # all parts; or name some: /tmp/pdli clock mutexes
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

__global__ void store_one(float* y) { y[threadIdx.x] = 1.0f; }
__global__ void spin(long long cycles) {
  const long long t = clock64();
  while (clock64() - t < cycles) {
  }
}

namespace {

constexpr int kBurst = 64;

struct Kernel {
  CUfunction f;
  float* y;
  void* params[1];
  void launch(CUstream s = 0) { cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, nullptr); }
};

Kernel make_kernel() {
  Kernel k{};
  cudaMalloc(&k.y, 64);
  cudaFunction_t rf;
  cudaGetFuncBySymbol(&rf, (const void*)store_one);
  k.f = (CUfunction)rf;
  k.params[0] = &k.y;
  for (int i = 0; i < 2000; ++i) k.launch();  // module loaded, queues warm
  cudaDeviceSynchronize();
  return k;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// -- clock ---------------------------------------------------------------------------------
void part_clock() {
  std::vector<double> ghz;
  for (int r = 0; r < 24; ++r) {
    long x = 1;
    const long n = 10000000;
    const double t0 = now_s();
    for (long i = 0; i < n; ++i)
      __asm__ volatile(
          "imul $3,%0,%0\n\timul $3,%0,%0\n\timul $3,%0,%0\n\timul $3,%0,%0\n\t"
          "imul $3,%0,%0\n\timul $3,%0,%0\n\timul $3,%0,%0\n\timul $3,%0,%0"
          : "+r"(x));
    ghz.push_back(8.0 * 3 * n / (now_s() - t0) / 1e9);
  }
  std::sort(ghz.begin(), ghz.end());
  printf("clock: core runs at %.2f GHz (median of 24 samples of 0.1 s; lowest %.2f, highest %.2f)\n",
         ghz[ghz.size() / 2], ghz.front(), ghz.back());
}

// -- syscalls ------------------------------------------------------------------------------
// The child marks each burst with getppid() before and after; the parent counts every
// thread's system calls between the marks.
void part_syscalls() {
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    ptrace(PTRACE_TRACEME, 0, 0, 0);
    raise(SIGSTOP);
    Kernel k = make_kernel();
    for (int b = 0; b < 100; ++b) {
      getppid();
      for (int i = 0; i < kBurst; ++i) k.launch();
      getppid();
      cuStreamSynchronize(0);
    }
    _exit(0);
  }
  int st;
  waitpid(child, &st, 0);
  ptrace(PTRACE_SETOPTIONS, child, 0,
         PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL);
  ptrace(PTRACE_SYSCALL, child, 0, 0);
  std::map<pid_t, bool> inside;  // per thread: at a syscall's entry (true) or exit
  std::map<long, long> main_calls, other_calls;
  bool window = false;
  long marks = 0;
  for (;;) {
    const pid_t tid = waitpid(-1, &st, __WALL);
    if (tid < 0) break;
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      if (tid == child) break;
      continue;
    }
    int deliver = 0;
    const int sig = WSTOPSIG(st);
    if (sig == (SIGTRAP | 0x80)) {
      bool& in = inside[tid];
      in = !in;
      if (in) {
        user_regs_struct r;
        ptrace(PTRACE_GETREGS, tid, 0, &r);
        const long nr = (long)r.orig_rax;
        if (tid == child && nr == SYS_getppid) {
          window = !window;
          ++marks;
        } else if (window) {
          (tid == child ? main_calls : other_calls)[nr]++;
        }
      }
    } else if (sig != SIGTRAP && sig != SIGSTOP) {
      deliver = sig;  // a clone event or a new thread's first stop is not delivered
    }
    ptrace(PTRACE_SYSCALL, tid, 0, deliver);
  }
  long total_main = 0, total_other = 0;
  for (auto& kv : main_calls) total_main += kv.second;
  for (auto& kv : other_calls) total_other += kv.second;
  printf("syscalls: %ld launches in %ld marks; system calls: launching thread %ld, other threads %ld\n",
         100L * kBurst, marks, total_main, total_other);
  for (auto& kv : main_calls) printf("  launching thread: syscall %ld x %ld\n", kv.first, kv.second);
  for (auto& kv : other_calls) printf("  other threads: syscall %ld x %ld\n", kv.first, kv.second);
}

}  // namespace

// -- mutexes -------------------------------------------------------------------------------
// Defined here and exported (-rdynamic), these stand in for libc's in libcuda too.
static int g_count = 0;
static long g_locks = 0, g_unlocks = 0;
static unsigned long long g_lock_cycles = 0, g_unlock_cycles = 0;
// plain pointers filled on first use: a guarded static could itself take a lock
static int (*g_real_lock)(pthread_mutex_t*) = nullptr;
static int (*g_real_unlock)(pthread_mutex_t*) = nullptr;
extern "C" int pthread_mutex_lock(pthread_mutex_t* m) noexcept {
  if (!g_real_lock) g_real_lock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_lock");
  if (!g_count) return g_real_lock(m);
  const unsigned long long a = __rdtsc();
  const int r = g_real_lock(m);
  g_lock_cycles += __rdtsc() - a;
  ++g_locks;
  return r;
}
extern "C" int pthread_mutex_unlock(pthread_mutex_t* m) noexcept {
  if (!g_real_unlock)
    g_real_unlock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
  if (!g_count) return g_real_unlock(m);
  const unsigned long long a = __rdtsc();
  const int r = g_real_unlock(m);
  g_unlock_cycles += __rdtsc() - a;
  ++g_unlocks;
  return r;
}

namespace {

// A lock and unlock of a mutex only this thread uses, through libc's own functions.
double private_pair_ns() {
  if (!g_real_lock) g_real_lock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_lock");
  if (!g_real_unlock)
    g_real_unlock = (int (*)(pthread_mutex_t*))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
  pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
  const double t0 = now_s();
  for (int i = 0; i < 1000000; ++i) {
    g_real_lock(&m);
    g_real_unlock(&m);
  }
  return (now_s() - t0) * 1e3;
}

void part_mutexes(Kernel& k, double before_cuda_ns) {
  const int bursts = 500;
  unsigned long long launch_cycles = 0;
  for (int b = 0; b < bursts; ++b) {
    const unsigned long long a = __rdtsc();
    g_count = 1;
    for (int i = 0; i < kBurst; ++i) k.launch();
    g_count = 0;
    launch_cycles += __rdtsc() - a;
    cuStreamSynchronize(0);
  }
  const double n = double(bursts) * kBurst;
  if (g_locks == 0) {
    printf("mutexes: no lock seen: build with -Xlinker --export-dynamic\n");
    return;
  }
  printf("mutexes: per launch %.1f locks (%.0f TSC cycles each) and %.1f unlocks (%.0f); "
         "the launch %.0f TSC cycles with the counting\n",
         g_locks / n, double(g_lock_cycles) / g_locks, g_unlocks / n,
         double(g_unlock_cycles) / g_unlocks, launch_cycles / n);
  printf("mutexes: a private lock+unlock pair takes %.1f ns before CUDA starts, %.1f ns after\n",
         before_cuda_ns, private_pair_ns());
}

// -- hot -----------------------------------------------------------------------------------
volatile int g_sampling = 0;
std::vector<unsigned long> g_pcs;
volatile size_t g_npc = 0;

void on_sample(int, siginfo_t*, void* uc) {
  if (g_sampling && g_npc < g_pcs.size())
    g_pcs[g_npc++] = (unsigned long)((ucontext_t*)uc)->uc_mcontext.gregs[REG_RIP];
}

void part_hot(Kernel& k) {
  g_pcs.assign(200000, 0);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sample;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  sigevent se;
  memset(&se, 0, sizeof se);
  se.sigev_notify = SIGEV_THREAD_ID;
  se.sigev_signo = SIGPROF;
  se._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  timer_t timer;
  timer_create(CLOCK_MONOTONIC, &se, &timer);
  itimerspec its{{0, 100000}, {0, 100000}};
  timer_settime(timer, 0, &its, nullptr);
  const double end = now_s() + 5.0;
  while (now_s() < end) {
    g_sampling = 1;
    for (int i = 0; i < kBurst; ++i) k.launch();
    g_sampling = 0;
    cuStreamSynchronize(0);
  }
  its = itimerspec{};
  timer_settime(timer, 0, &its, nullptr);
  timer_delete(timer);
  const size_t n = g_npc;
  std::map<std::string, long> by_symbol;
  std::map<std::string, long> by_address;
  for (size_t i = 0; i < n; ++i) {
    Dl_info info;
    std::string module = "?", symbol;
    unsigned long offset = g_pcs[i];
    if (dladdr((void*)g_pcs[i], &info) && info.dli_fname) {
      module = info.dli_fname;
      offset = g_pcs[i] - (unsigned long)info.dli_fbase;
      symbol = info.dli_sname ? info.dli_sname : "(no symbol)";
    }
    by_symbol[module + " " + symbol]++;
    char at[32];
    snprintf(at, sizeof at, "+0x%lx", offset);
    by_address[module + at]++;
  }
  printf("hot: %zu samples while launching\n", n);
  for (auto* table : {&by_symbol, &by_address}) {
    std::vector<std::pair<long, std::string>> rows;
    for (auto& kv : *table) rows.push_back({kv.second, kv.first});
    std::sort(rows.rbegin(), rows.rend());
    for (size_t i = 0; i < rows.size() && i < 12; ++i)
      printf("  %5.1f%%  %s\n", 100.0 * rows[i].first / n, rows[i].second.c_str());
  }
}

// -- busy ----------------------------------------------------------------------------------
void part_busy(Kernel& k) {
  const char* names[] = {"GPU idle", "GPU busy (queued behind a 1 ms spin)",
                         "another stream busy"};
  cudaStream_t other;
  cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
  std::vector<double> t[3];
  for (int r = 0; r < 300; ++r)
    for (int v = 0; v < 3; ++v) {
      cudaDeviceSynchronize();
      if (v == 1) spin<<<1, 1>>>(2000000LL);
      if (v == 2) spin<<<1, 1, 0, other>>>(2000000LL);
      const double t0 = now_s();
      for (int i = 0; i < kBurst; ++i) k.launch();
      t[v].push_back((now_s() - t0) * 1e6 / kBurst);
    }
  cudaDeviceSynchronize();
  for (int v = 0; v < 3; ++v) {
    std::sort(t[v].begin(), t[v].end());
    printf("busy: %-38s %.2f us a launch (median of 300 bursts; p10 %.2f, p90 %.2f)\n", names[v],
           t[v][150], t[v][30], t[v][270]);
  }
}

bool wanted(int argc, char** argv, const char* part) {
  if (argc < 2) return true;
  for (int i = 1; i < argc; ++i)
    if (strcmp(argv[i], part) == 0) return true;
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const double before_cuda_ns = private_pair_ns();
  if (wanted(argc, argv, "clock")) part_clock();
  if (wanted(argc, argv, "syscalls")) part_syscalls();  // before this process opens CUDA
  if (!(wanted(argc, argv, "mutexes") || wanted(argc, argv, "hot") || wanted(argc, argv, "busy")))
    return 0;
  Kernel k = make_kernel();
  if (wanted(argc, argv, "mutexes")) part_mutexes(k, before_cuda_ns);
  if (wanted(argc, argv, "hot")) part_hot(k);
  if (wanted(argc, argv, "busy")) part_busy(k);
  const cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) printf("CUDA error: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
