/* A rank that stops taking part must not hang the others: with a short timeout the ranks that
 * wait for it end with HALOX_ERR_TIMEOUT (naming rank, pulse, peer and step) or, once one of them
 * has aborted the team, HALOX_ERR_ABORTED; nobody waits much longer than the timeout.
 * - 2x1x1: rank 1 never calls halox_comm_coords; rank 0 times out naming rank 1 exactly;
 * - 3x3x1: rank 4 never calls halox_comm_coords;
 * - 2x2x1: rank 2 exchanges coordinates but never calls halox_comm_forces. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check/checksys.h"
#include "core/clock.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "harness.h"

#define MAX_RANKS 16
#define TIMEOUT_S 1.0

typedef enum { SKIP_COORDS, SKIP_FORCES } skip_t;

typedef struct scenario {
    int g[3];
    int lazy; /* the rank that stops taking part */
    skip_t skip;
} scenario_t;

typedef struct rank_out {
    halox_status_t setup;  /* create, build, bind */
    halox_status_t status; /* the exchange that may time out */
    halox_status_t after;  /* a barrier after it (the team is aborted by then) */
    char message[1024];
    double seconds;
} rank_out_t;

typedef struct shared {
    const scenario_t *sc;
    halox_plan_params_t params;
    halox_team_t *team;
    halox_atoms_t *atoms;
    halox_plan_t *plans;
    rank_out_t out[MAX_RANKS];
} shared_t;

typedef struct {
    shared_t *sh;
    int rank;
} rank_arg_t;

static void *rank_main(void *p)
{
    rank_arg_t *a = p;
    shared_t *sh = a->sh;
    const int r = a->rank;
    rank_out_t *out = &sh->out[r];
    halox_comm_args_t args = {
        .real = HALOX_FLOAT, .stride = 3, .timeout_s = TIMEOUT_S, .team = sh->team, .rank = r};
    halox_comm_t *comm = NULL;
    void *f = NULL;
    out->setup = halox_comm_create("threads", &args, &comm);
    if (out->setup == HALOX_OK)
        out->setup = halox_comm_build_plan(comm, &sh->params, &sh->atoms[r], &sh->plans[r]);
    if (out->setup == HALOX_OK) {
        f = calloc((size_t)sh->atoms[r].n_total + 1, 3 * sizeof(float));
        out->setup = halox_comm_bind(comm, &sh->plans[r], sh->atoms[r].x, f);
    }
    if (out->setup != HALOX_OK) {
        snprintf(out->message, sizeof out->message, "set-up: %s", halox_last_error());
        halox_comm_destroy(comm);
        free(f);
        return NULL;
    }
    double t0 = halox__now();
    if (r == sh->sc->lazy) {
        if (sh->sc->skip == SKIP_FORCES)
            out->status = halox_comm_coords(comm);
    } else {
        out->status = halox_comm_coords(comm);
        if (out->status == HALOX_OK && sh->sc->skip == SKIP_FORCES)
            out->status = halox_comm_forces(comm);
        snprintf(out->message, sizeof out->message, "%s", halox_last_error());
    }
    out->seconds = halox__now() - t0;
    /* then everyone tries a collective well after the exchange timeouts (so that ranks which
     * finished do not time out in the barrier first): the team is aborted by then */
    double left = t0 + 3 * TIMEOUT_S - halox__now();
    if (left > 0) {
        struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
        nanosleep(&ts, NULL);
    }
    out->after = halox_comm_barrier(comm);
    halox_comm_destroy(comm);
    free(f);
    return NULL;
}

/* The peer a timeout message names ("... from rank N at step ..."), or -1. */
static int named_peer(const char *msg)
{
    const char *p = strstr(msg, " from rank ");
    return p ? atoi(p + 11) : -1;
}

