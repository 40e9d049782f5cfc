/** @file
 * An exclusive scan of int counts on the device in ONE kernel (header-only CUDA), as a counting
 * sort needs it (cell lists, send lists):
 *
 *   halox_scan(count, m, start, cursor, scratch, stream)
 *       start[k] = cursor[k] = count[0] + ... + count[k-1] for k < m, start[m] = the total;
 *       count may be start or cursor (each count is read before it is overwritten). scratch:
 *       halox_scan_scratch(m) ints of device memory, zero when new and left ready for the next
 *       scan of any size (the launch's tickets and epoch sit first, so graph replays need no
 *       reset). Stream-ordered; returns the launch's error.
 *
 * Up to 16 x 1024 counts one block scans them, a chunk per thread; above, the tiles take the
 * decoupled look-back of halox/device/compact.cuh (tiles in ticket order, each publishing its
 * sum and then its prefix). Integer sums: the result is a host loop's, whatever the path. */
#ifndef HALOX_DEVICE_SCAN_CUH
#define HALOX_DEVICE_SCAN_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "halox/device/compact.cuh"

/** The kernel of the tiled scan (halox_scan_tiles()): one tile of counts per block, its sum
 *  scanned over the block and its offset by the compaction's look-back over `words`; `state` the
 *  launch's tickets and epoch (halox_cmp_kernel()). */
static __global__ void halox_scan_kernel(const int *count, int m, int *start, int *cursor,
                                         unsigned long long *words, unsigned long long *state)
{
    __shared__ int tile_s, before_s;
    __shared__ unsigned epoch_s;
    __shared__ int wsum[HALOX_CMP_THREADS / 32];
    if (threadIdx.x == 0) /* the tile and the epoch */
        halox_cmp_ticket(state, &tile_s, &epoch_s);
    __syncthreads();
    const int tile = tile_s;
    const int base = tile * HALOX_CMP_BLOCK + threadIdx.x * HALOX_CMP_ITEMS;
    int c[HALOX_CMP_ITEMS], sum = 0;
    for (int k = 0; k < HALOX_CMP_ITEMS; k++) {
        c[k] = base + k < m ? count[base + k] : 0;
        sum += c[k];
    }
    /* the threads' sums scanned over the block, in thread order */
    const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
    int total = 0;
    const int excl = halox_cmp_block_excl(sum, wsum, &total);
    if (wp == 0) {
        const int b = halox_cmp_look_back(words, tile, total, epoch_s);
        if (lane == 0) {
            before_s = b;
            if (tile == (int)gridDim.x - 1)
                start[m] = b + total;
        }
    }
    __syncthreads();
    int run = before_s + excl;
    for (int k = 0; k < HALOX_CMP_ITEMS; k++)
        if (base + k < m) {
            start[base + k] = run;
            cursor[base + k] = run;
            run += c[k];
        }
}

/** Scratch ints of a scan over m counts: the compaction's, and one to align it to 8 bytes. */
static inline size_t halox_scan_scratch(int m) { return halox_cmp_scratch(m) + 1; }

/** The tiled scan alone (any m; halox_scan takes it above one block's worth), with halox_scan()'s
 *  arguments and contract; m <= 0 sets start[0] = 0. */
static cudaError_t halox_scan_tiles(const int *count, int m, int *start, int *cursor, int *scratch,
                                    cudaStream_t stream)
{
    if (m <= 0)
        return cudaMemsetAsync(start, 0, sizeof(int), stream);
    int *s = ((uintptr_t)scratch & 7u) ? scratch + 1 : scratch; /* 64-bit words */
    HALOX_LAUNCH(halox_scan_kernel, halox_cmp_blocks(m), HALOX_CMP_THREADS, stream)
    (count, m, start, cursor, (unsigned long long *)(void *)(s + 2),
     (unsigned long long *)(void *)s);
    return cudaPeekAtLastError();
}

/** Threads of the one-block scan (halox_scan_block()), each a chunk of counts. */
#define HALOX_SCAN1_THREADS 1024

/** The one-block scan of halox_scan() for small m: launched with 1 block of HALOX_SCAN1_THREADS
 *  threads, each scans a chunk of the counts. */
static __global__ void halox_scan_block(const int *count, int m, int *start, int *cursor)
{
    __shared__ int part[HALOX_SCAN1_THREADS];
    int t = threadIdx.x;
    int chunk = (m + HALOX_SCAN1_THREADS - 1) / HALOX_SCAN1_THREADS;
    int a = t * chunk, b = a + chunk < m ? a + chunk : m;
    int s = 0;
    for (int k = a; k < b; k++)
        s += count[k];
    part[t] = s;
    __syncthreads();
    for (int off = 1; off < HALOX_SCAN1_THREADS; off *= 2) {
        int v = t >= off ? part[t - off] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    int run = part[t] - s; /* exclusive prefix of this chunk */
    for (int k = a; k < b; k++) {
        int c = count[k];
        start[k] = run;
        cursor[k] = run;
        run += c;
    }
    if (t == HALOX_SCAN1_THREADS - 1)
        start[m] = part[t];
}

/** start = cursor = the exclusive scan of count[0..m), start[m] = the total (the file comment:
 *  arguments, scratch, stream order); one launch: a block for m up to 16 x HALOX_SCAN1_THREADS,
 *  the tiled scan above. Device pointers; returns the launch's error and clears it. */
static inline cudaError_t halox_scan(const int *count, int m, int *start, int *cursor, int *scratch,
                                     cudaStream_t stream)
{
    if (m <= 16 * HALOX_SCAN1_THREADS) { /* one block: a chunk per thread */
        HALOX_LAUNCH(halox_scan_block, 1, HALOX_SCAN1_THREADS, stream)(count, m, start, cursor);
        return cudaGetLastError();
    }
    cudaError_t e = halox_scan_tiles(count, m, start, cursor, scratch, stream);
    (void)cudaGetLastError();
    return e;
}

#endif
