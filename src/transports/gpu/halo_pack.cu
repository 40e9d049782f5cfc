/* Halo pack and force-accumulate kernels, float and double, stride 3 and 4.
 *
 * One thread per (atom, component): consecutive threads write consecutive reals of the packed
 * buffer (coalesced stores), and the gather reads whole atoms in a few transactions. The
 * operations are those of core's halox__pack_coords() and halox__add_forces(): a copy, plus one
 * add of the shift in the data's precision only when the shift is nonzero (x + 0 would turn -0.0
 * into +0.0); forces one add per component. Neither contracts into anything else, so the results
 * are bit-identical to the CPU reference. */
#include <cuda_runtime.h>

#include "halox/device/launch.cuh"
#include <stdint.h>

#include "transports/gpu/halo_kernels.h"

#define HALOX__KERNEL_THREADS 256
/* grid-stride loops: no more blocks than this (well above what an H200 keeps resident) */
#define HALOX__KERNEL_MAX_BLOCKS 8192

/* What a plan build's set-up message carries beside the coordinates. */
typedef struct halox__pack_meta {
    const int32_t *id;
    const uint8_t *zone;
    int32_t *id_out;
    uint8_t *zone_out;
    uint8_t bit;
} halox__pack_meta_t;

/* SETUP: also the set-up message's id and zone (the halo exchange's instance, SETUP 0, has
 * nothing of it on its path) */
template <typename T, int SETUP>
__global__ void halox__pack_coords_kernel(T *__restrict__ dst, const T *__restrict__ x,
                                          const int *__restrict__ index, int64_t total, int stride,
                                          int dim, int add_shift, T shift, halox__pack_meta_t meta)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t / stride;
        const int c = (int)(t - i * stride);
        const int64_t j = index[i];
        T v = x[j * stride + c];
        if (add_shift && c == dim)
            v = v + shift;
        dst[t] = v;
        if (SETUP && c == 0) { /* the set-up message's id and zone, once per atom */
            meta.id_out[i] = meta.id[j];
            meta.zone_out[i] = (uint8_t)(meta.zone[j] | meta.bit);
        }
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

static cudaError_t halox__pack(halox_real_t real, int stride, void *dst, const void *x,
                               const int *index, int n, int dim, double shift,
                               halox__pack_meta_t meta, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if ((stride != 3 && stride != 4) || dim < 0 || dim > 2)
        return cudaErrorInvalidValue;
    const int64_t total = (int64_t)n * stride;
    const int add = shift != 0.0;
    const unsigned b = halox__blocks(total);
    const int setup = meta.id_out != NULL;
    if (real == HALOX_FLOAT && setup)
        HALOX_LAUNCH((halox__pack_coords_kernel<float, 1>), b, HALOX__KERNEL_THREADS, stream)
    ((float *)dst, (const float *)x, index, total, stride, dim, add, (float)shift, meta);
    else if (real == HALOX_FLOAT)
        HALOX_LAUNCH((halox__pack_coords_kernel<float, 0>), b, HALOX__KERNEL_THREADS, stream)(
            (float *)dst, (const float *)x, index, total, stride, dim, add, (float)shift, meta);
    else if (real == HALOX_DOUBLE && setup)
        HALOX_LAUNCH((halox__pack_coords_kernel<double, 1>), b, HALOX__KERNEL_THREADS, stream)(
            (double *)dst, (const double *)x, index, total, stride, dim, add, shift, meta);
    else if (real == HALOX_DOUBLE)
        HALOX_LAUNCH((halox__pack_coords_kernel<double, 0>), b, HALOX__KERNEL_THREADS, stream)(
            (double *)dst, (const double *)x, index, total, stride, dim, add, shift, meta);
    else return cudaErrorInvalidValue;
    return cudaGetLastError();
}

extern "C" cudaError_t halox_kernel_pack_coords(halox_real_t real, int stride, void *dst,
                                                const void *x, const int *index, int n, int dim,
                                                double shift, cudaStream_t stream)
{
    halox__pack_meta_t none = {NULL, NULL, NULL, NULL, 0};
    return halox__pack(real, stride, dst, x, index, n, dim, shift, none, stream);
}

