/* The `threads` transport against the serial reference, bit for bit:
 * - halox_comm_build_plan gives the reference plan (maps, counts, offsets, masks, zones) and the
 *   same halo coordinates and ids;
 * - halox_comm_coords gives the reference halo coordinates (memcmp), halox_comm_forces the
 *   reference forces (memcmp, random force values), float and double, stride 3 and 4;
 * - several steps with coordinates changed between steps, threads delayed at random and one rank
 *   slowed down each step, so fast ranks run ahead and would overwrite a slow rank's halo if the
 *   write-after-read chain were broken (each rank also checks its halo did not change while it
 *   "computed");
 * - three rounds per case: a fresh endpoint, a rebuild and rebind on the same endpoint, and a new
 *   endpoint on the same team (signals start again);
 * Grids 1x1x1 to 3x3x3 and 4x3x2, 1 to 3 pulses per dimension, empty domains and empty pulses.
 * Then the same with pairs declared unreachable (HALOX_HYBRID_UNREACHABLE: those legs take the
 * two-sided mailbox path, the others direct stores): 2 ranks with the pair unreachable, 2x2x1
 * and 2x2x2 with some pairs, 2 and 3 pulses in a dimension, empty pulses; the routes must not
 * change a bit of the result.
 * Rank threads record what they saw; the main thread replays the reference and compares. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/checksys.h"
#include "core/route.h"
#include "core/transport.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "harness.h"

#define ROUNDS 3
#define STEPS  3

typedef struct tcase {
    int g[3];
    double L[3];
    double rc, buf;
    int n;
    chk_dist_t dist;
    halox_real_t real;
    int stride;
    int expect_pulses[3];
    const char *unreach; /* HALOX_HYBRID_UNREACHABLE for this case (NULL: unset) */
} tcase_t;

typedef struct shared {
    const tcase_t *tc;
    halox_plan_params_t params;
    int P;
    halox_team_t *team;
    const halox_atoms_t *ref_atoms; /* reference state right after the build (read-only) */
    const halox_plan_t *ref_plans;
    halox_atoms_t *atoms; /* the ranks' own atoms */
    halox_plan_t *plans;
    double **x0;  /* per rank: original home coordinates */
    void **rec_x; /* [t * P + r]: local coordinates after step t */
    void **rec_f; /* [t * P + r]: local forces after step t */
} shared_t;

typedef struct rank_arg {
    shared_t *sh;
    int rank;
    int failures;
} rank_arg_t;

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Home coordinates of step t: a small deterministic move away from the original (it may leave
 * the domain: the exchange just copies and shifts). The spare 4th component changes too. */
static void set_home_coords(halox_atoms_t *a, const double *x0, int t)
{
    for (int i = 0; i < a->n_home; i++)
        for (int c = 0; c < a->stride; c++) {
            double v = x0[(size_t)i * a->stride + c];
            v += c < 3 ? 1e-3 * sin(0.37 * a->id[i] + 1.1 * t + c) : 0.5 * t;
            halox_atoms_set(a, i, c, v);
        }
}

/* Random forces on every local atom, a function of (rank, local index, step, component). */
static void set_forces(halox_real_t real, int stride, void *f, int n, int rank, int t)
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < stride; c++) {
            uint64_t h = mix(((uint64_t)rank << 40) ^ ((uint64_t)i << 12) ^ ((uint64_t)t << 4) ^
                             (uint64_t)c);
            double v = ((double)(h >> 11) * 0x1.0p-53 - 0.5) * 3.0;
            if (real == HALOX_FLOAT)
                ((float *)f)[(size_t)i * stride + c] = (float)v;
            else
                ((double *)f)[(size_t)i * stride + c] = v;
        }
}

