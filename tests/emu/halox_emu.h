/* A host emulation of the little of CUDA that halox's kernels use (halox/device/compact.cuh,
 * plan_select.cu, migrate_kernels.cu, the cluster files md_cluster_*.cu with md_kernels.cu and
 * inline_halo.cu), so that the *_emu tests run their very code on the CPU in CI (no GPU
 * there): a launch runs the blocks one after the other, each as blockDim.x fibres on the launching
 * thread (emu_runtime.cpp; on a stream being captured it is recorded, arguments by value, and
 * runs when the graph does); a fibre runs until it reaches a barrier or a spinning wait, then the
 * next one runs. __syncthreads is a barrier of the block, warp shuffles, votes and __syncwarp
 * exchange through a slot per lane between two barriers of the warp (so every lane of a warp
 * must reach them: the kernels keep their warps converged); __shared__ variables are statics (one
 * block runs at a time); atomics are the compiler's. Only 1-D grids. Not a CUDA model: enough to
 * run these kernels as written. Spinning waits on other blocks of the launch cannot run (one
 * block at a time); waits on peers can where each rank is a process (nvshmem.h), and waits on
 * other threads of the block can where they spin through __nanosleep (halox_emu_idle). */
#ifndef HALOX_TESTS_EMU_H
#define HALOX_TESTS_EMU_H

#include <math.h>
#include <pthread.h>
#include <sched.h>
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

#define HALOX_EMU 1 /* the kernels' few host alternatives (the clock, acquire loads) */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__      static
#define __restrict__ __restrict
#define __launch_bounds__(...)

/* the warps' slots of the block that runs */
struct halox_emu_block {
    std::vector<unsigned long long> slot; /* 32 per warp */
};
extern halox_emu_block *halox_emu_cur;
/* a barrier of the lanes of `mask` in this thread's warp (the lanes the warp has, when it is
 * the block's short last one): the groups of a partial mask sync apart, as 8-lane groups do */
void halox_emu_warp_sync(unsigned mask);
/* the barrier of the block */
void halox_emu_block_sync(void);
/* a fibre hands the core to the next thread of its block (none: the launching thread, a no-op) */
void halox_emu_fibre_yield(void);

static inline void __syncthreads(void) { halox_emu_block_sync(); }

template <typename T> static inline T halox_emu_shfl(unsigned mask, T v, int from_lane_or_minus)
{
    const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned long long *s = &halox_emu_cur->slot[32 * w];
    unsigned long long bits = 0;
    memcpy(&bits, &v, sizeof v);
    s[lane] = bits;
    halox_emu_warp_sync(mask);
    T out = v;
    if (from_lane_or_minus >= 0 && from_lane_or_minus < 32)
        memcpy(&out, &s[from_lane_or_minus], sizeof out);
    halox_emu_warp_sync(mask);
    return out;
}
/* shuffles within segments of `width` lanes, as CUDA's */
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, int d, int width = 32)
{
    const int lane = (int)(threadIdx.x & 31);
    return halox_emu_shfl(mask, v, lane % width - d >= 0 ? lane - d : -1);
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, int d, int width = 32)
{
    const int lane = (int)(threadIdx.x & 31);
    return halox_emu_shfl(mask, v, lane % width + d < width ? lane + d : -1);
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int m, int width = 32)
{
    const int lane = (int)(threadIdx.x & 31);
    const int to = lane ^ m;
    return halox_emu_shfl(mask, v, to / width == lane / width ? to : lane);
}

/* a shuffle from any lane of the segment (per lane) */
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int from, int width = 32)
{
    const int lane = (int)(threadIdx.x & 31);
    return halox_emu_shfl(mask, v, (lane / width) * width + (from % width + width) % width);
}
/* the lanes of mask whose predicate holds, as bits: every lane's vote through its slot */
static inline unsigned __ballot_sync(unsigned mask, int pred)
{
    const unsigned lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    unsigned long long *s = &halox_emu_cur->slot[32 * w];
    s[lane] = pred != 0;
    halox_emu_warp_sync(mask);
    unsigned b = 0;
    for (int l = 0; l < 32; l++)
        if (mask >> l & 1u)
            b |= (unsigned)(s[l] & 1u) << l;
    halox_emu_warp_sync(mask);
    return b;
}
static inline int __any_sync(unsigned m, int pred) { return __ballot_sync(m, pred) != 0; }
static inline void __syncwarp(unsigned mask = 0xffffffffu) { halox_emu_warp_sync(mask); }
static inline int __popc(unsigned v) { return __builtin_popcount(v); }
static inline int __ffs(int v) { return __builtin_ffs(v); }

