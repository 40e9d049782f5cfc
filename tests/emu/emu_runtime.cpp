/* The host emulation's CUDA runtime (tests/emu/cuda_runtime_api.h) and launches
 * (halox_emu.h): host memory, every call complete on return; a launch runs its blocks one after
 * the other, each block's threads as POSIX threads. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cuda_runtime.h"

thread_local halox_emu_dim threadIdx, blockIdx;
halox_emu_dim blockDim, gridDim;
halox_emu_block *halox_emu_cur;

static long g_malloc_left = -1;

extern "C" void halox_emu_malloc_fail_after(long n) { g_malloc_left = n; }

extern "C" cudaError_t cudaMalloc(void **p, size_t bytes)
{
    if (g_malloc_left == 0) {
        *p = nullptr;
        g_malloc_left = -1;
        return cudaErrorMemoryAllocation;
    }
    if (g_malloc_left > 0)
        g_malloc_left--;
    /* poisoned: the code must not read what it did not write */
    *p = malloc(bytes ? bytes : 1);
    if (*p)
        memset(*p, 0xa5, bytes);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
extern "C" cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}
extern "C" cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
extern "C" cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }
extern "C" cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind)
{
    if (bytes)
        memmove(dst, src, bytes);
    return cudaSuccess;
}
extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                       enum cudaMemcpyKind kind, cudaStream_t)
{
    return cudaMemcpy(dst, src, bytes, kind);
}
extern "C" cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t)
{
    memset(p, v, bytes);
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamQuery(cudaStream_t) { return cudaSuccess; }
extern "C" cudaError_t cudaEventQuery(cudaEvent_t) { return cudaSuccess; }
extern "C" cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
extern "C" cudaError_t cudaGetDevice(int *d)
{
    *d = 0;
    return cudaSuccess;
}
extern "C" cudaError_t cudaSetDevice(int) { return cudaSuccess; }
extern "C" cudaError_t cudaGetLastError(void) { return cudaSuccess; }
extern "C" cudaError_t cudaPeekAtLastError(void) { return cudaSuccess; }
extern "C" const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess                 ? "no error"
           : e == cudaErrorMemoryAllocation ? "out of memory"
                                            : "error";
}
extern "C" const char *cudaGetErrorName(cudaError_t e)
{
    return e == cudaSuccess                 ? "cudaSuccess"
           : e == cudaErrorMemoryAllocation ? "cudaErrorMemoryAllocation"
                                            : "cudaError";
}

namespace {

struct emu_arg {
    unsigned b, t;
    const std::function<void()> *fn;
};

void *emu_thread(void *p)
{
    const emu_arg *a = static_cast<const emu_arg *>(p);
    threadIdx = {a->t, 0, 0};
    blockIdx = {a->b, 0, 0};
    (*a->fn)();
    return nullptr;
}

} // namespace

/* one launch at a time (the rank threads of a team launch at once): the grid's dimensions and
 * the current block are the emulation's globals */
static pthread_mutex_t g_launch = PTHREAD_MUTEX_INITIALIZER;

void halox_emu_run(unsigned blocks, unsigned threads, const std::function<void()> &fn)
{
    pthread_mutex_lock(&g_launch);
    blockDim = {threads, 1, 1};
    gridDim = {blocks, 1, 1};
    const unsigned warps = (threads + 31) / 32;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (unsigned b = 0; b < blocks; b++) {
        halox_emu_block blk;
        pthread_barrier_init(&blk.block, nullptr, threads);
        blk.warp.resize(warps);
        for (unsigned w = 0; w < warps; w++)
            pthread_barrier_init(&blk.warp[w], nullptr, 32);
        blk.slot.assign(32 * (size_t)warps, 0);
        halox_emu_cur = &blk;
        std::vector<pthread_t> th(threads);
        std::vector<emu_arg> args(threads);
        for (unsigned t = 0; t < threads; t++) {
            args[t] = {b, t, &fn};
            if (pthread_create(&th[t], &attr, emu_thread, &args[t]) != 0) {
                fprintf(stderr, "emulation: cannot start thread %u of block %u\n", t, b);
                abort();
            }
        }
        for (unsigned t = 0; t < threads; t++)
            pthread_join(th[t], nullptr);
        pthread_barrier_destroy(&blk.block);
        for (unsigned w = 0; w < warps; w++)
            pthread_barrier_destroy(&blk.warp[w]);
    }
    pthread_attr_destroy(&attr);
    pthread_mutex_unlock(&g_launch);
}
