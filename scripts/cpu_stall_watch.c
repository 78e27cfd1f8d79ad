// Native half of scripts/probe_cpu_stalls.py: per-region host facts and a stall sampler.
//
// Regions (cw_enter / cw_leave on one thread, e.g. around one request): wall time, the
// thread's CPU time (its CPU clock, exact), its run-queue wait (schedstat's second field,
// brought up to date whenever the thread is switched in), voluntary and involuntary context
// switches, the CPU it ran on, and a fixed integer loop timed just before and just after:
// if that loop runs slower too, the CPU itself was slow, whatever the region was doing.
//
// Sampler (cw_sample_start): while a region has been open longer than a threshold, every
// thread that took a role (cw_role) gets SIGUSR2 each period and records its native
// backtrace, so threads waiting (for the GIL, a lock, the driver) show up as well as
// running ones, which Python-level samplers drop.
//
//     cc -O2 -shared -fPIC -o cpu_stall_watch.so scripts/cpu_stall_watch.c -lpthread
#define _GNU_SOURCE
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROLES 8
#define DEPTH 32
#define MAX_SAMPLES 20000
#define MAX_REGIONS 200000

typedef struct {
  int64_t t, wall, cpu, runq, voluntary, involuntary, calib_before, calib_after, cpu_in, cpu_out;
} region_t;
typedef struct { int64_t t, region_start; int32_t role, depth; void* pc[DEPTH]; } sample_t;

static region_t regions[MAX_REGIONS];
static atomic_int n_regions;
static sample_t samples[MAX_SAMPLES];
static atomic_int n_samples;
static pthread_t role_threads[MAX_ROLES];
static atomic_int n_roles;
static _Atomic int64_t open_since;  // start of the open region, 0 when none
static __thread int my_role = -1;
static __thread region_t cur;
static int64_t threshold_ns, period_ns;
static atomic_int sampling;
static pthread_t watcher;

static int64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// ns the thread has waited on a run queue (-1 where /proc does not say)
static int64_t runq_ns(void) {
  char buf[128];
  int fd = open("/proc/thread-self/schedstat", O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  long long run, wait;
  if (n <= 0) return -1;
  buf[n] = 0;
  return sscanf(buf, "%lld %lld", &run, &wait) == 2 ? wait : -1;
}

// a fixed chain of dependent integer operations: about 45 us on the lent H100's host
static int64_t calibration_ns(void) {
  int64_t t0 = mono_ns();
  volatile uint64_t sink;
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 20000; ++i) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
  sink = x;
  (void)sink;
  return mono_ns() - t0;
}

void cw_enter(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  cur.voluntary = ru.ru_nvcsw;
  cur.involuntary = ru.ru_nivcsw;
  cur.calib_before = calibration_ns();
  cur.cpu_in = sched_getcpu();
  cur.runq = runq_ns();
  cur.cpu = thread_cpu_ns();
  cur.t = mono_ns();
  open_since = cur.t;
}

void cw_leave(void) {
  int64_t end = mono_ns();
  open_since = 0;
  int64_t cpu = thread_cpu_ns(), runq = runq_ns();
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  int i = atomic_fetch_add(&n_regions, 1);
  if (i >= MAX_REGIONS) return;
  // -1: /proc gave no run-queue figure at one end, so there is no wait to report
  int64_t waited = (runq < 0 || cur.runq < 0) ? -1 : runq - cur.runq;
  regions[i] = (region_t){cur.t, end - cur.t, cpu - cur.cpu, waited,
                          ru.ru_nvcsw - cur.voluntary, ru.ru_nivcsw - cur.involuntary,
                          cur.calib_before, calibration_ns(), cur.cpu_in, sched_getcpu()};
}

int cw_region_count(void) { int n = n_regions; return n < MAX_REGIONS ? n : MAX_REGIONS; }
const region_t* cw_region(int i) { return &regions[i]; }

// The calling thread takes role `role` (0..7), replacing the thread that held it.
void cw_role(int role) {
  if (role < 0 || role >= MAX_ROLES || my_role == role) return;
  my_role = role;
  role_threads[role] = pthread_self();
  int n = n_roles;
  while (n <= role && !atomic_compare_exchange_weak(&n_roles, &n, role + 1)) {}
}

static void on_signal(int sig) {
  (void)sig;
  int i = atomic_fetch_add(&n_samples, 1);
  if (i >= MAX_SAMPLES) return;
  samples[i].t = mono_ns();
  samples[i].region_start = open_since;
  samples[i].role = my_role;
  samples[i].depth = backtrace(samples[i].pc, DEPTH);
}

static void* watch(void* arg) {
  (void)arg;
  struct timespec idle = {0, 50000}, period = {period_ns / 1000000000LL, period_ns % 1000000000LL};
  while (sampling) {
    int64_t since = open_since;
    if (since != 0 && mono_ns() - since > threshold_ns) {
      int n = n_roles;
      for (int k = 0; k < n; ++k)
        if (role_threads[k]) pthread_kill(role_threads[k], SIGUSR2);
      nanosleep(&period, 0);
    } else {
      nanosleep(&idle, 0);
    }
  }
  return 0;
}

// Start sampling every role's thread while a region stays open past `threshold`; 0 on success.
int cw_sample_start(int64_t threshold, int64_t period) {
  void* warm[2];
  backtrace(warm, 2);  // loads the unwinder now, not inside the signal handler
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR2, &sa, 0) != 0) return -1;
  threshold_ns = threshold;
  period_ns = period;
  sampling = 1;
  return pthread_create(&watcher, 0, watch, 0);
}

void cw_sample_stop(void) {
  if (!sampling) return;
  sampling = 0;
  pthread_join(watcher, 0);
}

int cw_sample_count(void) { int n = n_samples; return n < MAX_SAMPLES ? n : MAX_SAMPLES; }
const sample_t* cw_sample(int i) { return &samples[i]; }
