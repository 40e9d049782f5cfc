/* nvshmem-inline's kernels (inline_halo.h): its own exchange, the one-thread wait and signal of a
 * view (the public launchers of halox/inline.h) and the send lists of a view. The protocol's device
 * functions are halox/inline_device.cuh, which the caller's kernels use as well, so both kinds of
 * exchange raise and wait for the same signals and may follow each other.
 *
 * Exchange, coordinates: per pulse a pack kernel stores the pulse's atoms (map order, shifted)
 * into the receiver's halo and each of its blocks adds its share of the receiver's signal once
 * its stores are fenced (halox/inline.h: signals count in units); a one-thread kernel
 * waits for this PE's signals (the pulses packed since the last wait, before a pulse that
 * forwards their atoms, and the rest at the end; the last wait completes the exchange).
 * Forces, pulses descending: per pulse a send kernel stores the halo's forces into the owner's
 * force buffer and signals; the take kernels wait for the returned forces and add them into f,
 * pulses descending (the reference's order: sums bit-identical); a pulse whose received atoms a
 * later pulse forwards sends only after that pulse's take. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "halox/device/launch.cuh"
#include "halox/inline_device.cuh"
#include "kernels/scan.h"
#include "transports/nvshmem/inline_halo.h"
#include "transports/nvshmem/shm_move.cuh"
#include "transports/nvshmem/shm_sync.cuh"

#define INL_THREADS 256

static int inl_blocks(long long n)
{
    long long b = (n + INL_THREADS - 1) / INL_THREADS;
    return b < 1 ? 1 : b > 65535 ? 65535 : (int)b;
}

/* the endpoint's wait, with its state's record */
static __device__ int inl_wait(const halox__shm_launch_t *L, int dir, int k, int peer,
                               unsigned long long want)
{
    halox__shm_state_t *S = L->state;
    return halox_inline_wait_ge((const unsigned long long *)L->sig + dir * HALOX_MAX_PULSES + k,
                                want, &S->abort, &S->fail, L->host_flag, L->timeout_ns, dir, k,
                                peer);
}

