/* GPU-initiated halo kernels for the NVSHMEM transports (protocol in nvshmem_halo.h).
 *
 * One kernel serves nvshmem-pulse (a launch per pulse) and nvshmem-fused (one launch for all
 * pulses): the grid is `count` rows of `blocks_per_row` blocks, a row per pulse.
 *
 * Coordinates, per row (pulse k):
 *   pass 1   pack the home atoms (map[0, home_prefix)) straight into the peer's halo (store
 *            path; with tma, gathered in shared memory and written by bulk asynchronous
 *            copies) or into the symmetric staging buffer (put path);
 *   pass 2   wait only for the signals of the pulses whose atoms this pulse forwards (needs),
 *            then pack the forwarded atoms;
 *   signal   store path: each block fences (system scope) and adds its share of one unit to
 *            the peer's signal (the shares of a row sum to one unit, so the peer sees the
 *            pulse whole when the last share lands; no ticket before the signal); put path:
 *            each block fences and counts itself done, the row's last block issues
 *            put-with-signal of the whole staging slot (one unit);
 *   tail     the row's first block waits until this PE's own pulse-k coordinates arrived, so the
 *            launch ends only when the halo is complete.
 * Forces, per row (pulses from `first` down):
 *   send     once the later pulses that forward this pulse's atoms have accumulated (feeds), the
 *            halo's forces go back to the owner's force buffer (store or put), then its signal;
 *   add      wait for the forces returned for this pulse and for pulse k+1's accumulation (the
 *            chain keeps the reference's order, so sums are bit-identical and race-free), add
 *            them into f, and mark pulse k accumulated (GPU-scope release).
 * Counters are epoch-valued: exchange e's last block of a row is the one that brings the row's
 * counter to e * blocks (after its signal on the store path), its last row the one that brings
 * the launch's to e * rows and raises the epoch, once every block has read it (no block counts
 * at its end). Waits spin with acquire
 * loads and give up after timeout_ns, recording pulse, peer and epoch; every other wait then leaves
 * at once (state->abort). */
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>

#include "halox/device/launch.cuh"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/nvshmem/shm_move.cuh"
#include "transports/nvshmem/shm_sync.cuh"

#define SHM_THREADS 256

typedef unsigned long long u64;

/* The row's blocks count themselves done (after a system-scope fence of everything this block
 * wrote); returns nonzero in the block that completes the row for epoch e. Whole block calls. */
static __device__ int shm_row_last(unsigned *counter, u64 e, int blocks)
{
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        unsigned old = atomicAdd(counter, 1u);
        /* modulo 2^32 like the counter: it wraps after 2^32 / blocks exchanges (hours) */
        last = old + 1u == (unsigned)(e * (u64)blocks);
        if (last)
            __threadfence(); /* acquire the other blocks' writes */
    }
    __syncthreads();
    return last;
}

/* Thread 0, after shm_block_signal: the row's ticket, which only the epoch's raise needs (every
 * block has read the epoch); nonzero in the row's last block. */
static __device__ int shm_row_counted(unsigned *counter, u64 e, int blocks)
{
    return atomicAdd(counter, 1u) + 1u == (unsigned)(e * (u64)blocks);
}

/* Thread 0 of a row's last block (shm_row_last): every block of the row has read the epoch. The
 * launch's rows count themselves; the last raises the epoch when asked. Nothing in this launch
 * reads the epoch again and the next launch reads it after this one completed, so the raise
 * waits for none of the launch's remaining work (waits, adds): no block counts at its end. */
static __device__ void shm_rows_done(const halox__shm_launch_t *L, int dir, u64 e)
{
    unsigned old = atomicAdd(&L->state->launch_done[dir][L->first], 1u);
    if (old + 1u == (unsigned)(e * (u64)L->count) && L->bump)
        *(volatile u64 *)&L->state->epoch[dir] = e;
}

/* The thread of a block that waits after the block's signal: in another warp than thread 0,
 * which counts the row's ticket (a returning atomic; two more in the launch's last block) at
 * the same time, so the wait does not start behind them. */
#define SHM_WAITER (SHM_THREADS > 32 ? 32 : 0)

/* The same, staged in shared memory and written to the peer by bulk asynchronous copies (TMA,
 * sm_90): one thread issues a chunk while the block gathers, so fewer SM cycles go to stores.
 * Bulk copies need 16-byte aligned destinations and sizes: the unaligned head and tail of the
 * range are plain stores (block 0). Every thread of the block calls it. */
