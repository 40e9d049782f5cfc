/** @file
 * The device side of the exchange inside the caller's kernels (protocol: halox/inline.h).
 *
 * Header-only CUDA (sm_70 or newer: system-scope atomics and acquire loads); every function takes
 * the view by pointer (a kernel argument's address is fine). What a step's kernels call:
 *
 *   producer of home positions, per home atom a:   halox_inline_put_x(v, a, x, y, z)
 *     then every block of the launch (whole block): halox_inline_block_signal(v, 0)
 *     (or the launch's last block alone:           if (halox_inline_last_block(&v->ticket[t]))
 *                                                      if (threadIdx.x == 0)
 *                                                          halox_inline_signal(v, 0);)
 *   first reader of the halo, each block before it reads (the whole block):
 *                                                  ok = halox_inline_block_wait(v, 0, &e)
 *     (or thread 0 alone: halox_inline_wait(v, 0, &e))
 *     and after the launch's last block has read: halox_inline_complete(v, 0, e)
 *   producer of halo forces, per halo atom j:      halox_inline_put_f(v, j, fx, fy, fz)
 *     then as for the coordinates with direction 1
 *   consumer of forces, per home atom a (after halox_inline_block_wait(v, 1, &e)):
 *                                                  halox_inline_add_f(v, a, &fx, &fy, &fz)
 *     and its last block:                          halox_inline_complete(v, 1, e)
 *   (a consumer may instead count its blocks right after the wait, the whole block:
 *                                                  halox_inline_waited(v, &v->ticket[t], dir, e,
 * ok))
 *
 * A block whose wait returned 0 (timed out, or another wait of this rank did) must not read what
 * it waited for; it still takes part in halox_inline_last_block. */
#ifndef HALOX_INLINE_DEVICE_CUH
#define HALOX_INLINE_DEVICE_CUH

#include <cuda_runtime.h>
#ifdef HALOX_EMU
#include <time.h>
#endif

#include "halox/inline.h"
#include "halox/plan.h"

/** *p read with acquire semantics at system scope (what a peer or the host released before it is
 *  visible after it). */
static __device__ __forceinline__ unsigned long long
halox_inline_ld_acquire_sys(const unsigned long long *p)
{
    unsigned long long v;
#ifdef HALOX_EMU /* the host emulation of halox's tests */
    v = __atomic_load_n(p, __ATOMIC_ACQUIRE);
#else
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
#endif
    return v;
}

/** The GPU's global timer, in nanoseconds (for the waits' timeouts). */
static __device__ __forceinline__ long long halox_inline_now_ns(void)
{
    unsigned long long t;
#ifdef HALOX_EMU
    t = (unsigned long long)clock() * (1000000000ull / CLOCKS_PER_SEC);
#else
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
#endif
    return (long long)t;
}

/** One thread: spin until *sig holds exchange `want` whole (want units of
 * 2^HALOX_INLINE_SIG_SHIFT). 1: reached; 0: gave up (the record written here when this wait is the
 * first to fail: dir, pulse, peer, want, the value seen) or another wait of this rank failed first
 * (*abort). */
static __device__ int halox_inline_wait_ge(const unsigned long long *sig, unsigned long long want,
                                           int *abort, halox_inline_fail_t *fail,
                                           volatile int *host_flag, long long timeout_ns, int dir,
                                           int pulse, int peer)
{
    const unsigned long long w = want << HALOX_INLINE_SIG_SHIFT;
    unsigned long long v = halox_inline_ld_acquire_sys(sig);
    if (v >= w)
        return 1;
    const long long t0 = halox_inline_now_ns();
    for (unsigned it = 1;; it++) {
        v = halox_inline_ld_acquire_sys(sig);
        if (v >= w)
            return 1;
        if ((it & 31) == 0) {
            if (*(volatile int *)abort)
                return 0;
            if (halox_inline_now_ns() - t0 > timeout_ns) {
                if (atomicCAS(&fail->code, 0, 1) == 0) {
                    fail->dir = dir;
                    fail->pulse = pulse;
                    fail->peer = peer;
                    fail->epoch = want;
                    fail->seen = v >> HALOX_INLINE_SIG_SHIFT; /* whole exchanges */
                    __threadfence_system();
                    *host_flag = 1;
                }
                *(volatile int *)abort = 1;
                return 0;
            }
        }
        __nanosleep(32);
    }
}

