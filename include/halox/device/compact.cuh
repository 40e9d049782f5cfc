/** @file
 * A stable compaction (header-only CUDA) (the indices i in [begin, end) whose flag is set,
 * in ascending order) in ONE kernel: every block takes the next tile of HALOX_CMP_BLOCK indices
 * (tiles in the order blocks start: a ticket), counts its flags, publishes the count and finds
 * the tiles before it by looking back over their published counts and prefixes, 32 at a time (a
 * decoupled look-back: a tile waits only for tiles that started before it, so it cannot wait for
 * one that never runs), publishes its own prefix and writes its indices from it in index order
 * (each thread takes consecutive indices, so a scan over the block's threads orders them). No
 * atomics decide positions, so the result is a host loop's. Three kernels (count, scan, scatter)
 * would cost two launches more.
 *
 * The flag is a functor F with `__device__ int operator()(int i) const` (0: not selected; it is
 * called once per index, so it may write per-index outputs), `__device__ void keep(int pos, int
 * i, int v) const` (called for each selected i, at its output position, with the flag's value)
 * and `__device__ unsigned bit(int i) const` (OR-ed into *mask over the selected indices; 0 when
 * unused). */
#ifndef HALOX_DEVICE_COMPACT_CUH
#define HALOX_DEVICE_COMPACT_CUH

#include <cuda_runtime.h>

#include "halox/device/launch.cuh"

/** Threads per block of a compaction. */
#define HALOX_CMP_THREADS 256
/** Consecutive indices per thread. */
#define HALOX_CMP_ITEMS 4
/** Indices per tile: one block's share. */
#define HALOX_CMP_BLOCK (HALOX_CMP_THREADS * HALOX_CMP_ITEMS)
/** The mask of a whole warp for the shuffles and ballots. */
#define HALOX_CMP_FULL 0xffffffffu

/** Tiles (blocks of a launch) for n indices, n >= 1. */
static inline int halox_cmp_blocks(int n) { return (n + HALOX_CMP_BLOCK - 1) / HALOX_CMP_BLOCK; }

/* A tile's published state, one 64-bit word: bits 0-31 the count (A) or the inclusive prefix
 * (P), bits 32-33 which (0: nothing yet), bits 34-63 the launch's epoch (the launch's state
 * below), so that the words of an earlier launch read as nothing (no reset between launches). */
/** A tile's word holds its count (aggregate). */
#define HALOX_CMP_A 1ull
/** A tile's word holds its inclusive prefix. */
#define HALOX_CMP_P 2ull
/** A tile's published word: `v` (a count or a prefix) with its kind `flag` (HALOX_CMP_A or
 *  HALOX_CMP_P) and the launch's epoch. */
__device__ static inline unsigned long long halox_cmp_word(unsigned epoch, unsigned long long flag,
                                                           int v)
{
    return ((unsigned long long)epoch << 34) | (flag << 32) | (unsigned)v;
}

/** Warp 0 of tile `tile` (all 32 lanes): its exclusive prefix, from the tiles before it, after
 *  publishing its own count `total`; then its inclusive prefix is published. The lanes read 32
 *  tiles' words at once (waiting until each has published at least its count), and the walk
 *  stops at the nearest published prefix: with every tile of a launch starting together, a walk
 *  one word at a time would take one memory round trip per tile before it, this one one per 32
 *  (the compaction's design: docs/MD-DESIGN.md, what a rebuild costs). */
__device__ static inline int halox_cmp_look_back(unsigned long long *words, int tile, int total,
                                                 unsigned epoch)
{
    const int lane = threadIdx.x & 31;
    if (tile == 0) {
        if (lane == 0)
            atomicExch(&words[0], halox_cmp_word(epoch, HALOX_CMP_P, total));
        return 0;
    }
    if (lane == 0)
        atomicExch(&words[tile], halox_cmp_word(epoch, HALOX_CMP_A, total));
    volatile unsigned long long *w = words;
    int before = 0;
    for (int j = tile - 1;; j -= 32) {
        const int at = j - lane; /* lane 0 the nearest */
        unsigned long long v = 0;
        if (at >= 0)
            do {
                v = w[at];
            } while ((unsigned)(v >> 34) != epoch || ((v >> 32) & 3ull) == 0);
        /* tile 0 publishes its prefix at once: every walk ends at a prefix */
        const unsigned p = __ballot_sync(HALOX_CMP_FULL, ((v >> 32) & 3ull) == HALOX_CMP_P);
        const int stop = p ? __ffs((int)p) - 1 : 31;
        int mine = lane <= stop ? (int)(unsigned)v : 0;
        for (int o = 16; o > 0; o >>= 1)
            mine += __shfl_xor_sync(HALOX_CMP_FULL, mine, o);
        before += mine;
        if (p)
            break;
    }
    if (lane == 0)
        atomicExch(&words[tile], halox_cmp_word(epoch, HALOX_CMP_P, before + total));
    return before;
}

/** One thread of a block: its tile and the launch's epoch from the launch's state (below); the
 * block with the last ticket (every block has read the epoch by then) clears the tickets and
 * raises the epoch for the next launch. */