template <typename T> __global__ void inl_pack_kernel(halox__shm_launch_t L, int k)
{
    halox_chained_wait();    /* launched chained (launch.cuh) */
    halox_chained_trigger(); /* no wait here */
    if (L.signal_only > 1)   /* the launch floor: the launch alone */
        return;
    const halox__shm_row_t *R = &L.rows[k];
    const int n = L.signal_only ? 0 : R->send_count;
    shm_pack<T>((T *)R->x_peer, (const T *)L.x, R->map, 0, n, L.stride, R->dim, (T)R->shift,
                R->shift != 0.0, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
    shm_block_signal((unsigned long long *)R->sig_x_peer, blockIdx.x, gridDim.x);
}

/* Polls before its chained wait: the signals it waits for come from peers, not from the kernel
 * before it (the pack, whose early trigger made this block resident), so the poll overlaps the
 * pack's end; the chained wait after it keeps the stream's order for what follows (this kernel
 * completes only after the pack did). The epoch it reads was raised by a launch that completed
 * before the pack began. */
__global__ void inl_await_kernel(halox__shm_launch_t L, int dir, uint32_t pulses, int bump)
{
    if (L.signal_only > 1) {
        halox_chained_wait();
        return;
    }
    const unsigned long long e = *(volatile unsigned long long *)&L.state->epoch[dir] + 1;
    int ok = 1;
    for (int k = 0; k < L.n_pulses && ok; k++) {
        if (!((pulses >> k) & 1u))
            continue;
        const halox__shm_row_t *R = &L.rows[k];
        ok = inl_wait(&L, dir, k, dir ? R->send_pe : R->recv_pe, e);
    }
    halox_chained_wait();
    if (ok && bump)
        *(volatile unsigned long long *)&L.state->epoch[dir] = e;
}

template <typename T> __global__ void inl_send_kernel(halox__shm_launch_t L, int k)
{
    halox_chained_wait();
    halox_chained_trigger(); /* no wait here */
    if (L.signal_only > 1)
        return;
    const halox__shm_row_t *R = &L.rows[k];
    const long long n = L.signal_only ? 0 : (long long)R->recv_count * L.stride;
    shm_copy<T>((T *)R->fb_peer, (const T *)R->f_src, n, blockIdx.x * blockDim.x + threadIdx.x,
                gridDim.x * blockDim.x);
    shm_block_signal((unsigned long long *)R->sig_f_peer, blockIdx.x, gridDim.x);
}

/* f[map[i]] += fb_mine[i] (3 components; src has the exchange stride), after the wait: a pulse
 * sends each atom once, so no two threads add to the same element */
template <typename T> __global__ void inl_take_kernel(halox__shm_launch_t L, int k, int bump)
{
    if (L.signal_only > 1) {
        halox_chained_wait();
        return;
    }
    const halox__shm_row_t *R = &L.rows[k];
    __shared__ int ok;
    const unsigned long long e = *(volatile unsigned long long *)&L.state->epoch[1] + 1;
    /* thread 0 polls before the chained wait (as inl_await_kernel: the returned forces come from
     * the peer, not from the send kernel before this one); every thread waits for the kernel
     * before it, then touches f */
    if (threadIdx.x == 0)
        ok = inl_wait(&L, 1, k, R->send_pe, e);
    halox_chained_wait();
    if (threadIdx.x == 0) {
        /* the launch's last block past its wait completes the exchange (ok or not: a failed wait
         * is reported by the host); the epoch is read by later launches only, after this one
         * completed, so nothing is fenced and the kernel's end waits for no count */
        unsigned *ticket = &L.state->inl_ticket[1][k];
        if (atomicAdd(ticket, 1u) == gridDim.x - 1) {
            *(volatile unsigned *)ticket = 0;
            if (bump && ok)
                *(volatile unsigned long long *)&L.state->epoch[1] = e;
        }
    }
    __syncthreads();
    halox_chained_trigger(); /* past the wait */
    const int n = ok && !L.signal_only ? R->send_count : 0;
    shm_accumulate<T>((T *)L.f, (const T *)R->fb_mine, R->map, n, L.stride,
                      blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

__global__ void inl_view_wait_kernel(halox_inline_view_t v, int dir)
{
    halox_chained_wait();
    unsigned long long e = 0;
    if (halox_inline_wait(&v, dir, &e))
        halox_inline_complete(&v, dir, e);
}

__global__ void inl_view_signal_kernel(halox_inline_view_t v, int dir)
{
    halox_chained_wait();
    __threadfence_system(); /* no halox_inline_last_block here: the earlier kernels' stores */
    halox_inline_signal(&v, dir);
}

extern "C" cudaError_t halox__inl_pack(const halox__shm_launch_t *l, int k, int blocks,
                                       cudaStream_t stream)
{
    const int b = l->signal_only || blocks < 1 ? 1 : blocks;
    if (l->real_double)
        HALOX_LAUNCH_CHAINED((inl_pack_kernel<double>), b, INL_THREADS, stream)(*l, k);
    else
        HALOX_LAUNCH_CHAINED((inl_pack_kernel<float>), b, INL_THREADS, stream)(*l, k);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__inl_await(const halox__shm_launch_t *l, int dir, uint32_t pulses,
                                        int bump, cudaStream_t stream)
{
    HALOX_LAUNCH_CHAINED(inl_await_kernel, 1, 1, stream)(*l, dir, pulses, bump);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__inl_send(const halox__shm_launch_t *l, int k, int blocks,
                                       cudaStream_t stream)
{
    const int b = l->signal_only || blocks < 1 ? 1 : blocks;
    if (l->real_double)
        HALOX_LAUNCH_CHAINED((inl_send_kernel<double>), b, INL_THREADS, stream)(*l, k);
    else
        HALOX_LAUNCH_CHAINED((inl_send_kernel<float>), b, INL_THREADS, stream)(*l, k);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__inl_take(const halox__shm_launch_t *l, int k, int bump, int blocks,
                                       cudaStream_t stream)
{
    const int b = blocks < 1 ? 1 : blocks;
    if (l->real_double)
        HALOX_LAUNCH_CHAINED((inl_take_kernel<double>), b, INL_THREADS, stream)(*l, k, bump);
    else
        HALOX_LAUNCH_CHAINED((inl_take_kernel<float>), b, INL_THREADS, stream)(*l, k, bump);
    return cudaGetLastError();
}

/* The public launchers (halox/inline.h): one thread of `kernel` on the view's direction dir, or
 * an error naming who (the launcher) and the direction, or the CUDA error of the launch (the
 * runtime's error stays for callers that read it). */
static halox_status_t inl_view_launch(void (*kernel)(halox_inline_view_t, int),
                                      const halox_inline_view_t *v, int dir, void *stream,
                                      const char *who)
{
    if (!v || (dir != 0 && dir != 1))
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: %s", who,
                            v ? "give direction 0 (coordinates) or 1 (forces)" : "no view given");
    HALOX_LAUNCH_CHAINED(kernel, 1, 1, (cudaStream_t)stream)(*v, dir);
    const cudaError_t e = cudaPeekAtLastError();
    if (e == cudaSuccess)
        return HALOX_OK;
    return halox__error(HALOX_ERR_COMM, "%s: the launch of direction %d failed: %s (%s)", who, dir,
                        cudaGetErrorString(e), cudaGetErrorName(e));
}

extern "C" halox_status_t halox_inline_launch_wait(const halox_inline_view_t *v, int dir,
                                                   void *stream)
{
    return inl_view_launch(inl_view_wait_kernel, v, dir, stream, "halox_inline_launch_wait");
}

extern "C" halox_status_t halox_inline_launch_signal(const halox_inline_view_t *v, int dir,
                                                     void *stream)
{
    return inl_view_launch(inl_view_signal_kernel, v, dir, stream, "halox_inline_launch_signal");
}

/* ---- send lists ----------------------------------------------------------------------------- */

/* every pulse's map in one launch: block b serves pulse k where first[k] <= b < first[k + 1] */
typedef struct inl_maps {
    const int *map[HALOX_MAX_PULSES];
    int count[HALOX_MAX_PULSES];
    int first[HALOX_MAX_PULSES + 1];
    int n_pulses;
} inl_maps_t;

static __device__ int inl_pulse_of_block(const inl_maps_t *M)
{
    int k = 0;
    while (k + 1 < M->n_pulses && (int)blockIdx.x >= M->first[k + 1])
        k++;
    return k;
}

/* count[a]: the pulses that send home atom a; mask[a]: which (bit k: pulse k) */
static __global__ void inl_count_kernel(inl_maps_t M, int n_home, int *__restrict__ count,
                                        unsigned *__restrict__ mask)
{
    const int k = inl_pulse_of_block(&M);
    const int i = ((int)blockIdx.x - M.first[k]) * blockDim.x + threadIdx.x;
    if (i >= M.count[k])
        return;
    const int a = M.map[k][i];
    if (a >= 0 && a < n_home) {
        atomicAdd(&count[a], 1);
        atomicOr(&mask[a], 1u << k);
    }
}

/* each atom appears once in a map, and its entry of pulse k goes after those of the higher
 * pulses that send it (pulses descending): its place needs no cursor, no race, no order of
 * launches */
static __global__ void inl_place_kernel(inl_maps_t M, int n_home, const int *__restrict__ start,
                                        const unsigned *__restrict__ mask,
                                        halox_inline_send_t *send)
{
    const int k = inl_pulse_of_block(&M);
    const int i = ((int)blockIdx.x - M.first[k]) * blockDim.x + threadIdx.x;
    if (i >= M.count[k])
        return;
    const int a = M.map[k][i];
    if (a < 0 || a >= n_home)
        return;
    halox_inline_send_t s;
    s.pulse = k;
    s.index = i;
    send[start[a] + __popc(mask[a] >> (k + 1))] = s;
}

extern "C" size_t halox__inl_sends_scratch(int n_home) { return 3 * (size_t)(n_home + 1); }

extern "C" size_t halox__inl_sends_scan_scratch(int n_home)
{
    return halox__kernel_scan_scratch(n_home);
}

extern "C" cudaError_t halox__inl_sends(int n_home, int n_pulses, const int *const *maps,
                                        const int *counts, int *start, halox_inline_send_t *send,
                                        int *scratch, int *scan, cudaStream_t stream)
{
    /* count and mask cleared together; cursor only because the scan writes one */
    int *count = scratch, *cursor = count + 2 * (n_home + 1);
    unsigned *mask = (unsigned *)(count + (n_home + 1));
    inl_maps_t M;
    memset(&M, 0, sizeof M);
    M.n_pulses = n_pulses < HALOX_MAX_PULSES ? n_pulses : HALOX_MAX_PULSES;
    int blocks = 0;
    for (int k = 0; k < M.n_pulses; k++) {
        M.map[k] = maps[k];
        M.count[k] = counts[k] > 0 ? counts[k] : 0;
        M.first[k] = blocks;
        blocks += M.count[k] > 0 ? inl_blocks(M.count[k]) : 0;
    }
    M.first[M.n_pulses] = blocks;
    cudaError_t e = cudaMemsetAsync(count, 0, sizeof(int) * 2 * (size_t)(n_home + 1), stream);
    if (e == cudaSuccess && blocks > 0) {
        HALOX_LAUNCH(inl_count_kernel, blocks, INL_THREADS, stream)(M, n_home, count, mask);
        e = cudaGetLastError();
    }
    /* start = exclusive scan (start[n_home] = every send) */
    if (e == cudaSuccess)
        e = n_home > 0 ? halox__kernel_scan(count, n_home, start, cursor, scan, stream)
                       : cudaMemsetAsync(start, 0, sizeof(int), stream);
    if (e == cudaSuccess && blocks > 0) {
        HALOX_LAUNCH(inl_place_kernel, blocks, INL_THREADS, stream)(M, n_home, start, mask, send);
        e = cudaGetLastError();
    }
    return e;
}
