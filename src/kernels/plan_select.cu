/* The plan build's kernels (plan_select.h).
 *
 * The selection is a stable compaction in three kernels: every block counts its selected atoms
 * (HALOX__SEL_ITEMS per thread), one block scans the counts into offsets, every block writes its
 * atoms' indices from its offset in index order (each thread takes consecutive atoms, so a scan
 * over the block's threads orders them). No atomics decide positions, so the maps come out in
 * the host planner's order. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/plan_select.h"

#define HALOX__SEL_THREADS  256
#define HALOX__SEL_ITEMS    4
#define HALOX__SEL_BLOCK    (HALOX__SEL_THREADS * HALOX__SEL_ITEMS)
#define HALOX__SCAN_THREADS 1024
#define HALOX__FULL         0xffffffffu

static int halox__sel_blocks(int n) { return (n + HALOX__SEL_BLOCK - 1) / HALOX__SEL_BLOCK; }

/* the planner's test: in double, as core's halox__plan_scan */
__device__ static int halox__sel_flag(const halox_plan_select_args_t &a, int i)
{
    const size_t at = (size_t)i * (size_t)a.stride + (size_t)a.dim;
    const double v =
        a.real == HALOX_FLOAT ? (double)((const float *)a.x)[at] : ((const double *)a.x)[at];
    return v - a.lo < a.rh;
}

__device__ static unsigned halox__sel_range_bit(const halox_plan_select_args_t &a, int i)
{
    for (int j = 0; j < a.n_ranges; j++)
        if (i >= a.range_lo[j] && i < a.range_hi[j])
            return 1u << a.range_pulse[j];
    return 0;
}

/* the sum of v over the block (every thread gets it) */
__device__ static int halox__block_sum(int v)
{
    __shared__ int part[HALOX__SEL_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(HALOX__FULL, v, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    int t = 0;
    for (int w = 0; w < HALOX__SEL_THREADS / 32; w++)
        t += part[w];
    return t;
}

__global__ void halox__sel_count_kernel(halox_plan_select_args_t a, int *block_count)
{
    const int base = a.begin + blockIdx.x * HALOX__SEL_BLOCK;
    int c = 0;
    for (int k = 0; k < HALOX__SEL_ITEMS; k++) {
        const int i = base + k * HALOX__SEL_THREADS + threadIdx.x;
        if (i < a.end)
            c += halox__sel_flag(a, i);
    }
    c = halox__block_sum(c);
    if (threadIdx.x == 0)
        block_count[blockIdx.x] = c;
}

/* one block: block_count[] into exclusive offsets, the total into *count */
__global__ void halox__sel_scan_kernel(int *block_count, int nb, int *count)
{
    __shared__ int sh[HALOX__SCAN_THREADS];
    const int t = threadIdx.x;
    int carry = 0;
    for (int base = 0; base < nb; base += HALOX__SCAN_THREADS) {
        const int i = base + t;
        const int v = i < nb ? block_count[i] : 0;
        sh[t] = v;
        __syncthreads();
        for (int o = 1; o < HALOX__SCAN_THREADS; o <<= 1) {
            const int add = t >= o ? sh[t - o] : 0;
            __syncthreads();
            sh[t] += add;
            __syncthreads();
        }
        if (i < nb)
            block_count[i] = carry + sh[t] - v;
        carry += sh[HALOX__SCAN_THREADS - 1];
        __syncthreads(); /* everyone read the total before the next round writes sh */
    }
    if (t == 0)
        *count = carry;
}

__global__ void halox__sel_scatter_kernel(halox_plan_select_args_t a, const int *block_off,
                                          int *out, unsigned *mask)
{
    const int base = a.begin + blockIdx.x * HALOX__SEL_BLOCK + threadIdx.x * HALOX__SEL_ITEMS;
    int f[HALOX__SEL_ITEMS], c = 0;
    for (int k = 0; k < HALOX__SEL_ITEMS; k++) {
        f[k] = base + k < a.end ? halox__sel_flag(a, base + k) : 0;
        c += f[k];
    }
    /* exclusive scan of c over the block's threads, in thread order */
    __shared__ int wsum[HALOX__SEL_THREADS / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int v = c;
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(HALOX__FULL, v, o);
        if (lane >= o)
            v += y;
    }
    if (lane == 31)
        wsum[w] = v;
    __syncthreads();
    int before = 0;
    for (int q = 0; q < w; q++)
        before += wsum[q];
    int pos = block_off[blockIdx.x] + before + v - c;
    unsigned m = 0;
    for (int k = 0; k < HALOX__SEL_ITEMS; k++)
        if (f[k]) {
            out[pos++] = base + k;
            m |= halox__sel_range_bit(a, base + k);
        }
    for (int o = 16; o > 0; o >>= 1)
        m |= __shfl_xor_sync(HALOX__FULL, m, o);
    if (lane == 0 && m)
        atomicOr(mask, m);
}

extern "C" size_t halox_kernel_plan_select_scratch(int n)
{
    return (size_t)(n > 0 ? halox__sel_blocks(n) : 1);
}

extern "C" cudaError_t halox_kernel_plan_select(const halox_plan_select_args_t *a, int *out,
                                                int *count, unsigned *mask, int *scratch,
                                                cudaStream_t stream)
{
    const int n = a->end - a->begin;
    if (n <= 0)
        return cudaMemsetAsync(count, 0, sizeof(int), stream);
    const int nb = halox__sel_blocks(n);
    halox__sel_count_kernel<<<nb, HALOX__SEL_THREADS, 0, stream>>>(*a, scratch);
    halox__sel_scan_kernel<<<1, HALOX__SCAN_THREADS, 0, stream>>>(scratch, nb, count);
    halox__sel_scatter_kernel<<<nb, HALOX__SEL_THREADS, 0, stream>>>(*a, scratch, out, mask);
    return cudaPeekAtLastError();
}

template <typename T>
__global__ void halox__check_home_kernel(const T *__restrict__ x, int n, int stride, double lo0,
                                         double lo1, double lo2, double hi0, double hi1, double hi2,
                                         int *first_bad)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const T *p = x + (size_t)i * stride;
        const double a = (double)p[0], b = (double)p[1], c = (double)p[2];
        /* written so that a NaN fails: every compare with it is false */
        const int in = a >= lo0 && a < hi0 && b >= lo1 && b < hi1 && c >= lo2 && c < hi2;
        if (!in)
            atomicMin(first_bad, i);
    }
}

