/* Internal helpers shared by core and transports: error messages, clocks, packing.
 * Packing lives here once so that the reference exchange and every CPU transport perform the
 * very same floating-point operations (bit-identical coordinates and forces). */
#ifndef HALOX_CORE_UTIL_H
#define HALOX_CORE_UTIL_H

#include <stddef.h>

#include "halox/atoms.h"
#include "halox/status.h"

#if defined(__GNUC__)
#define HALOX__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HALOX__PRINTF(a, b)
#endif

/* Record a detailed message for halox_last_error() on this thread and return st. */
halox_status_t halox__error(halox_status_t st, const char *fmt, ...) HALOX__PRINTF(2, 3);

/* Monotonic clock in seconds. */
double halox__now(void);

/* The wait bound to use: `given` if > 0, else HALOX_TIMEOUT_S from the environment, else 60. */
double halox__timeout(double given);

/* dst[i] = x[index[i]] for n atoms (stride reals each), adding shift to component dim when
 * shift != 0 (the add happens in the data's own precision). */
void halox__pack_coords(halox_real_t real, int stride, void *dst, const void *x,
                        const int *index, int n, int dim, double shift);

/* f[index[i]] += src[i] for n atoms, components 0..2 (in order i = 0..n-1). */
void halox__add_forces(halox_real_t real, int stride, void *f, const int *index, int n,
                       const void *src);

/* Bytes of n atoms' worth of stride reals. */
static inline size_t halox__atom_bytes(halox_real_t real, int stride, long long n)
{
    return (size_t)n * (size_t)stride * halox_real_size(real);
}

/* Grow *p to hold at least n elements of size elem (capacity in *cap, doubled). */
halox_status_t halox__grow(void **p, int *cap, int n, size_t elem);

#endif
