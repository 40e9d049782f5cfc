/* MD kernels of the GPU engine: velocity-Verlet kicks and drift, velocity scaling, the
 * kinetic energy, the wrap of a one-rank rebuild, the layout of atoms in a given order. Plain
 * C-like CUDA behind the C launchers of md_kernels.h; every launch is checked. The kernels are
 * static: only the launchers leave the file. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "halox/device/copy3.cuh"
#include "halox/device/launch.cuh"
#include "platforms/cuda/md_kernels.h"
#include "platforms/cuda/md_reduce.cuh"

/* The launch's error; clears the error state (sticky errors stay). */
static cudaError_t md__launched(void) { return cudaGetLastError(); }

static int md__blocks(int n, int threads)
{
    long long b = ((long long)n + threads - 1) / threads;
    return b < 1 ? 1 : (int)b;
}

/* Exclusive scan of count[0..m) into start[0..m] (start[m] = total) by one block: each thread
 * sums a contiguous chunk, the chunk sums are scanned in shared memory, then written out. */
static __global__ void md__kick_kernel(float *__restrict__ v, const float *__restrict__ f,
                                       const float *__restrict__ fnl, float *__restrict__ x, int n3,
                                       float h, float dt)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n3)
        return;
    float vk = v[k] + h * (fnl ? f[k] + fnl[k] : f[k]);
    v[k] = vk;
    if (x)
        x[k] += dt * vk;
}

extern "C" cudaError_t md__kernel_kick(float *v, const float *f, const float *fnl, float *x, int n,
                                       float h, float dt, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(md__kick_kernel, md__blocks(3 * n, 256), 256, stream)
    (v, f, fnl, dt != 0.0f ? x : NULL, 3 * n, h, dt);
    return md__launched();
}

static __global__ void md__scale_kernel(float *__restrict__ v, int n3, float a)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n3)
        v[k] *= a;
}

extern "C" cudaError_t md__kernel_scale(float *v, int n, float alpha, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(md__scale_kernel, md__blocks(3 * n, 256), 256, stream)(v, 3 * n, alpha);
    return md__launched();
}

static __global__ void md__kinetic_kernel(const float *__restrict__ v, int n3, double *out)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    double s = 0;
    if (k < n3)
        s = 0.5 * (double)v[k] * (double)v[k];
    md__block_add(s, out);
}

extern "C" cudaError_t md__kernel_kinetic(const float *v, int n, double *out, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(md__kinetic_kernel, md__blocks(3 * n, 256), 256, stream)(v, 3 * n, out);
    return md__launched();
}

/* x into [0, len) per dimension (the periodic box of a one-rank run, an edge per component);
 * the largest v^2 (NaN as the largest float) into out[0] as float bits. */
static __global__ void md__wrap_kernel(float *__restrict__ x, const float *__restrict__ v, int n,
                                       float lx, float ly, float lz, unsigned *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float len[3] = {lx, ly, lz};
    float v2 = 0;
    for (int d = 0; d < 3; d++) {
        float p = x[3 * (size_t)i + d];
        p -= len[d] * floorf(p / len[d]);
        /* rounding can land exactly on the edge: the box is [0, len) */
        x[3 * (size_t)i + d] = p >= len[d] ? 0.0f : p;
        float c = v[3 * (size_t)i + d];
        v2 += c * c;
    }
    if (!(v2 == v2))
        v2 = 3.0e38f;
    atomicMax(out, __float_as_uint(v2));
}

extern "C" cudaError_t md__kernel_wrap(float *x, const float *v, int n, const float len[3],
                                       unsigned *max_v2, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(md__wrap_kernel, md__blocks(n, 256), 256, stream)
    (x, v, n, len[0], len[1], len[2], max_v2);
    return md__launched();
}

/* the largest v^2 of n atoms (NaN as the largest float) into out[0] as float bits */
static __global__ void md__max_v2_kernel(const float *__restrict__ v, int n, unsigned *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v2 = 0;
    for (int d = 0; d < 3; d++) {
        float c = v[3 * (size_t)i + d];
        v2 += c * c;
    }
    if (!(v2 == v2))
        v2 = 3.0e38f;
    atomicMax(out, __float_as_uint(v2));
}

extern "C" cudaError_t md__kernel_max_v2(const float *v, int n, unsigned *max_v2,
                                         cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    HALOX_LAUNCH(md__max_v2_kernel, md__blocks(n, 256), 256, stream)(v, n, max_v2);
    return md__launched();
}

/* row k of the gathered copies from atom order[k]; with speed (a [max, ticket] pair left zero
 * between launches) the largest |v|^2 of the atoms as float bits (NaN as the largest float) goes
 * to *speed_out (host memory mapped for the device) from the launch's last block, which also
 * leaves the pair zero again: the blow-up check without a launch, a clear or a copy of its own */
static __global__ void md__permute_kernel(const int *__restrict__ order, int n,
                                          const float *__restrict__ x, const float *__restrict__ v,
                                          const int32_t *__restrict__ id, float *__restrict__ xo,
                                          float *__restrict__ vo, int32_t *__restrict__ ido,
                                          unsigned *speed, unsigned *speed_out)
{
    __shared__ unsigned block_max;
    if (speed && threadIdx.x == 0)
        block_max = 0;
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    float v2 = 0;
    if (k < n) {
        const int a = order[k];
        for (int d = 0; d < 3; d++) {
            xo[3 * (size_t)k + d] = x[3 * (size_t)a + d];
            if (v) {
                const float c = v[3 * (size_t)a + d];
                vo[3 * (size_t)k + d] = c;
                v2 += c * c;
            }
        }
        if (id)
            ido[k] = id[a];
    }
    if (!speed)
        return;
    if (!(v2 == v2))
        v2 = 3.0e38f;
    __syncthreads();
    atomicMax(&block_max, __float_as_uint(v2));
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    atomicMax(&speed[0], block_max);
    __threadfence();
    if (atomicAdd(&speed[1], 1u) == gridDim.x - 1) {
        __threadfence(); /* every block's maximum is in */
        *(volatile unsigned *)speed_out = *(volatile unsigned *)&speed[0];
        speed[0] = 0;
        speed[1] = 0;
    }
}

extern "C" cudaError_t md__kernel_permute(const int *order, int n, float *x, float *v, int32_t *id,
                                          void *scratch, unsigned *speed, unsigned *speed_out,
                                          cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    float *xo = (float *)scratch, *vo = xo + 3 * (size_t)n;
    int32_t *ido = (int32_t *)(vo + 3 * (size_t)n);
    HALOX_LAUNCH(md__permute_kernel, md__blocks(n, 256), 256, stream)
    (order, n, x, v, id, xo, vo, ido, v ? speed : NULL, speed_out);
    cudaError_t e = md__launched();
    /* back in one launch (three copies cost the host three times as much) */
    void *const to[3] = {x, v, id};
    const void *const from[3] = {xo, vo, ido};
    const size_t bytes[3] = {sizeof(float) * 3 * (size_t)n, sizeof(float) * 3 * (size_t)n,
                             sizeof(int32_t) * (size_t)n};
    if (e == cudaSuccess)
        e = halox_copy3(to, from, bytes, stream);
    return e;
}
