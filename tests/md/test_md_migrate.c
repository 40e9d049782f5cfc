/* Migration stress: a hot, dilute gas (density 0.1, T 20: atoms fly about 8 sigma per tau) in a
 * 12 sigma box cut into thin domains, with a skin so large that the pair lists stay valid while
 * atoms travel up to 3 sigma between rebuilds (rebuilds happen only when an atom moved more than
 * skin/2). Domains are 2 sigma wide in x on 6x1x1 ranks, so atoms cross one or two domains
 * between rebuilds, and cross several diagonally on 3x2x2.
 *
 * Checks, per grid: every atom id present exactly once at the end (the gather refuses a lost or
 * duplicated atom, and migration checks the global count at every rebuild), atoms did cross
 * domains (migrated atoms counted, the largest distance travelled between rebuilds is >= 2
 * domains on 6x1x1), energy conserved as in a correct run, and the trajectory equal to the 1-rank
 * run within rounding (double; a hot gas is very chaotic: a 1e-16 difference grows tenfold every
 * 100-200 steps, to about 1e-10 after the 1000 steps run here, so the bound is 1e-7). */
#include <math.h>

#include "test_md_common.h"

/* 1000 steps of dt of natoms at the density and temp (seed), in double, thermo every 100: the
 * cut-off and the lists (md_test_lists) as given. */
static void gas_config(halox_md_config_t *cfg, long long natoms, double density, double temp,
                       uint64_t seed, double cutoff, double skin, int rebuild_every,
                       int rebuild_check, double dt)
{
    md_test_random(cfg, natoms, density, seed);
    cfg->temp = temp;
    cfg->cutoff = cutoff;
    md_test_lists(cfg, skin, rebuild_every, rebuild_check);
    cfg->dt = dt;
    cfg->steps = 1000;
    cfg->thermo_every = 100;
    cfg->real = HALOX_DOUBLE;
}

static void gas(const char *grid, const halox_md_result_t *ref, halox_md_result_t *out)
{
    halox_md_config_t cfg;
    gas_config(&cfg, 172, 0.1, 20.0, 11, 1.5, 6.0, 100000, 1, 0.002);
    cfg.shift = 1;
    if (md_test_run_on(&cfg, HALOX_DOUBLE, grid, 1, out))
        return;
    const halox_md_summary_t *s = &out->summary;
    double e0 = out->thermo[0].etotal, dev = 0;
    for (int i = 0; i < out->n_thermo; i++)
        dev = fmax(dev, fabs(out->thermo[i].etotal - e0));
    printf("gas on %s: %lld atoms, box %.2f, %lld rebuilds, %lld atoms migrated, at most %d "
           "domains crossed in one dimension between rebuilds, max |E - E0| %.2e per atom\n",
           grid, s->natoms, cbrt(172 / 0.1), s->rebuilds, s->migrated, s->max_hops, dev);
    CHECK(out->natoms == 172); /* gathered: each id exactly once */
    CHECK(dev < 2e-2 * fabs(e0) + 1e-2);
    if (ref) {
        double box[3], dx, dv;
        box[0] = box[1] = box[2] = cbrt(172 / 0.1);
        md_test_compare(ref, out, box, &dx, &dv);
        printf("  vs 1 rank: max |dx| %.3e, max |dv| %.3e\n", dx, dv);
        CHECK_MSG(dx < 1e-7 && dv < 1e-6, "trajectory differs from 1 rank: %.3e %.3e", dx, dv);
        CHECK(s->migrated > 300);
        CHECK(s->rebuilds > 5);
    }
}

/* Nearly ballistic: 16 atoms at density 0.001 (box 25 sigma) and T 100 on 8x1x1 ranks, lists
 * rebuilt only every 100 steps: atoms fly about 8 sigma, 2-3 domains of 3 sigma, between
 * rebuilds (the lists are stale, which a gas this dilute does not notice). */
static void ballistic(void)
{
    halox_md_config_t cfg;
    gas_config(&cfg, 16, 0.001, 100.0, 5, 1.0, 0.3, 100, 0, 0.005);
    halox_md_result_t ref, r;
    if (md_test_run(&cfg, NULL, 1, &ref))
        return;
    cfg.grid = (halox_grid_t){{8, 1, 1}};
    if (md_test_run(&cfg, NULL, 1, &r))
        return;
    double box[3], dx, dv;
    box[0] = box[1] = box[2] = cbrt(16 / 0.001);
    md_test_compare(&ref, &r, box, &dx, &dv);
    printf("ballistic gas on 8x1x1: %lld atoms, %lld rebuilds, %lld atoms migrated, at most %d "
           "domains crossed between rebuilds; vs 1 rank: max |dx| %.3e, |dv| %.3e\n",
           r.summary.natoms, r.summary.rebuilds, r.summary.migrated, r.summary.max_hops, dx, dv);
    CHECK(r.natoms == 16);
    CHECK_MSG(r.summary.max_hops >= 3, "atoms crossed at most %d domains", r.summary.max_hops);
    CHECK(dx < 1e-9 && dv < 1e-9);
    halox_md_result_free(&ref);
    halox_md_result_free(&r);
}

int main(void)
{
    halox_md_result_t ref, a, b;
    gas("1x1x1", NULL, &ref);
    gas("6x1x1", &ref, &a);
    CHECK_MSG(a.summary.max_hops >= 2, "atoms crossed at most %d domains", a.summary.max_hops);
    gas("3x2x2", &ref, &b);
    ballistic();
    halox_md_result_free(&a);
    halox_md_result_free(&b);
    halox_md_result_free(&ref);
    TEST_DONE();
}
