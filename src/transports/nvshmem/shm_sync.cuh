/* Internal to the NVSHMEM transports: what the NVSHMEM kernels (nvshmem_halo.cu, nvshmem_msg.cu)
 * and the runtime's copy kernel (nvshmem_rt.cu) share: acquire loads and release stores at the
 * scopes their signals need, the global timer, the bounded wait for a signal (a timeout recorded in
 * the endpoint's state for the host to name, every other wait leaving at once), and a copy of bytes
 * in 16-byte words where both ends allow it. The host emulation (tests/emu) has its own
 * versions of the PTX. */
#ifndef HALOX_KERNELS_SHM_SYNC_CUH
#define HALOX_KERNELS_SHM_SYNC_CUH

#include <stddef.h>
#include <stdint.h>

#include "halox/inline_device.cuh" /* the signal unit and a block's share of it */
#include "transports/nvshmem/nvshmem_halo.h"

typedef unsigned long long shm_u64;

#if HALOX_EMU /* the host emulation (tests/emu): the same orders through the compiler's atomics */
static inline shm_u64 shm_ld_acquire_sys(const shm_u64 *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline shm_u64 shm_ld_acquire_gpu(const shm_u64 *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static inline void shm_st_release_gpu(shm_u64 *p, shm_u64 v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
static inline long long shm_now_ns(void) { return halox_emu_now_ns(); }
#else
static __device__ __forceinline__ shm_u64 shm_ld_acquire_sys(const shm_u64 *p)
{
    shm_u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ shm_u64 shm_ld_acquire_gpu(const shm_u64 *p)
{
    shm_u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

static __device__ __forceinline__ void shm_st_release_gpu(shm_u64 *p, shm_u64 v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

static __device__ __forceinline__ long long shm_now_ns(void)
{
    shm_u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return (long long)t;
}
#endif

/* Spin until *p >= want << shift (sys: written by peers; else by this GPU). 1: reached; 0: gave
 * up (timeout recorded here, in units of 1 << shift, or another wait failed first). One thread
 * calls it. A signal in units (shift > 0) is raised by many blocks' shares of one unit. */
static __device__ int shm_wait_units(const halox__shm_launch_t *L, const shm_u64 *p, shm_u64 want,
                                     int shift, int sys, int dir, int pulse, int peer)
{
    halox__shm_state_t *S = L->state;
    const shm_u64 w = want << shift;
    shm_u64 v = sys ? shm_ld_acquire_sys(p) : shm_ld_acquire_gpu(p);
    if (v >= w)
        return 1;
    const long long t0 = shm_now_ns();
    for (unsigned it = 1;; it++) {
        v = sys ? shm_ld_acquire_sys(p) : shm_ld_acquire_gpu(p);
        if (v >= w)
            return 1;
        if ((it & 31) == 0) {
            if (*(volatile int *)&S->abort)
                return 0;
            if (shm_now_ns() - t0 > L->timeout_ns) {
                if (atomicCAS(&S->fail.code, 0, 1) == 0) {
                    S->fail.dir = dir;
                    S->fail.pulse = pulse;
                    S->fail.peer = peer;
                    S->fail.epoch = want;
                    S->fail.seen = v >> shift;
                    __threadfence_system();
                    *L->host_flag = 1;
                }
                *(volatile int *)&S->abort = 1;
                return 0;
            }
        }
        __nanosleep(32);
    }
}

/* Spin until *p >= want: shm_wait_units in whole units. */
static __device__ int shm_wait_ge(const halox__shm_launch_t *L, const shm_u64 *p, shm_u64 want,
                                  int sys, int dir, int pulse, int peer)
{
    return shm_wait_units(L, p, want, 0, sys, dir, pulse, peer);
}

/* The halo signals of nvshmem-fused, -pulse and -inline count exchanges in units of
 * 2^HALOX_INLINE_SIG_SHIFT (halox/inline.h): into a peer reached by stores every block adds its
 * share as soon as its own stores are fenced, so the signal leaves with the last block without
 * a ticket's round trip before it; a put (one per row) or a single thread adds the whole unit. */
#define SHM_SIG_UNIT (1ull << HALOX_INLINE_SIG_SHIFT)

/* Whole block, once per block of the `blocks` that signal one exchange: what the block stored is
 * fenced system-wide, then block b's share is added to the receiver's signal. */
static __device__ void shm_block_signal(shm_u64 *sig_peer, unsigned long long b,
                                        unsigned long long blocks)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence_system();
        atomicAdd_system(sig_peer, halox_inline_share_of(b, blocks));
    }
}

/* bytes from src to dst by thread t of `step` (grid-stride): 16-byte words where both ends allow
 * it, the rest byte by byte */
static __device__ __forceinline__ void shm_copy_bytes(char *dst, const char *src, size_t bytes,
                                                      size_t t, size_t step)
{
    const int vec = (((uintptr_t)dst | (uintptr_t)src) & 15) == 0;
    const size_t words = vec ? bytes / 16 : 0;
    for (size_t i = t; i < words; i += step)
        ((int4 *)dst)[i] = ((const int4 *)src)[i];
    for (size_t i = 16 * words + t; i < bytes; i += step)
        dst[i] = src[i];
}

#endif
