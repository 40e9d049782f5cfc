/* The gathers of the cluster slots: current positions in, displacements measured against the
 * last prunes and the build, the prune decisions for the next kernels and the watch the host
 * reads (see md_cluster.h). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "halox/inline_device.cuh"
#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_cluster_internal.cuh"
#include "platforms/cuda/md_timeline.cuh"

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
 * arithmetic of md__kernel_kick, so the positions are those of the kick kernel. With take, the
 * step before's force kick first (md__clusters_kick's arithmetic, without returned forces): f
 * takes the atom's slot force from fs (zeroed), v += h f; and that step ends (cl_step_end, set
 * buf ^ 1 of the maxima, with watch and the outer threshold) in the first thread. */
typedef struct cl_kick_drift {
    float *v;
    float *f;
    float h, dt;
    int take;
    float *fs;
    md_clusters_watch_t *watch;
    float thr_out2;
} cl_kick_drift_t;

/* The slots of part 0 (home), 1 (halo) or 2 (all) take the current positions; the build's
 * cluster counts ncl_home and ncl, or with dims (spans: md_cluster.h) those on the device; refs:
 * 3 arrays of nslots float4 (local prune, non-local prune, build); bnow: the clusters' boxes now
 * (for the prunes); st: the maxima of the displacements (into set buf), and the count of steps
 * by the gather
 * that completes a step's positions (part 1 or 2, or 0 without halo clusters). kd.v (home
 * slots): each atom is kicked and drifted first. nvshmem-inline (halox/inline.h): inl_wait (the
 * grid within the view's spin_blocks): each block first waits for the coordinates of every
 * pulse, and the last block completes that exchange; inl_send (home slots): each atom's position
 * is stored into the halos it is sent to, and every block adds its share of the receivers'
 * signals once its stores are fenced. Blocks past the part's slots take part in the ticket (and
 * the shares) only. */
static __global__ void __launch_bounds__(256)
    cl_gather(int part, int ncl_home, int ncl, const int *__restrict__ dims,
              const int *__restrict__ perm, float *__restrict__ x, const uint8_t *__restrict__ zone,
              float4 *__restrict__ xq, const float4 *__restrict__ ref, size_t nslots,
              float4 *__restrict__ bnow, cl_state_t *st, int buf, cl_kick_drift_t kd,
              halox_inline_view_t inl, int inl_wait, int inl_send, md_timeline_t *tl, int tl_kind)
{
    halox_chained_wait(); /* launched chained (halox/device/launch.cuh) */
    __shared__ float part_max[4][8];
    __shared__ int last;
    if (dims) {
        ncl_home = dims[CL_D_NCL_HOME];
        ncl = dims[CL_D_NCL];
    }
    const int home_end = ncl_home * MD_CLUSTER_SIZE;
    const int s0 = part == 1 ? home_end : 0, s1 = part == 0 ? home_end : ncl * MD_CLUSTER_SIZE;
    unsigned long long epoch = 0;
    const int tn = cl_tl_begin(tl, tl_kind);
    const int ok = inl_wait ? halox_inline_block_wait(&inl, 0, &epoch) : 1;
    if (inl_wait)
        cl_tl_wait(tl, tl_kind, tn);
    if (kd.take && st && blockIdx.x == 0 && threadIdx.x == 0)
        cl_step_end(st, buf ^ 1, kd.watch, kd.thr_out2);
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    float m[4] = {0, 0, 0, 0};
    float q[3] = {CL_PAD, CL_PAD, CL_PAD}; /* no atom: out of every box */
    int real = 0;
    /* a block whose wait gave up reads nothing (the host reports the timeout) */
    if (s < s1 && ok) {
        const int a = perm[s];
        if (a >= 0) {
            real = 1;
            for (int c = 0; c < 3; c++) {
                const size_t k = 3 * (size_t)a + c;
                q[c] = x[k];
                if (kd.v) {
                    float vk = kd.v[k], fk = kd.f[k];
                    if (kd.take) {
                        float *p = kd.fs + 3 * (size_t)s + c;
                        fk = *p;
                        *p = 0.0f;
                        kd.f[k] = fk;
                        vk += kd.h * fk;
                    }
                    vk += kd.h * fk;
                    kd.v[k] = vk;
                    q[c] += kd.dt * vk;
                    x[k] = q[c];
                }
            }
            if (inl_send)
                halox_inline_put_x(&inl, a, q[0], q[1], q[2]);
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
    /* the cluster's box now (8 slots: 8 neighbouring lanes; s0 and blocks are multiples of 8) */
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
    if (st) {
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            m[k] = cl_warp_max(m[k]);
            if (lane == 0)
                part_max[k][warp] = m[k];
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int k = 0; k < 4; k++) {
                float v = 0;
                for (int w = 0; w < (int)(blockDim.x >> 5); w++)
                    v = fmaxf(v, part_max[k][w]);
                if (v > 0)
                    atomicMax(&st->mx[buf][k], __float_as_uint(v));
            }
            /* the step's positions are complete after this gather: one step more */
            if (blockIdx.x == 0 && (part != 0 || ncl == ncl_home))
                atomicAdd((unsigned long long *)&st->steps, 1ull);
        }
    }
    cl_tl_end(tl, tl_kind, tn);
    if (!inl_send && !inl_wait)
        return;
    if (threadIdx.x == 0) {
        /* the stores into peers too, before this block's share of their signals */
        if (inl_send) {
            __threadfence_system();
            halox_inline_share(&inl, 0);
        }
        if (inl_wait) {
            __threadfence();
            last = atomicAdd(&st->ticket, 1u) == gridDim.x - 1;
        }
    }
    if (!inl_wait)
        return;
    __syncthreads();
    if (!last || threadIdx.x != 0)
        return;
    __threadfence();
    st->ticket = 0;
    if (ok) /* every block has waited: the coordinate exchange is complete */
        halox_inline_complete(&inl, 0, epoch);
    cl_tl_later(tl, tl_kind, tn); /* the launch ends here */
}

