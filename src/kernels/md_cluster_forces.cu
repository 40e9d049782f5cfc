/* The slots' forces back to the atoms: halo forces for the force exchange, the second half
 * kick, every atom's force, the clear (see md_cluster.h). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/md_cluster.h"
#include "kernels/md_cluster_internal.cuh"

/* fnl[a] = fs[slot] for the halo slots [s0, s1), zeroing them. */
static __global__ void cl_halo_forces(int s0, int s1, const int *__restrict__ perm,
                                      float *__restrict__ fs, float *__restrict__ fnl)
{
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

/* f[a] = fs[slot_of[a]] (+ fnl[a], then zeroed), the slot zeroed; v[a] += h f[a] when v. */
static __global__ void cl_kick(int n, const int *__restrict__ slot_of, float *__restrict__ fs,
                               float *__restrict__ fnl, float *__restrict__ f,
                               float *__restrict__ v, float h)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n)
        return;
    float *p = fs + 3 * (size_t)slot_of[a];
    float t[3] = {p[0], p[1], p[2]};
    p[0] = p[1] = p[2] = 0.0f;
    if (fnl) {
        float *q = fnl + 3 * (size_t)a;
        t[0] += q[0], t[1] += q[1], t[2] += q[2];
        q[0] = q[1] = q[2] = 0.0f;
    }
    for (int k = 0; k < 3; k++) {
        f[3 * (size_t)a + k] = t[k];
        if (v)
            v[3 * (size_t)a + k] += h * t[k];
    }
}

extern "C" cudaError_t halox__md_clusters_halo_forces(const md_clusters_t *c, float *fnl,
                                                      cudaStream_t stream)
{
    const int s0 = c->ncl_home * MD_CLUSTER_SIZE, s1 = c->ncl * MD_CLUSTER_SIZE;
    if (s1 <= s0)
        return cudaSuccess;
    cl_halo_forces<<<cl_blocks(s1 - s0, 256), 256, 0, stream>>>(s0, s1, c->perm, c->fs, fnl);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__md_clusters_kick(const md_clusters_t *c, float *v, float *f,
                                               float *fnl, float h, cudaStream_t stream)
{
    if (c->n_home <= 0)
        return cudaSuccess;
    cl_kick<<<cl_blocks(c->n_home, 256), 256, 0, stream>>>(c->n_home, c->slot_of, c->fs, fnl, f, v,
                                                           h);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__md_clusters_take_forces(const md_clusters_t *c, float *f,
                                                      cudaStream_t stream)
{
    if (c->n <= 0)
        return cudaSuccess;
    cl_kick<<<cl_blocks(c->n, 256), 256, 0, stream>>>(c->n, c->slot_of, c->fs, NULL, f, NULL, 0.0f);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__md_clusters_clear_forces(const md_clusters_t *c, cudaStream_t stream)
{
    if (c->ncl <= 0)
        return cudaSuccess;
    return cudaMemsetAsync(c->fs, 0, 3 * sizeof(float) * (size_t)c->ncl * MD_CLUSTER_SIZE, stream);
}
