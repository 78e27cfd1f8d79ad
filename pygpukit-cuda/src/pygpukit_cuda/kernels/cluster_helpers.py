"""CUDA C helpers of thread-block cluster kernels (sm_90+): a block's rank in its cluster,
reads of another block's shared memory (distributed shared memory) and the cluster-wide
barrier. The cluster attention and the small-M product (gemv) build on them."""

CLUSTER_HELPERS = r"""
// a shared-memory address in the 32-bit shared window, as mapa and ld.shared::cluster take it
__device__ __forceinline__ unsigned pgk_smem_addr(const void* p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
// the float at shared address `addr` of block `rank` of this cluster
__device__ __forceinline__ float pgk_ld_cluster(unsigned addr, unsigned rank) {
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
// every thread of every block of the cluster: writes before it are seen by reads after it
__device__ __forceinline__ void pgk_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned pgk_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
"""
