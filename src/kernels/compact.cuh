/* Internal to src/kernels: a stable compaction (the indices i in [begin, end) whose flag is set,
 * in ascending order) in three kernels: every block counts its flags (HALOX__CMP_ITEMS per
 * thread), one block scans the counts into offsets, every block writes its indices from its
 * offset in index order (each thread takes consecutive indices, so a scan over the block's
 * threads orders them). No atomics decide positions, so the result is a host loop's. The flag
 * is a functor F with `__device__ int operator()(int i) const` and, for the scatter, `__device__
 * unsigned bit(int i) const` (OR-ed into *mask over the selected indices; 0 when unused). */
#ifndef HALOX_KERNELS_COMPACT_CUH
#define HALOX_KERNELS_COMPACT_CUH

#include <cuda_runtime.h>

#include "kernels/launch.cuh"

#define HALOX__CMP_THREADS 256
#define HALOX__CMP_ITEMS   4
#define HALOX__CMP_BLOCK   (HALOX__CMP_THREADS * HALOX__CMP_ITEMS)
#define HALOX__CMP_SCAN    1024
#define HALOX__CMP_FULL    0xffffffffu

static inline int halox__cmp_blocks(int n) { return (n + HALOX__CMP_BLOCK - 1) / HALOX__CMP_BLOCK; }

/* the sum of v over the block (every thread gets it) */
__device__ static inline int halox__cmp_block_sum(int v)
{
    __shared__ int part[HALOX__CMP_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_down_sync(HALOX__CMP_FULL, v, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    int t = 0;
    for (int w = 0; w < HALOX__CMP_THREADS / 32; w++)
        t += part[w];
    return t;
}

template <typename F>
__global__ void halox__cmp_count_kernel(F f, int begin, int end, int *block_count)
{
    const int base = begin + blockIdx.x * HALOX__CMP_BLOCK;
    int c = 0;
    for (int k = 0; k < HALOX__CMP_ITEMS; k++) {
        const int i = base + k * HALOX__CMP_THREADS + threadIdx.x;
        if (i < end)
            c += f(i) != 0;
    }
    c = halox__cmp_block_sum(c);
    if (threadIdx.x == 0)
        block_count[blockIdx.x] = c;
}

/* one block: block_count[] into exclusive offsets, the total into *count */
__global__ static void halox__cmp_scan_kernel(int *block_count, int nb, int *count)
{
    __shared__ int sh[HALOX__CMP_SCAN];
    const int t = threadIdx.x;
    int carry = 0;
    for (int base = 0; base < nb; base += HALOX__CMP_SCAN) {
        const int i = base + t;
        const int v = i < nb ? block_count[i] : 0;
        sh[t] = v;
        __syncthreads();
        for (int o = 1; o < HALOX__CMP_SCAN; o <<= 1) {
            const int add = t >= o ? sh[t - o] : 0;
            __syncthreads();
            sh[t] += add;
            __syncthreads();
        }
        if (i < nb)
            block_count[i] = carry + sh[t] - v;
        carry += sh[HALOX__CMP_SCAN - 1];
        __syncthreads(); /* everyone read the total before the next round writes sh */
    }
    if (t == 0)
        *count = carry;
}

template <typename F>
__global__ void halox__cmp_scatter_kernel(F f, int begin, int end, const int *block_off, int *out,
                                          unsigned *mask)
{
    const int base = begin + blockIdx.x * HALOX__CMP_BLOCK + threadIdx.x * HALOX__CMP_ITEMS;
    int fl[HALOX__CMP_ITEMS], c = 0;
    for (int k = 0; k < HALOX__CMP_ITEMS; k++) {
        fl[k] = base + k < end ? f(base + k) != 0 : 0;
        c += fl[k];
    }
    /* exclusive scan of c over the block's threads, in thread order */
    __shared__ int wsum[HALOX__CMP_THREADS / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int v = c;
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(HALOX__CMP_FULL, v, o);
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
    for (int k = 0; k < HALOX__CMP_ITEMS; k++)
        if (fl[k]) {
            out[pos++] = base + k;
            m |= f.bit(base + k);
        }
    if (mask) {
        for (int o = 16; o > 0; o >>= 1)
            m |= __shfl_xor_sync(HALOX__CMP_FULL, m, o);
        if (lane == 0 && m)
            atomicOr(mask, m);
    }
}

/* Scratch ints a compaction over n indices needs. */
static inline size_t halox__cmp_scratch(int n)
{
    return (size_t)(n > 0 ? halox__cmp_blocks(n) : 1);
}

/* out[0 ..) = the flagged indices of [begin, end), ascending; *count (device) = how many; *mask
 * (device, NULL: none) |= f.bit over them. */
template <typename F>
static cudaError_t halox__compact(F f, int begin, int end, int *out, int *count, unsigned *mask,
                                  int *scratch, cudaStream_t stream)
{
    const int n = end - begin;
    if (n <= 0)
        return cudaMemsetAsync(count, 0, sizeof(int), stream);
    const int nb = halox__cmp_blocks(n);
    HALOX__LAUNCH(halox__cmp_count_kernel<F>, nb, HALOX__CMP_THREADS, stream)
    (f, begin, end, scratch);
    HALOX__LAUNCH(halox__cmp_scan_kernel, 1, HALOX__CMP_SCAN, stream)(scratch, nb, count);
    HALOX__LAUNCH(halox__cmp_scatter_kernel<F>, nb, HALOX__CMP_THREADS, stream)
    (f, begin, end, scratch, out, mask);
    return cudaPeekAtLastError();
}

#endif
