/* Full-shell plans (params.full_shell = 1) against independent brute force:
 * - the pulses: per dimension with pulses, those from the upper neighbour, then as many from the
 *   lower one (ranks, shifts, contiguous receive ranges, dependency offsets and masks); a
 *   second direction's first pulse sends no atom received in its own dimension;
 * - every local atom is an image of its global atom inside [lo - halo, hi + halo) (unshifted in
 *   the shift dimensions), every such image is present exactly once, and the zone says across
 *   which boundary it came (bit d upper, bit 3 + d lower);
 * - the pair rule halox_full_pair: over all ranks, every pair of the periodic system within the
 *   cut-off exactly once (as (global id, global id, image)), forces by the reverse reference
 *   exchange equal serial brute force; newton off (every pair of a home atom, forces on home
 *   atoms only, no exchange) equals it too;
 * - the reference coordinate exchange refills the halo with the build's bits;
 * - halox_full_pair over every zone pair: symmetric, never two halo atoms, and exactly one of a
 *   zone and its mirror (directions swapped) counts;
 * - the half shell is unchanged (the same plans with full_shell = 0 as a zero-initialised one);
 *   full_shell outside 0, 1 is refused, naming the value.
 * Copies and shifts, 1 to 4 pulses per dimension, 2-rank dimensions, float and double. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/checksys.h"
#include "halox/plan.h"
#include "harness.h"
#include "pair_keys.h"

/* Newton on: the pairs halox_full_pair gives this rank (keys) and their forces on both atoms
 * (f_on). Newton off: every pair of a home atom with any local atom, force on the home atom
 * only (f_off). Both in double, 3 per local atom. */
static void rank_pairs(const chk_system_t *sys, const halox_plan_t *plan, const halox_atoms_t *at,
                       double rc, chk_pairs_t *out, double *f_on, double *f_off)
{
    const double *L = sys->box.len;
    for (int a = 0; a < at->n_home; a++)
        for (int b = a + 1; b < at->n_total; b++) {
            double dx[3];
            double r2 = local_dx(plan, at, a, b, dx);
            if (!(r2 < rc * rc))
                continue;
            double s = 1 - r2 / (rc * rc);
            s *= s;
            for (int d = 0; d < 3; d++) {
                f_off[3 * a + d] += s * dx[d];
                if (b < at->n_home)
                    f_off[3 * b + d] -= s * dx[d];
            }
            if (!halox_full_pair(plan->zone[a], plan->zone[b]))
                continue;
            int ga = at->id[a], gb = at->id[b], n[3];
            for (int d = 0; d < 3; d++)
                n[d] = (int)round((sys->x[3 * ga + d] - sys->x[3 * gb + d] - dx[d]) / L[d]);
            keys_push(out, pair_key(ga, gb, n));
            for (int d = 0; d < 3; d++) {
                f_on[3 * a + d] += s * dx[d];
                f_on[3 * b + d] -= s * dx[d];
            }
        }
    /* two halo atoms: never by the rule (over the zones present) */
    int seen[256] = {0};
    for (int a = at->n_home; a < at->n_total; a++)
        seen[plan->zone[a]] = 1;
    for (int za = 0; za < 256; za++)
        for (int zb = 0; zb < 256; zb++)
            if (seen[za] && seen[zb])
                CHECK_MSG(!halox_full_pair((uint8_t)za, (uint8_t)zb),
                          "rank %d: halo zones %d and %d pass the rule", plan->rank, za, zb);
}

