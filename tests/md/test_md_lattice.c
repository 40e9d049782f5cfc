/* Step-0 energies and pressure against independent references:
 *   1. LAMMPS bench/in.lj (log of the LAMMPS distribution): E_pair -6.7733681, Press -5.0197073
 *      at step 0, to 1e-7 relative in double precision and 1e-5 in single, for 32000 atoms on
 *      1 rank and on 2x2x2 ranks, and the same potential energy for 4000 atoms (10^3 cells);
 *   2. an fcc crystal at T = 0 with a cut-off between the first and second neighbour shells,
 *      where energy and pressure are known in closed form (12 neighbours at a/sqrt(2)), with and
 *      without the energy shift and the tail corrections (Allen & Tildesley);
 *   3. initial velocities: temperature exactly T with 3N-3 degrees of freedom, zero momentum;
 *   4. the placement cache (HALOX_SYSTEM_CACHE) gives the placement's very bits back. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "test_md_common.h"

#define LAMMPS_PE    (-6.7733681)
#define LAMMPS_PRESS (-5.0197073)

static void lammps_step0(int cells, halox_real_t real, const char *grid, double *pe_p)
{
    halox_md_config_t cfg;
    md_test_preset(&cfg, "lammps-lj", cells);
    cfg.steps = 0;
    halox_md_result_t r;
    if (md_test_run_on(&cfg, real, grid, 0, &r))
        return;
    CHECK(r.n_thermo == 1);
    const halox_md_thermo_t *t = &r.thermo[0];
    double tol = real == HALOX_DOUBLE ? 1e-7 : 1e-5;
    printf("lammps-lj %d^3 cells (%lld atoms), %s, grid %s: pe %.10f (rel. err %.2e), press "
           "%.10f (rel. err %.2e), temp %.12f\n",
           cells, r.summary.natoms, test_real_name(real), grid, t->pe, md_rel(t->pe, LAMMPS_PE),
           t->press, md_rel(t->press, LAMMPS_PRESS), t->temp);
    CHECK(r.summary.natoms == 4LL * cells * cells * cells);
    CHECK_MSG(md_rel(t->pe, LAMMPS_PE) < tol, "pe %.10f vs LAMMPS %.7f", t->pe, LAMMPS_PE);
    if (cells == 20)
        CHECK_MSG(md_rel(t->press, LAMMPS_PRESS) < tol, "press %.10f vs LAMMPS %.7f", t->press,
                  LAMMPS_PRESS);
    CHECK_NEAR(t->temp, 1.44, real == HALOX_DOUBLE ? 1e-12 : 1e-6);
    *pe_p = t->pe;
    halox_md_result_free(&r);
}

/* fcc at T = 0, rc between the shells at a/sqrt(2) and a: 12 neighbours per atom. */
static void analytic_fcc(halox_real_t real, int shift, int tail, const char *grid)
{
    double rho = 0.8442, rc = 1.5;
    double a = cbrt(4.0 / rho), r = a / sqrt(2.0);
    double u = 4 * (pow(r, -12) - pow(r, -6)), uc = 4 * (pow(rc, -12) - pow(rc, -6));
    double rf = 48 * pow(r, -12) - 24 * pow(r, -6); /* r . F for one pair */
    double pe = 6 * (u - (shift ? uc : 0)) + (tail ? halox_md_tail_energy(rho, rc) : 0);
    double press = 6 * rf * rho / 3 + (tail ? halox_md_tail_pressure(rho, rc) : 0);
    halox_md_config_t cfg;
    md_test_cold(&cfg, 5, rc, 0.3);
    cfg.shift = shift;
    cfg.tail = tail;
    halox_md_result_t res;
    if (md_test_run_on(&cfg, real, grid, 0, &res))
        return;
    const halox_md_thermo_t *t = &res.thermo[0];
    double tol = real == HALOX_DOUBLE ? 1e-12 : 2e-6;
    printf("fcc T=0 rc=%.1f %s%s %s grid %s: pe %.12f (exact %.12f), press %.12f (exact %.12f)\n",
           rc, shift ? "shifted" : "unshifted", tail ? " +tail" : "", test_real_name(real), grid,
           t->pe, pe, t->press, press);
    CHECK_MSG(md_rel(t->pe, pe) < tol, "pe %.15g vs exact %.15g", t->pe, pe);
    CHECK_MSG(md_rel(t->press, press) < tol, "press %.15g vs exact %.15g", t->press, press);
    CHECK(t->temp == 0 && t->ke == 0);
    halox_md_result_free(&res);
}

