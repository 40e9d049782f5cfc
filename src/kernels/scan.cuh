/* Internal to src/kernels: an exclusive scan of int counts in ONE kernel, by the decoupled
 * look-back of compact.cuh (tiles in ticket order, each publishing its sum and then its prefix,
 * the launch's tickets and epoch in the scratch: graph replays need no reset). start[k] =
 * cursor[k] = count[0] + ... + count[k-1], start[m] = the total; count may be start or cursor
 * (a thread reads its counts before it writes them). Three kernels did it before (the tiles'
 * sums, their scan, the tiles with their offsets): two launches more on the list build's chain of
 * small kernels, which is most of a 2-rank rebuild's wait (bench/results/2026-12-06-h100, call
 * 115). The scratch: halox__scan_scratch(m) ints, zero when new, left ready for the next scan
 * (of any size: the state sits first). */
#ifndef HALOX_KERNELS_SCAN_CUH
#define HALOX_KERNELS_SCAN_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/compact.cuh"

static __global__ void halox__scan_kernel(const int *count, int m, int *start, int *cursor,
                                          unsigned long long *words, unsigned long long *state)
{
    __shared__ int tile_s, before_s;
    __shared__ unsigned epoch_s;
    __shared__ int wsum[HALOX__CMP_THREADS / 32];
    if (threadIdx.x == 0) /* the tile and the epoch */
        halox__cmp_ticket(state, &tile_s, &epoch_s);
    __syncthreads();
    const int tile = tile_s;
    const int base = tile * HALOX__CMP_BLOCK + threadIdx.x * HALOX__CMP_ITEMS;
    int c[HALOX__CMP_ITEMS], sum = 0;
    for (int k = 0; k < HALOX__CMP_ITEMS; k++) {
        c[k] = base + k < m ? count[base + k] : 0;
        sum += c[k];
    }
    /* the threads' sums scanned over the block, in thread order */
    const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
    int total = 0;
    const int excl = halox__cmp_block_excl(sum, wsum, &total);
    if (wp == 0) {
        const int b = halox__cmp_look_back(words, tile, total, epoch_s);
        if (lane == 0) {
            before_s = b;
            if (tile == (int)gridDim.x - 1)
                start[m] = b + total;
        }
    }
    __syncthreads();
    int run = before_s + excl;
    for (int k = 0; k < HALOX__CMP_ITEMS; k++)
        if (base + k < m) {
            start[base + k] = run;
            cursor[base + k] = run;
            run += c[k];
        }
}

/* Scratch ints of a scan over m counts: the compaction's, and one to align it to 8 bytes. */
static inline size_t halox__scan_scratch(int m) { return halox__cmp_scratch(m) + 1; }

static cudaError_t halox__scan(const int *count, int m, int *start, int *cursor, int *scratch,
                               cudaStream_t stream)
{
    if (m <= 0)
        return cudaMemsetAsync(start, 0, sizeof(int), stream);
    int *s = ((uintptr_t)scratch & 7u) ? scratch + 1 : scratch; /* 64-bit words */
    HALOX__LAUNCH(halox__scan_kernel, halox__cmp_blocks(m), HALOX__CMP_THREADS, stream)
    (count, m, start, cursor, (unsigned long long *)(void *)(s + 2),
     (unsigned long long *)(void *)s);
    return cudaPeekAtLastError();
}

#endif
