/* The host emulation's CUDA runtime (tests/emu/cuda_runtime_api.h): host memory, every call
 * complete on return (launches: emu_fibres.cpp). A stream being captured records its launches,
 * copies and sets (by value) into the graph instead; a graph's launch runs them in order. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include "cuda_runtime.h"

static long g_malloc_left = -1;

static long g_calls[HALOX_EMU_KINDS];
extern "C" void halox_emu_count(int kind)
{
    __atomic_fetch_add(&g_calls[kind], 1, __ATOMIC_SEQ_CST);
}
static char g_drop[128];
static int g_drop_n;
static std::mutex g_drop_lock;
extern "C" void halox_emu_drop(const char *kernel, int n)
{
    std::lock_guard<std::mutex> hold(g_drop_lock);
    snprintf(g_drop, sizeof g_drop, "%s", kernel ? kernel : "");
    g_drop_n = kernel ? n : 0;
}
extern "C" int halox_emu_dropped(const char *kernel)
{
    std::lock_guard<std::mutex> hold(g_drop_lock);
    if (g_drop_n <= 0 || strcmp(kernel, g_drop) != 0)
        return 0;
    g_drop_n--;
    return 1;
}
static void (*g_idle)(void);
static int g_idle_busy;
extern "C" void halox_emu_set_idle(void (*fn)(void))
{
    __atomic_store_n(&g_idle, fn, __ATOMIC_SEQ_CST);
}
void halox_emu_idle(void)
{
    halox_emu_fibre_yield(); /* the other threads of the block: their turn */
    sched_yield();
    void (*fn)(void) = __atomic_load_n(&g_idle, __ATOMIC_ACQUIRE);
    if (fn && !__atomic_exchange_n(&g_idle_busy, 1, __ATOMIC_ACQUIRE)) {
        fn();
        __atomic_store_n(&g_idle_busy, 0, __ATOMIC_RELEASE);
    }
}
extern "C" long halox_emu_calls(int kind)
{
    return kind >= 0 && kind < HALOX_EMU_KINDS ? __atomic_load_n(&g_calls[kind], __ATOMIC_SEQ_CST)
                                               : -1;
}

/* a graph and its executable: the recorded operations */
struct CUgraph_st {
    std::vector<std::function<void()>> ops;
};
struct CUgraphExec_st {
    std::vector<std::function<void()>> ops;
};
struct CUstream_st {
    int unused;
};
/* the stream this thread captures (cudaStreamCaptureModeThreadLocal), its graph, and the
 * streams that joined the capture by waiting for an event recorded in it (a fork: their work
 * is the graph's too, in the order it is enqueued, which is an order the graph allows) */
static thread_local cudaStream_t g_cap_stream;
static thread_local CUgraph_st *g_cap_graph;
static thread_local std::vector<cudaStream_t> *g_cap_joined;

static bool emu_capturing(cudaStream_t s)
{
    if (!g_cap_graph || !s)
        return false;
    if (s == g_cap_stream)
        return true;
    for (cudaStream_t j : *g_cap_joined)
        if (j == s)
            return true;
    return false;
}

bool halox_emu_record(cudaStream_t s, const std::function<void()> &op)
{
    if (!emu_capturing(s))
        return false;
    g_cap_graph->ops.push_back(op);
    return true;
}

extern "C" void halox_emu_malloc_fail_after(long n) { g_malloc_left = n; }