extern "C" cudaError_t halox_kernel_pack_setup(halox_real_t real, int stride, void *dst,
                                               const void *x, const int32_t *id,
                                               const uint8_t *zone, const int *index, int n,
                                               int dim, double shift, uint8_t bit, int32_t *id_out,
                                               uint8_t *zone_out, cudaStream_t stream)
{
    if (n > 0 && (!id || !zone || !id_out || !zone_out))
        return cudaErrorInvalidValue;
    halox__pack_meta_t meta = {id, zone, id_out, zone_out, bit};
    return halox__pack(real, stride, dst, x, index, n, dim, shift, meta, stream);
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
        HALOX_LAUNCH(halox__add_forces_kernel<float>, halox__blocks(total), HALOX__KERNEL_THREADS,
                     stream)
    ((float *)f, index, total, stride, (const float *)src);
    else if (real == HALOX_DOUBLE)
        HALOX_LAUNCH(halox__add_forces_kernel<double>, halox__blocks(total), HALOX__KERNEL_THREADS,
                     stream)((double *)f, index, total, stride, (const double *)src);
    else return cudaErrorInvalidValue;
    return cudaGetLastError();
}

/* ---- per-atom fields: rows of any size copied as words (or bytes), summed in their type ------ */

template <typename W>
__global__ void halox__field_gather_kernel(W *__restrict__ dst, const W *__restrict__ src,
                                           const int *__restrict__ index, int64_t total,
                                           int64_t words)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t / words;
        const int64_t w = t - i * words;
        dst[t] = src[(int64_t)index[i] * words + w];
    }
}

template <typename T>
__global__ void halox__field_add_kernel(T *__restrict__ f, const int *__restrict__ index,
                                        int64_t total, int count, const T *__restrict__ src)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < total;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = t / count;
        const int e = (int)(t - i * count);
        f[(int64_t)index[i] * count + e] += src[t];
    }
}

extern "C" cudaError_t halox_kernel_field_gather(void *dst, const void *src, const int *index,
                                                 int n, size_t row_bytes, cudaStream_t stream)
{
    if (n <= 0 || row_bytes == 0)
        return cudaSuccess;
    if (row_bytes % 4 == 0) {
        const int64_t words = (int64_t)(row_bytes / 4), total = (int64_t)n * words;
        HALOX_LAUNCH(halox__field_gather_kernel<uint32_t>, halox__blocks(total),
                     HALOX__KERNEL_THREADS, stream)
        ((uint32_t *)dst, (const uint32_t *)src, index, total, words);
    } else {
        const int64_t words = (int64_t)row_bytes, total = (int64_t)n * words;
        HALOX_LAUNCH(halox__field_gather_kernel<uint8_t>, halox__blocks(total),
                     HALOX__KERNEL_THREADS, stream)
        ((uint8_t *)dst, (const uint8_t *)src, index, total, words);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t halox_kernel_field_add(halox_type_t type, int count, void *f,
                                              const int *index, int n, const void *src,
                                              cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (count < 1)
        return cudaErrorInvalidValue;
    const int64_t total = (int64_t)n * count;
    const unsigned blocks = halox__blocks(total);
    switch (type) {
    case HALOX_TYPE_FLOAT:
        HALOX_LAUNCH(halox__field_add_kernel<float>, blocks, HALOX__KERNEL_THREADS, stream)
        ((float *)f, index, total, count, (const float *)src);
        break;
    case HALOX_TYPE_DOUBLE:
        HALOX_LAUNCH(halox__field_add_kernel<double>, blocks, HALOX__KERNEL_THREADS, stream)
        ((double *)f, index, total, count, (const double *)src);
        break;
    case HALOX_TYPE_INT32: /* unsigned: sums wrap as the host's do */
        HALOX_LAUNCH(halox__field_add_kernel<uint32_t>, blocks, HALOX__KERNEL_THREADS, stream)
        ((uint32_t *)f, index, total, count, (const uint32_t *)src);
        break;
    case HALOX_TYPE_INT64:
        HALOX_LAUNCH(halox__field_add_kernel<unsigned long long>, blocks, HALOX__KERNEL_THREADS,
                     stream)
        ((unsigned long long *)f, index, total, count, (const unsigned long long *)src);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