#define SHM_TMA_BYTES 8192
template <typename T>
static __device__ void shm_pack_tma(T *dst, const T *x, const int *map, int lo, int hi, int stride,
                                    int dim, T shift, int add, int b, int bpr)
{
    __shared__ __align__(128) unsigned char buf[SHM_TMA_BYTES];
    T *sb = (T *)buf;
    const long long e0 = (long long)lo * stride, e1 = (long long)hi * stride;
    if (e1 <= e0)
        return;
    const int per = 16 / (int)sizeof(T);
    const unsigned long long a0 = (unsigned long long)(dst + e0);
    long long head = (long long)(((16 - (a0 & 15)) & 15) / sizeof(T));
    head = head < e1 - e0 ? head : e1 - e0;
    const long long body = (e1 - e0 - head) / per * per;
    const long long b0 = e0 + head, b1 = b0 + body;
    if (b == 0) {
        for (long long e = e0 + threadIdx.x; e < e1; e += blockDim.x) {
            if (e >= b0 && e < b1)
                continue;
            const long long i = e / stride;
            const int c = (int)(e - i * stride);
            T v = x[(long long)map[i] * stride + c];
            dst[e] = add && c == dim ? v + shift : v;
        }
    }
    const long long ch = SHM_TMA_BYTES / sizeof(T); /* a multiple of `per` */
    for (long long c0 = b0 + (long long)b * ch; c0 < b1; c0 += (long long)bpr * ch) {
        const long long len = b1 - c0 < ch ? b1 - c0 : ch;
        for (long long t = threadIdx.x; t < len; t += blockDim.x) {
            const long long e = c0 + t, i = e / stride;
            const int c = (int)(e - i * stride);
            T v = x[(long long)map[i] * stride + c];
            sb[t] = add && c == dim ? v + shift : v;
        }
        __syncthreads();
#if HALOX_EMU /* the bulk copy as one thread's copy */
        if (threadIdx.x == 0)
            memcpy(dst + c0, sb, (size_t)len * sizeof(T));
#else
        if (threadIdx.x == 0) {
            /* the block's shared-memory writes before the async proxy reads them */
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            asm volatile(
                "cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + c0),
                "r"((unsigned)__cvta_generic_to_shared(sb)), "r"((unsigned)(len * sizeof(T)))
                : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); /* buffer reusable */
        }
#endif
        __syncthreads();
    }
#if !HALOX_EMU
    /* the copies' writes are complete before the caller fences and signals */
    if (threadIdx.x == 0)
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

template <typename T>
__global__ void __launch_bounds__(SHM_THREADS, 2) halox__shm_coords_kernel(halox__shm_launch_t L)
{
    halox_chained_wait();  /* launched chained: the kernels before it are done */
    if (L.signal_only > 1) /* the launch floor: the launch alone */
        return;
    const int r = blockIdx.x / L.blocks_per_row, b = blockIdx.x % L.blocks_per_row;
    const int k = L.first + r;
    const halox__shm_row_t *R = &L.rows[k];
    halox__shm_state_t *S = L.state;
    __shared__ int ok;
    const u64 e = *(volatile u64 *)&S->epoch[0] + 1;
    const int n = L.signal_only ? 0 : R->send_count;
    const int direct = !L.use_put && R->x_peer != NULL;
    T *dst = (T *)(direct ? R->x_peer : R->stage);
    const T *x = (const T *)L.x;
    const int hp = R->home_prefix < n ? R->home_prefix : n;
    const int nthreads = L.blocks_per_row * blockDim.x, t0 = b * blockDim.x + threadIdx.x;
    const T shift = (T)R->shift;
    const int add = R->shift != 0.0;

    const int tma = L.tma && direct;
    /* pass 1: home atoms, no waiting */
    if (tma)
        shm_pack_tma<T>(dst, x, R->map, 0, hp, L.stride, R->dim, shift, add, b, L.blocks_per_row);
    else
        shm_pack<T>(dst, x, R->map, 0, hp, L.stride, R->dim, shift, add, t0, nthreads);
    /* pass 2: forwarded atoms, once the pulses that delivered them have signalled */
    if (threadIdx.x == 0) {
        ok = 1;
        if (n > hp)
            for (int j = 0; j < k && ok; j++)
                if (R->needs & (1u << j))
                    ok = shm_wait_units(&L, (const u64 *)&L.sig[j], e, HALOX_INLINE_SIG_SHIFT, 1, 0,
                                        j, L.rows[j].recv_pe);
    }
    __syncthreads();
    if (!ok)
        return;
    if (tma)
        shm_pack_tma<T>(dst, x, R->map, hp, n, L.stride, R->dim, shift, add, b, L.blocks_per_row);
    else
        shm_pack<T>(dst, x, R->map, hp, n, L.stride, R->dim, shift, add, t0, nthreads);

    if (direct) {
        /* the bound fields' rows with the atoms: under the same signal */
        for (int f = 0; f < L.n_fields; f++)
            shm_field_rows((char *)R->fd_peer[f], (const char *)L.fd_src[f], R->map, n, L.fd_row[f],
                           t0, nthreads);
        shm_block_signal((u64 *)R->sig_x_peer, b, L.blocks_per_row);
        if (threadIdx.x == 0 && shm_row_counted(&S->row_done[0][k], e, L.blocks_per_row))
            shm_rows_done(&L, 0, e);
    } else if (shm_row_last(&S->row_done[0][k], e, L.blocks_per_row)) {
        const size_t bytes = (size_t)n * L.stride * sizeof(T);
        if (bytes > 0) {
            nvshmemx_putmem_signal_block(R->x_sym, R->stage, bytes, &L.sig[k], SHM_SIG_UNIT,
                                         NVSHMEM_SIGNAL_ADD, R->send_pe);
        } else if (threadIdx.x == 0) {
            nvshmemx_signal_op(&L.sig[k], SHM_SIG_UNIT, NVSHMEM_SIGNAL_ADD, R->send_pe);
        }
        if (threadIdx.x == 0)
            shm_rows_done(&L, 0, e);
    }
    /* tail: this PE's own pulse-k coordinates are in before the launch ends */
    if (b == 0 && threadIdx.x == SHM_WAITER)
        ok = shm_wait_units(&L, (const u64 *)&L.sig[k], e, HALOX_INLINE_SIG_SHIFT, 1, 0, k,
                            R->recv_pe);
    __syncthreads();
    if (!ok)
        return;
    halox_chained_trigger(); /* past this block's last wait (launch.cuh) */
}

template <typename T>
__global__ void __launch_bounds__(SHM_THREADS, 2) halox__shm_forces_kernel(halox__shm_launch_t L)
{
    halox_chained_wait();
    if (L.signal_only > 1)
        return;
    const int r = blockIdx.x / L.blocks_per_row, b = blockIdx.x % L.blocks_per_row;
    const int k = L.first - r;
    const halox__shm_row_t *R = &L.rows[k];
    halox__shm_state_t *S = L.state;
    uint64_t *fsig = L.sig + HALOX_MAX_PULSES;
    __shared__ int ok;
    const u64 e = *(volatile u64 *)&S->epoch[1] + 1;
    const int nthreads = L.blocks_per_row * blockDim.x, t0 = b * blockDim.x + threadIdx.x;
    const int nxt = k + 1 < L.n_pulses; /* a later pulse exists: its accumulation comes first */

    /* send: the halo's forces of pulse k, complete once later pulses forwarding them added */
    if (threadIdx.x == 0) {
        ok = 1;
        if (R->feeds && nxt)
            ok = shm_wait_ge(&L, &S->acc_done[k + 1], e, 0, 1, k + 1, -1);
    }
    __syncthreads();
    if (!ok)
        return;
    const int nr = L.signal_only ? 0 : R->recv_count;
    const int direct = !L.use_put && R->fb_peer != NULL;
    if (direct) {
        shm_copy<T>((T *)R->fb_peer, (const T *)R->f_src, (long long)nr * L.stride, t0, nthreads);
        /* the bound reverse fields' halo rows with the forces: under the same signal */
        for (int f = 0; f < L.n_rfields; f++)
            shm_copy_bytes((char *)R->fr_peer[f],
                           (const char *)L.fr_data[f] + (size_t)R->recv_offset * L.fr_row[f],
                           (long long)nr * L.fr_row[f], t0, nthreads);
        shm_block_signal((u64 *)R->sig_f_peer, b, L.blocks_per_row);
        if (threadIdx.x == 0 && shm_row_counted(&S->row_done[1][k], e, L.blocks_per_row))
            shm_rows_done(&L, 1, e);
    } else if (shm_row_last(&S->row_done[1][k], e, L.blocks_per_row)) {
        const size_t bytes = (size_t)nr * L.stride * sizeof(T);
        if (bytes > 0) {
            nvshmemx_putmem_signal_block(R->fb_sym, R->f_src, bytes, &fsig[k], SHM_SIG_UNIT,
                                         NVSHMEM_SIGNAL_ADD, R->recv_pe);
        } else if (threadIdx.x == 0) {
            nvshmemx_signal_op(&fsig[k], SHM_SIG_UNIT, NVSHMEM_SIGNAL_ADD, R->recv_pe);
        }
        if (threadIdx.x == 0)
            shm_rows_done(&L, 1, e);
    }

    /* add: the forces returned for the atoms this PE sent in pulse k, after pulse k+1's */
    if (threadIdx.x == SHM_WAITER) {
        ok = shm_wait_units(&L, (const u64 *)&fsig[k], e, HALOX_INLINE_SIG_SHIFT, 1, 1, k,
                            R->send_pe);
        if (ok && nxt)
            ok = shm_wait_ge(&L, &S->acc_done[k + 1], e, 0, 1, k + 1, -1);
    }
    __syncthreads();
    if (!ok)
        return;
    const int ns = L.signal_only ? 0 : R->send_count;
    shm_accumulate<T>((T *)L.f, (const T *)R->fb_mine, R->map, ns, L.stride, t0, nthreads);
    for (int f = 0; f < L.n_rfields; f++)
        shm_field_add(L.fr_data[f], R->fr_mine[f], R->map, ns, L.fr_type[f], L.fr_count[f], t0,
                      nthreads);
    halox_chained_trigger(); /* past this block's last wait */
    /* accumulated: GPU-scope release for pulse k-1's rows, which wait on it (no row waits on
     * pulse 0's) */
    if (k > 0) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            unsigned old = atomicAdd(&S->acc_blocks[k], 1u);
            if (old + 1u == (unsigned)(e * (u64)L.blocks_per_row))
                shm_st_release_gpu(&S->acc_done[k], e);
        }
    }
}

