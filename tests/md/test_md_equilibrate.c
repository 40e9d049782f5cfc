/* Equilibration before step 0 (halox_md_config_t.equilibrate).
 *   1. The water-density preset (4000 atoms instead of 45000, 2000 in sanitizer builds, its 500
 *      steps, thermo every step)
 *      runs its timed steps at its stated temperature: their mean T is within 5 % of 1.2. Without
 *      the equilibration (0 steps) the random start heats the same run far beyond (about 2.6),
 *      so the check can fail. The equilibration is in none of the run's counts: 501 thermo
 *      records (steps 0 to 500), step 0 at exactly T, its steps and time reported apart; on a
 *      fixed rebuild interval (no rebuild check) the rebuilds and halo bytes of the run alone.
 *   2. A restart from a checkpoint of an equilibrated run does not equilibrate again (the
 *      configuration still asks for it): no equilibration notice, none in its summary, and the
 *      restarted run ends bit-identical to the uninterrupted one (another equilibration would
 *      have changed the state).
 *   3. A negative count is refused with a message naming it. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_md_common.h"

static void water(halox_md_config_t *cfg, int equilibrate)
{
    halox_md_config_default(cfg);
    CHECK_OK(halox_md_config_preset(cfg, "water-density"));
    cfg->natoms = test_sanitized() ? 2000 : 4000;
    cfg->thermo_every = 1;
    cfg->grid = (halox_grid_t){{2, 1, 1}};
    if (equilibrate >= 0)
        cfg->equilibrate = equilibrate;
}

/* Mean temperature of the records after step 0 (the timed steps); their count. */
static int mean_temp(const halox_md_result_t *r, double *mean_p)
{
    double s = 0;
    int n = 0;
    for (int i = 0; i < r->n_thermo; i++)
        if (r->thermo[i].step > 0) {
            s += r->thermo[i].temp;
            n++;
        }
    *mean_p = n ? s / n : 0;
    return n;
}

static int g_equilibrating; /* notices that announce an equilibration */

static void count_notice(void *user, const char *text)
{
    (void)user;
    printf("  notice: %s\n", text);
    if (strstr(text, "equilibrating:") || strstr(text, "equilibrated in"))
        g_equilibrating++;
}

static void preset_temperature(void)
{
    halox_md_config_t def;
    water(&def, -1);
    const int n_eq = def.equilibrate;
    printf("water-density: T %g, %lld steps, equilibrate %d\n", def.temp, def.steps, n_eq);
    CHECK(n_eq > 0);
    CHECK(def.steps == 500);
    for (int with = 1; with >= 0; with--) {
        halox_md_config_t cfg;
        water(&cfg, with ? n_eq : 0);
        halox_md_hooks_t hooks = {.notice = count_notice};
        g_equilibrating = 0;
        halox_md_result_t res;
        if (md_test_run(&cfg, &hooks, 0, &res))
            return;
        double t;
        int n = mean_temp(&res, &t);
        const double dev = t / cfg.temp - 1.0;
        printf("equilibrate %d: mean T of steps 1-500 %.5f (%+.2f %% of %g), %d records; "
               "step 0 T %.9g; %lld rebuilds; equilibration %lld steps in %.3f s\n",
               cfg.equilibrate, t, 100 * dev, cfg.temp, n, res.thermo[0].temp, res.summary.rebuilds,
               res.summary.equilibrate_steps, res.summary.equilibrate_seconds);
        CHECK(n == 500);
        CHECK(res.n_thermo == 501 && res.thermo[0].step == 0);
        CHECK(res.summary.steps == 500 && res.summary.first_step == 0 &&
              res.summary.last_step == 500);
        if (with) {
            CHECK_MSG(fabs(dev) < 0.05, "mean T %.5f is not within 5 %% of %g", t, cfg.temp);
            /* the run starts at exactly T, as a fresh start does (float velocities) */
            CHECK_MSG(md_rel(res.thermo[0].temp, cfg.temp) < 1e-5, "step 0 T %.9g",
                      res.thermo[0].temp);
            CHECK(res.summary.equilibrate_steps == n_eq);
            CHECK(res.summary.equilibrate_seconds > 0);
            CHECK(g_equilibrating == 2); /* its start and its end */
        } else {
            /* the same run from the random start: heated far beyond its T */
            CHECK_MSG(dev > 0.5, "without equilibration the mean T %.5f stays near %g", t,
                      cfg.temp);
            CHECK(res.summary.equilibrate_steps == 0 && res.summary.equilibrate_seconds == 0);
            CHECK(g_equilibrating == 0);
        }
        halox_md_result_free(&res);
    }
}