extern "C" cudaError_t cudaMalloc(void **p, size_t bytes)
{
    halox_emu_count(HALOX_EMU_ALLOC);
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
    halox_emu_count(HALOX_EMU_ALLOC);
    free(p);
    return cudaSuccess;
}
extern "C" cudaError_t cudaMallocHost(void **p, size_t bytes) { return cudaMalloc(p, bytes); }
extern "C" cudaError_t cudaFreeHost(void *p) { return cudaFree(p); }
extern "C" cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind)
{
    halox_emu_count(HALOX_EMU_COPY);
    halox_emu_count(HALOX_EMU_WAIT);
    if (bytes)
        memmove(dst, src, bytes);
    return cudaSuccess;
}
extern "C" cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes,
                                       enum cudaMemcpyKind kind, cudaStream_t s)
{
    halox_emu_count(HALOX_EMU_COPY);
    if (halox_emu_record(s, [=]() {
            if (bytes)
                memmove(dst, src, bytes);
        }))
        return cudaSuccess;
    (void)kind;
    if (bytes)
        memmove(dst, src, bytes);
    return cudaSuccess;
}
extern "C" cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                         size_t width, size_t height, enum cudaMemcpyKind kind,
                                         cudaStream_t s)
{
    halox_emu_count(HALOX_EMU_COPY);
    if (width > dpitch || width > spitch)
        return cudaErrorInvalidValue; /* as the runtime: rows may not overlap */
    auto copy = [=]() {
        for (size_t r = 0; r < height; r++)
            if (width)
                memmove((char *)dst + r * dpitch, (const char *)src + r * spitch, width);
    };
    (void)kind;
    if (halox_emu_record(s, copy))
        return cudaSuccess;
    copy();
    return cudaSuccess;
}
extern "C" cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s)
{
    halox_emu_count(HALOX_EMU_SET);
    if (halox_emu_record(s, [=]() { memset(p, v, bytes); }))
        return cudaSuccess;
    memset(p, v, bytes);
    return cudaSuccess;
}
extern "C" cudaError_t cudaMemset(void *p, int v, size_t bytes)
{
    halox_emu_count(HALOX_EMU_SET);
    memset(p, v, bytes);
    return cudaSuccess;
}
extern "C" cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned)
{
    return cudaMalloc(p, bytes);
}
extern "C" cudaError_t cudaDeviceSynchronize(void)
{
    halox_emu_count(HALOX_EMU_WAIT);
    return cudaSuccess;
}
extern "C" cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned)
{
    *s = new CUstream_st();
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    delete s;
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamSynchronize(cudaStream_t)
{
    halox_emu_count(HALOX_EMU_WAIT);
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode)
{
    if (!s || g_cap_graph)
        return cudaErrorInvalidValue; /* the legacy stream cannot be captured; one at a time */
    g_cap_stream = s;
    g_cap_graph = new CUgraph_st();
    if (!g_cap_joined)
        g_cap_joined = new std::vector<cudaStream_t>;
    g_cap_joined->clear();
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph)
{
    if (!g_cap_graph || s != g_cap_stream)
        return cudaErrorInvalidValue;
    *graph = g_cap_graph;
    g_cap_graph = nullptr;
    g_cap_stream = nullptr;
    g_cap_joined->clear();
    return cudaSuccess;
}
extern "C" cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                            unsigned long long)
{
    *exec = new CUgraphExec_st();
    (*exec)->ops = graph->ops;
    return cudaSuccess;
}
extern "C" cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s)
{
    halox_emu_count(HALOX_EMU_GRAPH);
    if (halox_emu_record(s, [=]() {
            for (const auto &op : exec->ops)
                op();
        }))
        return cudaSuccess;
    for (const auto &op : exec->ops)
        op();
    return cudaSuccess;
}
extern "C" cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                           cudaGraphExecUpdateResultInfo *info)
{
    exec->ops = graph->ops;
    if (info)
        info->result = 0;
    return cudaSuccess;
}
extern "C" cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}
extern "C" cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr, int)
{
    /* multiprocessors: the spinning grids' bound (halox__shm_max_blocks); the emulation runs a
     * launch's blocks one after another, so a test that spins across blocks of one launch
     * asks for one block per row (HALOX_NVSHMEM_BLOCKS=1) */
    *value = 64;
    return cudaSuccess;
}
/* events: every operation is complete on return, so every event has been reached; one recorded
 * in a capture forks it into the streams that wait for it */
struct CUevent_st {
    bool in_capture;
};
extern "C" cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    *e = new CUevent_st();
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned)
{
    return cudaEventCreate(e);
}
extern "C" cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventSynchronize(cudaEvent_t)
{
    halox_emu_count(HALOX_EMU_WAIT);
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t)
{
    *ms = 0.001f;
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned)
{
    halox_emu_count(HALOX_EMU_EVENT);
    if (e && e->in_capture && g_cap_graph && s && !emu_capturing(s))
        g_cap_joined->push_back(s);
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int)
{
    return cudaStreamCreateWithFlags(s, flags);
}
extern "C" cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    *least = 0;
    *greatest = -1;
    return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int)
{
    snprintf(bus, (size_t)len, "0000:00:00.0"); /* one emulated GPU */
    return cudaSuccess;
}
extern "C" cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned)
{
    *dev = host;
    return cudaSuccess;
}
extern "C" cudaError_t cudaDeviceCanAccessPeer(int *can, int, int)
{
    *can = 1;
    return cudaSuccess;
}
extern "C" cudaError_t cudaStreamQuery(cudaStream_t)
{
    halox_emu_count(HALOX_EMU_WAIT);
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventQuery(cudaEvent_t)
{
    halox_emu_count(HALOX_EMU_WAIT);
    return cudaSuccess;
}
extern "C" cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    halox_emu_count(HALOX_EMU_EVENT);
    if (e)
        e->in_capture = emu_capturing(s);
    return cudaSuccess;
}
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