/** One thread: wait for every pulse's signal of direction dir (0 coordinates in, 1 forces back)
 * of the next exchange, whose number goes to *e_p (for halox_inline_complete). 1: all arrived. */
static __device__ int halox_inline_wait(const halox_inline_view_t *v, int dir,
                                        unsigned long long *e_p)
{
    const unsigned long long e = *(volatile unsigned long long *)&v->epoch[dir] + 1;
    *e_p = e;
    for (int k = 0; k < v->n_pulses; k++) {
        const halox_inline_pulse_t *P = &v->pulse[k];
        if (!halox_inline_wait_ge(v->sig + dir * HALOX_MAX_PULSES + k, e, v->abort, v->fail,
                                  v->host_flag, v->timeout_ns, dir, k,
                                  dir ? P->send_pe : P->recv_pe))
            return 0;
    }
    return 1;
}

/** The whole block: thread 0 waits (halox_inline_wait) and every thread gets its answer, and the
 * exchange's number in *e_p. */
static __device__ int halox_inline_block_wait(const halox_inline_view_t *v, int dir,
                                              unsigned long long *e_p)
{
    __shared__ int ok;
    __shared__ unsigned long long e;
    if (threadIdx.x == 0) {
        unsigned long long ee = 0;
        ok = halox_inline_wait(v, dir, &ee);
        e = ee;
    }
    __syncthreads();
    *e_p = e;
    return ok;
}

/** One thread, once every block that waited for exchange e has passed its wait: exchange e of
 * direction dir is complete on this rank. */
static __device__ __forceinline__ void halox_inline_complete(const halox_inline_view_t *v, int dir,
                                                             unsigned long long e)
{
    *(volatile unsigned long long *)&v->epoch[dir] = e;
}

/** The whole block of a consumer, right after its halox_inline_block_wait(v, dir, &e) returned
 * ok: the launch's last block to get here completes exchange e (halox_inline_complete; with the
 * last block's ok), in place of halox_inline_last_block at the block's end. Nothing is fenced:
 * the epoch is read by later launches only, after this one completed, so it may be raised while
 * the blocks still read what they waited for, and the kernel's end waits for no count. The
 * ticket is left zero for the next launch that uses it. */
static __device__ void halox_inline_waited(const halox_inline_view_t *v, unsigned *ticket, int dir,
                                           unsigned long long e, int ok)
{
    if (threadIdx.x == 0) {
        const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(ticket, 1u) == blocks - 1) {
            *(volatile unsigned *)ticket = 0;
            if (ok)
                halox_inline_complete(v, dir, e);
        }
    }
}

/** The whole block: 1 in the launch's last block to get here (after a system-scope fence of what
 * the block wrote, and with the other blocks' writes acquired), 0 elsewhere. The ticket is left
 * zero for the next launch that uses it (launches of one ticket must not overlap). */
static __device__ int halox_inline_last_block(unsigned *ticket)
{
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        const unsigned blocks = gridDim.x * gridDim.y * gridDim.z;
        last = atomicAdd(ticket, 1u) == blocks - 1;
        if (last) {
            __threadfence();
            *(volatile unsigned *)ticket = 0;
        }
    }
    __syncthreads();
    return last;
}

/** Block b's share of one signal unit among `blocks` blocks that each add theirs once (block 0
 * takes the remainder): the shares sum to exactly one unit, any fewer to less. */
static __device__ __forceinline__ unsigned long long
halox_inline_share_of(unsigned long long b, unsigned long long blocks)
{
    const unsigned long long unit = 1ull << HALOX_INLINE_SIG_SHIFT;
    const unsigned long long q = unit / blocks;
    return b ? q : unit - (blocks - 1) * q;
}