__device__ static inline void halox_cmp_ticket(unsigned long long *state, int *tile_p,
                                               unsigned *epoch_p)
{
    const unsigned long long old = atomicAdd(state, 1ull);
    const int t = (int)(unsigned)old;
    const unsigned e = (unsigned)(old >> 32) & 0x3fffffffu;
    if (t == (int)gridDim.x - 1) /* the next launch: tickets from 0, the next epoch */
        atomicExch(state, (unsigned long long)((e + 1u) & 0x3fffffffu) << 32);
    *tile_p = t;
    *epoch_p = e;
}

/** Each thread's exclusive prefix of c over the block's threads, in thread order, and the block's
 * total: warps by shuffles, then the warps' sums (wsum: shared, HALOX_CMP_THREADS / 32 ints). */
__device__ static inline int halox_cmp_block_excl(int c, int *wsum, int *total_p)
{
    const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
    int v = c;
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(HALOX_CMP_FULL, v, o);
        if (lane >= o)
            v += y;
    }
    if (lane == 31)
        wsum[wp] = v;
    __syncthreads();
    int before = 0, total = 0;
    for (int q = 0; q < HALOX_CMP_THREADS / 32; q++) {
        before += q < wp ? wsum[q] : 0;
        total += wsum[q];
    }
    *total_p = total;
    return before + v - c;
}

/** The kernel of halox_compact(): one tile per block, the flags by f, the positions by the
 *  block's scan and the look-back over `words` (a word per tile), the last tile's total to
 *  *count.
 *
 *  The launch's state `state`, one 64-bit word in device memory: bits 0-31 the tickets taken,
 *  bits 32-61 the launch's epoch. One atomic gives a block its tile and the epoch; the block with
 *  the last ticket (every block has read the epoch by then) clears the tickets and raises the
 *  epoch for the next launch. So nothing of a launch is a launch argument: a compaction captured
 *  into a CUDA graph is a launch of its own at every replay. */
template <typename F>
__global__ void halox_cmp_kernel(F f, int begin, int end, int *out, int *count, unsigned *mask,
                                 unsigned long long *words, unsigned long long *state)
{
    __shared__ int tile_s, before_s;
    __shared__ unsigned epoch_s;
    __shared__ int wsum[HALOX_CMP_THREADS / 32];
    if (threadIdx.x == 0)
        halox_cmp_ticket(state, &tile_s, &epoch_s);
    __syncthreads();
    const int tile = tile_s;
    const unsigned epoch = epoch_s;
    const int base = begin + tile * HALOX_CMP_BLOCK + threadIdx.x * HALOX_CMP_ITEMS;
    int fl[HALOX_CMP_ITEMS], c = 0;
    for (int k = 0; k < HALOX_CMP_ITEMS; k++) {
        fl[k] = base + k < end ? f(base + k) : 0;
        c += fl[k] != 0;
    }
    /* exclusive scan of c over the block's threads, in thread order */
    const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
    int total = 0;
    const int excl = halox_cmp_block_excl(c, wsum, &total);
    if (wp == 0) {
        const int b = halox_cmp_look_back(words, tile, total, epoch);
        if (lane == 0) {
            before_s = b;
            if (tile == (int)gridDim.x - 1)
                *count = b + total;
        }
    }
    __syncthreads();
    int pos = before_s + excl;
    unsigned m = 0;
    for (int k = 0; k < HALOX_CMP_ITEMS; k++)
        if (fl[k]) {
            out[pos] = base + k;
            f.keep(pos, base + k, fl[k]);
            m |= f.bit(base + k);
            pos++;
        }
    if (mask) {
        for (int o = 16; o > 0; o >>= 1)
            m |= __shfl_xor_sync(HALOX_CMP_FULL, m, o);
        if (lane == 0 && m)
            atomicOr(mask, m);
    }
}

/** Scratch ints a compaction over n indices needs: the launch's state (first, at the same place
 * for every size: a compaction of another size follows on the same scratch) and a 64-bit word
 * per tile. Zero them when the scratch is new (cudaMalloc's memory is not); each compaction
 * leaves them ready for the next. */
static inline size_t halox_cmp_scratch(int n)
{
    return 2 * (size_t)(n > 0 ? halox_cmp_blocks(n) : 1) + 2;
}

/** out[0 ..) = the flagged indices of [begin, end), ascending; *count (device) = how many; *mask
 *  (device, NULL: none) |= f.bit over them. scratch: halox_cmp_scratch(end - begin) ints of
 *  device memory, 8-byte aligned. All pointers are device memory, out with room for every index
 *  of the range. One kernel on `stream` (a memset when the range is empty): stream-ordered,
 *  returns once enqueued with the launch's error. */
template <typename F>
static cudaError_t halox_compact(F f, int begin, int end, int *out, int *count, unsigned *mask,
                                 int *scratch, cudaStream_t stream)
{
    const int n = end - begin;
    if (n <= 0)
        return cudaMemsetAsync(count, 0, sizeof(int), stream);
    const int nb = halox_cmp_blocks(n);
    HALOX_LAUNCH(halox_cmp_kernel<F>, nb, HALOX_CMP_THREADS, stream)
    (f, begin, end, out, count, mask, (unsigned long long *)(void *)(scratch + 2),
     (unsigned long long *)(void *)scratch);
    return cudaPeekAtLastError();
}

#endif
