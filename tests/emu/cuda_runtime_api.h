/* The host emulation's stand-in for the CUDA runtime API (tests/emu): the types and the calls the
 * GPU transports' shared parts and device stores use (src/transports/gpu/gpu_device.c,
 * plan_device.c, migrate_device.c) and the GPU engine's cluster kernels with their tests
 * (md/platforms/cuda/md_cluster_*.cu, tests/gpu/test_gpu_clusters.c), over host memory, every call
 * complete on return (one in-order "stream"), except on a stream being captured: its launches,
 * copies and sets are recorded into the graph and run at each cudaGraphLaunch. C and C++; the
 * implementations are tests/emu/emu_runtime.cpp. */
#ifndef HALOX_TESTS_EMU_API_H
#define HALOX_TESTS_EMU_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorNotReady = 600
} cudaError_t;
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
enum cudaStreamCaptureMode {
    cudaStreamCaptureModeGlobal = 0,
    cudaStreamCaptureModeThreadLocal = 1,
    cudaStreamCaptureModeRelaxed = 2
};
#define cudaStreamNonBlocking 0x01
#define cudaHostAllocMapped   0x02
enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};

enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
#define cudaEventDisableTiming 0x02

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned flags, int priority);
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device);
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned flags);
cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer);
typedef struct {
    int result;
} cudaGraphExecUpdateResultInfo;
/* the executable takes the graph's operations (the emulation's graphs are lists of them) */
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                cudaGraphExecUpdateResultInfo *info);
/* the time between two events: every call completes on return, so a token 1 us */
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t s);
cudaError_t cudaMemsetAsync(void *p, int v, size_t bytes, cudaStream_t s);
cudaError_t cudaMemset(void *p, int v, size_t bytes);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned flags);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaGetDevice(int *d);
cudaError_t cudaSetDevice(int d);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
/* test hook: the next n cudaMalloc calls succeed, the one after fails (negative: never) */
void halox_emu_malloc_fail_after(long n);
/* test hook: kernel launches run so far (a captured launch counts when its graph runs) */
long halox_emu_launches(void);
/* test hook: the host's calls so far, by kind: what each costs a real host (a few us each, more
 * under MPS) whether or not a stream is being captured. NVSHMEM's host calls count as
 * HALOX_EMU_NVSHMEM; a synchronous copy counts as a copy and a wait. */
enum {
    HALOX_EMU_LAUNCH,  /* kernel launches */
    HALOX_EMU_COPY,    /* cudaMemcpy, cudaMemcpyAsync, cudaMemcpy2DAsync */
    HALOX_EMU_SET,     /* cudaMemset, cudaMemsetAsync */
    HALOX_EMU_EVENT,   /* cudaEventRecord, cudaStreamWaitEvent */
    HALOX_EMU_WAIT,    /* synchronisations and queries of streams, events, the device */
    HALOX_EMU_GRAPH,   /* cudaGraphLaunch */
    HALOX_EMU_ALLOC,   /* cudaMalloc, cudaFree, their pinned twins */
    HALOX_EMU_NVSHMEM, /* NVSHMEM's host calls (collectives, on-stream operations) */
    HALOX_EMU_KINDS
};
long halox_emu_calls(int kind);
void halox_emu_count(int kind);
/* test hook: the next n launches of the kernel named `kernel` (its function's name) are dropped:
 * counted as launches, never run (a GPU that stops working for one kernel: a peer waiting for
 * what it would have done must give up on its own); NULL clears */
void halox_emu_drop(const char *kernel, int n);
/* whether a launch of `kernel` is to be dropped (taken from the count) */
int halox_emu_dropped(const char *kernel);
/* test hook: fn runs (one thread at a time) whenever an emulated kernel spins (__nanosleep). On a
 * GPU the host goes on while a kernel waits, and its MPI calls keep moving the messages its peers
 * wait for; here a kernel runs on the thread that launched it, so a rank spinning in a wait
 * kernel would starve a peer's message that needs this rank's progress (a pipelined send), and
 * with 4 ranks the waits can close a circle (hybrid, seen in CI). The MPI tests pass a function
 * that drives MPI's progress (tests/common/mpi_common.h, MPI_THREAD_SERIALIZED: the launching
 * thread is blocked meanwhile). NULL clears. */
void halox_emu_set_idle(void (*fn)(void));

#ifdef __cplusplus
}
#endif
#endif
