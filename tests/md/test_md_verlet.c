/* The pair-list buffer from an energy-drift tolerance (md/engine/verlet_buffer.h).
 *
 * 1. The estimate: it falls with the buffer and grows with the rebuild interval (lammps-lj-like
 *    LJ liquid shifted and unshifted, water-density), is zero for a buffer beyond every
 *    displacement and for T 0; the chosen buffer is the smallest multiple of 0.01 rc within the
 *    tolerance (its estimate at most the tolerance, the next smaller's above); the chosen
 *    interval has the least cost of the candidates; halox_md_config_verlet() keeps what it is
 *    told to keep and refuses tolerances that are not finite and > 0 or that nothing meets.
 * 2. NVE on the CPU engine: 4000 atoms (fcc 10^3 at density 0.8442, equilibrated 200 steps at
 *    T 1.44), rc 2.5 shifted, double precision, lists without the rebuild check, 400 steps,
 *    total energy every 5 steps, drift = least-squares slope per atom per unit time:
 *      - a buffer of half the cut-off rebuilt every 10 steps (estimate 0): the integrator's own
 *        drift D0 (typically -1.5e-5);
 *      - the buffer chosen for E = 1e-3: |drift| <= 2 E + |D0| (typically -2.1e-4: skin 0.175,
 *        every 10 steps);
 *      - no buffer at the same interval: |drift| > 10 E (typically -3.9e-2), and the estimate
 *        (5.2e-2) is an upper-side one: |drift| - |D0| at most the estimate and above a third
 *        of it (the model is not vacuous either).
 * 3. With the tool's path as the argument: the banner and the JSON settings of a run with
 *    --verlet-tolerance carry the chosen skin, interval, tolerance and estimate. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "engine/verlet_buffer.h"
#include "test_md_common.h"

static const md_vbuf_system_t lj_shifted = {1.44, 0.8442, 1.0, 2.5, 0.005, 1};
static const md_vbuf_system_t lj_plain = {1.44, 0.8442, 1.0, 2.5, 0.005, 0};
static const md_vbuf_system_t water = {1.2, 0.8, 1.0, 5.0, 0.005, 0};

static void monotone(const char *name, const md_vbuf_system_t *s)
{
    const double step = MD_VBUF_STEP * s->cutoff;
    int bad_b = 0, bad_n = 0;
    /* falls with the buffer: every interval of the candidates, buffers to half the cut-off */
    for (int i = 0; i < md__vbuf_ncandidates; i++) {
        const int n = md__vbuf_candidates[i];
        double prev = md__vbuf_drift(s, n, 0.0);
        CHECK_MSG(prev > 0 && isfinite(prev), "%s: drift %g without a buffer", name, prev);
        for (int k = 1; k <= 50; k++) {
            const double d = md__vbuf_drift(s, n, k * step);
            if (!(d >= 0 && (d < prev || (d == 0 && prev == 0)))) {
                if (!bad_b++)
                    fprintf(stderr, "%s: n %d: drift %g at buffer %g, %g at %g\n", name, n, d,
                            k * step, prev, (k - 1) * step);
            }
            prev = d;
        }
    }
    /* grows with the interval, 1 to 100 steps, for small to moderate buffers */
    for (int k = 0; k <= 20; k += 5) {
        double prev = md__vbuf_drift(s, 1, k * step);
        for (int n = 2; n <= 100; n++) {
            const double d = md__vbuf_drift(s, n, k * step);
            if (!(d >= prev * (1 - 1e-12))) {
                if (!bad_n++)
                    fprintf(stderr, "%s: buffer %g: drift %g at %d steps, %g at %d\n", name,
                            k * step, d, n, prev, n - 1);
            }
            prev = d;
        }
    }
    CHECK_MSG(bad_b == 0, "%s: %d drifts that do not fall with the buffer", name, bad_b);
    CHECK_MSG(bad_n == 0, "%s: %d drifts that do not grow with the interval", name, bad_n);
    /* a buffer beyond every displacement: zero-ish (10 steps: s = 0.085 at T 1.44) */
    const double none = md__vbuf_drift(s, 10, s->cutoff);
    CHECK_MSG(none < 1e-30 * md__vbuf_drift(s, 10, 0.0), "%s: drift %g with a buffer of rc", name,
              none);
    md_vbuf_system_t cold = *s;
    cold.temp = 0;
    CHECK(md__vbuf_drift(&cold, 100, 0.0) == 0.0);
    printf("%s: drift per atom per tau at 10/20/50/100 steps, buffer 0: %.3g %.3g %.3g %.3g; "
           "buffer 0.1 rc: %.3g %.3g %.3g %.3g\n",
           name, md__vbuf_drift(s, 10, 0), md__vbuf_drift(s, 20, 0), md__vbuf_drift(s, 50, 0),
           md__vbuf_drift(s, 100, 0), md__vbuf_drift(s, 10, 10 * step),
           md__vbuf_drift(s, 20, 10 * step), md__vbuf_drift(s, 50, 10 * step),
           md__vbuf_drift(s, 100, 10 * step));
}

