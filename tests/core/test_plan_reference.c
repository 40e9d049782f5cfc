/* The planner and the reference exchange against independent brute force:
 * - every atom image in [lo, hi + halo) is on the rank exactly once, nothing else is;
 * - every pair within the cut-off is computed by exactly one rank (zone rule);
 * - the plan's invariants (contiguous receive ranges, dependency offsets and masks, zones);
 * - reference forces after the reverse exchange equal a serial brute-force computation.
 * Many grids, 1 to 3 pulses per dimension, cubic and elongated boxes, uniform, clustered and
 * half-empty systems, single and double precision. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/checksys.h"
#include "halox/plan.h"
#include "harness.h"

typedef struct {
    chk_case_t c;
    int expect_pulses_max;
} tcase_t;

static int max_pulses(const halox_plan_t *p)
{
    int m = 0;
    for (int d = 0; d < 3; d++)
        m = p->pulses_per_dim[d] > m ? p->pulses_per_dim[d] : m;
    return m;
}

/* Every image of every global atom inside [lo, hi + rh) is present once; every local atom is
 * such an image. Images within tol of the upper edge are optional. */
static void check_images(const chk_system_t *sys, const halox_plan_t *plan, const halox_atoms_t *a,
                         double tol)
{
    const double *L = sys->box.len;
    double rh = plan->halo_dist;
    /* local atoms: each must be an image of its id inside the region */
    for (int i = 0; i < a->n_total; i++) {
        int g = a->id[i];
        CHECK_MSG(g >= 0 && g < sys->n, "rank %d atom %d has id %d", plan->rank, i, g);
        if (g < 0 || g >= sys->n)
            continue;
        for (int d = 0; d < 3; d++) {
            double x = halox_atoms_get(a, i, d);
            double k = round((x - sys->x[3 * g + d]) / L[d]);
            CHECK_MSG(fabs(x - sys->x[3 * g + d] - k * L[d]) <= tol,
                      "rank %d atom %d (id %d) is not an image in %d", plan->rank, i, g, d);
            CHECK_MSG(x >= plan->lo[d] - tol && x < plan->hi[d] + rh + tol,
                      "rank %d atom %d (id %d) at %g outside region [%g, %g) in dim %d", plan->rank,
                      i, g, x, plan->lo[d], plan->hi[d] + rh, d);
            /* zone bit d set exactly for atoms beyond hi in d */
            int beyond = x >= plan->hi[d];
            if (fabs(x - plan->hi[d]) > tol)
                CHECK_MSG(((plan->zone[i] >> d) & 1) == beyond,
                          "rank %d atom %d zone %d but x[%d]=%g hi=%g", plan->rank, i,
                          plan->zone[i], d, x, plan->hi[d]);
        }
    }
    /* count expected images (strictly inside, by tol) and match them by (id, image offset) */
    long long expected = 0, found = 0;
    int *cnt = calloc((size_t)sys->n, sizeof(int));
    for (int i = 0; i < a->n_total; i++)
        if (a->id[i] >= 0 && a->id[i] < sys->n)
            cnt[a->id[i]]++;
    for (int g = 0; g < sys->n; g++) {
        int must = 1, may = 1; /* images in each dim: product */
        for (int d = 0; d < 3; d++) {
            int m = 0, y = 0;
            for (int k = -1; k <= 3; k++) {
                double x = sys->x[3 * g + d] + k * L[d];
                if (x >= plan->lo[d] && x < plan->hi[d] + rh - tol)
                    m++;
                if (x >= plan->lo[d] - tol && x < plan->hi[d] + rh + tol)
                    y++;
            }
            must *= m;
            may *= y;
        }
        expected += must;
        found += cnt[g];
        CHECK_MSG(cnt[g] >= must && cnt[g] <= may,
                  "rank %d holds %d images of atom %d, expected %d..%d", plan->rank, cnt[g], g,
                  must, may);
    }
    free(cnt);
    (void)expected;
    (void)found;
}

