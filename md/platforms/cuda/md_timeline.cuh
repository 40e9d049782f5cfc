/* The kernel timeline's stamps (md_cluster.h, md_timeline_t; HALOX_MD_TIMELINE), for the step
 * kernels of md_cluster_watch.cu, md_cluster_lj.cu and md_cluster_forces.cu (device code only). */
#ifndef HALOX_MD_CUDA_TIMELINE_CUH
#define HALOX_MD_CUDA_TIMELINE_CUH

#include <cuda_runtime.h>
#include <time.h>

#include "platforms/cuda/md_cluster.h"

/* The kernel timeline (md_cluster.h): thread 0 of each block stamps; a kind < 0 or no timeline
 * stamps nothing. cl_tl_begin returns the launch's number (or -1: none kept), which the block's
 * cl_tl_wait and cl_tl_end take; cl_tl_end counts the block as finished. */
__device__ static inline unsigned long long cl_tl_now(void)
{
    unsigned long long t;
#ifdef HALOX_EMU /* the host emulation of tests/emu */
    t = (unsigned long long)clock();
#else
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
    return t;
}

__device__ static inline int cl_tl_begin(md_timeline_t *tl, int kind)
{
    if (!tl || kind < 0 || threadIdx.x)
        return -1;
    const unsigned n = *(volatile unsigned *)&tl->done[kind] / gridDim.x;
    if (n >= MD_TL_LAUNCHES)
        return -1;
    atomicMin(&tl->start[kind][n], cl_tl_now());
    return (int)n;
}

__device__ static inline void cl_tl_wait(md_timeline_t *tl, int kind, int n)
{
    if (tl && n >= 0 && !threadIdx.x)
        atomicMin(&tl->wait[kind][n], cl_tl_now());
}

__device__ static inline void cl_tl_end(md_timeline_t *tl, int kind, int n)
{
    if (!tl || kind < 0 || threadIdx.x)
        return;
    const unsigned long long t = cl_tl_now();
    if (n >= 0)
        atomicMax(&tl->end[kind][n], t);
    atomicAdd(&tl->done[kind], 1u);
}

/* A later end of the launch (the work a last block does after its block counted). */
__device__ static inline void cl_tl_later(md_timeline_t *tl, int kind, int n)
{
    if (tl && kind >= 0 && n >= 0 && !threadIdx.x)
        atomicMax(&tl->end[kind][n], cl_tl_now());
}

#endif
