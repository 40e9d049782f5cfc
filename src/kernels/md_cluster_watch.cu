/* The gathers of the cluster slots: current positions in, displacements measured against the
 * last prunes and the build, the prune decisions for the next kernels and the watch the host
 * reads (see md_cluster.h). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "halox/inline_device.cuh"
#include "kernels/inline_halo.h"
#include "kernels/md_cluster.h"
#include "kernels/md_cluster_gather.cuh"
#include "kernels/md_cluster_internal.cuh"
#include "kernels/md_timeline.cuh"

/* Slots [s0, s1) take the current positions (cl_gather_slot); fin_loc / fin_nl: this gather
 * finishes the local / the whole step (cl_gather_finish, by the last block). nvshmem-inline
 * (halox/inline.h): inl_wait (the grid within the view's spin_blocks): each block first waits for
 * the coordinates of every pulse, and the last block completes that exchange; inl_send (home
 * slots): each atom's position is stored into the halos it is sent to, and the last block
 * signals the receivers. */
static __global__ void __launch_bounds__(256)
    cl_gather(int s0, int s1, int home_end, int fin_loc, int fin_nl, int count_nl, float thr_in2,
              float thr_out2, const int *__restrict__ perm, float *__restrict__ x,
              const uint8_t *__restrict__ zone, float4 *__restrict__ xq,
              const float4 *__restrict__ ref, size_t nslots, float4 *__restrict__ bnow,
              cl_state_t *st, md_clusters_watch_t *watch, cl_kick_drift_t kd,
              halox_inline_view_t inl, int inl_wait, int inl_send, md_timeline_t *tl, int tl_kind)
{
    __shared__ int last;
    unsigned long long epoch = 0;
    const int tn = cl_tl_begin(tl, tl_kind);
    const int ok = inl_wait ? halox_inline_block_wait(&inl, 0, &epoch) : 1;
    if (inl_wait)
        cl_tl_wait(tl, tl_kind, tn);
    float m[4];
    /* a block whose wait gave up reads nothing (the host reports the timeout) */
    cl_gather_slot(s0 + blockIdx.x * blockDim.x + threadIdx.x, s1, home_end, ok, perm, x, zone,
                   xq, ref, nslots, bnow, kd, inl_send ? &inl : NULL, m);
    cl_tl_end(tl, tl_kind, tn);
    if (!st)
        return;
    cl_gather_block_max(m, st);
    if (threadIdx.x == 0) {
        /* the stores into peers too, before the last block signals them */
        if (inl_send)
            __threadfence_system();
        else
            __threadfence();
        last = atomicAdd(&st->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || threadIdx.x != 0)
        return;
    __threadfence();
    if (inl_wait && ok) /* every block has waited: the coordinate exchange is complete */
        halox_inline_complete(&inl, 0, epoch);
    if (inl_send) /* every block has stored its atoms: the receivers may read */
        halox_inline_signal(&inl, 0);
    cl_gather_finish(st, watch, fin_loc, fin_nl, count_nl, thr_in2, thr_out2);
    st->ticket = 0;
    cl_tl_later(tl, tl_kind, tn); /* the launch ends here */
}

/* After a build: every list prunes in the next kernels, maxima and ticket cleared. */
static __global__ void cl_arm(cl_state_t *st)
{
    memset(&st->fz, 0, sizeof st->fz);
    st->prune[0] = st->prune[1] = 1;
    st->valid[0] = st->valid[1] = 0;
    st->mx[0] = st->mx[1] = st->mx[2] = st->mx[3] = 0;
    st->ticket = 0;
}

/* A gather of part 0/1/2 (halox__md_clusters_gather), with the home part's kick (kd.v) and
 * send (send) or the halo part's wait (wait). */
static cudaError_t cl_gather_launch(const md_clusters_t *c, float *x, const uint8_t *zone,
                                    int part, cl_kick_drift_t kd, const halox_inline_view_t *wait,
                                    const halox_inline_view_t *send, cudaStream_t stream)
{
    const int home_end = c->ncl_home * MD_CLUSTER_SIZE;
    int s0 = part == 1 ? home_end : 0;
    int s1 = part == 0 ? home_end : c->ncl * MD_CLUSTER_SIZE;
    const int blocks = cl_blocks(s1 - s0, 256);
    /* the halo's coordinates come in: wait for them inside the gather when its blocks may all
     * spin at once (co-residency), else in a kernel of one thread before it */
    const int wait_here = wait && s1 > s0 && blocks <= wait->spin_blocks;
    if (wait && !wait_here)
        CL_TRY(halox__inl_wait(wait, 0, stream));
    if (s1 <= s0) /* no slots (a rank without home atoms): the kick has nothing, the send its
                     signals */
        return send ? halox__inl_signal(send, 0, stream) : cudaSuccess;
    halox_inline_view_t none;
    memset(&none, 0, sizeof none);
    const halox_inline_view_t *inl = wait_here ? wait : send;
    const int halo = c->ncl > c->ncl_home;
    const int fin_loc = part != 1, fin_nl = part != 0 || !halo;
    const float rin = cl_pruning(c) ? c->rl_in : c->rl;
    float4 *bnow = cl_pruning(c) ? (float4 *)c->bnow : NULL; /* read by prunes only */
    cl_gather<<<blocks, 256, 0, stream>>>(
        s0, s1, home_end, fin_loc, fin_nl, halo, cl_half2(rin, c->rc), cl_half2(c->rl, c->rc),
        c->perm, x, zone, (float4 *)c->xq, (const float4 *)c->ref, (size_t)c->ncl * MD_CLUSTER_SIZE,
        bnow, (cl_state_t *)c->state, c->watch, kd, inl ? *inl : none, wait_here,
        send != NULL, c->tl, part == 0 ? MD_TL_HOME_GATHER : part == 1 ? MD_TL_HALO_GATHER : -1);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__md_clusters_gather(const md_clusters_t *c, const float *x,
                                                 const uint8_t *zone, int part,
                                                 const halox_inline_view_t *inl,
                                                 cudaStream_t stream)
{
    cl_kick_drift_t kd;
    memset(&kd, 0, sizeof kd);
    /* without a kick the gather only reads x */
    return cl_gather_launch(c, (float *)x, zone, part, kd, part != 0 ? inl : NULL, NULL, stream);
}

extern "C" cudaError_t halox__md_clusters_kick_gather(const md_clusters_t *c, float *v,
                                                      const float *f, float *x,
                                                      const uint8_t *zone, float h, float dt,
                                                      const halox_inline_view_t *send,
                                                      cudaStream_t stream)
{
    cl_kick_drift_t kd = {v, f, h, dt};
    return cl_gather_launch(c, x, zone, 0, kd, NULL, send, stream);
}

extern "C" cudaError_t halox__md_clusters_arm(const md_clusters_t *c, cudaStream_t stream)
{
    cl_arm<<<1, 1, 0, stream>>>((cl_state_t *)c->state);
    return cudaGetLastError();
}
