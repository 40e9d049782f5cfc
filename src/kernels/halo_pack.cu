/* Halo pack and force-accumulate kernels, float and double, stride 3 and 4.
 *
 * One thread per (atom, component): consecutive threads write consecutive reals of the packed
 * buffer (coalesced stores), and the gather reads whole atoms in a few transactions. The
 * operations are those of core's halox__pack_coords() and halox__add_forces(): a copy, plus one
 * add of the shift in the data's precision only when the shift is nonzero (x + 0 would turn -0.0
 * into +0.0); forces one add per component. Neither contracts into anything else, so the results
 * are bit-identical to the CPU reference. */
#include <cuda_runtime.h>

#include "kernels/launch.cuh"
#include <stdint.h>

#include "kernels/halo_kernels.h"

#define HALOX__KERNEL_THREADS 256
/* grid-stride loops: no more blocks than this (well above what an H200 keeps resident) */
#define HALOX__KERNEL_MAX_BLOCKS 8192

template <typename T>
__global__ void halox__pack_coords_kernel(T *__restrict__ dst, const T *__restrict__ x,
                                          const int *__restrict__ index, int64_t total, int stride,
                                          int dim, int add_shift, T shift)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t / stride;
        const int c = (int)(t - i * stride);
        T v = x[(int64_t)index[i] * stride + c];
        if (add_shift && c == dim)
            v = v + shift;
        dst[t] = v;
    }
}

template <typename T>
__global__ void halox__add_forces_kernel(T *__restrict__ f, const int *__restrict__ index,
                                         int64_t total, int stride, const T *__restrict__ src)
{
    /* components 0..2 only: a fourth component (stride 4) is left alone, as on the CPU */
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t / 3;
        const int c = (int)(t - i * 3);
        T *a = f + (int64_t)index[i] * stride + c;
        *a = *a + src[i * stride + c];
    }
}

static unsigned halox__blocks(int64_t total)
{
    int64_t b = (total + HALOX__KERNEL_THREADS - 1) / HALOX__KERNEL_THREADS;
    return (unsigned)(b < HALOX__KERNEL_MAX_BLOCKS ? b : HALOX__KERNEL_MAX_BLOCKS);
}

extern "C" cudaError_t halox_kernel_pack_coords(halox_real_t real, int stride, void *dst,
                                                const void *x, const int *index, int n, int dim,
                                                double shift, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if ((stride != 3 && stride != 4) || dim < 0 || dim > 2)
        return cudaErrorInvalidValue;
    const int64_t total = (int64_t)n * stride;
    const int add = shift != 0.0;
    if (real == HALOX_FLOAT)
        HALOX__LAUNCH(halox__pack_coords_kernel<float>, halox__blocks(total), HALOX__KERNEL_THREADS,
                      stream)
        ((float *)dst, (const float *)x, index, total, stride, dim, add, (float)shift);
    else if (real == HALOX_DOUBLE)
        HALOX__LAUNCH(halox__pack_coords_kernel<double>, halox__blocks(total),
                      HALOX__KERNEL_THREADS, stream)
        ((double *)dst, (const double *)x, index, total, stride, dim, add, shift);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}

extern "C" cudaError_t halox_kernel_add_forces(halox_real_t real, int stride, void *f,
                                               const int *index, int n, const void *src,
                                               cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (stride != 3 && stride != 4)
        return cudaErrorInvalidValue;
    const int64_t total = (int64_t)n * 3;
    if (real == HALOX_FLOAT)
        HALOX__LAUNCH(halox__add_forces_kernel<float>, halox__blocks(total), HALOX__KERNEL_THREADS,
                      stream)
        ((float *)f, index, total, stride, (const float *)src);
    else if (real == HALOX_DOUBLE)
        HALOX__LAUNCH(halox__add_forces_kernel<double>, halox__blocks(total), HALOX__KERNEL_THREADS,
                      stream)
        ((double *)f, index, total, stride, (const double *)src);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