/* On a fixed rebuild interval the run's rebuilds are known (steps 1, 11, 21, 31 of 40) and its
 * halo bytes those of 40 steps: the equilibration's (75 steps, 8 rebuilds and more) are not
 * counted (2x1x1: the halo of x). */
static void counts_exclude_equilibration(void)
{
    long long bytes[2] = {0, 0};
    for (int with = 0; with < 2; with++) {
        halox_md_config_t cfg;
        water(&cfg, with ? 75 : 0);
        cfg.natoms = 2000;
        cfg.steps = 40;
        cfg.thermo_every = 20;
        md_test_lists(&cfg, 0.5, 10, 0);
        halox_md_result_t res;
        if (md_test_run(&cfg, NULL, 0, &res))
            return;
        printf("equilibrate %d, 40 steps, rebuild every 10: %lld rebuilds, %lld halo bytes, "
               "%d records, equilibration %lld steps\n",
               cfg.equilibrate, res.summary.rebuilds, res.summary.halo_bytes, res.n_thermo,
               res.summary.equilibrate_steps);
        CHECK(res.summary.rebuilds == 4);
        CHECK(res.n_thermo == 3 && res.thermo[0].step == 0 && res.thermo[2].step == 40);
        CHECK(res.summary.equilibrate_steps == (with ? 75 : 0));
        bytes[with] = res.summary.halo_bytes;
        halox_md_result_free(&res);
    }
    /* the halo's size moves a little with the state, not by the 75 steps' worth (x 2.9) */
    CHECK_MSG(bytes[1] > 0 && fabs((double)bytes[1] / (double)bytes[0] - 1.0) < 0.2,
              "halo bytes %lld with, %lld without the equilibration", bytes[1], bytes[0]);
}

static void restart_does_not_equilibrate(void)
{
    char dir[64];
    snprintf(dir, sizeof dir, "md-eq-XXXXXX");
    if (!mkdtemp(dir)) {
        CHECK(0);
        return;
    }
    char ckpt[128];
    snprintf(ckpt, sizeof ckpt, "%s/run.chk", dir);
    halox_md_config_t cfg;
    water(&cfg, 100);
    cfg.natoms = 2000;
    cfg.thermo_every = 10;
    cfg.steps = 40;
    cfg.rebuild_every = 10; /* a boundary at step 20, where the first half ends */
    halox_md_hooks_t hooks = {.notice = count_notice};
    halox_md_result_t full, first, second;
    g_equilibrating = 0;
    if (md_test_run(&cfg, &hooks, 1, &full))
        return;
    CHECK(g_equilibrating == 2);
    /* the first half, with its final checkpoint */
    cfg.steps = 20;
    cfg.checkpoint_path = ckpt;
    if (md_test_run(&cfg, &hooks, 0, &first))
        return;
    CHECK(first.summary.checkpoints == 1 && first.summary.checkpoint_step == 20);
    /* the second half from it, the configuration still asking for 100 steps of equilibration */
    cfg.steps = 40;
    cfg.checkpoint_path = NULL;
    cfg.restart_path = ckpt;
    g_equilibrating = 0;
    if (md_test_run(&cfg, &hooks, 1, &second))
        return;
    printf("restart at step %lld: %d equilibration notices, equilibrate_steps %lld\n",
           second.summary.first_step, g_equilibrating, second.summary.equilibrate_steps);
    CHECK(second.summary.first_step == 20 && second.summary.steps == 20);
    CHECK(g_equilibrating == 0);
    CHECK(second.summary.equilibrate_steps == 0);
    size_t bytes = sizeof(double) * 3 * (size_t)full.natoms;
    CHECK_MSG(full.natoms == second.natoms && !memcmp(full.x, second.x, bytes) &&
                  !memcmp(full.v, second.v, bytes),
              "the restarted run does not end bit-identical to the uninterrupted one");
    halox_md_result_free(&full);
    halox_md_result_free(&first);
    halox_md_result_free(&second);
    unlink(ckpt);
    rmdir(dir);
}

static void bad_count(void)
{
    halox_md_config_t cfg;
    water(&cfg, -1);
    cfg.equilibrate = -3;
    CHECK_STATUS(halox_md_config_check(&cfg), HALOX_ERR_INVALID_ARG);
    printf("equilibrate -3: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "equilibration of -3 steps") != NULL);
}

int main(void)
{
    bad_count();
    preset_temperature();
    counts_exclude_equilibration();
    restart_does_not_equilibrate();
    TEST_DONE();
}
