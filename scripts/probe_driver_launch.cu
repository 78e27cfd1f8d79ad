// How long the CUDA driver itself takes to launch a one-thread kernel on this host, with no
// Python in the way: the floor under any library's tiny-op host time. Host time per launch
// in bursts of 64 (the sync after each burst untimed), through each launch API and on each
// kind of stream, sampled in turn. On the lent H100 (driver 580) the driver API's variants
// and the stream kinds were within 0.1-0.25 us of each other (the runtime's, up to 0.6 us
// slower), while the host's minute moved every one of them between 3.0 and 5.0 us. Run:
//
//     nvcc -O2 -arch=sm_90 -o /tmp/probe_driver_launch scripts/probe_driver_launch.cu -lcuda
//     /tmp/probe_driver_launch
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <vector>
__global__ void k(float* y) { y[threadIdx.x] = 1.0f; }
int main() {
  float* y; cudaMalloc(&y, 64);
  cudaFunction_t rf; cudaGetFuncBySymbol(&rf, (const void*)k);
  CUfunction f = (CUfunction)rf;
  CUcontext ctx; cuCtxGetCurrent(&ctx);
  CUstream created; cuStreamCreate(&created, CU_STREAM_NON_BLOCKING);
  void* params[] = {&y};
  size_t size = sizeof(y);
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &y, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  const char* names[] = {"k<<<1,1>>>", "cudaLaunchKernel", "cuLaunchKernel params", "cuLaunchKernel extra", "cuCtxGetCurrent+extra", "cuLaunchKernelEx extra",
                         "per-thread stream", "non-blocking stream"};
  const int V = 8, B = 64, R = 400;
  std::vector<double> t[V];
  for (int r = 0; r < R; ++r) for (int v = 0; v < V; ++v) {
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < B; ++i) {
      switch (v) {
        case 0: k<<<1, 1>>>(y); break;
        case 1: { void* a[] = {&y}; cudaLaunchKernel((const void*)k, 1, 1, a, 0, 0); break; }
        case 2: cuLaunchKernel(f, 1,1,1, 1,1,1, 0, 0, params, nullptr); break;
        case 3: cuLaunchKernel(f, 1,1,1, 1,1,1, 0, 0, nullptr, extra); break;
        case 4: { CUcontext c; cuCtxGetCurrent(&c); if (c != ctx) cuCtxSetCurrent(ctx); cuLaunchKernel(f, 1,1,1, 1,1,1, 0, 0, nullptr, extra); break; }
        case 5: { CUlaunchConfig cfg{1,1,1,1,1,1,0,0,nullptr,0}; cuLaunchKernelEx(&cfg, f, nullptr, extra); break; }
        case 6: cuLaunchKernel(f, 1,1,1, 1,1,1, 0, CU_STREAM_PER_THREAD, nullptr, extra); break;
        case 7: cuLaunchKernel(f, 1,1,1, 1,1,1, 0, created, nullptr, extra); break;
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    t[v].push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / B);
  }
  for (int v = 0; v < V; ++v) {
    std::sort(t[v].begin(), t[v].end());
    printf("%-24s median %.2f us  p10 %.2f  p90 %.2f\n", names[v], t[v][R/2], t[v][R/10], t[v][9*R/10]);
  }
  printf("err %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
}