static void check_plan_invariants(const halox_plan_t *plan, const halox_plan_t *all)
{
    int off = plan->n_home;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        CHECK_MSG(p->recv_offset == off, "rank %d pulse %d recv_offset %d, expected %d", plan->rank,
                  k, p->recv_offset, off);
        off += p->recv_count;
        /* the sender's count is what we receive */
        CHECK(all[p->recv_rank].pulse[k].send_count == p->recv_count);
        CHECK(all[p->send_rank].pulse[k].recv_rank == plan->rank);
        int home = 0;
        uint32_t mask = 0;
        for (int i = 0; i < p->send_count; i++) {
            int idx = p->send_index[i];
            CHECK(idx >= 0 && idx < p->recv_offset);
            if (i > 0)
                CHECK(p->send_index[i - 1] < idx);
            if (idx < plan->n_home)
                home++;
            for (int j = 0; j < k; j++)
                if (idx >= plan->pulse[j].recv_offset &&
                    idx < plan->pulse[j].recv_offset + plan->pulse[j].recv_count)
                    mask |= 1u << j;
        }
        CHECK_MSG(home == p->dep_offset, "rank %d pulse %d dep_offset %d, home entries %d",
                  plan->rank, k, p->dep_offset, home);
        CHECK(mask == p->dep_mask);
        if (p->pulse_in_dim > 0)
            CHECK(p->dep_offset == 0);
        double want = plan->coord[p->dim] == 0 ? plan->params.box.len[p->dim] : 0.0;
        CHECK(p->shift == want);
    }
    CHECK(off == plan->n_total);
    for (int k = plan->n_pulses; k < HALOX_MAX_PULSES; k++)
        CHECK(plan->pulse[k].send_count == 0 && plan->pulse[k].recv_count == 0);
}

static void run_case(const tcase_t *t, halox_real_t real, int stride, uint64_t seed)
{
    const chk_case_t *tc = &t->c;
    halox_plan_params_t prm = chk_case_params(tc, 0);
    chk_world_t w;
    CHECK_OK(chk_world_make(&w, &prm, tc->n, tc->dist, seed, real, stride));
    const int P = w.P;
    const chk_system_t sys = w.sys;
    halox_atoms_t *atoms = w.atoms;
    halox_plan_t *plans = w.plans;
    CHECK_OK(halox_reference_build(&prm, atoms, plans));
    double tol = chk_case_tol(tc, real);

    int empty = 0;
    for (int r = 0; r < P; r++) {
        check_plan_invariants(&plans[r], plans);
        check_images(&sys, &plans[r], &atoms[r], tol);
        empty += atoms[r].n_home == 0;
    }
    CHECK(max_pulses(&plans[0]) == t->expect_pulses_max);

    /* pairs: union over ranks vs brute force */
    chk_pairs_t got = {0}, strict = {0}, loose = {0};
    for (int r = 0; r < P; r++)
        CHECK(chk_rank_pairs(&plans[r], &atoms[r], tc->rc, &got) == 0);
    chk_pairs_sort(&got);
    CHECK(chk_global_pairs(&sys, tc->rc - tol, 3000, &strict) == 0);
    CHECK(chk_global_pairs(&sys, tc->rc + tol, 3000, &loose) == 0);
    chk_pairs_sort(&strict);
    chk_pairs_sort(&loose);
    long long bad = chk_compare_pairs(&got, &strict, &loose, 5);
    CHECK_MSG(bad == 0, "%lld pair violations", bad);
    CHECK(strict.n > 0 || tc->n == 0);

    /* forces: per-rank zone-rule forces, reverse reference exchange, vs serial brute force */
    void **f = calloc((size_t)P, sizeof *f);
    size_t rs = halox_real_size(real) * (size_t)stride;
    for (int r = 0; r < P; r++) {
        f[r] = malloc(rs * (size_t)(atoms[r].n_total + 1));
        chk_rank_forces(&plans[r], &atoms[r], tc->rc, f[r]);
    }
    halox_reference_forces(plans, P, real, stride, f);
    double fscale, maxerr = chk_force_error(&sys, tc->rc, atoms, f, P, real, stride, &fscale);
    double ftol = (real == HALOX_FLOAT ? 2e-4 : 1e-10) * (fscale + 1);
    CHECK_MSG(maxerr >= 0 && maxerr <= ftol, "force error %g > %g", maxerr, ftol);

    printf("grid %dx%dx%d box %gx%gx%g n %d rc %g buf %g %s %s stride %d: pulses %d/%d/%d, "
           "pairs %lld, empty ranks %d, max force err %.2e\n",
           tc->g[0], tc->g[1], tc->g[2], tc->L[0], tc->L[1], tc->L[2], tc->n, tc->rc, tc->buf,
           chk_dist_name(tc->dist), test_real_name(real), stride, plans[0].pulses_per_dim[0],
           plans[0].pulses_per_dim[1], plans[0].pulses_per_dim[2], got.n, empty, maxerr);

    for (int r = 0; r < P; r++)
        free(f[r]);
    free(f);
    chk_pairs_free(&got);
    chk_pairs_free(&strict);
    chk_pairs_free(&loose);
    chk_world_free(&w);
}

