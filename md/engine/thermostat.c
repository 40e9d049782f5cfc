/* NVT: stochastic velocity rescaling (G. Bussi, D. Donadio, M. Parrinello, J. Chem. Phys. 126,
 * 014101 (2007)).
 *
 * Why this thermostat: it samples the canonical ensemble exactly (the kinetic energy follows
 * the canonical distribution with Nf = 3N - 3 degrees of freedom, and configurations are
 * canonical as for any correct thermostat), it keeps the total momentum zero (so 3N - 3 stays
 * the right count, as LAMMPS reports temperature), it disturbs the dynamics only through one
 * global factor with time constant tau, and its noise comes from one random stream that is a
 * pure function of (seed, step), identical on every rank: no generator state to checkpoint and
 * no dependence on the decomposition. Its cost: the global kinetic energy is needed every step,
 * one allreduce of one double per step in NVT (NVE needs reductions only on thermo steps).
 *
 * One step: K' = K + (1 - c)(K0 (R1^2 + S) / Nf - K) + 2 R1 sqrt(c (1 - c) K K0 / Nf), with
 * c = exp(-dt / tau), K0 = Nf T / 2, R1 a standard normal and S a chi-squared variable with
 * Nf - 1 degrees of freedom; velocities are scaled by sqrt(K' / K). */
#include <math.h>

#include "engine/md_internal.h"
#include "engine/rng.h"

double md__bussi_alpha(double ke, double ke_target, double ndof, double dt_over_tau, uint64_t seed,
                       long long step)
{
    if (!(ke > 0) || !(ndof >= 1))
        return 1.0;
    md_rng_t r = md_rng_stream(seed, MD_RNG_THERMOSTAT, (uint64_t)step);
    double c = exp(-dt_over_tau);
    double r1 = md_rng_gauss(&r);
    double s = md_rng_chi2(&r, (long long)ndof - 1);
    double knew = ke + (1.0 - c) * (ke_target * (s + r1 * r1) / ndof - ke) +
                  2.0 * r1 * sqrt(ke * ke_target / ndof * (1.0 - c) * c);
    if (!(knew > 0))
        return 1.0;
    return sqrt(knew / ke);
}
