/* Geometry (rank <-> grid coordinates, neighbours, domains, ownership, wrapping) and every bad
 * input the core must refuse with a clear message instead of crashing. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "halox/geometry.h"
#include "halox/plan.h"
#include "harness.h"

static void check_message(const char *must_contain)
{
    CHECK_MSG(strstr(halox_last_error(), must_contain) != NULL, "message '%s' lacks '%s'",
              halox_last_error(), must_contain);
}

static void geometry(void)
{
    halox_grid_t g = {{4, 3, 2}};
    halox_box_t b = {{10.0, 7.5, 3.0}};
    CHECK(halox_grid_size(&g) == 24);
    for (int r = 0; r < 24; r++) {
        int c[3];
        halox_grid_coords(&g, r, c);
        CHECK(halox_grid_rank(&g, c) == r);
        CHECK(c[0] == r % 4 && c[1] == (r / 4) % 3 && c[2] == r / 12);
        for (int d = 0; d < 3; d++) {
            int up = halox_grid_neighbour(&g, r, d, +1), dn = halox_grid_neighbour(&g, r, d, -1);
            CHECK(halox_grid_neighbour(&g, up, d, -1) == r);
            CHECK(halox_grid_neighbour(&g, dn, d, +1) == r);
        }
        double lo[3], hi[3];
        halox_domain_bounds(&g, &b, r, lo, hi);
        for (int d = 0; d < 3; d++) {
            CHECK(lo[d] < hi[d]);
            CHECK(halox_owner_coord(&g, &b, d, lo[d]) == c[d]);
            CHECK(halox_owner_coord(&g, &b, d, nextafter(hi[d], 0)) == c[d]);
            if (c[d] + 1 < g.n[d])
                CHECK(halox_owner_coord(&g, &b, d, hi[d]) == c[d] + 1);
        }
    }
    /* two ranks in a dimension: both neighbours are the same rank */
    halox_grid_t g2 = {{2, 1, 1}};
    CHECK(halox_grid_neighbour(&g2, 0, 0, -1) == 1 && halox_grid_neighbour(&g2, 0, 0, 1) == 1);
    CHECK(halox_grid_neighbour(&g2, 0, 1, -1) == 0);
    /* ownership agrees with bounds on many awkward values */
    halox_grid_t g3 = {{7, 3, 5}};
    halox_box_t b3 = {{1.1, 0.7, 3.3}};
    for (int i = 0; i < 100000; i++) {
        double x[3] = {fmod(i * 0.000123457, 1.1), fmod(i * 0.0000713, 0.7),
                       fmod(i * 0.00033, 3.3)};
        int r = halox_owner_rank(&g3, &b3, x);
        double lo[3], hi[3];
        halox_domain_bounds(&g3, &b3, r, lo, hi);
        for (int d = 0; d < 3; d++)
            CHECK(x[d] >= lo[d] && x[d] < hi[d]);
    }
    CHECK(halox_wrap(-1e-18, 5.0) >= 0 && halox_wrap(-1e-18, 5.0) < 5.0);
    CHECK(halox_wrap(5.0, 5.0) == 0.0);
    CHECK(fabs(halox_wrap(-12.25, 5.0) - 2.75) < 1e-15);
    CHECK(fabs(halox_wrap(17.5, 5.0) - 2.5) < 1e-15);

    halox_grid_t p;
    CHECK_OK(halox_grid_parse("2x3x4", &p));
    CHECK(p.n[0] == 2 && p.n[1] == 3 && p.n[2] == 4);
    CHECK_OK(halox_grid_parse("1,1,8", &p)); /* the form of --cells and --box */
    CHECK(p.n[2] == 8);
    CHECK_OK(halox_grid_parse("2X3X1", &p));
    CHECK(p.n[0] == 2 && p.n[1] == 3 && p.n[2] == 1);
    /* one separator, the same twice */
    CHECK_STATUS(halox_grid_parse("2x2,2", &p), HALOX_ERR_INVALID_ARG);
    check_message("cannot read grid '2x2,2': expected NXxNYxNZ (or NX,NY,NZ)");
    CHECK_STATUS(halox_grid_parse("2,2x2", &p), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_grid_parse("2;2;2", &p), HALOX_ERR_INVALID_ARG);
    check_message("expected NXxNYxNZ (or NX,NY,NZ)");
    CHECK_STATUS(halox_grid_parse("2x2", &p), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_grid_parse("0x2x2", &p), HALOX_ERR_INVALID_ARG);
    check_message("at least 1 rank");
    CHECK_STATUS(halox_grid_parse("-1x2x2", &p), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_grid_parse("2x2x2x", &p), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_grid_parse("abc", &p), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_grid_parse("99999x99999x99999", &p), HALOX_ERR_INVALID_ARG);

    /* default grids: brute force over every factorisation x >= y >= z, smallest surface */
    static const int want[][4] = {{1, 1, 1, 1}, {2, 2, 1, 1},  {4, 2, 2, 1}, {6, 3, 2, 1},
                                  {8, 2, 2, 2}, {12, 3, 2, 2}, {7, 7, 1, 1}, {64, 4, 4, 4}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        halox_grid_default(want[i][0], &p);
        CHECK(p.n[0] == want[i][1] && p.n[1] == want[i][2] && p.n[2] == want[i][3]);
    }
    /* huge counts (a launcher's variable) take no time: the alarm fails a search that spins */
    alarm(20);
    static const int huge[][4] = {{1000000000, 1000, 1000, 1000},
                                  {2147483647, 2147483647, 1, 1},
                                  {2095133040, 1292, 1287, 1260},
                                  {1073741824, 1024, 1024, 1024}};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        halox_grid_default(huge[i][0], &p);
        CHECK(p.n[0] == huge[i][1] && p.n[1] == huge[i][2] && p.n[2] == huge[i][3]);
    }
    alarm(0);
    for (int P = 1; P <= 96; P++) {
        halox_grid_default(P, &p);
        CHECK(halox_grid_size(&p) == P && p.n[0] >= p.n[1] && p.n[1] >= p.n[2]);
        const long s = (long)p.n[0] * p.n[1] + (long)p.n[1] * p.n[2] + (long)p.n[0] * p.n[2];
        for (int a = 1; a <= P; a++)
            for (int b = 1; b <= P; b++)
                if (P % (a * b) == 0)
                    CHECK((long)a * b + (long)b * (P / (a * b)) + (long)a * (P / (a * b)) >= s);
    }
}

