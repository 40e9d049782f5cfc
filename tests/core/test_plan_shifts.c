/* Periodic shifts (params.periodic_shifts = 1) against independent brute force:
 * - pulses only in dimensions with more than one rank; none at all on 1x1x1 (n_total = n_home);
 *   plan.shift_dims names exactly the one-rank dimensions; zone bit d never set there;
 * - every local atom is an image of its global atom: unshifted in the shift dimensions, inside
 *   [lo, hi + halo) in the others, and every such image is present exactly once;
 * - the pairs: over all ranks, the local pairs (a, b) the zone rule allows, with the minimum
 *   image in the plan's shift dimensions and plain differences in the others, within the
 *   cut-off, mapped to (global id, global id, image), are every pair of the periodic system
 *   within the cut-off (brute force, minimum image in every dimension) exactly once;
 * - per-rank forces over those pairs, the reverse reference exchange (fewer pulses, or none),
 *   equal a serial brute-force computation; the reference coordinate exchange refills the halo
 *   with the bits of the build;
 * - halox_plan_check refuses a one-rank dimension whose edge is not above twice the list radius
 *   (cut-off + buffer), naming it, and copies (periodic_shifts = 0) still plan there.
 * The grids of test_plan_reference (one-rank edges that are too short for shifts are lengthened
 * after the refusal is checked) plus grids with one-rank dimensions; float and double, stride 3
 * and 4, uniform, clustered and slab systems. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/checksys.h"
#include "halox/plan.h"
#include "harness.h"
#include "pair_keys.h"

/* The pairs a rank computes (zone rule, minimum image in its shift dimensions, < rc), as keys;
 * with f, the check's pair force (F = (1 - r^2/rc^2)^2 dx) on its local atoms, in double. */
static void rank_pairs(const chk_system_t *sys, const halox_plan_t *plan, const halox_atoms_t *at,
                       double rc, chk_pairs_t *out, double *f)
{
    const double *L = sys->box.len;
    for (int a = 0; a < at->n_total; a++)
        for (int b = a + 1; b < at->n_total; b++) {
            if (!halox_zone_pair(plan->zone[a], plan->zone[b]))
                continue;
            double dx[3];
            double r2 = local_dx(plan, at, a, b, dx);
            if (!(r2 < rc * rc))
                continue;
            int ga = at->id[a], gb = at->id[b], n[3];
            for (int d = 0; d < 3; d++) {
                double dg = sys->x[3 * ga + d] - sys->x[3 * gb + d];
                n[d] = (int)round((dg - dx[d]) / L[d]);
            }
            keys_push(out, pair_key(ga, gb, n));
            if (f) {
                double s = 1 - r2 / (rc * rc);
                s *= s;
                for (int d = 0; d < 3; d++) {
                    f[3 * a + d] += s * dx[d];
                    f[3 * b + d] -= s * dx[d];
                }
            }
        }
}