static void jitter(uint64_t *rng, int slow)
{
    *rng = mix(*rng);
    long us = slow ? 1500 : (*rng & 1) ? (long)((*rng >> 8) % 300) : 0;
    if (us) {
        struct timespec ts = {0, us * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Differences between a plan and the reference plan; prints the first few. */
static int plan_diff(const halox_plan_t *a, const halox_plan_t *b)
{
    int d = 0;
#define PD(cond, ...)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (d++ < 5) {                                                                         \
                fprintf(stderr, "plan of rank %d differs: %s: ", b->rank, #cond);                  \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
            }                                                                                      \
        }                                                                                          \
    } while (0)
    PD(a->rank == b->rank && a->nranks == b->nranks, "rank %d/%d", a->rank, a->nranks);
    PD(a->n_home == b->n_home && a->n_total == b->n_total, "atoms %d+%d vs %d+%d", a->n_home,
       a->n_total, b->n_home, b->n_total);
    PD(a->n_pulses == b->n_pulses, "%d pulses vs %d", a->n_pulses, b->n_pulses);
    PD(memcmp(a->pulses_per_dim, b->pulses_per_dim, sizeof a->pulses_per_dim) == 0, "per dim");
    PD(a->halo_dist == b->halo_dist, "halo %g", a->halo_dist);
    for (int k = 0; k < a->n_pulses && k < b->n_pulses; k++) {
        const halox_pulse_t *p = &a->pulse[k], *q = &b->pulse[k];
        PD(p->dim == q->dim && p->pulse_in_dim == q->pulse_in_dim && p->from_lower == q->from_lower,
           "pulse %d dim", k);
        PD(p->send_rank == q->send_rank && p->recv_rank == q->recv_rank, "pulse %d ranks", k);
        PD(p->send_count == q->send_count && p->recv_count == q->recv_count &&
               p->recv_offset == q->recv_offset,
           "pulse %d counts %d/%d/%d vs %d/%d/%d", k, p->send_count, p->recv_count, p->recv_offset,
           q->send_count, q->recv_count, q->recv_offset);
        PD(p->dep_offset == q->dep_offset && p->dep_mask == q->dep_mask && p->shift == q->shift,
           "pulse %d deps/shift", k);
        if (p->send_count == q->send_count && p->send_count > 0)
            PD(memcmp(p->send_index, q->send_index, sizeof(int) * (size_t)p->send_count) == 0,
               "pulse %d map", k);
    }
    if (a->n_total == b->n_total && a->n_total > 0)
        PD(memcmp(a->zone, b->zone, (size_t)a->n_total) == 0, "zones");
#undef PD
    return d;
}

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    shared_t *sh = a->sh;
    const tcase_t *tc = sh->tc;
    const int r = a->rank, P = sh->P;
    const size_t rs = halox_real_size(tc->real) * (size_t)tc->stride;
    uint64_t rng = mix(0x51ed0000ull + (uint64_t)r);
    halox_atoms_t *atoms = &sh->atoms[r];
    halox_plan_t *plan = &sh->plans[r];
    halox_comm_args_t args = {
        .real = tc->real, .stride = tc->stride, .timeout_s = 20.0, .team = sh->team, .rank = r};
    halox_comm_t *comm = NULL;
    void *f = NULL, *seen = NULL;

    for (int round = 0; round < ROUNDS; round++) {
        if (round != 1) { /* rounds 0 and 2: a fresh endpoint; round 1 reuses it */
            halox_comm_destroy(comm);
            comm = NULL;
            halox_status_t st = halox_comm_create("threads", &args, &comm);
            RCHECK(a, st == HALOX_OK, "comm_create: %s", halox_last_error());
            if (st != HALOX_OK)
                break;
        }
        /* back to the original home atoms, so every build gives the reference plan */
        atoms->n_total = atoms->n_home;
        for (int i = 0; i < atoms->n_home; i++)
            for (int c = 0; c < atoms->stride; c++)
                halox_atoms_set(atoms, i, c, sh->x0[r][(size_t)i * atoms->stride + c]);
        halox_status_t st = halox_comm_build_plan(comm, &sh->params, atoms, plan);
        RCHECK(a, st == HALOX_OK, "build_plan: %s", halox_last_error());
        if (st != HALOX_OK)
            break;
        a->failures += plan_diff(plan, &sh->ref_plans[r]);
        const halox_atoms_t *ref = &sh->ref_atoms[r];
        if (atoms->n_total != ref->n_total) {
            RCHECK(a, 0, "%d local atoms, reference %d", atoms->n_total, ref->n_total);
            break;
        }
        RCHECK(a, memcmp(atoms->x, ref->x, rs * (size_t)atoms->n_total) == 0,
               "coordinates after the build differ from the reference");
        RCHECK(a, memcmp(atoms->id, ref->id, sizeof(int32_t) * (size_t)atoms->n_total) == 0,
               "ids after the build differ from the reference");

        size_t bytes = rs * (size_t)(atoms->n_total > 0 ? atoms->n_total : 1);
        free(f);
        free(seen);
        f = calloc(1, bytes);
        seen = malloc(bytes);
        if (!f || !seen) {
            RCHECK(a, 0, "no memory");
            break;
        }
        st = halox_comm_bind(comm, plan, atoms->x, f);
        RCHECK(a, st == HALOX_OK, "bind: %s", halox_last_error());
        if (st != HALOX_OK)
            break;
        halox_comm_stats_t before;
        halox_comm_get_stats(comm, &before);

        for (int s = 0; s < STEPS; s++) {
            int t = round * STEPS + s;
            int slow = (t % P) == r; /* one rank lags each step: the others run ahead */
            set_home_coords(atoms, sh->x0[r], t);
            jitter(&rng, 0);
            st = halox_comm_coords(comm);
            RCHECK(a, st == HALOX_OK, "coords step %d: %s", t, halox_last_error());
            if (st != HALOX_OK)
                goto out;
            size_t xb = rs * (size_t)atoms->n_total;
            memcpy(seen, atoms->x, xb);
            jitter(&rng, slow); /* "computing" on the halo */
            RCHECK(a, memcmp(seen, atoms->x, xb) == 0,
                   "step %d: the halo changed while in use (write-after-read)", t);
            void *rec = malloc(xb ? xb : 1);
            if (rec)
                memcpy(rec, seen, xb);
            sh->rec_x[(size_t)t * P + r] = rec;

            set_forces(tc->real, tc->stride, f, atoms->n_total, r, t);
            jitter(&rng, 0);
            st = halox_comm_forces(comm);
            RCHECK(a, st == HALOX_OK, "forces step %d: %s", t, halox_last_error());
            if (st != HALOX_OK)
                goto out;
            rec = malloc(xb ? xb : 1);
            if (rec)
                memcpy(rec, f, xb);
            sh->rec_f[(size_t)t * P + r] = rec;
        }
        halox_comm_stats_t after;
        halox_comm_get_stats(comm, &after);
        RCHECK(a,
               after.coord_exchanges - before.coord_exchanges == STEPS &&
                   after.force_exchanges - before.force_exchanges == STEPS,
               "stats count %lld coordinate and %lld force exchanges",
               after.coord_exchanges - before.coord_exchanges,
               after.force_exchanges - before.force_exchanges);
        /* a collective is counted and timed, once */
        st = halox_comm_barrier(comm);
        halox_comm_stats_t more;
        halox_comm_get_stats(comm, &more);
        RCHECK(a,
               st == HALOX_OK && more.collectives == after.collectives + 1 &&
                   more.collective_seconds >= after.collective_seconds && more.device_waits == 0,
               "a barrier: %lld collectives counted (%lld before), %lld device waits",
               more.collectives, after.collectives, more.device_waits);
    }
out:
    halox_comm_destroy(comm);
    free(f);
    free(seen);
    return NULL;
}

