/* A rank's own failure carried into the library's next collective call (halox_comm_defer_failure)
 * on thread ranks, and the collectives a rebuild's calls cost:
 * - a healthy plan build agrees once per pulse with a peer (its first agreement is the first
 *   pulse's; the set-up buffer's guess leaves room for the arrivals), a migration once, a bind
 *   once (halox_comm_stats_t.collectives, counted on every rank);
 * - a failure deferred on one rank before a migration, a plan build or a bind stops that call on
 *   every rank in one agreement, before any work: the deferring rank gets its status with the
 *   message it had, the others HALOX_ERR_ABORTED naming it; no atom moved; the next call works;
 * - the first deferred failure is the one reported, HALOX_OK clears one;
 * - a rank that fails before the plan build's pulses (its own bad parameters) while the others
 *   go on stops every rank at the first pulse's agreement, without a hang. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/topology.h"
#include "harness.h"

#define NR 4
static const halox_grid_t G = {{2, 2, 1}};
static const halox_box_t B = {{12.0, 12.0, 6.0}};
static const double SPACING = 0.5;

typedef struct {
    int rank, failures;
} rctx_t;

/* this rank's lattice points (spacing 0.5, offset 0.25: the same count near every face) */
static void lattice(halox_atoms_t *a, int rank)
{
    int n = 0;
    const int m[3] = {(int)(B.len[0] / SPACING), (int)(B.len[1] / SPACING),
                      (int)(B.len[2] / SPACING)};
    halox_atoms_reserve(a, m[0] * m[1] * m[2]);
    for (int i = 0; i < m[0]; i++)
        for (int j = 0; j < m[1]; j++)
            for (int k = 0; k < m[2]; k++) {
                double x[3] = {(i + 0.25) * SPACING, (j + 0.25) * SPACING, (k + 0.25) * SPACING};
                if (halox_owner_rank(&G, &B, x) != rank)
                    continue;
                for (int d = 0; d < 3; d++)
                    halox_atoms_set(a, n, d, x[d]);
                a->id[n] = (i * m[1] + j) * m[2] + k;
                n++;
            }
    a->n_home = a->n_total = n;
}

static long long collectives(const halox_comm_t *comm)
{
    halox_comm_stats_t s;
    halox_comm_get_stats(comm, &s);
    return s.collectives;
}

/* The call's result on this rank after rank `who` deferred `want` (message `msg`). */
static void expect_stopped(rctx_t *c, const char *what, halox_status_t st, int who,
                           halox_status_t want, const char *msg, long long agreements)
{
    if (c->rank == who) {
        RCHECK(c, st == want, "%s: %s, want the deferred %s", what, halox_status_string(st),
               halox_status_string(want));
        RCHECK(c, strcmp(halox_last_error(), msg) == 0, "%s: message '%s', want '%s'", what,
               halox_last_error(), msg);
    } else {
        char name[32];
        snprintf(name, sizeof name, "rank %d failed", who);
        RCHECK(c, st == HALOX_ERR_ABORTED && strstr(halox_last_error(), name),
               "%s: %s: %s (want aborted, naming rank %d)", what, halox_status_string(st),
               halox_last_error(), who);
    }
    RCHECK(c, agreements == 1, "%s: %lld collectives, want 1", what, agreements);
}

/* A failure with a message of the library's (a bad cut-off), as a caller's own check makes. */
static halox_status_t own_failure(char *msg, size_t size)
{
    halox_plan_params_t bad = {G, B, 7.0, 0.0, 1, 0};
    halox_status_t st = halox_plan_check(&bad, NULL);
    snprintf(msg, size, "%s", halox_last_error());
    return st;
}

