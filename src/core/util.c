/* Clocks, timeouts, growth and the packing shared by reference and transports. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/env.h"
#include "core/util.h"

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
        return halox__env_number("HALOX_TIMEOUT_S", 1e-3, HALOX_TIMEOUT_MAX_S, 60.0, out);
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

halox_status_t halox__grow(void **p, int *cap, int n, size_t elem)
{
    if (n <= *cap)
        return HALOX_OK;
    long long want = *cap > 0 ? *cap : 16;
    while (want < n)
        want *= 2;
    if (want > 0x7fffffff)
        want = 0x7fffffff;
    void *q = realloc(*p, (size_t)want * elem);
    if (!q)
        return halox__error(HALOX_ERR_NO_MEMORY, "could not allocate %lld elements of %zu bytes",
                            want, elem);
    *p = q;
    *cap = (int)want;
    return HALOX_OK;
}

void halox__pack_coords(halox_real_t real, int stride, void *dst, const void *x, const int *index,
                        int n, int dim, double shift)
{
    if (real == HALOX_FLOAT) {
        float *d = dst;
        const float *s = x;
        const float sh = (float)shift;
        for (int i = 0; i < n; i++) {
            const float *a = s + (size_t)index[i] * stride;
            float *o = d + (size_t)i * stride;
            for (int c = 0; c < stride; c++)
                o[c] = a[c];
            /* add only when shifting: x + 0 would turn -0.0 into +0.0 */
            if (shift != 0.0)
                o[dim] = a[dim] + sh;
        }
    } else {
        double *d = dst;
        const double *s = x;
        for (int i = 0; i < n; i++) {
            const double *a = s + (size_t)index[i] * stride;
            double *o = d + (size_t)i * stride;
            for (int c = 0; c < stride; c++)
                o[c] = a[c];
            if (shift != 0.0)
                o[dim] = a[dim] + shift;
        }
    }
}

void halox__add_forces(halox_real_t real, int stride, void *f, const int *index, int n,
                       const void *src)
{
    if (real == HALOX_FLOAT) {
        float *o = f;
        const float *s = src;
        for (int i = 0; i < n; i++) {
            float *a = o + (size_t)index[i] * stride;
            const float *b = s + (size_t)i * stride;
            a[0] += b[0];
            a[1] += b[1];
            a[2] += b[2];
        }
    } else {
        double *o = f;
        const double *s = src;
        for (int i = 0; i < n; i++) {
            double *a = o + (size_t)index[i] * stride;
            const double *b = s + (size_t)i * stride;
            a[0] += b[0];
            a[1] += b[1];
            a[2] += b[2];
        }
    }
}

uint64_t halox__bits_ceil(halox_real_t real, double x)
{
    if (real != HALOX_FLOAT)
        return halox__dbits(&x);
    float f = (float)x; /* nearest: at most one step below */
    if ((double)f < x)
        f = nextafterf(f, INFINITY);
    return halox__fbits(&f);
}

uint64_t halox__bits_below(halox_real_t real, double lo, double rh)
{
    /* "v - lo < rh" holds up to a point and not above it (the rounding is monotonic): start
     * near that point and step to the first value where it fails */
    if (real != HALOX_FLOAT) {
        double t = lo + rh;
        while (t > 0 && !(nextafter(t, 0.0) - lo < rh))
            t = nextafter(t, 0.0);
        while (t - lo < rh)
            t = nextafter(t, INFINITY);
        return halox__dbits(&t);
    }
    float t = (float)(lo + rh);
    while (t > 0 && !((double)nextafterf(t, 0.0f) - lo < rh))
        t = nextafterf(t, 0.0f);
    while ((double)t - lo < rh)
        t = nextafterf(t, INFINITY);
    return halox__fbits(&t);
}
