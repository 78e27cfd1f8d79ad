// Would launching from a thread of our own meet a fixed per-op host budget on a slow host?
// Today an op's host time is our path plus the driver's cuLaunchKernel, one after the other.
// If the caller only handed a launch to a dedicated C++ thread (a single-producer ring) and
// that thread called the driver, the two would overlap: a burst would cost about the larger
// of the two, not their sum. This probe measures both shapes with no Python in the way: the
// caller's own work is a spin of W ns (our path on the null driver measured 500-700 ns),
// each burst of N launches is timed through its sync, as the benchmark rows are, and the
// variants are sampled in turn so that the host's minute moves them alike. On the lent H100
// (2026-11-25, five runs) the thread took the caller's 600-1200 ns off the sum: 3.78-4.78 us
// against 4.44-5.99 us today. But handing each launch to another core cost up to 0.6 us of
// its own: with no work the thread was as slow or slower (3.80-4.74 against 3.74-4.53). Run:
//
//     nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/probe_launch_thread scripts/probe_launch_thread.cu -lcuda
//     /tmp/probe_launch_thread [burst=1000] [rounds=61]
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void k(float* y) { y[threadIdx.x] += 1.0f; }

using Clock = std::chrono::steady_clock;

static void spin_ns(long ns) {
    if (ns <= 0) return;
    const auto until = Clock::now() + std::chrono::nanoseconds(ns);
    while (Clock::now() < until) {
    }
}

// One producer (the caller), one consumer (the launcher): slots hold nothing but a ticket,
// since every launch here is the same; a real queue would hold the packed arguments.
struct Ring {
    static constexpr unsigned kSize = 4096;
    std::atomic<unsigned long> head{0}, tail{0};
    std::atomic<bool> stop{false};
};

int main(int argc, char** argv) {
    const int burst = argc > 1 ? std::atoi(argv[1]) : 1000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 61;
    float* y;
    cudaMalloc(&y, 64);
    cudaMemset(y, 0, 64);
    cudaFunction_t rf;
    cudaGetFuncBySymbol(&rf, (const void*)k);
    CUfunction f = (CUfunction)rf;
    CUcontext ctx;
    cuCtxGetCurrent(&ctx);
    void* params[] = {&y};

    Ring ring;
    std::thread launcher([&] {
        cuCtxSetCurrent(ctx);
        unsigned long done = 0;
        while (!ring.stop.load(std::memory_order_relaxed)) {
            const unsigned long head = ring.head.load(std::memory_order_acquire);
            while (done < head) {
                cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, params, nullptr);
                ++done;
                ring.tail.store(done, std::memory_order_release);
            }
        }
    });
    // the caller's sync waits for the launcher to have issued every launch, then the device
    auto drain = [&] {
        const unsigned long head = ring.head.load(std::memory_order_relaxed);
        while (ring.tail.load(std::memory_order_acquire) < head) {
        }
        cuCtxSynchronize();
    };

    const long work_ns[] = {0, 600, 1200};
    const int W = 3;
    std::vector<double> direct[W], queued[W];
    for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < W; ++w) {
            cuCtxSynchronize();
            auto t0 = Clock::now();
            for (int i = 0; i < burst; ++i) {
                spin_ns(work_ns[w]);
                cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, params, nullptr);
            }
            cuCtxSynchronize();
            direct[w].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / burst);

            drain();
            t0 = Clock::now();
            for (int i = 0; i < burst; ++i) {
                spin_ns(work_ns[w]);
                const unsigned long head = ring.head.load(std::memory_order_relaxed);
                while (head - ring.tail.load(std::memory_order_acquire) >= Ring::kSize) {
                }
                ring.head.store(head + 1, std::memory_order_release);
            }
            drain();
            queued[w].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / burst);
        }
    }
    ring.stop = true;
    launcher.join();
    auto line = [&](const char* name, long ns, std::vector<double>& t) {
        std::sort(t.begin(), t.end());
        printf("%-34s work %4ld ns: median %.2f us  p10 %.2f  p90 %.2f\n", name, ns, t[t.size() / 2],
               t[t.size() / 10], t[9 * t.size() / 10]);
    };
    printf("burst %d, %d rounds, per launch timed through the sync\n", burst, rounds);
    for (int w = 0; w < W; ++w) {
        line("caller launches (today)", work_ns[w], direct[w]);
        line("launcher thread launches", work_ns[w], queued[w]);
    }
    float host[16];
    cudaMemcpy(host, y, sizeof(host), cudaMemcpyDeviceToHost);
    const double expect = 2.0 * W * rounds * burst;
    printf("launches counted by the kernel: %.0f of %.0f; err %s\n", host[0], expect,
           cudaGetErrorString(cudaDeviceSynchronize()));
}