static void velocities(void)
{
    halox_md_config_t cfg;
    md_test_config(&cfg, 6);
    cfg.temp = 2.5;
    cfg.seed = 4242;
    cfg.real = HALOX_DOUBLE;
    cfg.steps = 0;
    halox_md_system_t *sys = NULL;
    CHECK_OK(halox_md_system_create(&cfg, &sys));
    if (!sys)
        return;
    double p[3] = {0, 0, 0}, twoke = 0, m2 = 0, m4 = 0;
    for (long long i = 0; i < sys->natoms; i++)
        for (int d = 0; d < 3; d++) {
            double v = sys->v[3 * i + d];
            p[d] += v;
            twoke += v * v;
        }
    double n = (double)sys->natoms, t = twoke / (3 * n - 3);
    for (long long k = 0; k < 3 * sys->natoms; k++) {
        m2 += sys->v[k] * sys->v[k];
        m4 += pow(sys->v[k], 4);
    }
    double kurt = (m4 / (3 * n)) / pow(m2 / (3 * n), 2);
    printf(
        "velocities: T %.15f (target 2.5), momentum %.3g %.3g %.3g, kurtosis %.3f (Gaussian 3)\n",
        t, p[0], p[1], p[2], kurt);
    CHECK_NEAR(t, 2.5, 1e-12);
    for (int d = 0; d < 3; d++)
        CHECK_NEAR(p[d], 0.0, 1e-10);
    CHECK_NEAR(kurt, 3.0, 0.3); /* Maxwell-Boltzmann components are Gaussian */
    /* deterministic: the same seed gives the same bits */
    halox_md_system_t *again = NULL;
    CHECK_OK(halox_md_system_create(&cfg, &again));
    if (again)
        CHECK(!memcmp(sys->v, again->v, sizeof(double) * 3 * (size_t)sys->natoms));
    halox_md_system_destroy(again);
    halox_md_system_destroy(sys);
}

/* HALOX_SYSTEM_CACHE: the second creation reads the first one's file and gets the same bits;
 * a damaged file is ignored (placed again, same bits); without the variable nothing is read. */
static void placement_cache(void)
{
    halox_md_config_t cfg;
    md_test_random(&cfg, 3000, 0.8, 99);
    char dir[] = "/tmp/halox-cache-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    halox_md_system_t *plain = NULL, *wrote = NULL, *read = NULL, *fixed = NULL;
    unsetenv("HALOX_SYSTEM_CACHE");
    CHECK_OK(halox_md_system_create(&cfg, &plain));
    setenv("HALOX_SYSTEM_CACHE", dir, 1);
    CHECK_OK(halox_md_system_create(&cfg, &wrote));
    char path[512];
    snprintf(path, sizeof path, "%s/halox-random-%lld-%a-%llu.bin", dir, cfg.natoms, cfg.density,
             (unsigned long long)cfg.seed);
    FILE *f = fopen(path, "r+b");
    CHECK_MSG(f != NULL, "no cache file %s", path);
    CHECK_OK(halox_md_system_create(&cfg, &read));
    if (f) { /* damage the header: the next creation must not trust it */
        fputc('X', f);
        fclose(f);
    }
    CHECK_OK(halox_md_system_create(&cfg, &fixed));
    const size_t bytes = sizeof(double) * 3 * (size_t)cfg.natoms;
    if (plain && wrote && read && fixed) {
        CHECK(!memcmp(plain->x, wrote->x, bytes));
        CHECK(!memcmp(plain->x, read->x, bytes));
        CHECK(!memcmp(plain->x, fixed->x, bytes));
        CHECK(!memcmp(plain->v, read->v, sizeof(double) * 3 * (size_t)cfg.natoms));
        printf("placement cache: %lld atoms written, read back and rebuilt bit for bit\n",
               cfg.natoms);
    }
    unsetenv("HALOX_SYSTEM_CACHE");
    remove(path);
    rmdir(dir);
    halox_md_system_destroy(plain);
    halox_md_system_destroy(wrote);
    halox_md_system_destroy(read);
    halox_md_system_destroy(fixed);
}

/* Random placement of a box large enough to be filled block by block (160k atoms: 2^3 blocks):
 * no two atoms closer than the minimum distance (every pair checked through a coarse grid of
 * cells twice as wide as that distance, independent of the placement's own cells), every atom
 * inside the box, each block holding its share of the atoms. */