/* full: a full-shell plan; shifts: periodic_shifts (no pulses in the one-rank dimensions) */
static void run_case(const tcase_t *tc, int index, int full, int shifts)
{
    const int P = tc->g[0] * tc->g[1] * tc->g[2];
    const size_t rs = halox_real_size(tc->real) * (size_t)tc->stride;
    shared_t sh = {.tc = tc, .P = P};
    sh.params.grid = (halox_grid_t){{tc->g[0], tc->g[1], tc->g[2]}};
    sh.params.box = (halox_box_t){{tc->L[0], tc->L[1], tc->L[2]}};
    sh.params.cutoff = tc->rc;
    sh.params.buffer = tc->buf;
    sh.params.full_shell = full;
    sh.params.periodic_shifts = shifts;
    int np[3], want[3];
    for (int d = 0; d < 3; d++)
        want[d] = shifts && tc->g[d] == 1 ? 0 : tc->expect_pulses[d];
    CHECK_OK(halox_plan_check(&sh.params, np));
    CHECK_MSG(memcmp(np, want, sizeof np) == 0, "case %d: pulses %d,%d,%d, expected %d,%d,%d",
              index, np[0], np[1], np[2], want[0], want[1], want[2]);

    chk_system_t sys;
    CHECK(chk_system_make(&sys, &sh.params.box, tc->n, tc->dist, 1234 + (uint64_t)index) == 0);
    chk_system_round(&sys, tc->real);

    halox_atoms_t *ref = calloc((size_t)P, sizeof *ref);
    halox_atoms_t *mine = calloc((size_t)P, sizeof *mine);
    halox_plan_t *ref_plans = calloc((size_t)P, sizeof *ref_plans);
    halox_plan_t *plans = calloc((size_t)P, sizeof *plans);
    double **x0 = calloc((size_t)P, sizeof *x0);
    void **fr = calloc((size_t)P, sizeof *fr);
    void **xr = calloc((size_t)P, sizeof *xr);
    const int T = ROUNDS * STEPS;
    sh.rec_x = calloc((size_t)T * P, sizeof(void *));
    sh.rec_f = calloc((size_t)T * P, sizeof(void *));
    for (int r = 0; r < P; r++) {
        CHECK_OK(halox_atoms_init(&ref[r], tc->real, tc->stride, 0));
        CHECK_OK(halox_atoms_init(&mine[r], tc->real, tc->stride, 0));
        halox_plan_init(&ref_plans[r]);
        halox_plan_init(&plans[r]);
    }
    CHECK_OK(chk_distribute(&sys, &sh.params.grid, ref));
    CHECK_OK(chk_distribute(&sys, &sh.params.grid, mine));
    int empty = 0;
    for (int r = 0; r < P; r++) {
        empty += ref[r].n_home == 0;
        x0[r] = malloc(sizeof(double) * (size_t)tc->stride * (size_t)(ref[r].n_home + 1));
        for (int i = 0; i < ref[r].n_home; i++)
            for (int c = 0; c < tc->stride; c++)
                x0[r][(size_t)i * tc->stride + c] = halox_atoms_get(&ref[r], i, c);
    }
    CHECK_OK(halox_reference_build(&sh.params, ref, ref_plans));
    int empty_pulses = 0;
    for (int r = 0; r < P; r++)
        for (int k = 0; k < ref_plans[r].n_pulses; k++)
            empty_pulses += ref_plans[r].pulse[k].send_count == 0;
    /* the legs each route takes (what the endpoints decide from the same declaration) */
    int legs[2] = {0, 0}, empty_staged = 0;
    halox__unreach_t u;
    CHECK_OK(halox__unreach_parse(tc->unreach, P, &u));
    for (int r = 0; r < P; r++) {
        halox__route_t rt;
        halox__route_local(&ref_plans[r], &u, &rt);
        legs[0] += rt.n_direct;
        legs[1] += rt.n_staged;
        for (int k = 0; k < ref_plans[r].n_pulses; k++)
            empty_staged +=
                rt.send[k] == HALOX__ROUTE_STAGED && ref_plans[r].pulse[k].send_count == 0;
    }
    if (tc->unreach)
        setenv("HALOX_HYBRID_UNREACHABLE", tc->unreach, 1);
    else
        unsetenv("HALOX_HYBRID_UNREACHABLE");

    sh.ref_atoms = ref;
    sh.ref_plans = ref_plans;
    sh.atoms = mine;
    sh.plans = plans;
    sh.x0 = x0;
    CHECK_OK(halox_team_create(P, 20.0, &sh.team));

    pthread_t *th = calloc((size_t)P, sizeof *th);
    rank_arg_t *args = calloc((size_t)P, sizeof *args);
    for (int r = 0; r < P; r++) {
        args[r] = (rank_arg_t){.sh = &sh, .rank = r};
        CHECK(pthread_create(&th[r], NULL, rank_main, &args[r]) == 0);
    }
    int failures = 0;
    for (int r = 0; r < P; r++) {
        pthread_join(th[r], NULL);
        failures += args[r].failures;
    }
    CHECK_MSG(failures == 0, "case %d: %d failures on rank threads", index, failures);
    halox_team_destroy(sh.team);
    unsetenv("HALOX_HYBRID_UNREACHABLE");

    /* replay with the reference and compare bit for bit */
    long long bad_x = 0, bad_f = 0;
    for (int r = 0; r < P; r++) {
        xr[r] = ref[r].x;
        fr[r] = calloc((size_t)(ref[r].n_total + 1), rs);
    }
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < P; r++)
            set_home_coords(&ref[r], x0[r], t);
        halox_reference_coords(ref_plans, P, tc->real, tc->stride, xr);
        for (int r = 0; r < P; r++) {
            set_forces(tc->real, tc->stride, fr[r], ref[r].n_total, r, t);
        }
        halox_reference_forces(ref_plans, P, tc->real, tc->stride, fr);
        for (int r = 0; r < P; r++) {
            size_t xb = rs * (size_t)ref[r].n_total;
            const void *gx = sh.rec_x[(size_t)t * P + r], *gf = sh.rec_f[(size_t)t * P + r];
            if (!gx || memcmp(gx, xr[r], xb) != 0) {
                if (bad_x++ < 3)
                    fprintf(stderr, "case %d step %d rank %d: coordinates differ%s\n", index, t, r,
                            gx ? "" : " (not recorded)");
            }
            if (!gf || memcmp(gf, fr[r], xb) != 0) {
                if (bad_f++ < 3)
                    fprintf(stderr, "case %d step %d rank %d: forces differ%s\n", index, t, r,
                            gf ? "" : " (not recorded)");
            }
        }
    }
    CHECK_MSG(bad_x == 0 && bad_f == 0, "case %d: %lld coordinate and %lld force mismatches", index,
              bad_x, bad_f);
    printf("case %d: grid %dx%dx%d, %s stride %d,%s%s pulses %d+%d+%d, %d atoms, %d empty "
           "domains, %d empty pulses",
           index, tc->g[0], tc->g[1], tc->g[2], test_real_name(tc->real), tc->stride,
           full ? " full shell," : "", shifts ? " shifts," : "", np[0], np[1], np[2], tc->n, empty,
           empty_pulses);
    if (tc->unreach)
        printf(", unreachable '%s': %d direct and %d staged legs (%d staged and empty)",
               tc->unreach, legs[0], legs[1], empty_staged);
    printf(": %s\n", failures == 0 && bad_x == 0 && bad_f == 0 ? "ok" : "FAILED");
    fflush(stdout);

    for (int i = 0; i < T * P; i++) {
        free(sh.rec_x[i]);
        free(sh.rec_f[i]);
    }
    for (int r = 0; r < P; r++) {
        halox_atoms_free(&ref[r]);
        halox_atoms_free(&mine[r]);
        halox_plan_free(&ref_plans[r]);
        halox_plan_free(&plans[r]);
        free(x0[r]);
        free(fr[r]);
    }
    free(sh.rec_x);
    free(sh.rec_f);
    free(ref);
    free(mine);
    free(ref_plans);
    free(plans);
    free(x0);
    free(fr);
    free(xr);
    free(th);
    free(args);
    chk_system_free(&sys);
}

