/* The host emulation's CUDA runtime (tests/emu/cuda_runtime_api.h) and launches
 * (halox_emu.h): host memory, every call complete on return; a launch runs its blocks one after
 * the other, each block's threads as POSIX threads. A stream being captured records its launches,
 * copies and sets (by value) into the graph instead; a graph's launch runs them in order. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mutex>
#include <vector>

#include "cuda_runtime.h"

thread_local halox_emu_dim threadIdx, blockIdx;
halox_emu_dim blockDim, gridDim;
halox_emu_block *halox_emu_cur;

static long g_malloc_left = -1;
static long g_launches;

extern "C" long halox_emu_launches(void) { return __atomic_load_n(&g_launches, __ATOMIC_SEQ_CST); }

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

/* A warp's barriers: the whole warp's (most syncs), and one per partial mask in use (disjoint
 * groups of a partial mask wait apart), each counting its arrivals and releasing by generation. */
struct emu_warp {
    pthread_barrier_t full;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    unsigned present = 0; /* the lanes this warp has */
    struct group {
        unsigned mask;
        int arrived;
        unsigned long gen;
    };
    std::vector<group> groups;
};

void halox_emu_warp_sync(unsigned mask)
{
    emu_warp *w = static_cast<emu_warp *>(halox_emu_cur->warps) + (threadIdx.x >> 5);
    mask &= w->present;
    if (mask == w->present) {
        pthread_barrier_wait(&w->full);
        return;
    }
    const int want = __builtin_popcount(mask);
    pthread_mutex_lock(&w->m);
    size_t k = 0;
    while (k < w->groups.size() && w->groups[k].mask != mask)
        k++;
    if (k == w->groups.size())
        w->groups.push_back({mask, 0, 0});
    const unsigned long gen = w->groups[k].gen;
    if (++w->groups[k].arrived == want) {
        w->groups[k].arrived = 0;
        w->groups[k].gen++;
        pthread_cond_broadcast(&w->c);
    } else {
        while (w->groups[k].gen == gen)
            pthread_cond_wait(&w->c, &w->m);
    }
    pthread_mutex_unlock(&w->m);
}

/* One launch at a time (the rank threads of a team launch at once): the grid's dimensions and
 * the current block are the emulation's globals. A block's threads are a pool's, kept between
 * blocks and launches: each block posts the semaphores of the threads it needs and waits for
 * as many posts back. */
static pthread_mutex_t g_launch = PTHREAD_MUTEX_INITIALIZER;
struct emu_worker {
    sem_t go;
    unsigned t;
};
/* never destroyed: the workers outlive main, blocked on their semaphores */
static std::vector<emu_worker *> &g_pool = *new std::vector<emu_worker *>;
static sem_t g_pool_done;
static unsigned g_pool_block;
static const std::function<void()> *g_pool_fn;

static void *emu_work(void *p)
{
    emu_worker *w = static_cast<emu_worker *>(p);
    for (;;) {
        while (sem_wait(&w->go) != 0) {
        }
        threadIdx = {w->t, 0, 0};
        blockIdx = {g_pool_block, 0, 0};
        (*g_pool_fn)();
        sem_post(&g_pool_done);
    }
    return nullptr;
}

/* HALOX_EMU_JITTER_US=N: each launch starts after a pause of 0 to N us (a xorshift of the
 * process id), so that the processes of a multi-rank test interleave in other orders and a wait
 * that is missing shows up as a wrong result */
static void emu_jitter(void)
{
    static long max_us = -1;
    static unsigned long long s;
    if (max_us < 0) {
        const char *v = getenv("HALOX_EMU_JITTER_US");
        max_us = v && *v ? atol(v) : 0;
        s = 0x9e3779b97f4a7c15ull ^ (unsigned long long)getpid();
    }
    if (max_us <= 0)
        return;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    usleep((useconds_t)(s % (unsigned long long)(max_us + 1)));
}

void halox_emu_run(unsigned blocks, unsigned threads, const std::function<void()> &fn)
{
    __atomic_fetch_add(&g_launches, 1, __ATOMIC_SEQ_CST);
    emu_jitter();
    pthread_mutex_lock(&g_launch);
    blockDim = {threads, 1, 1};
    gridDim = {blocks, 1, 1};
    const unsigned warps = (threads + 31) / 32;
    if (g_pool.empty())
        sem_init(&g_pool_done, 0, 0);
    if (g_pool.size() < threads) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        while (g_pool.size() < threads) {
            emu_worker *w = new emu_worker;
            w->t = (unsigned)g_pool.size();
            sem_init(&w->go, 0, 0);
            pthread_t th;
            if (pthread_create(&th, &attr, emu_work, w) != 0) {
                fprintf(stderr, "emulation: cannot start thread %u\n", w->t);
                abort();
            }
            g_pool.push_back(w);
        }
        pthread_attr_destroy(&attr);
    }
    g_pool_fn = &fn;
    for (unsigned b = 0; b < blocks; b++) {
        halox_emu_block blk;
        pthread_barrier_init(&blk.block, nullptr, threads);
        std::vector<emu_warp> ws(warps);
        for (unsigned w = 0; w < warps; w++) /* a last warp may be short (a block of 1 thread) */
        {
            ws[w].present = threads - 32 * w >= 32 ? ~0u : (1u << (threads - 32 * w)) - 1;
            pthread_barrier_init(&ws[w].full, nullptr, (unsigned)__builtin_popcount(ws[w].present));
        }
        blk.warps = ws.data();
        blk.slot.assign(32 * (size_t)warps, 0);
        halox_emu_cur = &blk;
        g_pool_block = b;
        for (unsigned t = 0; t < threads; t++)
            sem_post(&g_pool[t]->go);
        for (unsigned t = 0; t < threads; t++)
            while (sem_wait(&g_pool_done) != 0) {
            }
        pthread_barrier_destroy(&blk.block);
        for (unsigned w = 0; w < warps; w++)
            pthread_barrier_destroy(&ws[w].full);
    }
    pthread_mutex_unlock(&g_launch);
}
