/* The monotonic clock and the bound of every wait (clock.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "halox/endpoint.h"
#include "halox/env.h"

double halox__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

halox_status_t halox__timeout(double given, const char *who, double *out)
{
    *out = 60.0;
    if (given == 0.0)
        return halox_env_number("HALOX_TIMEOUT_S", 1e-3, HALOX_TIMEOUT_MAX_S, 60.0, out);
    if (!(isfinite(given) && given > 0 && given <= HALOX_TIMEOUT_MAX_S))
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s: timeout %g s: give a finite time > 0 and at most %g s (or 0 for "
                            "HALOX_TIMEOUT_S, else 60 s)",
                            who, given, HALOX_TIMEOUT_MAX_S);
    *out = given;
    return HALOX_OK;
}

halox_status_t halox_timeout_resolve(double timeout_s, double *bound_p)
{
    double b;
    halox_status_t st = halox__timeout(timeout_s, "timeout", &b);
    if (bound_p)
        *bound_p = b;
    return st;
}