static void smallest(const char *name, const md_vbuf_system_t *s)
{
    const double step = MD_VBUF_STEP * s->cutoff;
    const double tols[] = {1e-2, 1e-3, 1e-4, 1e-5, 1e-8};
    for (int i = 0; i < md__vbuf_ncandidates; i++)
        for (int t = 0; t < 5; t++) {
            const int n = md__vbuf_candidates[i];
            double b = -1, d = -1;
            if (md__vbuf_min_buffer(s, n, tols[t], &b, &d) != 0) {
                /* nothing up to rc: then rc itself is above the tolerance */
                CHECK_MSG(md__vbuf_drift(s, n, s->cutoff) > tols[t], "%s: n %d tol %g", name, n,
                          tols[t]);
                continue;
            }
            const double k = b / step;
            CHECK_MSG(fabs(k - nearbyint(k)) < 1e-9 && b >= 0 && b <= s->cutoff * (1 + 1e-12),
                      "%s: buffer %g is not a multiple of %g up to rc", name, b, step);
            CHECK_MSG(d == md__vbuf_drift(s, n, b) && d <= tols[t],
                      "%s: n %d tol %g: buffer %g has drift %g", name, n, tols[t], b, d);
            if (b > 0)
                CHECK_MSG(md__vbuf_drift(s, n, b - step) > tols[t],
                          "%s: n %d tol %g: buffer %g - %g also within (%g)", name, n, tols[t], b,
                          step, md__vbuf_drift(s, n, b - step));
        }
    /* the choice: the least cost over the candidates, each with its own smallest buffer */
    for (int t = 0; t < 5; t++) {
        int n = 0;
        double b = 0, d = 0;
        CHECK(md__vbuf_choose(s, tols[t], 5.0, md__vbuf_candidates, md__vbuf_ncandidates, &n, &b,
                              &d) == 0);
        const double cost = md__vbuf_cost(s->cutoff, b, n, 5.0);
        for (int i = 0; i < md__vbuf_ncandidates; i++) {
            double bi, di;
            if (md__vbuf_min_buffer(s, md__vbuf_candidates[i], tols[t], &bi, &di) == 0)
                CHECK_MSG(cost <= md__vbuf_cost(s->cutoff, bi, md__vbuf_candidates[i], 5.0),
                          "%s: tol %g: chose %d steps (cost %g), %d costs %g", name, tols[t], n,
                          cost, md__vbuf_candidates[i],
                          md__vbuf_cost(s->cutoff, bi, md__vbuf_candidates[i], 5.0));
        }
        printf("%s: tolerance %g: skin %g, rebuild every %d steps (estimate %.3g, cost %.3f)\n",
               name, tols[t], b, n, d, cost);
    }
    /* a dearer rebuild never picks a shorter interval */
    int n5 = 0, n50 = 0;
    double b5, b50, d5, d50;
    CHECK(md__vbuf_choose(s, 1e-4, 5.0, md__vbuf_candidates, md__vbuf_ncandidates, &n5, &b5, &d5) ==
          0);
    CHECK(md__vbuf_choose(s, 1e-4, 50.0, md__vbuf_candidates, md__vbuf_ncandidates, &n50, &b50,
                          &d50) == 0);
    CHECK_MSG(n50 >= n5, "%s: rebuild cost 50 chose %d steps, cost 5 chose %d", name, n50, n5);
}