static void bad_params(void)
{
    halox_plan_params_t ok = {{{2, 2, 2}}, {{10, 10, 10}}, 2.5, 0.3, 0, 0};
    int np[3];
    CHECK_OK(halox_plan_check(&ok, np));
    CHECK(np[0] == 1 && np[1] == 1 && np[2] == 1);

    halox_plan_params_t p = ok;
    p.grid.n[1] = 0;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p.grid.n[1] = -3;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p = ok;
    p.box.len[2] = 0;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    check_message("box length in z");
    p.box.len[2] = -4;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p.box.len[2] = NAN;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p.box.len[2] = INFINITY;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p = ok;
    p.cutoff = 0;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p.cutoff = -1;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p.cutoff = NAN;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p = ok;
    p.buffer = -0.1;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    p.buffer = INFINITY;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    /* minimum image */
    p = ok;
    p.cutoff = 5.0;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    check_message("half the box");
    /* too many pulses: 10 ranks of width 1 in x with halo 4.8 needs 5 */
    p = ok;
    p.grid.n[0] = 10;
    p.cutoff = 4.5;
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    check_message("needs 5 pulses in x");
    check_message("use at most 8 ranks in x");
    p.grid.n[0] = 8;
    CHECK_OK(halox_plan_check(&p, np));
    CHECK(np[0] == 4);
    CHECK_STATUS(halox_plan_check(NULL, np), HALOX_ERR_INVALID_ARG);
}