int main(void)
{
    const tcase_t cases[] = {
        /* grid, box, atoms, rc, buffer, distribution, most pulses in a dimension */
        {{{1, 1, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM}, 1},
        {{{2, 1, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM}, 1},
        {{{1, 2, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM}, 1},
        {{{1, 1, 2}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_CLUSTERED}, 1},
        {{{2, 2, 2}, {10, 10, 10}, 2500, 2.0, 0.2, CHK_UNIFORM}, 1},
        {{{3, 2, 1}, {12, 10, 8}, 2500, 2.0, 0.3, CHK_UNIFORM}, 1},
        {{{4, 3, 2}, {16, 12, 10}, 3000, 2.5, 0.3, CHK_UNIFORM}, 1},
        {{{3, 3, 3}, {12, 12, 12}, 3000, 3.5, 0.5, CHK_UNIFORM}, 1},
        {{{5, 1, 1}, {20, 8, 8}, 2000, 3.0, 0.4, CHK_UNIFORM}, 1},
        {{{4, 1, 1}, {12, 9, 9}, 2000, 4.0, 0.3, CHK_UNIFORM}, 2}, /* w=3, rh=4.3 */
        {{{6, 1, 1}, {12, 9, 9}, 2000, 4.0, 0.5, CHK_UNIFORM}, 3}, /* w=2, rh=4.5 */
        {{{2, 2, 1}, {6, 6, 8}, 1200, 2.9, 0.4, CHK_UNIFORM}, 2},  /* 2 ranks, 2 pulses */
        {{{3, 3, 2}, {9, 9, 8}, 2500, 3.5, 0.5, CHK_UNIFORM}, 2},
        {{{1, 1, 1}, {6, 6, 6}, 800, 2.9, 3.5, CHK_UNIFORM}, 2},     /* self, 2 pulses */
        {{{4, 3, 2}, {12, 9, 8}, 2500, 3.5, 0.4, CHK_CLUSTERED}, 2}, /* empty domains */
        {{{4, 2, 2}, {16, 8, 8}, 2000, 2.5, 0.3, CHK_SLAB}, 1},      /* half the ranks empty */
        {{{2, 3, 4}, {6, 30, 40}, 3000, 2.5, 0.5, CHK_UNIFORM}, 1},  /* elongated */
        {{{6, 2, 1}, {30, 6, 6}, 3000, 2.8, 0.2, CHK_UNIFORM}, 1},   /* elongated the other way */
        {{{3, 1, 3}, {6, 7, 6}, 1500, 2.9, 0.9, CHK_UNIFORM}, 2},
        {{{8, 1, 1}, {16, 8, 8}, 1500, 3.8, 0.2, CHK_UNIFORM}, 2},
        {{{2, 2, 2}, {9, 9, 9}, 1500, 4.4, 1.5, CHK_UNIFORM}, 2}, /* w=4.5 rh=5.9 */
        {{{5, 4, 3}, {15, 12, 9}, 4000, 2.9, 0.3, CHK_UNIFORM}, 2},
        {{{4, 4, 4}, {12, 12, 12}, 5000, 4.0, 0.3, CHK_UNIFORM}, 2}, /* 64 ranks, 3D 2 pulses */
        {{{9, 1, 1}, {18, 8, 8}, 1500, 3.9, 1.0, CHK_UNIFORM}, 3},
        {{{3, 3, 3}, {9, 9, 9}, 1200, 4.4, 2.0, CHK_UNIFORM}, 3},    /* 3 pulses in 3D */
        {{{8, 1, 1}, {16, 14, 14}, 1000, 6.5, 0.5, CHK_UNIFORM}, 4}, /* the most pulses: 4 */
        {{{2, 1, 1}, {10, 10, 10}, 0, 2.5, 0.3, CHK_UNIFORM}, 1},    /* no atoms at all */
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < nc; c++) {
        run_case(&cases[c], HALOX_FLOAT, 3, 1000 + c);
        if (c % 3 == 0)
            run_case(&cases[c], HALOX_DOUBLE, 3, 2000 + c);
        if (c % 5 == 1)
            run_case(&cases[c], HALOX_FLOAT, 4, 3000 + c);
    }
    TEST_DONE();
}