int main(void)
{
    const halox_real_t F = HALOX_FLOAT, D = HALOX_DOUBLE;
    const chk_dist_t U = CHK_UNIFORM, C = CHK_CLUSTERED, S = CHK_SLAB;
    static tcase_t cases[32];
    int n = 0;
    /* one rank: every dimension exchanges with itself */
    cases[n++] = (tcase_t){{1, 1, 1}, {10, 10, 10}, 2.5, 0.3, 300, U, F, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{1, 1, 1}, {6, 7, 8}, 2.9, 0.1, 200, U, D, 4, {1, 1, 1}, NULL};
    /* two ranks in x: the same neighbour on both sides, one and two pulses */
    cases[n++] = (tcase_t){{2, 1, 1}, {8, 6, 6}, 2.0, 0.2, 250, U, F, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{2, 1, 1}, {6, 8, 8}, 2.8, 0.3, 300, U, D, 3, {2, 1, 1}, NULL};
    cases[n++] = (tcase_t){{2, 2, 2}, {8, 8, 8}, 2.5, 0.3, 400, U, F, 4, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{2, 2, 2}, {8, 8, 8}, 2.5, 0.3, 12, C, D, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{3, 2, 1}, {9, 8, 7}, 3.0, 0.4, 400, U, D, 3, {2, 1, 1}, NULL};
    cases[n++] = (tcase_t){{3, 2, 1}, {9, 8, 7}, 2.0, 0.2, 300, S, F, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{4, 3, 2}, {12, 12, 12}, 2.5, 0.3, 700, U, F, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{4, 3, 2}, {12, 12, 12}, 4.5, 0.5, 400, U, D, 3, {2, 2, 1}, NULL};
    cases[n++] = (tcase_t){{3, 3, 3}, {9, 9, 9}, 2.5, 0.3, 500, U, D, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{3, 3, 3}, {9, 9, 9}, 4.0, 0.3, 300, U, F, 4, {2, 2, 2}, NULL};
    cases[n++] = (tcase_t){{3, 3, 3}, {9, 9, 9}, 2.0, 0.5, 10, C, F, 3, {1, 1, 1}, NULL};
    cases[n++] = (tcase_t){{5, 1, 1}, {10, 7, 7}, 3.4, 1.0, 300, U, F, 3, {3, 1, 1}, NULL};
    cases[n++] = (tcase_t){{5, 1, 1}, {10, 7, 7}, 3.4, 1.0, 300, U, D, 4, {3, 1, 1}, NULL};
    cases[n++] = (tcase_t){{5, 1, 1}, {10, 7, 7}, 3.0, 1.3, 60, S, D, 3, {3, 1, 1}, NULL};
    /* pairs declared unreachable: staged (mailbox) legs next to direct ones. 2 ranks: the only
     * pair, with 1 and 2 pulses */
    cases[n++] = (tcase_t){{2, 1, 1}, {8, 6, 6}, 2.0, 0.2, 250, U, F, 3, {1, 1, 1}, "all"};
    cases[n++] = (tcase_t){{2, 1, 1}, {6, 8, 8}, 2.8, 0.3, 300, U, D, 4, {2, 1, 1}, "0-1"};
    /* 2x2x1 and 2x2x2 with some pairs: x pairs 0-1 (and 4-5) staged, the rest direct */
    cases[n++] = (tcase_t){{2, 2, 1}, {8, 8, 6}, 2.5, 0.3, 400, U, F, 3, {1, 1, 1}, "0-1"};
    cases[n++] = (tcase_t){{2, 2, 1}, {6, 6, 6}, 2.8, 0.3, 300, U, D, 3, {2, 2, 1}, "node:2"};
    cases[n++] = (tcase_t){{2, 2, 2}, {8, 8, 8}, 2.5, 0.3, 400, U, D, 4, {1, 1, 1}, "0-1,4-5,2-6"};
    cases[n++] = (tcase_t){{2, 2, 2}, {8, 8, 8}, 2.5, 0.3, 12, C, F, 3, {1, 1, 1}, "node:4"};
    cases[n++] = (tcase_t){{2, 2, 2}, {6, 6, 6}, 2.9, 0.3, 300, U, F, 3, {2, 2, 2}, "node:2"};
    /* several pulses in a dimension: forwarded atoms of a staged pulse go on over direct ones
     * and the other way round */
    cases[n++] = (tcase_t){{5, 1, 1}, {10, 7, 7}, 3.4, 1.0, 300, U, D, 3, {3, 1, 1}, "1-2,3-4"};
    cases[n++] = (tcase_t){{4, 3, 2}, {12, 12, 12}, 4.5, 0.5, 400, U, F, 4, {2, 2, 1}, "node:4"};
    cases[n++] = (tcase_t){{3, 3, 3}, {9, 9, 9}, 2.0, 0.5, 10, C, D, 3, {1, 1, 1}, "node:9,0-1"};
    for (int i = 0; i < n; i++)
        run_case(&cases[i], i, 0, 0);
    /* full-shell plans: ghosts from both neighbours; one rank (self images both ways), two
     * ranks (both neighbours one rank), several pulses, one-rank dimensions by copies and by
     * shifts, staged legs */
    static const tcase_t full[] = {
        {{1, 1, 1}, {10, 10, 10}, 2.5, 0.3, 300, U, F, 3, {1, 1, 1}, NULL},
        {{1, 1, 1}, {6, 7, 8}, 2.9, 0.1, 200, U, D, 4, {1, 1, 1}, NULL},
        {{2, 1, 1}, {8, 6, 6}, 2.0, 0.2, 250, U, F, 3, {1, 1, 1}, NULL},
        {{2, 1, 1}, {6, 8, 8}, 2.8, 0.3, 300, U, D, 3, {2, 1, 1}, NULL},
        {{2, 2, 2}, {8, 8, 8}, 2.5, 0.3, 400, U, F, 4, {1, 1, 1}, NULL},
        {{3, 2, 1}, {9, 8, 7}, 3.0, 0.4, 400, U, D, 3, {2, 1, 1}, NULL},
        {{4, 3, 2}, {12, 12, 12}, 4.5, 0.5, 400, U, D, 3, {2, 2, 1}, NULL},
        {{3, 3, 3}, {9, 9, 9}, 2.0, 0.5, 10, C, F, 3, {1, 1, 1}, NULL},
        {{5, 1, 1}, {10, 7, 7}, 3.0, 1.3, 60, S, D, 3, {3, 1, 1}, NULL},
        {{2, 2, 1}, {6, 6, 6}, 2.8, 0.3, 300, U, D, 3, {2, 2, 1}, "node:2"},
    };
    for (int i = 0; i < (int)(sizeof full / sizeof full[0]); i++)
        run_case(&full[i], 100 + i, 1, 0);
    /* shifts: the one-rank edges above twice the list radius */
    static const tcase_t full_shifts[] = {
        {{1, 1, 1}, {10, 10, 10}, 2.5, 0.3, 300, U, F, 3, {1, 1, 1}, NULL},
        {{2, 1, 1}, {8, 8, 8}, 2.0, 0.2, 250, U, D, 3, {1, 1, 1}, NULL},
        {{3, 2, 1}, {9, 8, 7}, 3.0, 0.4, 400, U, F, 3, {2, 1, 1}, NULL},
        {{4, 1, 1}, {8, 7, 7}, 2.5, 0.5, 300, U, D, 4, {2, 1, 1}, NULL},
    };
    for (int i = 0; i < (int)(sizeof full_shifts / sizeof full_shifts[0]); i++)
        run_case(&full_shifts[i], 200 + i, 1, 1);
    TEST_DONE();
}
