/* The gathers' per-slot work, shared by the gather kernels (md_cluster_watch.cu) and the step's
 * forces in one kernel (md_cluster_fused.cu); device code only: a slot's current position into
 * the slots (kicked and drifted first, or sent to the peers), its displacements against the
 * references, its cluster's box now; a block's maxima; the finish of a step's part by the last
 * block (prune decisions, the watch). See md_cluster.h. */
#ifndef HALOX_KERNELS_MD_CLUSTER_GATHER_CUH
#define HALOX_KERNELS_MD_CLUSTER_GATHER_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "halox/inline_device.cuh"
#include "kernels/md_cluster.h"
#include "kernels/md_cluster_internal.cuh"

__device__ static inline float cl_d2(float4 a, float4 b)
{
    const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
    return dx * dx + dy * dy + dz * dz;
}

__device__ static inline float cl_warp_max(float v)
{
    for (int off = 16; off > 0; off /= 2)
        v = fmaxf(v, __shfl_down_sync(CL_FULL, v, off));
    return v;
}

/* The first half kick and the drift a home gather does first (v NULL: none): per atom the
 * arithmetic of halox__md_kernel_kick, so the positions are those of the kick kernel. */
typedef struct cl_kick_drift {
    float *v;
    const float *f;
    float h, dt;
} cl_kick_drift_t;

/* Slot s (a thread each; whole warps call it: the box is reduced over 8 neighbouring lanes, and
 * s0 and the blocks are multiples of 8) of [.., s1) takes the current position of its atom, unless
 * !ok (a wait that gave up: nothing is read); refs: 3 arrays of nslots float4 (local prune,
 * non-local prune, build), m[4] the squared displacements against them and against the slot's
 * last position; bnow: the cluster's box now; kd.v: the atom is kicked and drifted first;
 * send: its position is stored into the halos it is sent to. */
__device__ static __forceinline__ void
cl_gather_slot(int s, int s1, int home_end, int ok, const int *__restrict__ perm,
               float *__restrict__ x, const uint8_t *__restrict__ zone, float4 *__restrict__ xq,
               const float4 *__restrict__ ref, size_t nslots, float4 *__restrict__ bnow,
               cl_kick_drift_t kd, const halox_inline_view_t *send, float m[4])
{
    float q[3] = {CL_PAD, CL_PAD, CL_PAD}; /* no atom: out of every box */
    int real = 0;
    m[0] = m[1] = m[2] = m[3] = 0.0f;
    if (s < s1 && ok) {
        const int a = perm[s];
        if (a >= 0) {
            real = 1;
            for (int c = 0; c < 3; c++) {
                const size_t k = 3 * (size_t)a + c;
                q[c] = x[k];
                if (kd.v) {
                    const float vk = kd.v[k] + kd.h * kd.f[k];
                    kd.v[k] = vk;
                    q[c] += kd.dt * vk;
                    x[k] = q[c];
                }
            }
            if (send)
                halox_inline_put_x(send, a, q[0], q[1], q[2]);
            const float4 p = make_float4(q[0], q[1], q[2], __int_as_float(CL_ZONE_TAG | zone[a]));
            m[3] = cl_d2(p, xq[s]);
            xq[s] = p;
            if (ref) {
                if (s < home_end)
                    m[0] = cl_d2(p, ref[s]);
                m[1] = cl_d2(p, ref[nslots + s]);
                m[2] = cl_d2(p, ref[2 * nslots + s]);
            }
        }
    }
    float lo[3], hi[3];
    for (int c = 0; c < 3; c++) {
        lo[c] = real ? q[c] : CL_PAD;
        hi[c] = real ? q[c] : -CL_PAD;
        for (int off = 4; off > 0; off /= 2) {
            lo[c] = fminf(lo[c], __shfl_xor_sync(CL_FULL, lo[c], off));
            hi[c] = fmaxf(hi[c], __shfl_xor_sync(CL_FULL, hi[c], off));
        }
    }
    if (bnow && s < s1 && (s & (MD_CLUSTER_SIZE - 1)) == 0) {
        bnow[2 * (size_t)(s / MD_CLUSTER_SIZE)] = make_float4(lo[0], lo[1], lo[2], 0.0f);
        bnow[2 * (size_t)(s / MD_CLUSTER_SIZE) + 1] = make_float4(hi[0], hi[1], hi[2], 0.0f);
    }
}

/* The block's maxima of m[4] into the step state (the whole block; at most 8 warps). */
__device__ static __forceinline__ void cl_gather_block_max(float m[4], cl_state_t *st)
{
    __shared__ float part[4][8];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        m[k] = cl_warp_max(m[k]);
        if (lane == 0)
            part[k][warp] = m[k];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 0; k < 4; k++) {
            float v = 0;
            for (int w = 0; w < (int)(blockDim.x >> 5); w++)
                v = fmaxf(v, part[k][w]);
            if (v > 0)
                atomicMax(&st->mx[k], __float_as_uint(v));
        }
    }
}

/* One thread, after every block of the step's part has put its maxima (acquired): the prune
 * decisions for the next kernels and the counters; fin_loc / fin_nl: this part finishes the
 * local list's / the whole step's displacements (fin_nl publishes the watch); count_nl: there
 * is a non-local kernel to prune. */
__device__ static __forceinline__ void cl_gather_finish(cl_state_t *st, md_clusters_watch_t *watch,
                                                        int fin_loc, int fin_nl, int count_nl,
                                                        float thr_in2, float thr_out2)
{
    volatile cl_state_t *vs = st;
    const float mloc = __uint_as_float(vs->mx[0]), mnl = __uint_as_float(vs->mx[1]);
    /* a list not pruned since its build prunes whatever the displacement */
    if (fin_loc) {
        const int pr = !vs->valid[0] || mloc >= thr_in2;
        vs->prune[0] = pr;
        vs->prunes[0] += pr;
        vs->mx[0] = 0;
    }
    if (fin_nl) {
        const int pr = !vs->valid[1] || mnl >= thr_in2;
        const float mb = __uint_as_float(vs->mx[2]), ms = __uint_as_float(vs->mx[3]);
        vs->prune[1] = pr;
        vs->prunes[1] += pr && count_nl; /* no halo: no non-local kernel to prune */
        vs->exceeded += mb >= thr_out2;
        vs->steps += 1;
        vs->mx[1] = vs->mx[2] = vs->mx[3] = 0;
        if (watch) {
            volatile md_clusters_watch_t *w = watch;
            w->build_d2 = mb;
            w->step_d2 = ms;
            w->prunes[0] = vs->prunes[0];
            w->prunes[1] = vs->prunes[1];
            w->exceeded = vs->exceeded;
            __threadfence_system();
            w->steps = vs->steps; /* last: a reader that sees the count sees the values */
        }
    }
}

#endif