static void public_api(void)
{
    halox_md_config_t c;
    halox_md_verlet_t v;
    halox_md_config_default(&c); /* T 1.44, density 0.8442, rc 2.5 unshifted, dt 0.005 */
    c.shift = 1;
    c.verlet_tolerance = 1e-3;
    CHECK_OK(halox_md_config_verlet(&c, 0, 0, 0, &v));
    CHECK(v.chose_skin && v.chose_rebuild && v.skin == c.skin &&
          v.rebuild_every == c.rebuild_every);
    CHECK(v.drift <= 1e-3 && v.density == 0.8442 && v.temp == 1.44 &&
          v.rebuild_cost == HALOX_MD_VERLET_REBUILD_COST);
    CHECK_NEAR(v.drift, halox_md_verlet_drift(1.44, 0.8442, 2.5, 0.005, 1, c.rebuild_every, c.skin),
               0);
    CHECK_OK(halox_md_config_check(&c));
    /* a kept interval: the smallest skin for it */
    c.rebuild_every = 50;
    c.skin = 9;
    CHECK_OK(halox_md_config_verlet(&c, 0, HALOX_MD_VERLET_KEEP_REBUILD, 0, &v));
    CHECK(c.rebuild_every == 50 && !v.chose_rebuild && v.chose_skin && c.skin < 9 &&
          v.drift <= 1e-3);
    CHECK(halox_md_verlet_drift(1.44, 0.8442, 2.5, 0.005, 1, 50, c.skin - 0.025) > 1e-3);
    /* a kept skin: the longest interval within the tolerance */
    c.skin = 0.3;
    CHECK_OK(halox_md_config_verlet(&c, 0, HALOX_MD_VERLET_KEEP_SKIN, 0, &v));
    CHECK(c.skin == 0.3 && v.chose_rebuild && !v.chose_skin && v.drift <= 1e-3);
    printf("kept skin 0.3: rebuild every %d steps (estimate %.3g)\n", c.rebuild_every, v.drift);
    CHECK(c.rebuild_every == 10); /* 20 steps: 2.7e-3, above; 10: 2.6e-6 */
    /* both kept: nothing changes, the estimate is given (above the tolerance here) */
    c.skin = 0;
    c.rebuild_every = 20;
    CHECK_OK(halox_md_config_verlet(
        &c, 0.8, HALOX_MD_VERLET_KEEP_SKIN | HALOX_MD_VERLET_KEEP_REBUILD, 0, &v));
    CHECK(c.skin == 0 && c.rebuild_every == 20 && v.drift > 1e-3 && v.density == 0.8);
    /* refused: not finite and > 0, and what no buffer meets */
    const double bad[] = {0, -1e-3, NAN, INFINITY, -INFINITY};
    for (int i = 0; i < 5; i++) {
        c.verlet_tolerance = bad[i];
        CHECK_STATUS(halox_md_config_verlet(&c, 0, 0, 0, &v), HALOX_ERR_INVALID_ARG);
        CHECK(strstr(halox_last_error(), "Verlet-buffer tolerance") != NULL);
    }
    c.verlet_tolerance = NAN;
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "Verlet-buffer tolerance nan") != NULL);
    c.verlet_tolerance = -1;
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    c.verlet_tolerance = 0; /* off */
    CHECK_OK(halox_md_config_check(&c));
    c.verlet_tolerance = 1e-300;
    c.rebuild_every = 100;
    CHECK_STATUS(halox_md_config_verlet(&c, 0, HALOX_MD_VERLET_KEEP_REBUILD, 0, &v),
                 HALOX_ERR_INVALID_ARG);
    printf("refused: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "no skin up to the cut-off (2.5)") != NULL);
    c.verlet_tolerance = 1e-9;
    c.skin = 0;
    CHECK_STATUS(halox_md_config_verlet(&c, 0, HALOX_MD_VERLET_KEEP_SKIN, 0, &v),
                 HALOX_ERR_INVALID_ARG);
    printf("refused: %s\n", halox_last_error());
    CHECK(strstr(halox_last_error(), "skin 0 is too small even for lists rebuilt every step"));
    /* the tiniest positive tolerance is met by a buffer beyond every displacement */
    c.verlet_tolerance = DBL_TRUE_MIN;
    CHECK_OK(halox_md_config_verlet(&c, 0, 0, 0, &v));
    CHECK(v.drift == 0 && c.skin <= 2.5);
    CHECK(isnan(halox_md_verlet_drift(1, 0.8, 2.5, 0.005, 1, 0, 0.1)));
    CHECK(isnan(halox_md_verlet_drift(1, 0.8, 2.5, 0.005, 1, 10, -0.1)));
    CHECK(isnan(halox_md_verlet_drift(NAN, 0.8, 2.5, 0.005, 1, 10, 0.1)));
}

