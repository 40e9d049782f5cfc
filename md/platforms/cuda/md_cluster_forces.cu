/* The slots' forces back to the atoms: halo forces for the force exchange, the second half
 * kick, every atom's force, the clear (see md_cluster.h). */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "halox/inline_device.cuh"
#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_cluster_internal.cuh"
#include "platforms/cuda/md_timeline.cuh"

/* The halo slots [s0, s1): 8 x the build's home and all clusters, or with dims (spans:
 * md_cluster.h) the counts on the device. */
__device__ static inline void cl_halo_slots(const int *dims, int *s0, int *s1)
{
    if (dims) {
        *s0 = dims[CL_D_NCL_HOME] * MD_CLUSTER_SIZE;
        *s1 = dims[CL_D_NCL] * MD_CLUSTER_SIZE;
    }
}

/* fnl[a] = fs[slot] for the halo slots [s0, s1) (cl_halo_slots), zeroing them. */
static __global__ void cl_halo_forces(int s0, int s1, const int *__restrict__ dims,
                                      const int *__restrict__ perm, float *__restrict__ fs,
                                      float *__restrict__ fnl)
{
    halox_chained_wait(); /* launched chained (halox/device/launch.cuh) */
    cl_halo_slots(dims, &s0, &s1);
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= s1)
        return;
    const int a = perm[s];
    if (a < 0)
        return;
    float *p = fs + 3 * (size_t)s;
    fnl[3 * (size_t)a] = p[0];
    fnl[3 * (size_t)a + 1] = p[1];
    fnl[3 * (size_t)a + 2] = p[2];
    p[0] = p[1] = p[2] = 0.0f;
}

/* The same straight to the owners (nvshmem-inline): the slot's force of halo atom perm[s] into
 * its owner's force buffer, the slot zeroed; every block adds its share of the owners' signals. */
static __global__ void cl_halo_forces_send(int s0, int s1, const int *__restrict__ dims,
                                           const int *__restrict__ perm, float *__restrict__ fs,
                                           halox_inline_view_t inl, md_timeline_t *tl)
{
    halox_chained_wait();
    cl_halo_slots(dims, &s0, &s1);
    const int tn = cl_tl_begin(tl, MD_TL_HALO_FORCES);
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (s < s1) {
        const int a = perm[s];
        if (a >= 0) {
            float *p = fs + 3 * (size_t)s;
            halox_inline_put_f(&inl, a, p[0], p[1], p[2]);
            p[0] = p[1] = p[2] = 0.0f;
        }
    }
    halox_inline_block_signal(&inl, 1); /* every block its share once its stores are fenced */
    cl_tl_end(tl, MD_TL_HALO_FORCES, tn);
}

/* f[a] = fs[slot_of[a]] (+ fnl[a], then zeroed) for the n atoms (with dims: the build's home
 * atoms on the device), the slot zeroed; v[a] += h f[a] when v. With st, the force kernels
 * before it have finished the step: its first thread ends it (cl_step_end from the maxima of set
 * buf: the watch, the maxima cleared).
 * inl_wait (nvshmem-inline, the grid within the view's spin_blocks): each block first waits for
 * the forces returned for our sent atoms, and the last block completes that exchange; with
 * inl_add the returned forces of each atom's sends are added (in descending pulse order). */
static __global__ void cl_kick(int n, const int *__restrict__ dims, const int *__restrict__ slot_of,
                               float *__restrict__ fs, float *__restrict__ fnl,
                               float *__restrict__ f, float *__restrict__ v, float h,
                               cl_state_t *st, int buf, md_clusters_watch_t *watch, float thr_out2,
                               halox_inline_view_t inl, int inl_wait, int inl_add,
                               md_timeline_t *tl, int tl_kind)
{
    halox_chained_wait();
    if (dims)
        n = dims[CL_D_NHOME];
    if (st && blockIdx.x == 0 && threadIdx.x == 0)
        cl_step_end(st, buf, watch, thr_out2);
    unsigned long long epoch = 0;
    const int tn = cl_tl_begin(tl, tl_kind);
    const int ok = inl_wait ? halox_inline_block_wait(&inl, 1, &epoch) : 1;
    if (inl_wait) {
        /* every block past its wait completes the exchange: no count at the kernel's end */
        halox_inline_waited(&inl, &inl.ticket[3], 1, epoch, ok);
        cl_tl_wait(tl, tl_kind, tn);
    }
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    /* a block whose wait gave up writes nothing (the host reports the timeout) */
    if (a < n && ok) {
        float *p = fs + 3 * (size_t)slot_of[a];
        float t[3] = {p[0], p[1], p[2]};
        p[0] = p[1] = p[2] = 0.0f;
        if (fnl) {
            float *q = fnl + 3 * (size_t)a;
            t[0] += q[0], t[1] += q[1], t[2] += q[2];
            q[0] = q[1] = q[2] = 0.0f;
        }
        if (inl_add)
            halox_inline_add_f(&inl, a, &t[0], &t[1], &t[2]);
        for (int k = 0; k < 3; k++) {
            f[3 * (size_t)a + k] = t[k];
            if (v)
                v[3 * (size_t)a + k] += h * t[k];
        }
    }
    cl_tl_end(tl, tl_kind, tn);
}

