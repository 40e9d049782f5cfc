/* Plans that do not mirror each other are refused at bind, on every rank, with a message that
 * names the pulse, both ranks and both counts: 2 thread ranks on 2x1x1, each binding its own
 * rank's plan of a build with another halo width (so the counts of pulse 0 differ), and a plan
 * whose pulse count differs. The ranks that found the mismatch say "whose plan"; the others
 * stop with the agreement's "stopped because rank N failed". And a plan of another rank (each
 * rank binds its peer's) is refused on both, naming both ranks. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/checksys.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "harness.h"

#define P 2

typedef struct {
    chk_world_t narrow, wide; /* the same atoms, plans for two halo widths */
    int wide_rank;            /* the rank that binds the wide build's plan */
    int swap;                 /* each rank binds its peer's plan */
    halox_status_t st[P];
    char msg[P][1024];
} shared_t;

static halox_status_t rank_main(int rank, halox_team_t *team, void *vp)
{
    shared_t *S = vp;
    halox_comm_args_t args = {
        .real = HALOX_DOUBLE, .stride = 3, .timeout_s = 20, .team = team, .rank = rank};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    if (st == HALOX_OK) {
        chk_world_t *w = rank == S->wide_rank ? &S->wide : &S->narrow;
        const int pr = S->swap ? P - 1 - rank : rank;
        st = halox_comm_bind(comm, &w->plans[pr], w->atoms[pr].x, w->atoms[pr].x);
    }
    S->st[rank] = st;
    snprintf(S->msg[rank], sizeof S->msg[rank], "%s", halox_last_error());
    halox_comm_destroy(comm);
    return HALOX_OK; /* the statuses are judged on the main thread */
}

static void one_case(shared_t *S, int wide_rank)
{
    S->wide_rank = wide_rank;
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(P, 20, &team));
    if (!team)
        return;
    CHECK_OK(halox_team_run(team, P, rank_main, S, NULL, NULL));
    halox_team_destroy(team);
    int named = 0;
    for (int r = 0; r < P; r++) {
        CHECK_MSG(S->st[r] != HALOX_OK, "rank %d bound a plan its peer does not mirror", r);
        if (strstr(S->msg[r], "whose plan")) {
            named++;
            CHECK_MSG(strstr(S->msg[r], "pulse 0") && strstr(S->msg[r], "bind plans from the "
                                                                        "same build"),
                      "rank %d: %s", r, S->msg[r]);
        } else {
            CHECK_MSG(strstr(S->msg[r], "failed"), "rank %d: %s", r, S->msg[r]);
        }
    }
    CHECK_MSG(named >= 1, "no rank named the mismatch: '%s' / '%s'", S->msg[0], S->msg[1]);
}

int main(void)
{
    halox_plan_params_t narrow;
    memset(&narrow, 0, sizeof narrow);
    narrow.grid = (halox_grid_t){{2, 1, 1}};
    narrow.box = (halox_box_t){{12, 12, 12}};
    narrow.cutoff = 2.0;
    narrow.buffer = 0.2;
    halox_plan_params_t wide = narrow;
    wide.buffer = 0.8; /* more atoms in every pulse */
    static shared_t S;
    CHECK_OK(chk_world_make(&S.narrow, &narrow, 3000, CHK_UNIFORM, 7, HALOX_DOUBLE, 3));
    CHECK_OK(chk_world_make(&S.wide, &wide, 3000, CHK_UNIFORM, 7, HALOX_DOUBLE, 3));
    CHECK_OK(halox_reference_build(&narrow, S.narrow.atoms, S.narrow.plans));
    CHECK_OK(halox_reference_build(&wide, S.wide.atoms, S.wide.plans));
    CHECK(S.wide.plans[0].pulse[0].send_count != S.narrow.plans[0].pulse[0].send_count);
    one_case(&S, 0);
    one_case(&S, 1);
    /* each rank binds the other's plan (both of one build): refused on both, naming the ranks */
    S.wide_rank = -1;
    S.swap = 1;
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(P, 20, &team));
    if (team) {
        CHECK_OK(halox_team_run(team, P, rank_main, &S, NULL, NULL));
        halox_team_destroy(team);
    }
    for (int r = 0; r < P; r++)
        CHECK_MSG(S.st[r] == HALOX_ERR_INVALID_ARG && strstr(S.msg[r], "plan is for rank"),
                  "rank %d bound its peer's plan: %d '%s'", r, (int)S.st[r], S.msg[r]);
    chk_world_free(&S.narrow);
    chk_world_free(&S.wide);
    TEST_DONE();
}