/* ---- NVE ---------------------------------------------------------------------------------- */

#define TOL 1e-3

/* least-squares slope of E_total(t), per atom per unit time */
static double slope(const halox_md_result_t *r)
{
    double mt = 0, me = 0, sxy = 0, sxx = 0;
    const int n = r->n_thermo;
    for (int i = 0; i < n; i++) {
        mt += r->thermo[i].time / n;
        me += r->thermo[i].etotal / n;
    }
    for (int i = 0; i < n; i++) {
        sxy += (r->thermo[i].time - mt) * (r->thermo[i].etotal - me);
        sxx += (r->thermo[i].time - mt) * (r->thermo[i].time - mt);
    }
    return sxy / sxx;
}

static void liquid(halox_md_config_t *c)
{
    md_test_config(c, 10); /* 4000 atoms at density 0.8442, T 1.44 */
    c->shift = 1;
    c->real = HALOX_DOUBLE;
    c->equilibrate = 200;
    c->steps = 400;
    c->thermo_every = 5;
    c->rebuild_check = 0;
}

static int nve(const halox_md_config_t *c, double *drift, double *temp)
{
    halox_md_result_t r;
    if (md_test_run(c, NULL, 0, &r))
        return 1;
    *drift = slope(&r);
    double t = 0;
    for (int i = 0; i < r.n_thermo; i++)
        t += r.thermo[i].temp / r.n_thermo;
    *temp = t;
    CHECK(r.n_thermo == 81 && r.summary.rebuilds == c->steps / c->rebuild_every);
    halox_md_result_free(&r);
    return 0;
}

static void drift_test(void)
{
    halox_md_config_t huge, chosen, none;
    halox_md_verlet_t v;
    double d_huge, d_chosen, d_none, t_huge, t_chosen, t_none;
    liquid(&huge);
    huge.skin = 1.25;
    huge.rebuild_every = 10;
    const double est_huge = halox_md_verlet_drift(1.44, 0.8442, 2.5, 0.005, 1, 10, 1.25);
    liquid(&chosen);
    chosen.verlet_tolerance = TOL;
    CHECK_OK(halox_md_config_verlet(&chosen, 0, 0, 0, &v));
    none = chosen;
    none.verlet_tolerance = 0;
    none.skin = 0;
    const double est_none =
        halox_md_verlet_drift(1.44, 0.8442, 2.5, 0.005, 1, none.rebuild_every, 0);
    if (nve(&huge, &d_huge, &t_huge) || nve(&chosen, &d_chosen, &t_chosen) ||
        nve(&none, &d_none, &t_none))
        return;
    printf("NVE 4000 atoms, rc 2.5 shifted, double, 400 steps (mean T %.3f %.3f %.3f):\n"
           "  skin 1.25 every 10 (estimate %.2g): drift %.3e per atom per tau\n"
           "  tolerance %g: skin %g every %d (estimate %.3g): drift %.3e (bound 2 E + |D0| = "
           "%.3e)\n"
           "  skin 0 every %d (estimate %.3g): drift %.3e (must exceed 10 E = %.0e)\n",
           t_huge, t_chosen, t_none, est_huge, d_huge, TOL, chosen.skin, chosen.rebuild_every,
           v.drift, d_chosen, 2 * TOL + fabs(d_huge), none.rebuild_every, est_none, d_none,
           10 * TOL);
    CHECK(est_huge == 0);
    CHECK_MSG(fabs(d_huge) < 5e-5, "the integrator alone drifts %g", d_huge);
    CHECK_MSG(fabs(d_chosen) <= 2 * TOL + fabs(d_huge), "chosen buffer drifts %g", d_chosen);
    CHECK_MSG(fabs(d_none) > 10 * TOL, "no buffer drifts only %g", d_none);
    /* missed pairs near rc have U < 0 (shifted): the energy goes down */
    CHECK(d_none < 0);
    CHECK_MSG(fabs(d_none) - fabs(d_huge) <= est_none && fabs(d_none) > est_none / 3,
              "no buffer: drift %g against the estimate %g", d_none, est_none);
}