extern "C" cudaError_t md__clusters_halo_forces(const md_clusters_t *c, float *fnl,
                                                const halox_inline_view_t *inl, cudaStream_t stream)
{
    /* the halo slots a launch spans (cl_reach; with spans the counts are read on the device) */
    const int *dims = cl_span_dims(c);
    const int s0 = c->ncl_home * MD_CLUSTER_SIZE, s1 = c->ncl * MD_CLUSTER_SIZE;
    const int slots = cl_span_clusters(c, 1) * MD_CLUSTER_SIZE;
    if (inl) { /* at least one block: every pulse signals, also without halo atoms */
        HALOX_LAUNCH_CHAINED(cl_halo_forces_send, cl_blocks(slots, 256), 256, stream)
        (s0, s1, dims, c->perm, c->fs, *inl, c->tl);
        return cudaGetLastError();
    }
    if (slots <= 0)
        return cudaSuccess;
    HALOX_LAUNCH_CHAINED(cl_halo_forces, cl_blocks(slots, 256), 256, stream)
    (s0, s1, dims, c->perm, c->fs, fnl);
    return cudaGetLastError();
}

extern "C" cudaError_t md__clusters_kick(const md_clusters_t *c, float *v, float *f, float *fnl,
                                         float h, const halox_inline_view_t *inl,
                                         cudaStream_t stream)
{
    /* the home atoms a launch spans (cl_reach; with spans the count is read on the device) */
    const int n = cl_reach(c, c->span.n_home, c->n_home);
    const int blocks = cl_blocks(n, 256);
    /* the returned forces: waited for inside the kick when its blocks may all spin at once
     * (co-residency), else in a kernel of one thread before it */
    const int wait_here = inl && n > 0 && blocks <= inl->spin_blocks;
    if (inl && !wait_here)
        CL_TRY(cl_halox(halox_inline_launch_wait(inl, 1, stream)));
    if (n <= 0)
        return cudaSuccess;
    halox_inline_view_t none;
    memset(&none, 0, sizeof none);
    HALOX_LAUNCH_CHAINED(cl_kick, blocks, 256, stream)
    (c->n_home, cl_span_dims(c), c->slot_of, c->fs, fnl, f, v, h, (cl_state_t *)c->state, c->buf,
     c->watch, cl_thr_out2(c), inl ? *inl : none, wait_here, inl != NULL, c->tl, MD_TL_KICK);
    return cudaGetLastError();
}

extern "C" cudaError_t md__clusters_take_forces(const md_clusters_t *c, float *f,
                                                cudaStream_t stream)
{
    if (c->n <= 0)
        return cudaSuccess;
    halox_inline_view_t none;
    memset(&none, 0, sizeof none);
    HALOX_LAUNCH_CHAINED(cl_kick, cl_blocks(c->n, 256), 256, stream)
    (c->n, NULL, c->slot_of, c->fs, NULL, f, NULL, 0.0f, (cl_state_t *)c->state, c->buf, c->watch,
     cl_thr_out2(c), none, 0, 0, NULL, -1);
    return cudaGetLastError();
}

extern "C" cudaError_t md__clusters_clear_forces(const md_clusters_t *c, cudaStream_t stream)
{
    if (c->ncl <= 0)
        return cudaSuccess;
    return cudaMemsetAsync(c->fs, 0, 3 * sizeof(float) * (size_t)c->ncl * MD_CLUSTER_SIZE, stream);
}
