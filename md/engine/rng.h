/* Counter-based random numbers for the MD engine.
 *
 * Every random number is a pure function of (seed, purpose, key, counter): the velocities of atom
 * id come from key = id, the thermostat's noise of step s from key = s. Nothing is carried from
 * step to step, so results do not depend on how atoms are spread over ranks, and a checkpoint
 * needs no generator state (the step is enough). The mixer is splitmix64's finaliser applied to
 * a Weyl sequence, good enough for Maxwell-Boltzmann draws and a thermostat. */
#ifndef HALOX_MD_RNG_H
#define HALOX_MD_RNG_H

#include <math.h>
#include <stdint.h>

/* purposes: separate streams for separate uses of one seed */
enum { MD_RNG_VELOCITY = 1, MD_RNG_PLACEMENT = 2, MD_RNG_THERMOSTAT = 3 };

typedef struct md_rng {
    uint64_t key;
    uint64_t counter;
    int have_spare;
    double spare;
} md_rng_t;

static inline uint64_t md_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A stream for (seed, purpose, key). */
static inline md_rng_t md_rng_stream(uint64_t seed, uint64_t purpose, uint64_t key)
{
    md_rng_t r;
    r.key =
        md_mix64(md_mix64(seed ^ 0x6a09e667f3bcc909ull) +
                 md_mix64(purpose * 0x9e3779b97f4a7c15ull) + md_mix64(key + 0x3c6ef372fe94f82bull));
    r.counter = 0;
    r.have_spare = 0;
    r.spare = 0;
    return r;
}

static inline uint64_t md_rng_u64(md_rng_t *r)
{
    r->counter++;
    return md_mix64(r->key + r->counter * 0x9e3779b97f4a7c15ull);
}

/* Uniform in (0, 1): never 0, so logarithms are finite. */
static inline double md_rng_uniform(md_rng_t *r)
{
    return ((double)(md_rng_u64(r) >> 11) + 0.5) * 0x1.0p-53;
}

/* Standard normal (Box-Muller, both values used). */
static inline double md_rng_gauss(md_rng_t *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    double u1 = md_rng_uniform(r), u2 = md_rng_uniform(r);
    double rad = sqrt(-2.0 * log(u1));
    double ang = 6.283185307179586476925 * u2;
    r->spare = rad * sin(ang);
    r->have_spare = 1;
    return rad * cos(ang);
}

/* Gamma(shape a, scale 1) for a >= 1 (Marsaglia & Tsang 2000). */
static inline double md_rng_gamma(md_rng_t *r, double a)
{
    double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = md_rng_gauss(r), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = md_rng_uniform(r);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

/* Sum of n squared standard normals (chi-squared with n degrees of freedom), n >= 0. */
static inline double md_rng_chi2(md_rng_t *r, long long n)
{
    if (n <= 0)
        return 0.0;
    if (n == 1) {
        double g = md_rng_gauss(r);
        return g * g;
    }
    return 2.0 * md_rng_gamma(r, 0.5 * (double)n);
}

#endif
