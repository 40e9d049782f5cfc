/* The plan build's kernels (plan_select.h). The selection is a stable compaction (compact.cuh),
 * so the maps come out in the host planner's order. */
#include <cuda_runtime.h>

#include "halox/device/launch.cuh"
#include <stdint.h>

#include "halox/device/compact.cuh"
#include "halox/device/copy3.cuh"
#include "transports/gpu/plan_select.h"

#define HALOX__SEL_THREADS 256

/* the home check of one atom (halox__check_home_kernel's): its zone cleared, the first index
 * outside [lo, hi) kept (written so that a NaN fails: every compare with it is false) */
template <typename T>
__device__ static inline void halox__home_one(const T *__restrict__ x, int i, int stride,
                                              const double *lo, const double *hi, int *first_bad,
                                              uint8_t *zone)
{
    if (zone)
        zone[i] = 0; /* a home atom is in no halo zone (a memset less) */
    const T *p = x + (size_t)i * stride;
    const double a = (double)p[0], b = (double)p[1], c = (double)p[2];
    const int in = a >= lo[0] && a < hi[0] && b >= lo[1] && b < hi[1] && c >= lo[2] && c < hi[2];
    if (!in)
        atomicMin(first_bad, i);
}

/* the planner's test: in double, as core's halox__plan_scan (the bound and the test by
 * direction); the range bit for the mask; the home check alongside when asked */
struct halox__sel_flag {
    halox_plan_select_args_t a;
    __device__ int operator()(int i) const
    {
        if (a.first_bad) {
            if (a.real == HALOX_FLOAT)
                halox__home_one((const float *)a.x, i, a.stride, a.home_lo, a.home_hi, a.first_bad,
                                a.zone);
            else
                halox__home_one((const double *)a.x, i, a.stride, a.home_lo, a.home_hi, a.first_bad,
                                a.zone);
        }
        const size_t at = (size_t)i * (size_t)a.stride + (size_t)a.dim;
        const double v =
            a.real == HALOX_FLOAT ? (double)((const float *)a.x)[at] : ((const double *)a.x)[at];
        return a.down ? a.bound - v <= a.rh : v - a.bound < a.rh;
    }
    __device__ void keep(int, int, int) const {}
    __device__ unsigned bit(int i) const
    {
        for (int j = 0; j < a.n_ranges; j++)
            if (i >= a.range_lo[j] && i < a.range_hi[j])
                return 1u << a.range_pulse[j];
        return 0;
    }
};

extern "C" size_t halox_kernel_plan_select_scratch(int n) { return halox_cmp_scratch(n); }

extern "C" cudaError_t halox_kernel_plan_select(const halox_plan_select_args_t *a, int *out,
                                                int *count, unsigned *mask, int *scratch,
                                                cudaStream_t stream)
{
    halox__sel_flag f = {*a};
    return halox_compact(f, a->begin, a->end, out, count, mask, scratch, stream);
}

template <typename T>
__global__ void halox__check_home_kernel(const T *__restrict__ x, int n, int stride, double lo0,
                                         double lo1, double lo2, double hi0, double hi1, double hi2,
                                         int *first_bad, uint8_t *__restrict__ zone)
{
    const double lo[3] = {lo0, lo1, lo2}, hi[3] = {hi0, hi1, hi2};
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        halox__home_one(x, i, stride, lo, hi, first_bad, zone);
}

static unsigned halox__grid(int n)
{
    int b = (n + HALOX__SEL_THREADS - 1) / HALOX__SEL_THREADS;
    return (unsigned)(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

extern "C" cudaError_t halox_kernel_plan_check_home(halox_real_t real, int stride, const void *x,
                                                    int n, const double lo[3], const double hi[3],
                                                    int *first_bad, uint8_t *zone,
                                                    cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (real == HALOX_FLOAT)
        HALOX_LAUNCH(halox__check_home_kernel<float>, halox__grid(n), HALOX__SEL_THREADS, stream)
    ((const float *)x, n, stride, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], first_bad, zone);
    else HALOX_LAUNCH(halox__check_home_kernel<double>, halox__grid(n), HALOX__SEL_THREADS, stream)(
        (const double *)x, n, stride, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], first_bad, zone);
    return cudaPeekAtLastError();
}

/* A set-up message's atoms into place: es bytes of coordinates, the ids, the zones with the
 * pulse's bit, in one launch instead of two copies and a kernel. In 4-byte words where the
 * message allows (a receive half may start anywhere: the send half before it ends on its zones'
 * bytes), else byte by byte. */
__global__ void halox__place_kernel(const unsigned char *__restrict__ msg, int n, size_t es,
                                    uint8_t bit, int words, unsigned char *__restrict__ x,
                                    unsigned char *__restrict__ id, uint8_t *__restrict__ zone)
{
    const size_t t0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    const size_t cb = es * (size_t)n, ib = sizeof(int32_t) * (size_t)n;
    halox_copy_region(x, msg, cb, words);
    halox_copy_region(id, msg + cb, ib, words);
    for (size_t i = t0; i < (size_t)n; i += step)
        zone[i] = (uint8_t)(msg[cb + ib + i] | bit);
}

extern "C" cudaError_t halox_kernel_plan_place(const void *msg, int n, size_t es, uint8_t bit,
                                               void *x, int32_t *id, uint8_t *zone,
                                               cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    const int words =
        es % 4 == 0 && (uintptr_t)msg % 4 == 0 && (uintptr_t)x % 4 == 0 && (uintptr_t)id % 4 == 0;
    const size_t units = words ? es / 4 * (size_t)n : es * (size_t)n;
    HALOX_LAUNCH(halox__place_kernel, halox__grid(units < 0x7fffffff ? (int)units : 0x7fffffff),
                 HALOX__SEL_THREADS, stream)
    ((const unsigned char *)msg, n, es, bit, words, (unsigned char *)x, (unsigned char *)id, zone);
    return cudaPeekAtLastError();
}
