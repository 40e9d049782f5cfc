/* GPU helpers in a build without CUDA: no GPU, every call fails (none is reached: the GPU
 * transports are not compiled in). */
#include <stdio.h>

#include "bench.h"

const char *bench_gpu_error(void) { return "this build has no CUDA"; }
int bench_gpu_count(void) { return 0; }

void bench_gpu_describe(char *names, size_t cap, int *count_p, int *driver_p, int *runtime_p)
{
    if (cap)
        names[0] = '\0';
    *count_p = *driver_p = *runtime_p = 0;
}

int bench_timer_create(bench_timer_t **t_p)
{
    *t_p = NULL;
    return -1;
}
void bench_timer_destroy(bench_timer_t *t) { (void)t; }
int bench_timer_start(bench_timer_t *t, void *stream)
{
    (void)t;
    (void)stream;
    return -1;
}
int bench_timer_stop(bench_timer_t *t, void *stream, double *ms_p)
{
    (void)t;
    (void)stream;
    *ms_p = 0;
    return -1;
}
int bench_gpu_put(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst;
    (void)src;
    (void)bytes;
    (void)stream;
    return -1;
}
int bench_gpu_get(void *dst, const void *src, size_t bytes, void *stream)
{
    return bench_gpu_put(dst, src, bytes, stream);
}
int bench_gpu_fill(void *dst, int byte, size_t bytes, void *stream)
{
    (void)byte;
    return bench_gpu_put(dst, NULL, bytes, stream);
}
int bench_gpu_sync(void *stream)
{
    (void)stream;
    return -1;
}

int bench_graph_begin(void *stream) { return bench_gpu_sync(stream); }
int bench_graph_end(void *stream, bench_graph_t **g_p)
{
    *g_p = NULL;
    return bench_gpu_sync(stream);
}
int bench_graph_launch(bench_graph_t *g, void *stream)
{
    (void)g;
    return bench_gpu_sync(stream);
}
void bench_graph_destroy(bench_graph_t *g) { (void)g; }

double bench_link_peak(char *what, size_t len) { return bench_host_copy_peak(what, len); }