/* Plan structure in shift mode. */
static void check_plan(const halox_plan_t *plan, const halox_plan_t *all, const int g[3])
{
    int want_shift = 0, sum = 0;
    for (int d = 0; d < 3; d++) {
        want_shift |= (g[d] == 1) << d;
        CHECK_MSG((plan->pulses_per_dim[d] == 0) == (g[d] == 1),
                  "rank %d: %d pulses in dim %d with %d ranks", plan->rank, plan->pulses_per_dim[d],
                  d, g[d]);
        sum += plan->pulses_per_dim[d];
    }
    CHECK_MSG(plan->shift_dims == want_shift, "rank %d: shift_dims 0x%x, expected 0x%x", plan->rank,
              plan->shift_dims, want_shift);
    CHECK(plan->n_pulses == sum);
    if (g[0] * g[1] * g[2] == 1) {
        CHECK_MSG(plan->n_pulses == 0, "1x1x1: %d pulses", plan->n_pulses);
        CHECK_MSG(plan->n_total == plan->n_home, "1x1x1: %d local atoms, %d home", plan->n_total,
                  plan->n_home);
    }
    int off = plan->n_home;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        CHECK_MSG(g[p->dim] > 1, "rank %d: pulse %d in dim %d, which has one rank", plan->rank, k,
                  p->dim);
        CHECK(p->send_rank != plan->rank && p->recv_rank != plan->rank);
        CHECK(p->recv_offset == off);
        off += p->recv_count;
        CHECK(all[p->recv_rank].pulse[k].send_count == p->recv_count);
        CHECK(all[p->send_rank].pulse[k].recv_rank == plan->rank);
        int home = 0;
        for (int i = 0; i < p->send_count; i++) {
            CHECK(p->send_index[i] >= 0 && p->send_index[i] < p->recv_offset);
            if (i > 0)
                CHECK(p->send_index[i - 1] < p->send_index[i]);
            home += p->send_index[i] < plan->n_home;
        }
        CHECK_MSG(home == p->dep_offset, "rank %d pulse %d: dep_offset %d, home entries %d",
                  plan->rank, k, p->dep_offset, home);
        double want = plan->coord[p->dim] == 0 ? plan->params.box.len[p->dim] : 0.0;
        CHECK(p->shift == want);
    }
    CHECK(off == plan->n_total);
    for (int k = plan->n_pulses; k < HALOX_MAX_PULSES; k++)
        CHECK(plan->pulse[k].send_count == 0 && plan->pulse[k].recv_count == 0);
    for (int d = 0; d < 3; d++)
        if (g[d] == 1)
            CHECK(plan->lo[d] == 0 && plan->hi[d] == plan->params.box.len[d]);
}

/* Local atoms are images of their global atoms: unshifted in shift dimensions, in [lo, hi + rh)
 * elsewhere; every such image is present once (within tol of the upper edge: optional). */
static void check_images(const chk_system_t *sys, const halox_plan_t *plan, const halox_atoms_t *a,
                         double tol)
{
    const double *L = sys->box.len;
    double rh = plan->halo_dist;
    int *cnt = calloc((size_t)(sys->n > 0 ? sys->n : 1), sizeof(int));
    for (int i = 0; i < a->n_total; i++) {
        int g = a->id[i];
        CHECK_MSG(g >= 0 && g < sys->n, "rank %d atom %d has id %d", plan->rank, i, g);
        if (g < 0 || g >= sys->n)
            continue;
        cnt[g]++;
        for (int d = 0; d < 3; d++) {
            double x = halox_atoms_get(a, i, d), xg = sys->x[3 * g + d];
            if (plan->shift_dims >> d & 1) {
                CHECK_MSG(x == xg && x >= 0 && x < L[d],
                          "rank %d atom %d (id %d): %c = %.17g, global %.17g (a shift "
                          "dimension: no image)",
                          plan->rank, i, g, "xyz"[d], x, xg);
                CHECK_MSG(!(plan->zone[i] >> d & 1), "rank %d atom %d: zone %d in shift dim %d",
                          plan->rank, i, plan->zone[i], d);
                continue;
            }
            double k = round((x - sys->x[3 * g + d]) / L[d]);
            CHECK_MSG(fabs(x - sys->x[3 * g + d] - k * L[d]) <= tol,
                      "rank %d atom %d (id %d) is not an image in %d", plan->rank, i, g, d);
            CHECK_MSG(x >= plan->lo[d] - tol && x < plan->hi[d] + rh + tol,
                      "rank %d atom %d (id %d) at %g outside [%g, %g) in dim %d", plan->rank, i, g,
                      x, plan->lo[d], plan->hi[d] + rh, d);
            if (fabs(x - plan->hi[d]) > tol)
                CHECK_MSG(((plan->zone[i] >> d) & 1) == (x >= plan->hi[d]),
                          "rank %d atom %d zone %d but x[%d]=%g hi=%g", plan->rank, i,
                          plan->zone[i], d, x, plan->hi[d]);
        }
    }
    for (int g = 0; g < sys->n; g++) {
        int must = 1, may = 1;
        for (int d = 0; d < 3; d++) {
            double x0 = sys->x[3 * g + d];
            if (plan->shift_dims >> d & 1) /* the domain is the whole edge: the atom itself */
                continue;
            int m = 0, y = 0;
            for (int k = -1; k <= 3; k++) {
                double x = x0 + k * L[d];
                m += x >= plan->lo[d] && x < plan->hi[d] + rh - tol;
                y += x >= plan->lo[d] - tol && x < plan->hi[d] + rh + tol;
            }
            must *= m;
            may *= y;
        }
        CHECK_MSG(cnt[g] >= must && cnt[g] <= may,
                  "rank %d holds %d images of atom %d, expected %d..%d", plan->rank, cnt[g], g,
                  must, may);
    }
    free(cnt);
}