static void bad_atoms(void)
{
    halox_plan_params_t prm = {{{2, 1, 1}}, {{10, 10, 10}}, 2.5, 0.3, 0, 0};
    halox_atoms_t a[2];
    halox_plan_t pl[2];
    for (int r = 0; r < 2; r++) {
        CHECK_OK(halox_atoms_init(&a[r], HALOX_FLOAT, 3, 0));
        CHECK_OK(halox_atoms_reserve(&a[r], 4));
        halox_plan_init(&pl[r]);
    }
    CHECK_STATUS(halox_atoms_init(&a[0], HALOX_FLOAT, 5, 0), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_atoms_init(&a[0], (halox_real_t)3, 3, 0), HALOX_ERR_INVALID_ARG);
    /* a valid system first */
    a[0].n_home = 1;
    a[1].n_home = 1;
    double x0[3] = {1, 2, 3}, x1[3] = {6, 2, 3};
    for (int d = 0; d < 3; d++) {
        halox_atoms_set(&a[0], 0, d, x0[d]);
        halox_atoms_set(&a[1], 0, d, x1[d]);
    }
    a[0].id[0] = 0;
    a[1].id[0] = 1;
    CHECK_OK(halox_reference_build(&prm, a, pl));
    /* NaN */
    a[1].n_home = 1;
    halox_atoms_set(&a[1], 0, 1, NAN);
    a[0].n_home = 1;
    CHECK_STATUS(halox_reference_build(&prm, a, pl), HALOX_ERR_COORDINATE);
    check_message("non-finite y");
    /* outside the box */
    halox_atoms_set(&a[1], 0, 1, 12.0);
    CHECK_STATUS(halox_reference_build(&prm, a, pl), HALOX_ERR_COORDINATE);
    check_message("outside the rank's domain");
    halox_atoms_set(&a[1], 0, 1, -0.5);
    CHECK_STATUS(halox_reference_build(&prm, a, pl), HALOX_ERR_COORDINATE);
    /* in the box but in the other rank's domain */
    halox_atoms_set(&a[1], 0, 1, 2.0);
    halox_atoms_set(&a[1], 0, 0, 1.0);
    CHECK_STATUS(halox_reference_build(&prm, a, pl), HALOX_ERR_COORDINATE);
    check_message("migrate");
    for (int r = 0; r < 2; r++) {
        halox_atoms_free(&a[r]);
        halox_plan_free(&pl[r]);
    }
    /* every status has a string */
    CHECK(strcmp(halox_status_string(HALOX_OK), "success") == 0);
    CHECK(strcmp(halox_status_string((halox_status_t)-999), "unknown status") == 0);
    CHECK(strlen(halox_status_string(HALOX_ERR_TIMEOUT)) > 5);
}

/* A plan rebuilt with fewer pulses leaves no stale entries behind. */
static void fewer_pulses(void)
{
    halox_plan_params_t big = {{{4, 1, 1}}, {{12, 9, 9}}, 4.0, 0.3, 0, 0}; /* 2 pulses in x */
    halox_plan_params_t small = {{{4, 1, 1}}, {{12, 9, 9}}, 2.0, 0.3, 0, 0};
    halox_atoms_t a[4];
    halox_plan_t pl[4];
    for (int r = 0; r < 4; r++) {
        CHECK_OK(halox_atoms_init(&a[r], HALOX_DOUBLE, 3, 0));
        CHECK_OK(halox_atoms_reserve(&a[r], 8));
        halox_plan_init(&pl[r]);
        a[r].n_home = 2;
        for (int i = 0; i < 2; i++) {
            halox_atoms_set(&a[r], i, 0, 3.0 * r + 0.5 + 2.0 * i);
            halox_atoms_set(&a[r], i, 1, 1.0 + i);
            halox_atoms_set(&a[r], i, 2, 1.0);
            a[r].id[i] = 2 * r + i;
        }
    }
    CHECK_OK(halox_reference_build(&big, a, pl));
    CHECK(pl[0].n_pulses == 4 && pl[0].pulse[1].send_count > 0);
    for (int r = 0; r < 4; r++)
        a[r].n_total = a[r].n_home = 2;
    CHECK_OK(halox_reference_build(&small, a, pl));
    CHECK(pl[0].n_pulses == 3);
    for (int r = 0; r < 4; r++)
        for (int k = pl[r].n_pulses; k < HALOX_MAX_PULSES; k++)
            CHECK(pl[r].pulse[k].send_count == 0 && pl[r].pulse[k].recv_count == 0 &&
                  pl[r].pulse[k].dep_mask == 0);
    CHECK(pl[0].generation == 2);
    for (int r = 0; r < 4; r++) {
        halox_atoms_free(&a[r]);
        halox_plan_free(&pl[r]);
    }
}

int main(void)
{
    geometry();
    bad_params();
    bad_atoms();
    fewer_pulses();
    TEST_DONE();
}
