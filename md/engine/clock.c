/* The engine's clock (md_internal.h): the timers of a run and the deadlines of its polls. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "engine/md_internal.h"

double md__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