static int edge_fits(double len, double rh) { return len > 2.0 * rh; }

static long long run_case(const chk_case_t *tc0, halox_real_t real, int stride, uint64_t seed)
{
    chk_case_t tc = *tc0;
    double rh = tc.rc + tc.buf;
    halox_plan_params_t prm = chk_case_params(&tc, 1);
    /* a one-rank edge too short for shifts: refused with its numbers (copies still plan), then
     * lengthened so that the grid is covered in shift mode too */
    int refused = 0;
    for (int d = 0; d < 3; d++) {
        if (tc.g[d] != 1 || edge_fits(tc.L[d], rh))
            continue;
        if (!refused) {
            CHECK_STATUS(halox_plan_check(&prm, NULL), HALOX_ERR_DECOMPOSITION);
            char want[64];
            snprintf(want, sizeof want, "box edge %c %g", "xyz"[d], tc.L[d]);
            CHECK_MSG(strstr(halox_last_error(), want) &&
                          strstr(halox_last_error(), "periodic_shifts = 0"),
                      "message '%s' does not name '%s' and copies", halox_last_error(), want);
            halox_plan_params_t copies = prm;
            copies.periodic_shifts = 0;
            CHECK_OK(halox_plan_check(&copies, NULL));
        }
        refused = 1;
        tc.L[d] = 2.0 * rh + 1.0;
        prm.box.len[d] = tc.L[d];
    }
    chk_world_t w;
    CHECK_OK(chk_world_make(&w, &prm, tc.n, tc.dist, seed, real, stride));
    const int P = w.P;
    const chk_system_t sys = w.sys;
    halox_atoms_t *atoms = w.atoms;
    halox_plan_t *plans = w.plans;
    CHECK_OK(halox_reference_build(&prm, atoms, plans));
    double tol = chk_case_tol(&tc, real);

    long long halo = 0;
    for (int r = 0; r < P; r++) {
        check_plan(&plans[r], plans, tc.g);
        check_images(&sys, &plans[r], &atoms[r], tol);
        halo += atoms[r].n_total - atoms[r].n_home;
    }

    /* pairs and forces over all ranks vs brute force */
    chk_pairs_t got = {0}, strict = {0}, loose = {0};
    size_t rs = halox_real_size(real) * (size_t)stride;
    void **f = calloc(P > 0 ? (size_t)P : 1, sizeof *f); /* P >= 1: the bound tells gcc so */
    for (int r = 0; r < P; r++) {
        int nt = atoms[r].n_total;
        double *fd = calloc(3 * (size_t)(nt + 1), sizeof(double));
        rank_pairs(&sys, &plans[r], &atoms[r], tc.rc, &got, fd);
        f[r] = calloc((size_t)(nt + 1), rs);
        for (int i = 0; i < nt; i++)
            for (int d = 0; d < 3; d++) {
                if (real == HALOX_FLOAT)
                    ((float *)f[r])[(size_t)i * stride + d] = (float)fd[3 * i + d];
                else
                    ((double *)f[r])[(size_t)i * stride + d] = fd[3 * i + d];
            }
        free(fd);
    }
    global_pairs(&sys, tc.rc - tol, &strict);
    global_pairs(&sys, tc.rc + tol, &loose);
    chk_pairs_sort(&got);
    chk_pairs_sort(&loose);
    long long bad = 0;
    for (long long i = 1; i < got.n; i++)
        if (got.key[i] >> 8 == got.key[i - 1] >> 8) { /* the same atoms twice, any image */
            if (bad++ < 5)
                fprintf(stderr, "pair (%d, %d) computed twice\n", (int)(got.key[i] >> 40),
                        (int)(got.key[i] >> 8 & 0xffffffff));
        }
    for (long long i = 0; i < strict.n; i++)
        if (!chk_pairs_has(&got, strict.key[i]) && bad++ < 5)
            fprintf(stderr, "pair (%d, %d) image %d missing\n", (int)(strict.key[i] >> 40),
                    (int)(strict.key[i] >> 8 & 0xffffffff), (int)(strict.key[i] & 0xff));
    for (long long i = 0; i < got.n; i++)
        if (!chk_pairs_has(&loose, got.key[i]) && bad++ < 5)
            fprintf(stderr, "pair (%d, %d) image %d is not a pair of the system\n",
                    (int)(got.key[i] >> 40), (int)(got.key[i] >> 8 & 0xffffffff),
                    (int)(got.key[i] & 0xff));
    CHECK_MSG(bad == 0, "%lld pair violations", bad);
    CHECK(strict.n > 0 || tc.n < 2);

    /* the reference coordinate exchange refills the halo with the build's bits */
    void **x = calloc((size_t)P, sizeof *x);
    void **x0 = calloc((size_t)P, sizeof *x0);
    for (int r = 0; r < P; r++) {
        size_t b = rs * (size_t)(atoms[r].n_total + 1);
        x0[r] = malloc(b);
        memcpy(x0[r], atoms[r].x, rs * (size_t)atoms[r].n_total);
        x[r] = atoms[r].x;
        memset((char *)atoms[r].x + rs * (size_t)atoms[r].n_home, 0xff,
               rs * (size_t)(atoms[r].n_total - atoms[r].n_home));
    }
    halox_reference_coords(plans, P, real, stride, x);
    for (int r = 0; r < P; r++)
        CHECK_MSG(memcmp(x0[r], atoms[r].x, rs * (size_t)atoms[r].n_total) == 0,
                  "rank %d: the coordinate exchange differs from the build", r);

    /* forces: reverse exchange, then home forces against serial brute force */
    halox_reference_forces(plans, P, real, stride, f);
    double fscale, maxerr = chk_force_error(&sys, tc.rc, atoms, f, P, real, stride, &fscale);
    double ftol = (real == HALOX_FLOAT ? 2e-4 : 1e-10) * (fscale + 1);
    CHECK_MSG(maxerr >= 0 && maxerr <= ftol, "force error %g > %g", maxerr, ftol);

    printf("grid %dx%dx%d box %gx%gx%g%s n %d rc %g buf %g %s %s stride %d: pulses %d/%d/%d, "
           "shift dims 0x%x, halo atoms %lld, pairs %lld, max force err %.2e\n",
           tc.g[0], tc.g[1], tc.g[2], tc.L[0], tc.L[1], tc.L[2], refused ? " (lengthened)" : "",
           tc.n, tc.rc, tc.buf, chk_dist_name(tc.dist), test_real_name(real), stride,
           plans[0].pulses_per_dim[0], plans[0].pulses_per_dim[1], plans[0].pulses_per_dim[2],
           plans[0].shift_dims, halo, got.n, maxerr);

    for (int r = 0; r < P; r++) {
        free(f[r]);
        free(x0[r]);
    }
    free(f);
    free(x);
    free(x0);
    chk_pairs_free(&got);
    chk_pairs_free(&strict);
    chk_pairs_free(&loose);
    chk_world_free(&w);
    return halo;
}

