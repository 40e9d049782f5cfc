/* Energy conservation in NVE with the shifted potential.
 *
 * System: 864 atoms (6^3 fcc cells) at density 0.8442 starting at T 1.44 (it melts and settles
 * near T 0.7), cut-off 2.5 shifted, skin 0.3, lists rebuilt every 10 steps and whenever an atom
 * moved more than skin/2, dt 0.005, 5000 steps (25 tau); double on 1 rank, float (the default
 * precision) on 2 ranks.
 *
 * Stated bound: the drift of the total energy, the slope of a least-squares line through
 * E_total(t) sampled every 50 steps, is below 5e-5 epsilon per atom per tau in both precisions
 * (typically a few 1e-6), and no sample strays more than 2e-3 epsilon per atom from the start
 * (typically about 2e-4, the O(dt^2) fluctuation of velocity Verlet plus the force step at the
 * cut-off). */
#include <math.h>

#include "test_md_common.h"

#define DRIFT_BOUND 5e-5
#define DEV_BOUND   2e-3

static void conservation(halox_real_t real, const char *grid)
{
    halox_md_config_t cfg;
    md_test_config(&cfg, 6);
    cfg.shift = 1;
    cfg.steps = 5000;
    cfg.thermo_every = 50;
    md_test_lists(&cfg, 0.3, 10, 1);
    halox_md_result_t r;
    if (md_test_run_on(&cfg, real, grid, 0, &r))
        return;
    int n = r.n_thermo;
    double mt = 0, me = 0, sxy = 0, sxx = 0, dev = 0;
    for (int i = 0; i < n; i++) {
        mt += r.thermo[i].time / n;
        me += r.thermo[i].etotal / n;
    }
    for (int i = 0; i < n; i++) {
        double dt = r.thermo[i].time - mt;
        sxy += dt * (r.thermo[i].etotal - me);
        sxx += dt * dt;
        dev = fmax(dev, fabs(r.thermo[i].etotal - r.thermo[0].etotal));
    }
    double slope = sxy / sxx;
    printf(
        "NVE %s on %s, %lld atoms, %d samples over %.1f tau: E0 %.8f, drift %.3e per atom per tau "
        "(bound %.0e), max |E - E0| %.3e per atom (bound %.0e), final T %.4f, %lld rebuilds\n",
        test_real_name(real), grid, r.summary.natoms, n, r.thermo[n - 1].time, r.thermo[0].etotal,
        slope, DRIFT_BOUND, dev, DEV_BOUND, r.thermo[n - 1].temp, r.summary.rebuilds);
    CHECK(n == 101);
    CHECK_MSG(fabs(slope) < DRIFT_BOUND, "energy drift %.3e per atom per tau", slope);
    CHECK_MSG(dev < DEV_BOUND, "energy strayed %.3e per atom from the start", dev);
    /* it is a liquid that really moved: the test is not passing on a frozen crystal */
    CHECK(r.thermo[n - 1].temp > 0.5 && r.thermo[n - 1].temp < 1.0);
    halox_md_result_free(&r);
}

int main(void)
{
    conservation(HALOX_DOUBLE, "1x1x1");
    conservation(HALOX_FLOAT, "2x1x1");
    TEST_DONE();
}
