/* Decomposition invariance on the threads transport: the same trajectory (positions and
 * velocities of every atom after 100 steps, thermo records) from 1 rank and from 2x2x2, 3x2x1
 * and 4x1x1 grids. Only the order of floating-point sums differs between grids (home atoms are
 * split and sorted differently), so the deviation is rounding amplified by the chaos of a
 * liquid over 100 steps.
 *
 * Stated tolerances (4000 atoms, T 1.44, 100 steps of 0.005, positions in sigma, velocities in
 * sigma/tau): double: positions and velocities within 1e-11, energies within 1e-12 relative
 * (typically 4e-14, 4e-13, 2e-14); float: positions within 5e-4 and velocities within 5e-3,
 * energies within 2e-5 relative (typically 2e-5, 2e-4, 1.5e-6: single-precision rounding of
 * 1e-7 amplified over 100 steps). NVT is checked the same way in double (the thermostat noise
 * depends only on seed and step). */
#include <math.h>
#include <stdlib.h>

#include "test_md_common.h"

static double g_max_dx[2], g_max_dv[2], g_max_de[2];

static void compare_grids(halox_real_t real, halox_md_ensemble_t ens)
{
    const char *grids[] = {"2x2x2", "3x2x1", "4x1x1"};
    halox_md_config_t cfg;
    md_test_decomp_config(&cfg, real, ens);
    cfg.temp = 1.44;
    halox_md_result_t ref;
    if (md_test_run(&cfg, NULL, 1, &ref))
        return;
    int dbl = real == HALOX_DOUBLE;
    double tol_x, tol_v, tol_e, box[3];
    md_test_decomp_tolerances(real, &tol_x, &tol_v, &tol_e);
    md_test_fcc_box(&cfg, box);
    for (int g = 0; g < 3; g++) {
        halox_md_config_t c2 = cfg;
        halox_grid_parse(grids[g], &c2.grid);
        halox_md_result_t r;
        if (md_test_run(&c2, NULL, 1, &r))
            continue;
        double dx, dv, de = 0;
        md_test_compare(&ref, &r, box, &dx, &dv);
        CHECK(r.n_thermo == ref.n_thermo);
        for (int k = 0; k < r.n_thermo && k < ref.n_thermo; k++) {
            CHECK(r.thermo[k].step == ref.thermo[k].step);
            de = fmax(de, md_rel(r.thermo[k].pe, ref.thermo[k].pe));
            de = fmax(de, md_rel(r.thermo[k].etotal, ref.thermo[k].etotal));
            de = fmax(de, md_rel(r.thermo[k].press, ref.thermo[k].press) * 0.1);
        }
        printf("%s %s grid %s vs 1 rank after %lld steps: max |dx| %.3e, max |dv| %.3e, max "
               "rel. energy difference %.3e (%lld atoms migrated)\n",
               test_real_name(real), ens == HALOX_MD_NVT ? "NVT" : "NVE", grids[g], cfg.steps, dx,
               dv, de, r.summary.migrated);
        CHECK_MSG(dx <= tol_x, "positions differ by %.3e > %.1e", dx, tol_x);
        CHECK_MSG(dv <= tol_v, "velocities differ by %.3e > %.1e", dv, tol_v);
        CHECK_MSG(de <= tol_e, "energies differ by %.3e > %.1e", de, tol_e);
        CHECK(r.summary.migrated > 0);      /* atoms did cross domains */
        CHECK(r.summary.stale_steps == -1); /* the CPU engine checks exactly: not counted */
        g_max_dx[dbl] = fmax(g_max_dx[dbl], dx);
        g_max_dv[dbl] = fmax(g_max_dv[dbl], dv);
        g_max_de[dbl] = fmax(g_max_de[dbl], de);
        halox_md_result_free(&r);
    }
    halox_md_result_free(&ref);
}

int main(void)
{
    compare_grids(HALOX_DOUBLE, HALOX_MD_NVE);
    compare_grids(HALOX_FLOAT, HALOX_MD_NVE);
    compare_grids(HALOX_DOUBLE, HALOX_MD_NVT);
    printf("largest deviations: double |dx| %.3e |dv| %.3e energy %.3e; float |dx| %.3e |dv| "
           "%.3e energy %.3e\n",
           g_max_dx[1], g_max_dv[1], g_max_de[1], g_max_dx[0], g_max_dv[0], g_max_de[0]);
    TEST_DONE();
}
