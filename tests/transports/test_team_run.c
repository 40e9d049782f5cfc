/* halox_team_run: the ranks of a team as threads, started, joined and judged in one place.
 *  1. every rank succeeds (a collective over the team proves they ran together): HALOX_OK,
 *     every status OK, all started;
 *  2. one rank fails before the team's first collective: the others, waiting in it, end with
 *     HALOX_ERR_ABORTED at once (no hang, far inside the timeout) and the call returns the
 *     failing rank's own status, not ABORTED;
 *  3. bad arguments are refused with a message. */
#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/topology.h"
#include "harness.h"

#define P 4

typedef struct job {
    int fail_rank; /* this rank returns HALOX_ERR_COORDINATE at once; -1: none */
} job_t;

static halox_status_t rank_fn(int rank, halox_team_t *team, void *vp)
{
    const job_t *j = vp;
    if (rank == j->fail_rank)
        return HALOX_ERR_COORDINATE;
    halox_comm_args_t a = {
        .real = HALOX_FLOAT, .stride = 3, .timeout_s = 30, .team = team, .rank = rank};
    halox_comm_t *c = NULL;
    halox_status_t st = halox_comm_create("threads", &a, &c);
    double v = rank;
    if (st == HALOX_OK)
        st = halox_comm_allreduce_max(c, &v, 1);
    if (st == HALOX_OK && v != P - 1)
        st = HALOX_ERR_INTERNAL;
    halox_comm_destroy(c);
    return st;
}

static void run_case(int fail_rank)
{
    halox_team_t *team = NULL;
    CHECK(halox_team_create(P, 30, &team) == HALOX_OK);
    job_t j = {fail_rank};
    halox_status_t status[P];
    int started = -1;
    double t0 = halox__now();
    halox_status_t st = halox_team_run(team, P, rank_fn, &j, status, &started);
    double secs = halox__now() - t0;
    CHECK(started == P);
    CHECK_MSG(secs < 10, "the ranks took %.1f s: the abort did not release them", secs);
    if (fail_rank < 0) {
        CHECK_MSG(st == HALOX_OK, "status %s", halox_status_string(st));
        for (int r = 0; r < P; r++)
            CHECK(status[r] == HALOX_OK);
    } else {
        CHECK_MSG(st == HALOX_ERR_COORDINATE, "returned %s, not the failing rank's",
                  halox_status_string(st));
        for (int r = 0; r < P; r++)
            CHECK_MSG(status[r] == (r == fail_rank ? HALOX_ERR_COORDINATE : HALOX_ERR_ABORTED),
                      "rank %d: %s", r, halox_status_string(status[r]));
    }
    halox_team_destroy(team);
    printf("fail rank %d: %s in %.3f s\n", fail_rank, halox_status_string(st), secs);
}

int main(void)
{
    run_case(-1);
    run_case(2);
    run_case(0);
    halox_team_t *team = NULL;
    CHECK(halox_team_create(2, 30, &team) == HALOX_OK);
    CHECK(halox_team_run(team, 0, rank_fn, NULL, NULL, NULL) == HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "at least one rank") != NULL);
    CHECK(halox_team_run(NULL, 2, rank_fn, NULL, NULL, NULL) == HALOX_ERR_INVALID_ARG);
    halox_team_destroy(team);
    TEST_DONE();
}