/** This block's share among the launch's blocks. */
static __device__ __forceinline__ unsigned long long halox_inline_block_share(void)
{
    const unsigned long long b =
        blockIdx.x +
        (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    return halox_inline_share_of(b, (unsigned long long)gridDim.x * gridDim.y * gridDim.z);
}

/** Thread 0 of every block of a producer launch, after a __syncthreads that follows the block's
 * stores and a __threadfence_system() of its own: add the block's share to every pulse's signal
 * of direction dir at its peer. The peer sees the exchange when the last share lands; no ticket
 * and no second fence stand between the block's stores and its share. */
static __device__ void halox_inline_share(const halox_inline_view_t *v, int dir)
{
    const unsigned long long share = halox_inline_block_share();
    for (int k = 0; k < v->n_pulses; k++) {
        const halox_inline_pulse_t *P = &v->pulse[k];
        atomicAdd_system(dir ? P->sig_f_peer : P->sig_x_peer, share);
    }
}

/** The whole block, every block of a producer launch once, after its stores: they are fenced
 * system-wide and the block's share of the signals of direction dir goes to the peers. */
static __device__ void halox_inline_block_signal(const halox_inline_view_t *v, int dir)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        halox_inline_share(v, dir);
    }
}

/** One thread of the block that halox_inline_last_block chose: raise every pulse's signal of
 * direction dir at its peer by one unit (every pulse, also one without atoms). No fence of its own:
 * every block's system-scope fence came before its count, so the launch's stores are visible
 * to the peers before the last count, and a second fence would only lengthen the path (its cost:
 * docs/NVSHMEM.md, nvshmem-inline). A caller that signals without
 * halox_inline_last_block calls __threadfence_system() after its stores first. */
static __device__ void halox_inline_signal(const halox_inline_view_t *v, int dir)
{
    for (int k = 0; k < v->n_pulses; k++) {
        const halox_inline_pulse_t *P = &v->pulse[k];
        atomicAdd_system(dir ? P->sig_f_peer : P->sig_x_peer, 1ull << HALOX_INLINE_SIG_SHIFT);
    }
}

/** Home atom a's new position into every halo it is sent to (with its pulse's shift). */
static __device__ void halox_inline_put_x(const halox_inline_view_t *v, int a, float x, float y,
                                          float z)
{
    if (v->no_atoms)
        return;
    const int end = v->send_start[a + 1];
    for (int e = v->send_start[a]; e < end; e++) {
        const halox_inline_send_t s = v->send[e];
        const halox_inline_pulse_t *P = &v->pulse[s.pulse];
        float *d = P->x_peer + 3 * (size_t)s.index;
        const float sh = P->shift;
        /* the reference's arithmetic: the component plus the shift, in float */
        d[0] = sh != 0.0f && P->dim == 0 ? x + sh : x;
        d[1] = sh != 0.0f && P->dim == 1 ? y + sh : y;
        d[2] = sh != 0.0f && P->dim == 2 ? z + sh : z;
    }
}

/** The force on halo atom j (a local index past the home atoms) to its owner's force buffer. */
static __device__ void halox_inline_put_f(const halox_inline_view_t *v, int j, float fx, float fy,
                                          float fz)
{
    if (v->no_atoms)
        return;
    for (int k = 0; k < v->n_pulses; k++) {
        const halox_inline_pulse_t *P = &v->pulse[k];
        const int i = j - P->recv_offset;
        if (i >= 0 && i < P->recv_count) {
            float *d = P->f_peer + 3 * (size_t)i;
            d[0] = fx;
            d[1] = fy;
            d[2] = fz;
            return;
        }
    }
}

/** The forces returned for home atom a's sends, added in descending pulse order. */
static __device__ void halox_inline_add_f(const halox_inline_view_t *v, int a, float *fx, float *fy,
                                          float *fz)
{
    if (v->no_atoms)
        return;
    const int end = v->send_start[a + 1];
    for (int e = v->send_start[a]; e < end; e++) {
        const halox_inline_send_t s = v->send[e];
        const float *b = v->pulse[s.pulse].f_back + 3 * (size_t)s.index;
        *fx += b[0];
        *fy += b[1];
        *fz += b[2];
    }
}

#endif