/* the global timer of the waits that give up (nvshmem_halo.cu) */
#include <time.h>
static inline long long halox_emu_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}
#define __align__(n) __attribute__((aligned(n)))
struct int4 {
    int x, y, z, w;
};

/* the vector types and bit casts the cluster kernels use */
struct float2 {
    float x, y;
};
struct float4 {
    float x, y, z, w;
};
struct uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    uint4 u = {x, y, z, w};
    return u;
}
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
static inline int __float_as_int(float f)
{
    int i;
    memcpy(&i, &f, sizeof i);
    return i;
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
static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}
template <typename T> static inline T halox_emu_atomic_add_fp(T *p, T v)
{
    T old, sum;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    do
        sum = old + v;
    while (!__atomic_compare_exchange(p, &old, &sum, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
static inline float atomicAdd(float *p, float v) { return halox_emu_atomic_add_fp(p, v); }
static inline double atomicAdd(double *p, double v) { return halox_emu_atomic_add_fp(p, v); }
template <typename T> static inline T halox_emu_atomic_max(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v > old &&
           !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
template <typename T> static inline T halox_emu_atomic_min(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (v < old &&
           !__atomic_compare_exchange_n(p, &old, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline unsigned atomicMax(unsigned *p, unsigned v) { return halox_emu_atomic_max(p, v); }
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v)
{
    return halox_emu_atomic_max(p, v);
}
static inline unsigned long long atomicMin(unsigned long long *p, unsigned long long v)
{
    return halox_emu_atomic_min(p, v);
}
static inline int atomicCAS(int *p, int cmp, int v)
{
    __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
static inline unsigned long long atomicAdd_system(unsigned long long *p, unsigned long long v)
{
    return atomicAdd(p, v);
}
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_system(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
/* a spinning wait gives the core away (its peer may be another process on the same core) and
 * lets the host's MPI move (halox_emu_set_idle) */
void halox_emu_idle(void);
static inline void __nanosleep(unsigned) { halox_emu_idle(); }
template <typename T> static inline T __ldg(const T *p) { return *p; }
template <typename T> static inline T __ldcg(const T *p) { return *p; }
static inline float __fdividef(float a, float b) { return a / b; }
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
/* op recorded into the graph when stream s is being captured (true), else not (false) */
bool halox_emu_record(cudaStream_t s, const std::function<void()> &op);

/* the kernel's own parameter types, so that the arguments convert as in a launch (NULL) */
template <typename... P> struct halox_emu_launcher {
    unsigned blocks, threads;
    cudaStream_t stream;
    void (*kernel)(P...);
    const char *name;
    void operator()(P... args) const
    {
        const unsigned b = blocks, t = threads;
        void (*const k)(P...) = kernel;
        halox_emu_count(HALOX_EMU_LAUNCH);
        if (halox_emu_dropped(name)) /* halox_emu_drop */
            return;
        if (!halox_emu_record(stream, [=]() { halox_emu_run(b, t, [&]() { k(args...); }); }))
            halox_emu_run(b, t, [&]() { k(args...); });
    }
};
template <typename... P>
static inline halox_emu_launcher<P...> halox_emu_launch(unsigned blocks, unsigned threads,
                                                        cudaStream_t stream, void (*kernel)(P...),
                                                        const char *name)
{
    return halox_emu_launcher<P...>{blocks, threads, stream, kernel, name};
}
#define HALOX_LAUNCH(kernel, blocks, threads, stream)                                              \
    halox_emu_launch((unsigned)(blocks), (unsigned)(threads), (cudaStream_t)(stream), kernel,      \
                     #kernel)

#endif
