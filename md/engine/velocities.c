/* Initial velocities: Maxwell-Boltzmann at temperature T from a seeded counter-based generator
 * keyed by atom id (so the draw does not depend on the decomposition), total momentum removed,
 * then scaled so that the temperature with 3N-3 degrees of freedom is exactly T (as LAMMPS'
 * `velocity all create T seed` does). Sums run serially in id order: the same bits everywhere. */
#include <math.h>

#include "engine/md_internal.h"
#include "engine/rng.h"
#include "halox/status.h"

halox_status_t md__velocities(halox_md_system_t *sys, double temp, uint64_t seed)
{
    long long n = sys->natoms;
    if (n < 2)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "a system needs at least 2 atoms (temperature uses 3N-3 degrees of "
                               "freedom), got %lld",
                               n);
    if (temp == 0.0) {
        for (long long k = 0; k < 3 * n; k++)
            sys->v[k] = 0.0;
        return HALOX_OK;
    }
    double p[3] = {0, 0, 0};
    for (long long i = 0; i < n; i++) {
        md_rng_t r = md_rng_stream(seed, MD_RNG_VELOCITY, (uint64_t)i);
        for (int d = 0; d < 3; d++) {
            double v = md_rng_gauss(&r);
            sys->v[3 * i + d] = v;
            p[d] += v;
        }
    }
    for (int d = 0; d < 3; d++)
        p[d] /= (double)n;
    double twoke = 0;
    for (long long i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) {
            double v = sys->v[3 * i + d] - p[d];
            sys->v[3 * i + d] = v;
            twoke += v * v;
        }
    double dof = 3.0 * (double)n - 3.0;
    double scale = sqrt(dof * temp / twoke);
    for (long long k = 0; k < 3 * n; k++)
        sys->v[k] *= scale;
    return HALOX_OK;
}