static halox_status_t rank_main(int rank, halox_team_t *team, void *arg)
{
    rctx_t *c = (rctx_t *)arg + rank;
    c->rank = rank;
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .team = team, .rank = rank};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    if (st != HALOX_OK)
        return st;
    const halox_plan_params_t prm = {G, B, 1.5, 0.3, 1, 0};
    halox_atoms_t a;
    halox_atoms_init(&a, HALOX_DOUBLE, 3, 0);
    lattice(&a, rank);
    halox_plan_t plan;
    halox_plan_init(&plan);
    char msg[1024];

    /* healthy: one agreement per pulse with a peer (x and y here), one per migration and bind
     * (the first build also grows the plan's arrays: one agreement more) */
    st = halox_comm_build_plan(comm, &prm, &a, &plan);
    RCHECK(c, st == HALOX_OK, "plan build: %s", halox_last_error());
    RCHECK(c, plan.n_pulses == 2, "%d pulses, want 2", plan.n_pulses);
    long long c0 = collectives(comm);
    st = halox_comm_build_plan(comm, &prm, &a, &plan);
    RCHECK(c, st == HALOX_OK, "plan build: %s", halox_last_error());
    RCHECK(c, collectives(comm) - c0 == 2, "plan build: %lld collectives, want 2",
           collectives(comm) - c0);
    c0 = collectives(comm);
    st = halox_comm_bind(comm, &plan, a.x, a.x);
    RCHECK(c, st == HALOX_OK && collectives(comm) - c0 == 1, "bind: %s, %lld collectives",
           halox_status_string(st), collectives(comm) - c0);

    /* every atom 0.3 up in x: the last layer before each x face leaves */
    for (int i = 0; i < a.n_home; i++)
        halox_atoms_set(&a, i, 0, halox_atoms_get(&a, i, 0) + 0.3);
    const int n_home = a.n_home;
    double *x0 = malloc(sizeof(double) * 3 * (size_t)n_home);
    memcpy(x0, a.x, sizeof(double) * 3 * (size_t)n_home);

    /* deferred before a migration on rank 1: nothing moves anywhere, then the migration works */
    halox_status_t mine = HALOX_OK;
    if (rank == 1)
        halox_comm_defer_failure(comm, mine = own_failure(msg, sizeof msg));
    const long long total = (long long)(B.len[0] / SPACING) * (long long)(B.len[1] / SPACING) *
                            (long long)(B.len[2] / SPACING);
    c0 = collectives(comm);
    st = halox_comm_migrate(comm, &G, &B, &a, total, 5);
    expect_stopped(c, "migration", st, 1, mine, msg, collectives(comm) - c0);
    RCHECK(c, a.n_home == n_home && memcmp(a.x, x0, sizeof(double) * 3 * (size_t)n_home) == 0,
           "the stopped migration changed the atoms (%d home, were %d)", a.n_home, n_home);
    c0 = collectives(comm);
    st = halox_comm_migrate(comm, &G, &B, &a, total, 6);
    RCHECK(c, st == HALOX_OK && collectives(comm) - c0 == 1, "migration: %s, %lld collectives",
           halox_last_error(), collectives(comm) - c0);
    RCHECK(c, a.n_home == n_home, "%d home atoms after the shift, want %d (a layer out, one in)",
           a.n_home, n_home);

    /* deferred before a plan build on rank 2 */
    if (rank == 2)
        halox_comm_defer_failure(comm, mine = own_failure(msg, sizeof msg));
    c0 = collectives(comm);
    st = halox_comm_build_plan(comm, &prm, &a, &plan);
    expect_stopped(c, "plan build", st, 2, mine, msg, collectives(comm) - c0);
    c0 = collectives(comm);
    st = halox_comm_build_plan(comm, &prm, &a, &plan);
    RCHECK(c, st == HALOX_OK && collectives(comm) - c0 == 2, "plan build: %s, %lld collectives",
           halox_last_error(), collectives(comm) - c0);

    /* deferred before a bind on rank 3 */
    if (rank == 3)
        halox_comm_defer_failure(comm, mine = own_failure(msg, sizeof msg));
    c0 = collectives(comm);
    st = halox_comm_bind(comm, &plan, a.x, a.x);
    expect_stopped(c, "bind", st, 3, mine, msg, collectives(comm) - c0);
    st = halox_comm_bind(comm, &plan, a.x, a.x);
    RCHECK(c, st == HALOX_OK, "bind: %s", halox_last_error());

    /* the first deferred failure is reported; HALOX_OK clears */
    if (rank == 0) {
        halox_comm_defer_failure(comm, mine = own_failure(msg, sizeof msg));
        halox_atoms_t bad;
        RCHECK(c, halox_atoms_init(&bad, HALOX_DOUBLE, 5, 0) != HALOX_OK, "stride 5 accepted");
        halox_comm_defer_failure(comm, HALOX_ERR_NO_MEMORY);
    }
    c0 = collectives(comm);
    st = halox_comm_migrate(comm, &G, &B, &a, total, 7);
    expect_stopped(c, "migration, two deferred", st, 0, mine, msg, collectives(comm) - c0);
    if (rank == 0) {
        halox_comm_defer_failure(comm, HALOX_ERR_NO_MEMORY);
        halox_comm_defer_failure(comm, HALOX_OK);
    }
    st = halox_comm_migrate(comm, &G, &B, &a, total, 8);
    RCHECK(c, st == HALOX_OK, "migration after a cleared failure: %s", halox_last_error());

    /* rank 0's own bad parameters fail before the pulses; the others stop at the first pulse's
     * agreement */
    halox_plan_params_t p0 = prm;
    if (rank == 0)
        p0.cutoff = 7.0;
    c0 = collectives(comm);
    st = halox_comm_build_plan(comm, &p0, &a, &plan);
    if (rank == 0)
        RCHECK(c, st == own_failure(msg, sizeof msg), "bad cut-off: %s", halox_status_string(st));
    else
        RCHECK(c, st == HALOX_ERR_ABORTED && strstr(halox_last_error(), "rank 0 failed"), "%s: %s",
               halox_status_string(st), halox_last_error());
    RCHECK(c, collectives(comm) - c0 == 1,
           "a build that fails before its pulses: %lld "
           "collectives, want 1",
           collectives(comm) - c0);
    st = halox_comm_build_plan(comm, &prm, &a, &plan);
    RCHECK(c, st == HALOX_OK, "plan build after: %s", halox_last_error());

    free(x0);
    halox_plan_free(&plan);
    halox_atoms_free(&a);
    halox_comm_destroy(comm);
    return c->failures ? HALOX_ERR_INTERNAL : HALOX_OK;
}

int main(void)
{
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(NR, 20.0, &team));
    rctx_t ctx[NR];
    memset(ctx, 0, sizeof ctx);
    halox_status_t status[NR];
    CHECK_OK(halox_team_run(team, NR, rank_main, ctx, status, NULL));
    for (int r = 0; r < NR; r++)
        CHECK_MSG(status[r] == HALOX_OK && ctx[r].failures == 0, "rank %d: %s, %d failures", r,
                  halox_status_string(status[r]), ctx[r].failures);
    halox_team_destroy(team);
    TEST_DONE();
}
