/* The planner and the checking library on values at and beyond their ranges:
 *   - a huge buffer: the pulse count is compared as a double before it becomes an int (1e20
 *     would wrap to a negative count and pass "at most 4 pulses");
 *   - a box whose images across the upper boundary (edge + halo distance) are beyond the
 *     precision: refused when the plan is built (a float box of 1e39 makes them inf);
 *   - the brute-force pair search of halox-check: a non-finite coordinate is an error, not a
 *     negative cell index (a crash), and a box of 1e6 cut-offs gets a grid of few cells (not a
 *     count that overflows and an allocation that fails). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check/checksys.h"
#include "core/plan/plan_build.h"
#include "halox/plan.h"
#include "halox/status.h"
#include "harness.h"

static int contains(const char *s, const char *what) { return s && strstr(s, what) != NULL; }

static halox_plan_params_t params(const char *grid, double box, double rc, double buf)
{
    halox_plan_params_t p;
    memset(&p, 0, sizeof p);
    halox_grid_parse(grid, &p.grid);
    p.box = (halox_box_t){{box, box, box}};
    p.cutoff = rc;
    p.buffer = buf;
    return p;
}

static void pulse_counts(void)
{
    int np[3];
    halox_plan_params_t p = params("2x2x2", 12, 2.5, 1e20);
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    CHECK_MSG(contains(halox_last_error(), "8.33e+18 pulses in x even with 1 rank"), "message: %s",
              halox_last_error());
    p = params("2x1x1", 10.08, 2.5, 1e18);
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    p = params("1x1x1", 12, 2.5, DBL_MAX);
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    /* edge * ranks beyond double: the domain bounds would overflow */
    p = params("2x1x1", 1e308, 2.5, 0.3);
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "times 2 ranks is beyond the double range"),
              "message: %s", halox_last_error());
    /* 2^31 + 1 pulses: past an int by one */
    p = params("1x1x1", 1, 0.25, 2147483648.0);
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    /* the limit itself: 4 pulses pass, 5 do not and name the ranks that would do */
    p = params("4x1x1", 16, 2.5, 13.5); /* rh 16, width 4: 4 pulses */
    CHECK_OK(halox_plan_check(&p, np));
    CHECK(np[0] == 4 && np[1] == 1 && np[2] == 1);
    p = params("5x1x1", 16, 2.5, 13.5); /* width 3.2: 5 pulses */
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    CHECK_MSG(contains(halox_last_error(), "needs 5 pulses in x with 5 ranks") &&
                  contains(halox_last_error(), "use at most 4 ranks in x"),
              "message: %s", halox_last_error());
}

/* The reference plans of n atoms spread over the box, in the given precision. */
static halox_status_t reference(const halox_plan_params_t *p, halox_real_t real, int n)
{
    int P = halox_grid_size(&p->grid);
    halox_atoms_t atoms[8];
    halox_plan_t plans[8];
    chk_system_t sys;
    if (P > 8 || chk_system_make(&sys, &p->box, n, CHK_UNIFORM, 7) != 0)
        return HALOX_ERR_NO_MEMORY;
    chk_system_round(&sys, real);
    for (int r = 0; r < P; r++) {
        halox_atoms_init(&atoms[r], real, 3, 0);
        halox_plan_init(&plans[r]);
    }
    halox_status_t st = chk_distribute(&sys, &p->grid, atoms);
    if (st == HALOX_OK)
        st = halox_reference_build(p, atoms, plans);
    for (int r = 0; r < P; r++) {
        halox_atoms_free(&atoms[r]);
        halox_plan_free(&plans[r]);
    }
    chk_system_free(&sys);
    return st;
}

static void precision_range(void)
{
    halox_plan_params_t p = params("2x1x1", 1e39, 2.5, 0.3);
    CHECK_STATUS(reference(&p, HALOX_FLOAT, 10), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "largest single-precision number"), "message: %s",
              halox_last_error());
    CHECK_OK(reference(&p, HALOX_DOUBLE, 10));
    /* edge + halo just inside float */
    p = params("2x1x1", 3.4e38, 2.5, 0.3);
    CHECK_OK(reference(&p, HALOX_FLOAT, 10));
    p = params("1x1x1", DBL_MAX, 2.5, 0.3);
    CHECK_OK(reference(&p, HALOX_DOUBLE, 10));
}

