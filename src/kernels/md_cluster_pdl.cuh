/* Programmatic dependent launch of the step kernels (md_clusters_t.pdl; Hopper and later): a
 * kernel launched with it may be placed on the GPU while the kernel before it on its stream
 * finishes, and the gap between two kernels of a step (1.1-2 us each on an H200, the kernel
 * timeline) closes. Included by md_cluster_watch.cu, md_cluster_lj.cu, md_cluster_forces.cu.
 *
 * The rules that keep it exact and free of deadlock:
 *   - a kernel launched with it calls cl_pdl_wait() before anything else: that waits until the
 *     kernels it depends on have completed and their writes are visible, so it reads what it
 *     read before;
 *   - cl_pdl_release() (after the wait) lets the successor be placed once every block of this
 *     kernel has started; a kernel that never calls it releases at its end;
 *   - only kernels that follow kernels which never spin are launched with it (the local forces
 *     after the home gather, the halo forces after the non-local forces, the kick after the halo
 *     forces and the local forces): blocks placed early wait for a kernel that always finishes,
 *     so they cannot hold the GPU from a peer's kernel that a spinning predecessor waits for.
 *     The non-local forces after the halo gather, which may spin for the peers' coordinates
 *     (nvshmem-inline), are launched without it. */
#ifndef HALOX_KERNELS_MD_CLUSTER_PDL_CUH
#define HALOX_KERNELS_MD_CLUSTER_PDL_CUH

#include <cuda_runtime.h>

/* wait for the predecessors (a no-op for a kernel launched without PDL) */
__device__ static inline void cl_pdl_wait(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* let a successor launched with PDL be placed (a no-op without one) */
__device__ static inline void cl_pdl_release(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* kernel<<<blocks, threads, 0, stream>>>(args...), with programmatic stream serialisation when
 * pdl is set */
template <typename... P, typename... A>
static inline cudaError_t cl_launch(int pdl, void (*kernel)(P...), int blocks, int threads,
                                    cudaStream_t stream, A... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.stream = stream;
    cudaLaunchAttribute at[1] = {};
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = at;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

#endif
