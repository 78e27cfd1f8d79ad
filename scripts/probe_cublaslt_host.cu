// Host time of one cublasLtMatmul call, per algorithm the heuristic offers, for the bf16
// decode shapes of the launch benchmark (1x2048 @ 2048x2048, 1x4096 @ 4096x4096,
// 64x2048 @ 2048x2048), with no Python in the way: host time per call in bursts of 16 (the
// sync untimed), the burst's device-paced time per call, and, under
// scripts/format_calls_shim.c, the formatting calls per call. On the lent H100 (cuBLASLt
// 13.1, CUDA 13.0 toolkit) every algorithm offered was id 66 (nvjet), each call formatted
// one kernel name, and a call took 9.9-15.6 us of host time: the decode-shaped products are
// host-bound in eager mode (a CUDA graph replays them without these calls). Run there:
//
//     H=/usr/local/cuda/targets/x86_64-linux
//     nvcc -O2 -arch=sm_90 -I$H/include -L$H/lib -Xlinker -rpath=$H/lib -o /tmp/probe_cublaslt_host scripts/probe_cublaslt_host.cu -lcublasLt -ldl
//     gcc -O2 -shared -fPIC -o /tmp/format_calls_shim.so scripts/format_calls_shim.c -ldl
//     LD_PRELOAD=/tmp/format_calls_shim.so /tmp/probe_cublaslt_host
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#define CK(x) do { auto s_ = (x); if ((int)s_) { printf("%s:%d %s -> %d\n", __FILE__, __LINE__, #x, (int)s_); return 1; } } while (0)
static double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int run(cublasLtHandle_t lt, int M, int K, int N, void* ws, size_t wsz) {
  // row-major C[M,N] = A[M,K] W[K,N]  ==  col-major C^T[N,M] = W^T[N,K] A^T[K,M]
  __nv_bfloat16 *a, *w, *c;
  cudaMalloc(&a, (size_t)M * K * 2); cudaMalloc(&w, (size_t)K * N * 2); cudaMalloc(&c, (size_t)M * N * 2);
  cudaMemset(a, 0x3c, (size_t)M * K * 2); cudaMemset(w, 0x3c, (size_t)K * N * 2);
  cublasLtMatmulDesc_t op; CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, lc;
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, N, K, N));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, K, M, K));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, N, M, N));
  cublasLtMatmulPreference_t pref; CK(cublasLtMatmulPreferenceCreate(&pref));
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
  cublasLtMatmulHeuristicResult_t res[16]; int found = 0;
  CK(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 16, res, &found));
  float alpha = 1, beta = 0;
  auto* calls = (long*)dlsym(RTLD_DEFAULT, "shim_calls");
  auto* on = (int*)dlsym(RTLD_DEFAULT, "shim_on");
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  printf("%dx%d @ %dx%d: %d algorithms\n", M, K, K, N, found);
  for (int i = 0; i < found; ++i) {
    const cublasLtMatmulAlgo_t* algo = &res[i].algo;
    int id = 0, tile = 0, stages = 0, splitk = 0; size_t sz;
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &sz);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &sz);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &sz);
    cublasLtMatmulAlgoConfigGetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &sz);
    auto mm = [&]() { return cublasLtMatmul(lt, op, &alpha, w, la, a, lb, &beta, c, lc, c, lc, algo, ws, wsz, 0); };
    bool ok = true;
    for (int r = 0; r < 20; ++r) ok &= mm() == CUBLAS_STATUS_SUCCESS;
    cudaDeviceSynchronize();
    if (!ok) { printf("  algo %d: fails\n", i); continue; }
    std::vector<double> host;
    long f0 = calls ? *calls : 0;
    for (int r = 0; r < 61; ++r) {
      cudaDeviceSynchronize();
      if (on) *on = 1;
      double t0 = now_us();
      for (int j = 0; j < 16; ++j) mm();
      host.push_back((now_us() - t0) / 16);
      if (on) *on = 0;
    }
    long formats = calls ? *calls - f0 : -1;
    cudaDeviceSynchronize();
    cudaEventRecord(e0);
    for (int j = 0; j < 200; ++j) mm();
    cudaEventRecord(e1); cudaEventSynchronize(e1);
    float ms; cudaEventElapsedTime(&ms, e0, e1);
    std::sort(host.begin(), host.end());
    printf("  algo %2d: id %3d tile %3d stages %3d splitK %2d ws %8zu  host %6.2f us/call (p10 %.2f)  burst %6.2f us/call  formats/call %.2f\n",
           i, id, tile, stages, splitk, res[i].workspaceSize, host[30], host[6], ms * 1000 / 200, formats / (61.0 * 16));
  }
  return 0;
}
int main() {
  cublasLtHandle_t lt; CK(cublasLtCreate(&lt));
  size_t wsz = 32 << 20; void* ws; cudaMalloc(&ws, wsz);
  run(lt, 1, 2048, 2048, ws, wsz);
  run(lt, 1, 4096, 4096, ws, wsz);
  run(lt, 64, 2048, 2048, ws, wsz);
  printf("cublasLt version %zu\n", cublasLtGetVersion());
}
