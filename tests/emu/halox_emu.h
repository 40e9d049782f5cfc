/* A host emulation of the little of CUDA that the kernels of src/kernels/compact.cuh,
 * plan_select.cu, migrate_kernels.cu and md_cluster_search.cuh use, so that tests/test_kernels_emu.cpp runs their very
 * code on the CPU in CI (no GPU there): a launch runs the blocks one after the other, each as
 * blockDim.x POSIX threads; __syncthreads is a barrier of the block, warp shuffles exchange
 * through a slot per lane between two barriers of the warp; __shared__ variables are statics
 * (one block runs at a time); atomics are the compiler's. Only 1-D grids, blocks a multiple of
 * 32 threads. Not a CUDA model: enough to run these kernels as written. */
#ifndef HALOX_TESTS_EMU_H
#define HALOX_TESTS_EMU_H

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>
#include <vector>

#include "cuda_runtime_api.h"

struct halox_emu_dim {
    unsigned x, y, z;
};
extern thread_local halox_emu_dim threadIdx, blockIdx;
extern halox_emu_dim blockDim, gridDim;

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __restrict__ __restrict
#define __launch_bounds__(...)

/* the block's barrier and the warps' slots */
struct halox_emu_block {
    pthread_barrier_t block;
    std::vector<pthread_barrier_t> warp;
    std::vector<unsigned long long> slot; /* 32 per warp */
};
extern halox_emu_block *halox_emu_cur;

static inline void __syncthreads(void) { pthread_barrier_wait(&halox_emu_cur->block); }

template <typename T> static inline T halox_emu_shfl(T v, int from_lane_or_minus)
{
    const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned long long *s = &halox_emu_cur->slot[32 * w];
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof v);
    s[lane] = bits;
    pthread_barrier_wait(&halox_emu_cur->warp[w]);
    T out = v;
    if (from_lane_or_minus >= 0 && from_lane_or_minus < 32)
        memcpy(&out, &s[from_lane_or_minus], sizeof out);
    pthread_barrier_wait(&halox_emu_cur->warp[w]);
    return out;
}
template <typename T> static inline T __shfl_up_sync(unsigned, T v, int d)
{
    const int lane = (int)(threadIdx.x & 31);
    return halox_emu_shfl(v, lane - d >= 0 ? lane - d : -1);
}
template <typename T> static inline T __shfl_down_sync(unsigned, T v, int d)
{
    const int lane = (int)(threadIdx.x & 31);
    return halox_emu_shfl(v, lane + d < 32 ? lane + d : -1);
}
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int m)
{
    return halox_emu_shfl(v, (int)((threadIdx.x & 31) ^ (unsigned)m));
}

/* a shuffle from any lane (per lane) */
template <typename T> static inline T __shfl_sync(unsigned, T v, int from)
{
    return halox_emu_shfl(v, from & 31);
}
/* the lanes whose predicate holds, as bits: every lane's vote through its slot */
static inline unsigned __ballot_sync(unsigned, int pred)
{
    const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned long long *s = &halox_emu_cur->slot[32 * w];
    s[lane] = pred != 0;
    pthread_barrier_wait(&halox_emu_cur->warp[w]);
    unsigned b = 0;
    for (int l = 0; l < 32; l++)
        b |= (unsigned)(s[l] & 1u) << l;
    pthread_barrier_wait(&halox_emu_cur->warp[w]);
    return b;
}
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __ffs(int v) { return __builtin_ffs(v); }

/* the vector types and bit casts the cluster kernels use */
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
static inline float4 make_float4(float x, float y, float z, float w)
{
    float4 f = {x, y, z, w};
    return f;
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static inline float __int_as_float(int i)
{
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}
static inline int atomicMax(int *p, int v)
{
    int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > old &&
           !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}

static inline int atomicMin(int *p, int v)
{
    int old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old &&
           !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline unsigned atomicOr(unsigned *p, unsigned v)
{
    return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}
static inline int atomicAdd(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); }
static inline int atomicExch(int *p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
static inline unsigned long long atomicExch(unsigned long long *p, unsigned long long v)
{
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);
}

/* round-to-nearest arithmetic: plain operations (the tests build without contraction) */
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsub_rn(double a, double b) { return a - b; }

/* run fn on every thread of a grid of `blocks` x `threads` */
void halox_emu_run(unsigned blocks, unsigned threads, const std::function<void()> &fn);

template <typename K> struct halox_emu_launcher {
    unsigned blocks, threads;
    K kernel;
    template <typename... A> void operator()(A... args) const
    {
        halox_emu_run(blocks, threads, [&]() { kernel(args...); });
    }
};
template <typename K>
static inline halox_emu_launcher<K> halox_emu_launch(unsigned blocks, unsigned threads, K kernel)
{
    return halox_emu_launcher<K>{blocks, threads, kernel};
}
#define HALOX__LAUNCH(kernel, blocks, threads, stream)                                             \
    halox_emu_launch((unsigned)(blocks), (unsigned)(threads), [](auto... a) { kernel(a...); })

#endif