__global__ void halox__shm_wait_kernel(halox__shm_launch_t L, int dir, int slot, int peer)
{
    if (L.signal_only > 1)
        return;
    const u64 e = *(volatile u64 *)&L.state->epoch[dir] + 1;
    if (shm_wait_ge(&L, (const u64 *)&L.sig[slot], e, 1, dir, slot % HALOX_MAX_PULSES, peer) &&
        L.bump)
        *(volatile u64 *)&L.state->epoch[dir] = e;
}

__global__ void halox__shm_bump_kernel(halox__shm_state_t *S, int dir) { S->epoch[dir] += 1; }

static unsigned halox__shm_grid(const halox__shm_launch_t *l)
{
    return (unsigned)(l->count * l->blocks_per_row);
}

extern "C" cudaError_t halox__shm_coords(const halox__shm_launch_t *l, cudaStream_t stream)
{
    if (l->count <= 0)
        return cudaSuccess;
    const unsigned grid = halox__shm_grid(l);
    if (l->real_double)
        HALOX_LAUNCH_CHAINED((halox__shm_coords_kernel<double>), grid, SHM_THREADS, stream)(*l);
    else
        HALOX_LAUNCH_CHAINED((halox__shm_coords_kernel<float>), grid, SHM_THREADS, stream)(*l);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__shm_forces(const halox__shm_launch_t *l, cudaStream_t stream)
{
    if (l->count <= 0)
        return cudaSuccess;
    const unsigned grid = halox__shm_grid(l);
    if (l->real_double)
        HALOX_LAUNCH_CHAINED((halox__shm_forces_kernel<double>), grid, SHM_THREADS, stream)(*l);
    else
        HALOX_LAUNCH_CHAINED((halox__shm_forces_kernel<float>), grid, SHM_THREADS, stream)(*l);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__shm_wait(const halox__shm_launch_t *l, int dir, int slot, int peer,
                                       cudaStream_t stream)
{
    HALOX_LAUNCH(halox__shm_wait_kernel, 1, 1, stream)(*l, dir, slot, peer);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__shm_bump(halox__shm_state_t *state, int dir, cudaStream_t stream)
{
    HALOX_LAUNCH(halox__shm_bump_kernel, 1, 1, stream)(state, dir);
    return cudaGetLastError();
}

extern "C" int halox__shm_max_blocks(int pes_per_gpu)
{
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        (void)cudaGetLastError();
        sms = 16;
    }
    if (pes_per_gpu < 1)
        pes_per_gpu = 1;
    /* at most two blocks per SM among the PEs of a GPU: __launch_bounds__(SHM_THREADS, 2)
     * makes two fit on every SM, so all blocks of every PE's launch can be resident at once
     * (spinning blocks never wait for blocks that cannot start); other kernels (local forces)
     * only delay their start, they never wait for them */
    int b = sms * 2 / pes_per_gpu;
    return b > 0 ? b : 1;
}