/* The refusal itself: numbers, dimension, what to do; the boundary; bad values. */
static void check_errors(void)
{
    halox_plan_params_t p = {{{1, 1, 1}}, {{8, 8, 8}}, 2.5, 1.5, 1, 0}; /* 2 x 4 = 8: not above */
    int np[3] = {-1, -1, -1};
    CHECK_STATUS(halox_plan_check(&p, np), HALOX_ERR_DECOMPOSITION);
    const char *m = halox_last_error();
    CHECK_MSG(strstr(m, "box edge x 8") && strstr(m, "list radius 4") &&
                  strstr(m, "periodic_shifts = 0") && strstr(m, "larger box"),
              "message: %s", m);
    printf("too short for shifts: %s\n", m);
    halox_atoms_t a;
    halox_plan_t pl;
    CHECK_OK(halox_atoms_init(&a, HALOX_FLOAT, 3, 0));
    halox_plan_init(&pl);
    CHECK_STATUS(halox_reference_build(&p, &a, &pl), HALOX_ERR_DECOMPOSITION);
    /* just above: planned, no pulses */
    p.box.len[0] = p.box.len[1] = p.box.len[2] = 8.0001;
    CHECK_OK(halox_plan_check(&p, np));
    CHECK(np[0] == 0 && np[1] == 0 && np[2] == 0);
    /* copies plan the short box: one self pulse per dimension, no shift dimensions */
    p.box.len[0] = p.box.len[1] = p.box.len[2] = 8;
    p.periodic_shifts = 0;
    CHECK_OK(halox_plan_check(&p, np));
    CHECK(np[0] == 1 && np[1] == 1 && np[2] == 1);
    CHECK_OK(halox_reference_build(&p, &a, &pl));
    CHECK(pl.shift_dims == 0 && pl.n_pulses == 3);
    /* the one-rank dimension is named, the split ones are not refused */
    halox_plan_params_t q = {{{2, 1, 1}}, {{20, 8, 9}}, 3.0, 1.0, 1, 0};
    CHECK_STATUS(halox_plan_check(&q, np), HALOX_ERR_DECOMPOSITION);
    CHECK_MSG(strstr(halox_last_error(), "box edge y 8"), "message: %s", halox_last_error());
    q.box.len[1] = 9;
    CHECK_OK(halox_plan_check(&q, np));
    CHECK(np[0] == 1 && np[1] == 0 && np[2] == 0);
    /* neither 0 nor 1 */
    q.periodic_shifts = 2;
    CHECK_STATUS(halox_plan_check(&q, np), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "periodic_shifts is 2"), "message: %s",
              halox_last_error());
    halox_plan_free(&pl);
    halox_atoms_free(&a);
}