static void brute_force_search(void)
{
    /* a rank's local atoms with one halo coordinate inf */
    halox_plan_params_t p = params("2x1x1", 10, 2.5, 0.3);
    halox_atoms_t atoms[2];
    halox_plan_t plans[2];
    chk_system_t sys;
    CHECK(chk_system_make(&sys, &p.box, 300, CHK_UNIFORM, 3) == 0);
    for (int r = 0; r < 2; r++) {
        halox_atoms_init(&atoms[r], HALOX_DOUBLE, 3, 0);
        halox_plan_init(&plans[r]);
    }
    CHECK_OK(chk_distribute(&sys, &p.grid, atoms));
    CHECK_OK(halox_reference_build(&p, atoms, plans));
    chk_pairs_t got = {0};
    CHECK(chk_rank_pairs(&plans[0], &atoms[0], p.cutoff, &got) == 0);
    CHECK(got.n > 0);
    const int last = atoms[0].n_total - 1;
    CHECK(last >= atoms[0].n_home);
    const double bad[3] = {INFINITY, -INFINITY, NAN};
    for (int k = 0; k < 3; k++) {
        halox_atoms_set(&atoms[0], last, 0, bad[k]);
        chk_pairs_free(&got);
        CHECK(chk_rank_pairs(&plans[0], &atoms[0], p.cutoff, &got) == -1);
        double f[3 * 1024];
        CHECK(atoms[0].n_total <= 1024);
        CHECK(chk_rank_forces(&plans[0], &atoms[0], p.cutoff, f) == -1);
    }
    chk_pairs_free(&got);
    for (int r = 0; r < 2; r++) {
        halox_atoms_free(&atoms[r]);
        halox_plan_free(&plans[r]);
    }
    chk_system_free(&sys);

    /* 400 atoms in a box of 4e5 cut-offs: the cell path (limit 10) finds what brute force
     * (limit above n) finds */
    halox_box_t big = {{1e6, 1e6, 1e6}};
    CHECK(chk_system_make(&sys, &big, 400, CHK_CLUSTERED, 5) == 0);
    chk_pairs_t cells = {0}, brute = {0};
    CHECK(chk_global_pairs(&sys, 2.5e4, 10, &cells) == 0);
    CHECK(chk_global_pairs(&sys, 2.5e4, 1000, &brute) == 0);
    chk_pairs_sort(&cells);
    chk_pairs_sort(&brute);
    CHECK_MSG(cells.n == brute.n && brute.n > 0 &&
                  !memcmp(cells.key, brute.key, sizeof(uint64_t) * (size_t)brute.n),
              "cell search %lld pairs, brute force %lld", cells.n, brute.n);
    chk_pairs_free(&cells);
    chk_pairs_free(&brute);
    chk_pairs_t tiny = {0};
    CHECK(chk_global_pairs(&sys, 2.5, 10, &tiny) == 0); /* 4e5 cut-offs per edge */
    chk_pairs_free(&tiny);
    sys.x[5] = NAN;
    CHECK(chk_global_pairs(&sys, 2.5, 10, &tiny) == -1);
    chk_pairs_free(&tiny);
    chk_system_free(&sys);
}

/* A pulse whose atoms would take a rank past the local atoms it can hold: refused before any
 * array grows, with the count and the bound. */
static void local_atoms_bound(void)
{
    halox_plan_t plan;
    memset(&plan, 0, sizeof plan);
    plan.rank = 3;
    plan.n_total = 100;
    halox_atoms_t atoms;
    memset(&atoms, 0, sizeof atoms);
    CHECK_STATUS(halox__plan_recv(&plan, 2, &atoms, HALOX_ATOMS_MAX), HALOX_ERR_NO_MEMORY);
    CHECK_MSG(contains(halox_last_error(), "rank 3: pulse 2 brings 2147483632 halo atoms") &&
                  contains(halox_last_error(), "above the 2147483632 one rank holds"),
              "message: %s", halox_last_error());
    CHECK(plan.n_total == 100 && atoms.capacity == 0);
}

int main(void)
{
    pulse_counts();
    precision_range();
    brute_force_search();
    local_atoms_bound();
    TEST_DONE();
}