static void run_scenario(const scenario_t *sc)
{
    shared_t sh = {.sc = sc};
    const int P = sc->g[0] * sc->g[1] * sc->g[2];
    sh.params.grid = (halox_grid_t){{sc->g[0], sc->g[1], sc->g[2]}};
    sh.params.box = (halox_box_t){{6.0 * sc->g[0], 6.0 * sc->g[1], 6.0 * sc->g[2]}};
    sh.params.cutoff = 2.0;
    sh.params.buffer = 0.2;
    chk_system_t sys;
    CHECK(chk_system_make(&sys, &sh.params.box, 40 * P, CHK_UNIFORM, 99) == 0);
    chk_system_round(&sys, HALOX_FLOAT);
    sh.atoms = calloc((size_t)P, sizeof *sh.atoms);
    sh.plans = calloc((size_t)P, sizeof *sh.plans);
    for (int r = 0; r < P; r++)
        CHECK_OK(halox_atoms_init(&sh.atoms[r], HALOX_FLOAT, 3, 0));
    CHECK_OK(chk_distribute(&sys, &sh.params.grid, sh.atoms));
    CHECK_OK(halox_team_create(P, TIMEOUT_S, &sh.team));

    double t0 = halox__now();
    pthread_t th[MAX_RANKS];
    rank_arg_t args[MAX_RANKS];
    for (int r = 0; r < P; r++) {
        args[r] = (rank_arg_t){&sh, r};
        CHECK(pthread_create(&th[r], NULL, rank_main, &args[r]) == 0);
    }
    for (int r = 0; r < P; r++)
        pthread_join(th[r], NULL);
    double wall = halox__now() - t0;
    halox_team_destroy(sh.team);

    const char *what = sc->skip == SKIP_COORDS ? "coordinates" : "forces";
    int timeouts = 0, names_lazy = 0;
    for (int r = 0; r < P; r++) {
        const rank_out_t *o = &sh.out[r];
        CHECK_MSG(o->setup == HALOX_OK, "rank %d: %s", r, o->message);
        CHECK_MSG(o->after == HALOX_ERR_ABORTED || o->after == HALOX_ERR_TIMEOUT,
                  "rank %d: barrier after the failure returned %d", r, (int)o->after);
        if (r == sc->lazy)
            continue;
        CHECK_MSG(o->seconds < 10.0, "rank %d waited %.2f s", r, o->seconds);
        if (o->status == HALOX_ERR_TIMEOUT) {
            timeouts++;
            int peer = named_peer(o->message);
            names_lazy += peer == sc->lazy;
            CHECK_MSG(strstr(o->message, "timed out after 1.0 s waiting for") &&
                          strstr(o->message, what) && strstr(o->message, "at step 1") &&
                          strstr(o->message, "HALOX_TIMEOUT_S"),
                      "rank %d: %s", r, o->message);
            /* a rank times out only on a peer that did not finish either */
            CHECK_MSG(peer == sc->lazy ||
                          (peer >= 0 && peer < P && sh.out[peer].status != HALOX_OK),
                      "rank %d names rank %d, which finished: %s", r, peer, o->message);
        } else if (o->status == HALOX_ERR_ABORTED) {
            CHECK_MSG(strstr(o->message, "aborted by rank") && strstr(o->message, "timed out"),
                      "rank %d: %s", r, o->message);
        } else {
            /* a rank that needs nothing from the lazy one may finish */
            CHECK_MSG(o->status == HALOX_OK, "rank %d: %d %s", r, (int)o->status, o->message);
        }
    }
    CHECK_MSG(timeouts >= 1, "no rank timed out");
    CHECK_MSG(names_lazy >= 1 || P > 2, "no timeout names rank %d", sc->lazy);
    CHECK_MSG(wall < 20.0, "scenario took %.2f s", wall);
    printf("grid %dx%dx%d, rank %d skips %s: %d timeouts, %.2f s\n", sc->g[0], sc->g[1], sc->g[2],
           sc->lazy, sc->skip == SKIP_COORDS ? "coordinates" : "forces", timeouts, wall);
    for (int r = 0; r < P; r++)
        if (sh.out[r].status != HALOX_OK && r != sc->lazy)
            printf("  rank %d: %s\n", r, sh.out[r].message);
    fflush(stdout);
    fflush(stderr);

    for (int r = 0; r < P; r++) {
        halox_atoms_free(&sh.atoms[r]);
        halox_plan_free(&sh.plans[r]);
    }
    free(sh.atoms);
    free(sh.plans);
    chk_system_free(&sys);
}

int main(void)
{
    static const scenario_t two = {{2, 1, 1}, 1, SKIP_COORDS};
    run_scenario(&two);

    static const scenario_t grid = {{3, 3, 1}, 4, SKIP_COORDS};
    run_scenario(&grid);

    static const scenario_t forces = {{2, 2, 1}, 2, SKIP_FORCES};
    run_scenario(&forces);
    TEST_DONE();
}