int main(void)
{
    check_errors();
    const chk_case_t cases[] = {
        /* test_plan_reference's grids */
        {{1, 1, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM},
        {{2, 1, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM},
        {{1, 2, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM},
        {{1, 1, 2}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_CLUSTERED},
        {{2, 2, 2}, {10, 10, 10}, 2500, 2.0, 0.2, CHK_UNIFORM},
        {{3, 2, 1}, {12, 10, 8}, 2500, 2.0, 0.3, CHK_UNIFORM},
        {{4, 3, 2}, {16, 12, 10}, 3000, 2.5, 0.3, CHK_UNIFORM},
        {{3, 3, 3}, {12, 12, 12}, 3000, 3.5, 0.5, CHK_UNIFORM},
        {{5, 1, 1}, {20, 8, 8}, 2000, 3.0, 0.4, CHK_UNIFORM},
        {{4, 1, 1}, {12, 9, 9}, 2000, 4.0, 0.3, CHK_UNIFORM},
        {{6, 1, 1}, {12, 9, 9}, 2000, 4.0, 0.5, CHK_UNIFORM},
        {{2, 2, 1}, {6, 6, 8}, 1200, 2.9, 0.4, CHK_UNIFORM},
        {{3, 3, 2}, {9, 9, 8}, 2500, 3.5, 0.5, CHK_UNIFORM},
        {{1, 1, 1}, {6, 6, 6}, 800, 2.9, 3.5, CHK_UNIFORM},
        {{4, 3, 2}, {12, 9, 8}, 2500, 3.5, 0.4, CHK_CLUSTERED},
        {{4, 2, 2}, {16, 8, 8}, 2000, 2.5, 0.3, CHK_SLAB},
        {{2, 3, 4}, {6, 30, 40}, 3000, 2.5, 0.5, CHK_UNIFORM},
        {{6, 2, 1}, {30, 6, 6}, 3000, 2.8, 0.2, CHK_UNIFORM},
        {{3, 1, 3}, {6, 7, 6}, 1500, 2.9, 0.9, CHK_UNIFORM},
        {{8, 1, 1}, {16, 8, 8}, 1500, 3.8, 0.2, CHK_UNIFORM},
        {{2, 2, 2}, {9, 9, 9}, 1500, 4.4, 1.5, CHK_UNIFORM},
        {{5, 4, 3}, {15, 12, 9}, 4000, 2.9, 0.3, CHK_UNIFORM},
        {{4, 4, 4}, {12, 12, 12}, 5000, 4.0, 0.3, CHK_UNIFORM},
        {{9, 1, 1}, {18, 8, 8}, 1500, 3.9, 1.0, CHK_UNIFORM},
        {{3, 3, 3}, {9, 9, 9}, 1200, 4.4, 2.0, CHK_UNIFORM},
        {{8, 1, 1}, {16, 14, 14}, 1000, 6.5, 0.5, CHK_UNIFORM},
        {{2, 1, 1}, {10, 10, 10}, 0, 2.5, 0.3, CHK_UNIFORM},
        /* one-rank dimensions everywhere */
        {{1, 1, 1}, {7, 7, 7}, 1200, 2.5, 0.5, CHK_UNIFORM},    /* edge just above 2 rh */
        {{1, 1, 1}, {9, 13, 7}, 1500, 2.5, 0.3, CHK_CLUSTERED}, /* elongated */
        {{1, 1, 3}, {8, 8, 12}, 1500, 2.5, 0.3, CHK_UNIFORM},
        {{1, 3, 1}, {8, 12, 8}, 1500, 2.5, 0.3, CHK_SLAB},
        {{3, 1, 2}, {12, 8, 8}, 2000, 2.5, 0.3, CHK_UNIFORM},
        {{2, 1, 3}, {8, 9, 12}, 2000, 2.5, 0.5, CHK_CLUSTERED},
        {{1, 2, 2}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM},
        {{2, 2, 1}, {8, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM},
        {{1, 4, 1}, {8, 8, 8}, 1500, 2.5, 0.4, CHK_UNIFORM},    /* 2 pulses in y */
        {{1, 1, 4}, {12, 12, 9}, 1500, 3.5, 0.5, CHK_UNIFORM},  /* 2 pulses in z */
        {{6, 1, 1}, {12, 12, 12}, 1500, 4.5, 0.5, CHK_UNIFORM}, /* 3 pulses in x */
        {{1, 8, 1}, {16, 15, 15}, 1000, 6.5, 0.5, CHK_UNIFORM}, /* 4 pulses in y */
        {{2, 1, 1}, {5, 8, 8}, 800, 2.4, 0.2, CHK_UNIFORM},     /* 2 ranks, 2 pulses */
        {{1, 2, 1}, {8, 10, 8}, 1, 2.5, 0.3, CHK_UNIFORM},      /* one atom */
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    long long halo_111 = -1;
    for (int c = 0; c < nc; c++) {
        long long h = run_case(&cases[c], HALOX_FLOAT, 3, 5000 + c);
        if (cases[c].g[0] * cases[c].g[1] * cases[c].g[2] == 1)
            halo_111 = h;
        if (c % 3 == 0)
            run_case(&cases[c], HALOX_DOUBLE, 3, 6000 + c);
        if (c % 5 == 1)
            run_case(&cases[c], HALOX_FLOAT, 4, 7000 + c);
    }
    CHECK_MSG(halo_111 == 0, "1x1x1 imports %lld halo atoms", halo_111);
    TEST_DONE();
}
