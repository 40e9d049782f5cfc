/* The peak the bandwidth figures are compared with, measured in the same run: the host side
 * (memcpy); the GPU side is in gpu.c (peer copy) and falls back to this one. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

double bench_host_copy_peak(char *what, size_t len)
{
    const size_t bytes = (size_t)256 << 20;
    char *a = malloc(bytes), *b = malloc(bytes);
    double t[5], gbps = 0;
    if (a && b) {
        memset(a, 1, bytes);
        memset(b, 2, bytes); /* touch both: no first-touch page faults in the timing */
        for (int i = 0; i < 5; i++) {
            double t0 = bench_now();
            memcpy(i % 2 ? a : b, i % 2 ? b : a, bytes);
            t[i] = bench_now() - t0;
        }
        bench_stats_t s = bench_summarise(t, 5);
        gbps = s.median > 0 ? (double)bytes / s.median / 1e9 : 0;
        snprintf(what, len, "host memcpy of 256 MiB, one thread");
    } else {
        snprintf(what, len, "no memory for the host copy");
    }
    free(a);
    free(b);
    return gbps;
}