/* A gather of part 0/1/2 (md__clusters_gather), with the home part's kick (kd.v) and
 * send (send) or the halo part's wait (wait). */
static cudaError_t cl_gather_launch(const md_clusters_t *c, float *x, const uint8_t *zone, int part,
                                    cl_kick_drift_t kd, const halox_inline_view_t *wait,
                                    const halox_inline_view_t *send, cudaStream_t stream)
{
    const int slots = cl_span_clusters(c, part) * MD_CLUSTER_SIZE;
    const int blocks = cl_blocks(slots, 256);
    /* the halo's coordinates come in: wait for them inside the gather when its blocks may all
     * spin at once (co-residency), else in a kernel of one thread before it */
    const int wait_here = wait && slots > 0 && blocks <= wait->spin_blocks;
    if (wait && !wait_here)
        CL_TRY(cl_halox(halox_inline_launch_wait(wait, 0, stream)));
    if (slots <= 0) /* no slots (a rank without home atoms): the kick has nothing, the send its
                       signals */
        return send ? cl_halox(halox_inline_launch_signal(send, 0, stream)) : cudaSuccess;
    halox_inline_view_t none;
    memset(&none, 0, sizeof none);
    const halox_inline_view_t *inl = wait_here ? wait : send;
    float4 *bnow = cl_pruning(c) ? (float4 *)c->bnow : NULL; /* read by prunes only */
    const int tl_kind = part == 0 ? MD_TL_HOME_GATHER : part == 1 ? MD_TL_HALO_GATHER : -1;
    HALOX_LAUNCH_CHAINED(cl_gather, blocks, 256, stream)
    (part, c->ncl_home, c->ncl, cl_span_dims(c), c->perm, x, zone, (float4 *)c->xq,
     (const float4 *)c->ref, c->cap_slots, bnow, (cl_state_t *)c->state, c->buf, kd,
     inl ? *inl : none, wait_here, send != NULL, c->tl, tl_kind);
    return cudaGetLastError();
}

extern "C" cudaError_t md__clusters_gather(const md_clusters_t *c, const float *x,
                                           const uint8_t *zone, int part,
                                           const halox_inline_view_t *inl, cudaStream_t stream)
{
    cl_kick_drift_t kd;
    memset(&kd, 0, sizeof kd);
    /* without a kick the gather only reads x */
    return cl_gather_launch(c, (float *)x, zone, part, kd, part != 0 ? inl : NULL, NULL, stream);
}

extern "C" cudaError_t md__clusters_kick_gather(const md_clusters_t *c, float *v, float *f,
                                                float *x, const uint8_t *zone, float h, float dt,
                                                int take, const halox_inline_view_t *send,
                                                cudaStream_t stream)
{
    /* the step before's force kick takes the slots' forces: no halo (no returned forces) */
    if (take && (!v || c->ncl > c->ncl_home || send))
        return cudaErrorInvalidValue;
    cl_kick_drift_t kd = {v, f, h, dt, take, c->fs, c->watch, cl_thr_out2(c)};
    return cl_gather_launch(c, x, zone, 0, kd, NULL, send, stream);
}