/* ---- the tool ----------------------------------------------------------------------------- */

/* halox-md (path) on the CPU with the arguments and --json js, its output into out: it exits 0;
 * *o and *j (freed first) are what it wrote there (NULL where a file cannot be read). */
static void run_tool(const char *path, const char *args, const char *js, const char *out, char **o,
                     char **j)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "HALOX_DEVICE=cpu '%s' %s --json '%s' > '%s' 2>&1", path, args, js,
             out);
    CHECK_MSG(system(cmd) == 0, "%s", cmd);
    free(*o);
    free(*j);
    *o = md_test_slurp(out, NULL);
    *j = md_test_slurp(js, NULL);
}

static void tool(const char *path)
{
    char dir[] = "/tmp/halox-verlet-XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char out[128], js[128], *o = NULL, *j = NULL;
    snprintf(out, sizeof out, "%s/out.txt", dir);
    snprintf(js, sizeof js, "%s/run.json", dir);
    /* the preset's skin 0.3 and interval 20 are replaced (not given on the command line) */
    run_tool(path, "--preset lammps-lj --cells 5,5,5 --shift --steps 0 --verlet-tolerance 1e-3", js,
             out, &o, &j);
    CHECK(o && strstr(o, "skin 0.175, rebuild every 10 steps\n"));
    CHECK(o && strstr(o, "Verlet buffer: skin and rebuild interval chosen, estimated drift by "
                         "missed pairs 0.000509 <= the tolerance 0.001"));
    CHECK(j && strstr(j, "\"skin\": 0.175,"));
    CHECK(j && strstr(j, "\"rebuild_every\": 10,"));
    CHECK(j && strstr(j, "\"verlet_tolerance\": 0.001,"));
    CHECK(j && strstr(j, "\"verlet_drift_estimate\": 0.000509"));
    /* --skin given: only the interval is chosen */
    run_tool(path, "--cells 5,5,5 --shift --steps 0 --skin 0.3 --verlet-tolerance 1e-3", js, out,
             &o, &j);
    CHECK(o && strstr(o, "skin 0.3, rebuild every 10 steps\n"));
    CHECK(o && strstr(o, "Verlet buffer: rebuild interval chosen (--skin given)"));
    /* both given: nothing chosen, the estimate said to be above */
    run_tool(path,
             "--cells 5,5,5 --shift --steps 0 --skin 0 --rebuild-every 20 --verlet-tolerance 1e-3",
             js, out, &o, &j);
    CHECK(o && strstr(o, "skin 0, rebuild every 20 steps\n"));
    CHECK(o && strstr(o, "--skin and --rebuild-every given, nothing chosen, estimated drift by "
                         "missed pairs 0.118 ABOVE the tolerance 0.001"));
    /* without the option: null in the JSON */
    run_tool(path, "--cells 5,5,5 --steps 0", js, out, &o, &j);
    CHECK(j && strstr(j, "\"verlet_tolerance\": null,\n    \"verlet_drift_estimate\": null"));
    free(o);
    free(j);
    md_test_remove_dir(dir);
}

int main(int argc, char **argv)
{
    monotone("lammps-lj shifted", &lj_shifted);
    monotone("lammps-lj unshifted", &lj_plain);
    monotone("water-density", &water);
    smallest("lammps-lj shifted", &lj_shifted);
    smallest("lammps-lj unshifted", &lj_plain);
    smallest("water-density", &water);
    public_api();
    drift_test();
    if (argc > 1)
        tool(argv[1]);
    TEST_DONE();
}
