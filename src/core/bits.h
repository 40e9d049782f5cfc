/* Internal: ranges of coordinates tested by bit patterns (src/core/bits.c). */
#ifndef HALOX_CORE_BITS_H
#define HALOX_CORE_BITS_H

#include <stdint.h>
#include <string.h>

#include "halox/atoms.h"

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

#endif
