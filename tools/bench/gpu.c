/* GPU helpers over the CUDA runtime: events on the exchange stream, copies, device facts.
 * Built when CUDA is on; gpu_none.c stands in otherwise. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* the GPU transports run one rank per process: one message buffer per process is enough */
static char g_error[256];

static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    snprintf(g_error, sizeof g_error, "%s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError(); /* clear a sticky launch error for the next call */
    return -1;
}

const char *bench_gpu_error(void) { return g_error; }

int bench_gpu_count(void) { return halox_gpu_count(); }

void bench_gpu_describe(char *names, size_t cap, int *count_p, int *driver_p, int *runtime_p)
{
    int n = bench_gpu_count(), drv = 0, rt = 0;
    names[0] = '\0';
    for (int d = 0; d < n; d++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
            continue;
        size_t len = strlen(names);
        snprintf(names + len, cap - len, "%s%s", d ? ", " : "", p.name);
    }
    if (n > 0) {
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
    }
    *count_p = n;
    *driver_p = drv;
    *runtime_p = rt;
}

struct bench_timer {
    cudaEvent_t start, stop;
};

int bench_timer_create(bench_timer_t **t_p)
{
    bench_timer_t *t = calloc(1, sizeof *t);
    if (!t)
        return -1;
    if (check(cudaEventCreate(&t->start), "cudaEventCreate") ||
        check(cudaEventCreate(&t->stop), "cudaEventCreate")) {
        free(t);
        return -1;
    }
    *t_p = t;
    return 0;
}

void bench_timer_destroy(bench_timer_t *t)
{
    if (!t)
        return;
    cudaEventDestroy(t->start);
    cudaEventDestroy(t->stop);
    free(t);
}

int bench_timer_start(bench_timer_t *t, void *stream)
{
    return check(cudaEventRecord(t->start, (cudaStream_t)stream), "cudaEventRecord");
}

int bench_timer_stop(bench_timer_t *t, void *stream, double *ms_p)
{
    float ms = 0;
    if (check(cudaEventRecord(t->stop, (cudaStream_t)stream), "cudaEventRecord") ||
        check(cudaEventSynchronize(t->stop), "cudaEventSynchronize") ||
        check(cudaEventElapsedTime(&ms, t->start, t->stop), "cudaEventElapsedTime"))
        return -1;
    *ms_p = ms;
    return 0;
}

int bench_gpu_put(void *dst, const void *src, size_t bytes, void *stream)
{
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream),
                 "cudaMemcpyAsync to the device");
}

int bench_gpu_get(void *dst, const void *src, size_t bytes, void *stream)
{
    return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream),
                 "cudaMemcpyAsync to the host") ||
           bench_gpu_sync(stream);
}

int bench_gpu_fill(void *dst, int byte, size_t bytes, void *stream)
{
    return check(cudaMemsetAsync(dst, byte, bytes, (cudaStream_t)stream), "cudaMemsetAsync");
}

int bench_gpu_sync(void *stream)
{
    return check(cudaStreamSynchronize((cudaStream_t)stream), "cudaStreamSynchronize");
}

struct bench_graph {
    cudaGraphExec_t exec;
};

int bench_graph_begin(void *stream)
{
    return check(cudaStreamBeginCapture((cudaStream_t)stream, cudaStreamCaptureModeThreadLocal),
                 "cudaStreamBeginCapture");
}

int bench_graph_end(void *stream, bench_graph_t **g_p)
{
    *g_p = NULL;
    cudaGraph_t graph = NULL;
    bench_graph_t *g = NULL;
    int bad = check(cudaStreamEndCapture((cudaStream_t)stream, &graph), "cudaStreamEndCapture");
    if (!bad && !(g = calloc(1, sizeof *g))) {
        snprintf(g_error, sizeof g_error, "no memory for a graph");
        bad = -1;
    }
    if (!bad && check(cudaGraphInstantiate(&g->exec, graph, 0), "cudaGraphInstantiate")) {
        free(g);
        g = NULL;
        bad = -1;
    }
    if (graph)
        cudaGraphDestroy(graph);
    *g_p = g;
    return bad ? -1 : 0;
}

int bench_graph_launch(bench_graph_t *g, void *stream)
{
    return check(cudaGraphLaunch(g->exec, (cudaStream_t)stream), "cudaGraphLaunch");
}

void bench_graph_destroy(bench_graph_t *g)
{
    if (!g)
        return;
    cudaGraphExecDestroy(g->exec);
    free(g);
}

double bench_link_peak(char *what, size_t len)
{
    int n = bench_gpu_count(), ok01 = 0, ok10 = 0, cur = 0;
    if (n < 2 || cudaDeviceCanAccessPeer(&ok01, 0, 1) != cudaSuccess ||
        cudaDeviceCanAccessPeer(&ok10, 1, 0) != cudaSuccess || !ok01 || !ok10) {
        (void)cudaGetLastError();
        return bench_host_copy_peak(what, len);
    }
    const size_t bytes = (size_t)256 << 20;
    void *src = NULL, *dst = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double t[5], gbps = 0;
    int bad =
        check(cudaGetDevice(&cur), "cudaGetDevice") || check(cudaSetDevice(1), "cudaSetDevice") ||
        check(cudaMalloc(&dst, bytes), "cudaMalloc") || check(cudaSetDevice(0), "cudaSetDevice") ||
        check(cudaMalloc(&src, bytes), "cudaMalloc") ||
        check(cudaEventCreate(&e0), "cudaEventCreate") ||
        check(cudaEventCreate(&e1), "cudaEventCreate");
    /* peer access may be on already (another endpoint of this process): not an error */
    if (!bad && cudaDeviceEnablePeerAccess(1, 0) != cudaSuccess)
        (void)cudaGetLastError();
    for (int i = -1; i < 5 && !bad; i++) { /* one untimed copy first */
        float ms = 0;
        bad = check(cudaEventRecord(e0, 0), "cudaEventRecord") ||
              check(cudaMemcpyPeerAsync(dst, 1, src, 0, bytes, 0), "cudaMemcpyPeerAsync") ||
              check(cudaEventRecord(e1, 0), "cudaEventRecord") ||
              check(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
              check(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
        if (i >= 0)
            t[i] = ms * 1e-3;
    }
    if (!bad) {
        bench_stats_t s = bench_summarise(t, 5);
        gbps = s.median > 0 ? (double)bytes / s.median / 1e9 : 0;
        snprintf(what, len, "GPU 0 -> GPU 1 peer copy of 256 MiB");
    } else {
        snprintf(what, len, "peer copy failed: %s", g_error);
    }
    if (e0)
        cudaEventDestroy(e0);
    if (e1)
        cudaEventDestroy(e1);
    if (src)
        cudaFree(src);
    if (dst) {
        cudaSetDevice(1);
        cudaFree(dst);
    }
    cudaSetDevice(cur);
    (void)cudaGetLastError();
    return gbps;
}