static void check_plan(const halox_plan_t *plan, const halox_plan_t *all, const int g[3],
                       int shifts)
{
    int k = 0, off = plan->n_home;
    for (int d = 0; d < 3; d++) {
        int np = plan->pulses_per_dim[d];
        CHECK_MSG((np == 0) == (shifts && g[d] == 1), "rank %d: %d pulses in %d", plan->rank, np,
                  d);
        for (int q = 0; q < 2 * np; q++, k++) {
            const halox_pulse_t *p = &plan->pulse[k];
            int down = q >= np;
            CHECK_MSG(p->dim == d && p->from_lower == down && p->pulse_in_dim == q % np,
                      "rank %d pulse %d: dim %d from_lower %d pulse_in_dim %d", plan->rank, k,
                      p->dim, p->from_lower, p->pulse_in_dim);
            CHECK(p->send_rank ==
                  halox_grid_neighbour(&plan->params.grid, plan->rank, d, down ? +1 : -1));
            CHECK(p->recv_rank ==
                  halox_grid_neighbour(&plan->params.grid, plan->rank, d, down ? -1 : +1));
            double L = plan->params.box.len[d];
            double want =
                down ? (plan->coord[d] == g[d] - 1 ? -L : 0.0) : (plan->coord[d] == 0 ? L : 0.0);
            CHECK_MSG(p->shift == want, "rank %d pulse %d shift %g, want %g", plan->rank, k,
                      p->shift, want);
            CHECK(p->recv_offset == off);
            off += p->recv_count;
            CHECK(all[p->recv_rank].pulse[k].send_count == p->recv_count);
            CHECK(all[p->send_rank].pulse[k].recv_rank == plan->rank);
            int home = 0;
            uint32_t mask = 0;
            for (int i = 0; i < p->send_count; i++) {
                int a = p->send_index[i];
                CHECK(a >= 0 && a < p->recv_offset);
                if (i > 0)
                    CHECK(p->send_index[i - 1] < a);
                home += a < plan->n_home;
                for (int j = 0; j < k; j++) {
                    const halox_pulse_t *r = &plan->pulse[j];
                    if (a < r->recv_offset || a >= r->recv_offset + r->recv_count)
                        continue;
                    mask |= 1u << j;
                    /* the first pulse of a direction: earlier dimensions only; later pulses
                     * forward the previous pulse of their own direction */
                    if (p->pulse_in_dim == 0)
                        CHECK_MSG(r->dim < d, "rank %d pulse %d sends an atom of pulse %d",
                                  plan->rank, k, j);
                    else
                        CHECK(j == k - 1);
                }
            }
            CHECK_MSG(home == p->dep_offset, "rank %d pulse %d dep_offset %d, home entries %d",
                      plan->rank, k, p->dep_offset, home);
            CHECK(mask == p->dep_mask);
        }
    }
    CHECK(plan->n_pulses == k && off == plan->n_total);
    for (; k < HALOX_MAX_PULSES; k++)
        CHECK(plan->pulse[k].send_count == 0 && plan->pulse[k].recv_count == 0);
}

