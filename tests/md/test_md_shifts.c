/* The CPU engine with periodic shifts (one-rank dimensions without self-image copies): step-0
 * energy, pressure and the number of listed pairs against a brute-force minimum-image search in
 * double, for boxes whose shift dimensions have only a few cells of the list grid (4 cells, where
 * offsets +2 and -2 reach the same cell; 2 cells, where +1 and -1 do; a single cell, where the
 * stencil meets the atom's own cell as images) and ordinary ones, on 1 rank (no halo at all) and
 * on grids that split some dimensions (halo only there). A pair listed twice, or missed, changes
 * the pair count, the energy and the pressure. Where a one-rank edge is too short for shifts
 * (at most twice cutoff + skin) the engine keeps copies: halo atoms, the same exact values. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_md_common.h"

#define RC   2.5
#define SKIN 0.3

typedef struct {
    double L[3];
    int n;
} sys_t;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

static double min_image_r2(const double *a, const double *b, const double L[3], double dx[3])
{
    double r2 = 0;
    for (int d = 0; d < 3; d++) {
        double v = a[d] - b[d];
        v -= L[d] * round(v / L[d]);
        dx[d] = v;
        r2 += v * v;
    }
    return r2;
}

/* n random atoms at least 0.9 apart (minimum image), written as an XYZ file with its box. */
static double *make_file(const sys_t *s, uint64_t seed, const char *path)
{
    double *x = malloc(sizeof(double) * 3 * (size_t)s->n);
    uint64_t r = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int i = 0; i < s->n; i++) {
        for (int tries = 0;; tries++) {
            for (int d = 0; d < 3; d++)
                x[3 * i + d] = rng_unit(&r) * s->L[d];
            int ok = 1;
            for (int j = 0; j < i && ok; j++) {
                double dx[3];
                ok = min_image_r2(&x[3 * i], &x[3 * j], s->L, dx) >= 0.81;
            }
            if (ok)
                break;
            if (tries > 100000) {
                fprintf(stderr, "cannot place atom %d\n", i);
                exit(1);
            }
        }
    }
    FILE *f = fopen(path, "w");
    fprintf(f, "%d\nLattice=\"%.17g 0 0 0 %.17g 0 0 0 %.17g\"\n", s->n, s->L[0], s->L[1], s->L[2]);
    for (int i = 0; i < s->n; i++)
        fprintf(f, "Ar %.17g %.17g %.17g\n", x[3 * i], x[3 * i + 1], x[3 * i + 2]);
    fclose(f);
    return x;
}

/* Brute force: PE per atom and virial pressure (T = 0) within RC (minimum image), and the
 * (pair, image) combinations within RC + SKIN: one image per pair where an edge exceeds twice
 * that radius (shifts), possibly two with copies in a shorter edge. */
static void brute(const sys_t *s, const double *x, double *pe_p, double *press_p, long long *np_p)
{
    double e = 0, w = 0, rl2 = (RC + SKIN) * (RC + SKIN);
    long long np = 0;
    for (int i = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++) {
            for (int k = 0; k < 27; k++) {
                double q2 = 0;
                for (int d = 0, c = k; d < 3; d++, c /= 3) {
                    double v = x[3 * i + d] - x[3 * j + d] + (c % 3 - 1) * s->L[d];
                    q2 += v * v;
                }
                np += q2 < rl2;
            }
            double dx[3], r2 = min_image_r2(&x[3 * i], &x[3 * j], s->L, dx);
            if (!(r2 < RC * RC))
                continue;
            double sr6 = 1 / (r2 * r2 * r2);
            e += 4 * sr6 * (sr6 - 1);
            w += 48 * sr6 * (sr6 - 0.5);
        }
    *pe_p = e / s->n;
    *press_p = w / (3 * s->L[0] * s->L[1] * s->L[2]);
    *np_p = np;
}