static unsigned halox__grid(int n)
{
    int b = (n + HALOX__SEL_THREADS - 1) / HALOX__SEL_THREADS;
    return (unsigned)(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

extern "C" cudaError_t halox_kernel_plan_check_home(halox_real_t real, int stride, const void *x,
                                                    int n, const double lo[3], const double hi[3],
                                                    int *first_bad, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    if (real == HALOX_FLOAT)
        halox__check_home_kernel<float><<<halox__grid(n), HALOX__SEL_THREADS, 0, stream>>>(
            (const float *)x, n, stride, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], first_bad);
    else
        halox__check_home_kernel<double><<<halox__grid(n), HALOX__SEL_THREADS, 0, stream>>>(
            (const double *)x, n, stride, lo[0], lo[1], lo[2], hi[0], hi[1], hi[2], first_bad);
    return cudaPeekAtLastError();
}

__global__ void halox__gather_meta_kernel(const int32_t *__restrict__ id,
                                          const uint8_t *__restrict__ zone,
                                          const int *__restrict__ index, int n, uint8_t bit,
                                          int32_t *__restrict__ id_out,
                                          uint8_t *__restrict__ zone_out)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        const int j = index[i];
        id_out[i] = id[j];
        zone_out[i] = (uint8_t)(zone[j] | bit);
    }
}

extern "C" cudaError_t halox_kernel_plan_gather_meta(const int32_t *id, const uint8_t *zone,
                                                     const int *index, int n, uint8_t bit,
                                                     int32_t *id_out, uint8_t *zone_out,
                                                     cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    halox__gather_meta_kernel<<<halox__grid(n), HALOX__SEL_THREADS, 0, stream>>>(
        id, zone, index, n, bit, id_out, zone_out);
    return cudaPeekAtLastError();
}

__global__ void halox__zone_or_kernel(uint8_t *__restrict__ dst, const uint8_t *__restrict__ src,
                                      int n, uint8_t bit)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        dst[i] = (uint8_t)(src[i] | bit);
}

extern "C" cudaError_t halox_kernel_plan_zone_or(uint8_t *dst, const uint8_t *src, int n,
                                                 uint8_t bit, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    halox__zone_or_kernel<<<halox__grid(n), HALOX__SEL_THREADS, 0, stream>>>(dst, src, n, bit);
    return cudaPeekAtLastError();
}