/* Images in [lo - rh, hi + rh) in the dimensions with pulses, unshifted in the shift ones; each
 * present once (within tol of an edge: optional); zones by the side they came from. */
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
        CHECK((i < a->n_home) == (plan->zone[i] == 0));
        for (int d = 0; d < 3; d++) {
            double x = halox_atoms_get(a, i, d), xg = sys->x[3 * g + d];
            int up = plan->zone[i] >> d & 1, low = plan->zone[i] >> (3 + d) & 1;
            CHECK_MSG(!(up && low), "rank %d atom %d: zone %d", plan->rank, i, plan->zone[i]);
            if (plan->shift_dims >> d & 1) {
                CHECK_MSG(x == xg && !up && !low,
                          "rank %d atom %d (id %d): %c = %.17g, global "
                          "%.17g, zone %d (a shift dimension)",
                          plan->rank, i, g, "xyz"[d], x, xg, plan -> zone[i]);
                continue;
            }
            double k = round((x - xg) / L[d]);
            CHECK_MSG(fabs(x - xg - k * L[d]) <= tol,
                      "rank %d atom %d (id %d) is not an image "
                      "in %d",
                      plan->rank, i, g, d);
            CHECK_MSG(x >= plan->lo[d] - rh - tol && x < plan->hi[d] + rh + tol,
                      "rank %d atom %d (id %d) at %g outside [%g, %g) in dim %d", plan->rank, i, g,
                      x, plan->lo[d] - rh, plan->hi[d] + rh, d);
            if (fabs(x - plan->hi[d]) > tol)
                CHECK_MSG(up == (x >= plan->hi[d]), "rank %d atom %d zone %d but x[%d]=%g hi=%g",
                          plan->rank, i, plan->zone[i], d, x, plan->hi[d]);
            if (fabs(x - plan->lo[d]) > tol)
                CHECK_MSG(low == (x < plan->lo[d]), "rank %d atom %d zone %d but x[%d]=%g lo=%g",
                          plan->rank, i, plan->zone[i], d, x, plan->lo[d]);
        }
    }
    for (int g = 0; g < sys->n; g++) {
        int must = 1, may = 1;
        for (int d = 0; d < 3; d++) {
            if (plan->shift_dims >> d & 1)
                continue;
            int m = 0, y = 0;
            for (int k = -6; k <= 6; k++) {
                double x = sys->x[3 * g + d] + k * L[d];
                m += x >= plan->lo[d] - rh + tol && x < plan->hi[d] + rh - tol;
                y += x >= plan->lo[d] - rh - tol && x < plan->hi[d] + rh + tol;
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

static void to_real(void *dst, const double *src, int n, halox_real_t real, int stride)
{
    for (int i = 0; i < n; i++)
        for (int d = 0; d < 3; d++) {
            if (real == HALOX_FLOAT)
                ((float *)dst)[(size_t)i * stride + d] = (float)src[3 * i + d];
            else
                ((double *)dst)[(size_t)i * stride + d] = src[3 * i + d];
        }
}

static void run_case(const chk_case_t *tc, int shifts, halox_real_t real, int stride, uint64_t seed)
{
    halox_plan_params_t prm = chk_case_params(tc, shifts);
    prm.full_shell = 1;
    chk_world_t w;
    CHECK_OK(chk_world_make(&w, &prm, tc->n, tc->dist, seed, real, stride));
    const int P = w.P;
    const chk_system_t sys = w.sys;
    halox_atoms_t *atoms = w.atoms;
    halox_plan_t *plans = w.plans;
    CHECK_OK(halox_reference_build(&prm, atoms, plans));
    double tol = chk_case_tol(tc, real);
    long long halo = 0;
    for (int r = 0; r < P; r++) {
        check_plan(&plans[r], plans, tc->g, shifts);
        check_images(&sys, &plans[r], &atoms[r], tol);
        halo += atoms[r].n_total - atoms[r].n_home;
    }

    chk_pairs_t got = {0}, strict = {0}, loose = {0};
    size_t rs = halox_real_size(real) * (size_t)stride;
    void **f = calloc((size_t)P, sizeof *f), **f_off = calloc((size_t)P, sizeof *f_off);
    for (int r = 0; r < P; r++) {
        int nt = atoms[r].n_total;
        double *on = calloc(3 * (size_t)(nt + 1), sizeof(double));
        double *off = calloc(3 * (size_t)(nt + 1), sizeof(double));
        rank_pairs(&sys, &plans[r], &atoms[r], tc->rc, &got, on, off);
        f[r] = calloc((size_t)(nt + 1), rs);
        f_off[r] = calloc((size_t)(nt + 1), rs);
        to_real(f[r], on, nt, real, stride);
        to_real(f_off[r], off, nt, real, stride);
        free(on);
        free(off);
    }
    global_pairs(&sys, tc->rc - tol, &strict);
    global_pairs(&sys, tc->rc + tol, &loose);
    chk_pairs_sort(&got);
    chk_pairs_sort(&loose);
    long long bad = 0;
    for (long long i = 1; i < got.n; i++)
        if (got.key[i] >> 8 == got.key[i - 1] >> 8 && bad++ < 5)
            fprintf(stderr, "pair (%d, %d) computed twice\n", (int)(got.key[i] >> 40),
                    (int)(got.key[i] >> 8 & 0xffffffff));
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
    CHECK(strict.n > 0 || tc->n < 2);

    /* the reference coordinate exchange refills the halo with the build's bits */
    void **x = calloc((size_t)P, sizeof *x), **x0 = calloc((size_t)P, sizeof *x0);
    for (int r = 0; r < P; r++) {
        x0[r] = malloc(rs * (size_t)(atoms[r].n_total + 1));
        memcpy(x0[r], atoms[r].x, rs * (size_t)atoms[r].n_total);
        x[r] = atoms[r].x;
        memset((char *)atoms[r].x + rs * (size_t)atoms[r].n_home, 0xff,
               rs * (size_t)(atoms[r].n_total - atoms[r].n_home));
    }
    halox_reference_coords(plans, P, real, stride, x);
    for (int r = 0; r < P; r++)
        CHECK_MSG(memcmp(x0[r], atoms[r].x, rs * (size_t)atoms[r].n_total) == 0,
                  "rank %d: the coordinate exchange differs from the build", r);

    /* newton on: reverse exchange; newton off: home forces as they are */
    halox_reference_forces(plans, P, real, stride, f);
    double fscale, err = chk_force_error(&sys, tc->rc, atoms, f, P, real, stride, &fscale);
    double ftol = (real == HALOX_FLOAT ? 2e-4 : 1e-10) * (fscale + 1);
    CHECK_MSG(err >= 0 && err <= ftol, "newton on: force error %g > %g", err, ftol);
    double err_off = chk_force_error(&sys, tc->rc, atoms, f_off, P, real, stride, &fscale);
    CHECK_MSG(err_off >= 0 && err_off <= ftol, "newton off: force error %g > %g", err_off, ftol);

    printf("full shell, %s: grid %dx%dx%d box %gx%gx%g n %d rc %g buf %g %s %s stride %d: pulses "
           "%d/%d/%d per direction (%d), halo atoms %lld, pairs %lld, force err %.2e / %.2e\n",
           shifts ? "shifts" : "copies", tc->g[0], tc->g[1], tc->g[2], tc->L[0], tc->L[1], tc->L[2],
           tc->n, tc->rc, tc->buf, chk_dist_name(tc->dist), test_real_name(real), stride,
           plans[0].pulses_per_dim[0], plans[0].pulses_per_dim[1], plans[0].pulses_per_dim[2],
           plans[0].n_pulses, halo, got.n, err, err_off);

    for (int r = 0; r < P; r++) {
        free(f[r]);
        free(f_off[r]);
        free(x0[r]);
    }
    free(f);
    free(f_off);
    free(x);
    free(x0);
    chk_pairs_free(&got);
    chk_pairs_free(&strict);
    chk_pairs_free(&loose);
    chk_world_free(&w);
}

/* The rule over every pair of valid zones (never both directions in one dimension). */
static void check_rule(void)
{
    int valid = 0;
    for (int za = 0; za < 64; za++) {
        if ((za & 7) & (za >> 3))
            continue;
        valid++;
        uint8_t mirror = (uint8_t)((za & 7) << 3 | za >> 3);
        if (za != 0)
            CHECK_MSG(halox_full_zone_upper((uint8_t)za) + halox_full_zone_upper(mirror) == 1,
                      "zone %d and its mirror %d", za, mirror);
        for (int zb = 0; zb < 64; zb++) {
            if ((zb & 7) & (zb >> 3))
                continue;
            int r = halox_full_pair((uint8_t)za, (uint8_t)zb);
            CHECK(r == halox_full_pair((uint8_t)zb, (uint8_t)za));
            if (za && zb)
                CHECK_MSG(!r, "zones %d and %d: two halo atoms", za, zb);
        }
    }
    CHECK(valid == 27);
    CHECK(halox_full_pair(0, 0) && halox_full_pair(0, 1) && !halox_full_pair(0, 8));
    CHECK(halox_full_pair(0, 1 | 16) && !halox_full_pair(0, 8 | 2) && halox_full_pair(0, 4));
}

/* The half shell's plans are those of a zero-initialised full_shell; other values refused. */
static void check_half_and_errors(void)
{
    const chk_case_t tc = {{3, 2, 2}, {12, 8, 8}, 1500, 2.5, 0.3, CHK_UNIFORM};
    halox_plan_params_t prm = chk_case_params(&tc, 0);
    CHECK(prm.full_shell == 0);
    chk_world_t w;
    CHECK_OK(chk_world_make(&w, &prm, tc.n, tc.dist, 17, HALOX_DOUBLE, 3));
    CHECK_OK(halox_reference_build(&prm, w.atoms, w.plans));
    for (int r = 0; r < w.P; r++) {
        CHECK(w.plans[r].n_pulses == 3);
        for (int k = 0; k < w.plans[r].n_pulses; k++)
            CHECK(w.plans[r].pulse[k].from_lower == 0);
        for (int i = 0; i < w.atoms[r].n_total; i++)
            CHECK(w.plans[r].zone[i] < 8);
    }
    chk_world_free(&w);
    int np[3];
    prm.full_shell = 2;
    CHECK_STATUS(halox_plan_check(&prm, np), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "full_shell is 2"), "message: %s", halox_last_error());
    /* the pulse limit per direction as before, with its numbers */
    halox_plan_params_t big = {{{8, 1, 1}}, {{16, 16, 16}}, 7.0, 2.0, 0, 1};
    CHECK_STATUS(halox_plan_check(&big, np), HALOX_ERR_DECOMPOSITION);
    CHECK_MSG(strstr(halox_last_error(), "needs 5 pulses in x"), "message: %s", halox_last_error());
}

int main(void)
{
    check_rule();
    check_half_and_errors();
    const chk_case_t cases[] = {
        {{1, 1, 1}, {8, 8, 8}, 1200, 2.5, 0.3, CHK_UNIFORM},
        {{2, 1, 1}, {8, 8, 8}, 1200, 2.5, 0.3, CHK_UNIFORM},
        {{1, 2, 1}, {8, 8, 8}, 1200, 2.5, 0.3, CHK_CLUSTERED},
        {{2, 2, 2}, {10, 10, 10}, 1500, 2.0, 0.2, CHK_UNIFORM},
        {{3, 2, 1}, {12, 10, 8}, 1500, 2.0, 0.3, CHK_UNIFORM},
        {{4, 3, 2}, {16, 12, 10}, 2000, 2.5, 0.3, CHK_UNIFORM},
        {{2, 2, 1}, {6, 6, 8}, 1000, 2.9, 0.4, CHK_UNIFORM},    /* 2 pulses, 2 ranks */
        {{6, 1, 1}, {12, 12, 12}, 1200, 4.5, 0.5, CHK_UNIFORM}, /* 3 pulses */
        {{8, 1, 1}, {16, 15, 15}, 800, 6.5, 0.5, CHK_UNIFORM},  /* 4 pulses */
        {{1, 1, 1}, {6, 6, 6}, 500, 2.9, 3.5, CHK_UNIFORM},     /* a halo beyond the box */
        {{3, 1, 3}, {6, 7, 6}, 1000, 2.9, 0.9, CHK_CLUSTERED},
        {{4, 2, 2}, {16, 8, 8}, 1500, 2.5, 0.3, CHK_SLAB},
        {{2, 1, 1}, {10, 10, 10}, 0, 2.5, 0.3, CHK_UNIFORM},
        {{1, 2, 1}, {8, 10, 8}, 1, 2.5, 0.3, CHK_UNIFORM},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    for (int c = 0; c < nc; c++) {
        run_case(&cases[c], 0, HALOX_FLOAT, 3, 8000 + c);
        if (c % 2 == 0)
            run_case(&cases[c], 0, HALOX_DOUBLE, 3, 8100 + c);
        if (c % 3 == 1)
            run_case(&cases[c], 0, HALOX_FLOAT, 4, 8200 + c);
        /* shifts where every one-rank edge allows them */
        chk_case_t s = cases[c];
        for (int d = 0; d < 3; d++)
            if (s.g[d] == 1 && !(s.L[d] > 2.0 * (s.rc + s.buf)))
                s.L[d] = 2.0 * (s.rc + s.buf) + 1.0;
        run_case(&s, 1, c % 2 ? HALOX_DOUBLE : HALOX_FLOAT, 3, 8300 + c);
    }
    TEST_DONE();
}