static void run(const sys_t *s, const char *grid, halox_real_t real, int expect_copies,
                uint64_t seed)
{
    char path[64];
    snprintf(path, sizeof path, "md_shifts_%d.xyz", (int)getpid());
    double *x = make_file(s, seed, path);
    double pe, press;
    long long np;
    brute(s, x, &pe, &press, &np);
    halox_md_config_t cfg;
    md_test_cold(&cfg, 4, RC, SKIN);
    cfg.source = HALOX_MD_READ;
    cfg.read_path = path;
    halox_md_result_t res;
    if (md_test_run_on(&cfg, real, grid, 0, &res) == 0) {
        const halox_md_thermo_t *t = &res.thermo[0];
        double tol = real == HALOX_DOUBLE ? 1e-10 : 2e-5;
        printf("box %gx%gx%g, %d atoms, grid %s, %s: pe %.12f (brute %.12f), press %.12f (brute "
               "%.12f), pairs %.0f (brute %lld), halo atoms %.1f per rank\n",
               s->L[0], s->L[1], s->L[2], s->n, grid, test_real_name(real), t->pe, pe, t->press,
               press, res.summary.pairs, np, res.summary.halo_atoms);
        CHECK_MSG(md_rel(t->pe, pe) < tol, "pe %.15g vs brute force %.15g", t->pe, pe);
        CHECK_MSG(fabs(t->press - press) < tol * (fabs(press) + 1), "press %.15g vs %.15g",
                  t->press, press);
        /* the list radius in float rounds a few pairs either way; in double it is exact */
        if (real == HALOX_DOUBLE)
            CHECK_MSG(res.summary.pairs == (double)np, "%.0f pairs listed, %lld within the radius",
                      res.summary.pairs, np);
        else
            CHECK_MSG(fabs(res.summary.pairs - (double)np) <= 2 + 1e-5 * np,
                      "%.0f pairs listed, %lld within the radius", res.summary.pairs, np);
        if (expect_copies)
            CHECK_MSG(res.summary.halo_atoms > 0, "copies expected: %.1f halo atoms",
                      res.summary.halo_atoms);
        else if (strcmp(grid, "1x1x1") == 0)
            CHECK_MSG(res.summary.halo_atoms == 0, "1x1x1 with shifts: %.1f halo atoms",
                      res.summary.halo_atoms);
        halox_md_result_free(&res);
    }
    unlink(path);
    free(x);
}

int main(void)
{
    const double rl2 = 2 * (RC + SKIN);            /* 5.6: shifts need one-rank edges above it */
    const sys_t cube4 = {{5.8, 5.8, 5.8}, 120};    /* 4 list cells per edge: +-2 alias */
    const sys_t odd = {{5.8, 7.3, 9.1}, 220};      /* 4, 5 and 6 cells */
    const sys_t rod2 = {{5.7, 5.7, 120}, 160};     /* few atoms: 2 x 2 x 54 cells, +-1 alias */
    const sys_t rod1 = {{5.7, 5.7, 600}, 300};     /* 1 x 1 x 175 cells: the own cell */
    const sys_t big = {{12, 13, 11}, 1100};        /* ordinary */
    const sys_t thin = {{rl2 - 0.1, 12, 12}, 500}; /* x too short for shifts */
    /* system, grid, precision, copies expected, seed */
    const struct {
        const sys_t *s;
        const char *grid;
        halox_real_t real;
        int copies;
        uint64_t seed;
    } cases[] = {
        {&cube4, "1x1x1", HALOX_DOUBLE, 0, 1}, {&cube4, "1x1x1", HALOX_FLOAT, 0, 1},
        {&odd, "1x1x1", HALOX_DOUBLE, 0, 2},   {&odd, "1x1x2", HALOX_DOUBLE, 0, 2},
        {&rod2, "1x1x1", HALOX_DOUBLE, 0, 3},  {&rod2, "1x1x4", HALOX_DOUBLE, 0, 3},
        {&rod2, "1x1x1", HALOX_FLOAT, 0, 3},   {&rod1, "1x1x1", HALOX_DOUBLE, 0, 4},
        {&rod1, "1x1x3", HALOX_DOUBLE, 0, 4},  {&big, "1x1x1", HALOX_DOUBLE, 0, 5},
        {&big, "2x1x1", HALOX_DOUBLE, 0, 5},   {&big, "1x2x2", HALOX_FLOAT, 0, 5},
        {&big, "2x2x2", HALOX_DOUBLE, 0, 5}, /* no shift dimension */
        {&thin, "1x1x1", HALOX_DOUBLE, 1, 6},  {&thin, "1x2x2", HALOX_DOUBLE, 1, 6},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        run(cases[k].s, cases[k].grid, cases[k].real, cases[k].copies, cases[k].seed);
    TEST_DONE();
}
