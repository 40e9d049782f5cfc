/* Internal helpers shared by core and transports: error messages, clocks, packing.
 * Packing lives here once so that the reference exchange and every CPU transport perform the
 * very same floating-point operations (bit-identical coordinates and forces). */
#ifndef HALOX_CORE_UTIL_H
#define HALOX_CORE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "halox/atoms.h"
#include "halox/comm.h"
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

/* The wait bound to use: `given` when not 0, else HALOX_TIMEOUT_S from the environment, else
 * 60 s. A bound that is not finite, not > 0 or above HALOX_TIMEOUT_MAX_S (in either place) is
 * an error naming it (who: the caller, for the message); *out is then 60. */
halox_status_t halox__timeout(double given, const char *who, double *out);

/* dst[i] = x[index[i]] for n atoms (stride reals each), adding shift to component dim when
 * shift != 0 (the add happens in the data's own precision). */
void halox__pack_coords(halox_real_t real, int stride, void *dst, const void *x, const int *index,
                        int n, int dim, double shift);

/* f[index[i]] += src[i] for n atoms, components 0..2 (in order i = 0..n-1). */
void halox__add_forces(halox_real_t real, int stride, void *f, const int *index, int n,
                       const void *src);

/* halox__agree (transport.h) with a payload, in one allgather: msg holds n values, msg[0] is
 * set to `mine`; all (NULL: not wanted) receives every rank's msg, rank after rank. */
halox_status_t halox__agree_gather(halox_comm_t *comm, halox_status_t mine, const char *what,
                                   long long *msg, int n, long long *all);

/* Bytes of n atoms' worth of stride reals. */
static inline size_t halox__atom_bytes(halox_real_t real, int stride, long long n)
{
    return (size_t)n * (size_t)stride * halox_real_size(real);
}

/* halox_atoms_get, inline for the loops over every atom. */
static inline double halox__atom_coord(const halox_atoms_t *a, int i, int c)
{
    size_t k = (size_t)i * (size_t)a->stride + (size_t)c;
    return a->real == HALOX_FLOAT ? (double)((const float *)a->x)[k] : ((const double *)a->x)[k];
}

/* Ranges by bit patterns. For values >= +0 the order of their bit patterns, read as unsigned
 * integers, is the order of the values; -0, negative values and NaN read above +inf. So the
 * scans over every atom can test [lo, hi) or "x - lo < rh" with integer compares, exactly:
 * for a coordinate v >= +0, v >= lo iff bits(v) >= halox__bits_ceil(lo), v < hi iff
 * bits(v) < halox__bits_ceil(hi), and (double)v - lo < rh iff bits(v) < halox__bits_below(lo,
 * rh). (Without the sign: u - lo_bits < hi_bits - lo_bits, unsigned, holds for no v < 0.) */
static inline uint32_t halox__fbits(const float *p)
{
    uint32_t u;
    memcpy(&u, p, sizeof u);
    return u;
}
static inline uint64_t halox__dbits(const double *p)
{
    uint64_t u;
    memcpy(&u, p, sizeof u);
    return u;
}
/* Bits of the least value of the precision >= x (x >= 0). */
uint64_t halox__bits_ceil(halox_real_t real, double x);
/* Bits of the least value t >= 0 of the precision with !((double)t - lo < rh). */
uint64_t halox__bits_below(halox_real_t real, double lo, double rh);

/* Grow *p to hold at least n elements of size elem (capacity in *cap, doubled). */
halox_status_t halox__grow(void **p, int *cap, int n, size_t elem);

/* Linux CPU lists (src/core/cpulist.c). parse: "0-3,8" -> {0,1,2,3,8}; returns the count, or -1
 * on a syntax error or more than max CPUs. share: rank `index` of `count` sharing n CPUs gets
 * positions [lo, hi) (contiguous, nearly equal; round robin when count > n). format: the list
 * back in the short form; -1 when buf is too small. */
int halox__cpulist_parse(const char *s, int *cpus, int max);
void halox__cpulist_share(int n, int index, int count, int *lo, int *hi);
int halox__cpulist_format(const int *cpus, int n, char *buf, size_t len);

#endif