static void placement_blocks(void)
{
    halox_md_config_t cfg;
    md_test_random(&cfg, 160000, 0.8, 7);
    unsetenv("HALOX_SYSTEM_CACHE");
    halox_md_system_t *sys = NULL;
    CHECK_OK(halox_md_system_create(&cfg, &sys));
    if (!sys)
        return;
    const double L = sys->box.len[0], dmin = sys->min_distance;
    const long long n = sys->natoms;
    const int g = (int)(L / (2 * dmin)); /* >= 3 cells per edge: neighbours -1..1 are distinct */
    CHECK(g >= 3);
    int *head = malloc(sizeof(int) * (size_t)g * g * g), *next = malloc(sizeof(int) * (size_t)n);
    long long blocks[8] = {0};
    for (long long c = 0; c < (long long)g * g * g; c++)
        head[c] = -1;
    int inside = 1;
    for (long long i = 0; i < n; i++) {
        int c[3], b = 0;
        for (int d = 0; d < 3; d++) {
            const double x = sys->x[3 * i + d];
            inside &= x >= 0 && x < L;
            c[d] = (int)(x / L * g) % g;
            b |= (x >= L / 2) << d;
        }
        blocks[b]++;
        next[i] = head[c[0] + g * (c[1] + g * c[2])];
        head[c[0] + g * (c[1] + g * c[2])] = (int)i;
    }
    CHECK(inside);
    double closest = L;
    for (long long i = 0; i < n; i++) {
        int c[3];
        for (int d = 0; d < 3; d++)
            c[d] = (int)(sys->x[3 * i + d] / L * g) % g;
        for (int k = 0; k < 27; k++) {
            const int cx = (c[0] + k % 3 - 1 + g) % g, cy = (c[1] + k / 3 % 3 - 1 + g) % g,
                      cz = (c[2] + k / 9 - 1 + g) % g;
            for (int j = head[cx + g * (cy + g * cz)]; j >= 0; j = next[j]) {
                if (j == i)
                    continue;
                double r2 = 0;
                for (int d = 0; d < 3; d++) {
                    double dd = sys->x[3 * i + d] - sys->x[3 * (long long)j + d];
                    dd -= L * nearbyint(dd / L);
                    r2 += dd * dd;
                }
                closest = fmin(closest, sqrt(r2));
            }
        }
    }
    printf("random placement of %lld atoms: closest pair %.6f (minimum %.6f); blocks", n, closest,
           dmin);
    for (int b = 0; b < 8; b++)
        printf(" %lld", blocks[b]);
    printf("\n");
    CHECK(closest >= dmin);
    for (int b = 0; b < 8; b++) /* 2^3 blocks: n / 8 each */
        CHECK(blocks[b] == n / 8);
    free(head);
    free(next);
    halox_md_system_destroy(sys);
}

int main(void)
{
    placement_cache();
    placement_blocks();
    double pe20d = 0, pe10d = 0, pe20f = 0, pe10f = 0, pe20g = 0;
    lammps_step0(20, HALOX_DOUBLE, "1x1x1", &pe20d);
    lammps_step0(10, HALOX_DOUBLE, "1x1x1", &pe10d);
    lammps_step0(20, HALOX_FLOAT, "1x1x1", &pe20f);
    lammps_step0(10, HALOX_FLOAT, "1x1x1", &pe10f);
    lammps_step0(20, HALOX_DOUBLE, "2x2x2", &pe20g);
    printf("pe(32000) - pe(4000): double %.3g, float %.3g; 2x2x2 - 1 rank (double): %.3g\n",
           pe20d - pe10d, pe20f - pe10f, pe20g - pe20d);
    CHECK_MSG(md_rel(pe10d, pe20d) < 1e-12, "4000 and 32000 atoms differ: %.15g vs %.15g", pe10d,
              pe20d);
    CHECK_MSG(md_rel(pe10f, pe20f) < 1e-5, "4000 and 32000 atoms differ: %.15g vs %.15g", pe10f,
              pe20f);
    CHECK_MSG(md_rel(pe20g, pe20d) < 1e-13, "2x2x2 and 1 rank differ: %.15g vs %.15g", pe20g,
              pe20d);
    for (int shift = 0; shift <= 1; shift++)
        for (int tail = 0; tail <= 1; tail++)
            analytic_fcc(HALOX_DOUBLE, shift, tail, "1x1x1");
    analytic_fcc(HALOX_DOUBLE, 1, 1, "2x2x1");
    analytic_fcc(HALOX_FLOAT, 0, 0, "1x2x2");
    velocities();
    TEST_DONE();
}
