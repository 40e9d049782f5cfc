/* Migration over the threads transport: atoms scattered far outside their domains (several
 * domains away, across the periodic boundary, into corners) all end at their true owner with
 * their payload, none lost or duplicated; a wrong expected count and a non-finite position are
 * refused on every rank with messages naming the step. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/topology.h"
#include "harness.h"

#define NR 12
static const halox_grid_t G = {{3, 2, 2}};
static const halox_box_t B = {{9.0, 7.0, 5.0}};
static const int PER_RANK = 400;

typedef struct {
    int rank;
    halox_team_t *team;
    int mode; /* 0 good, 1 wrong expected count, 2 NaN on rank 5, 3 grid/rank mismatch */
    halox_status_t st;
    halox_atoms_t atoms;
    char msg[1024];
} targ_t;

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void *run(void *vp)
{
    targ_t *t = vp;
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .team = t->team, .rank = t->rank};
    halox_comm_t *comm = NULL;
    t->st = halox_comm_create("threads", &args, &comm);
    if (t->st != HALOX_OK)
        return NULL;
    halox_atoms_init(&t->atoms, HALOX_DOUBLE, 3, 2 * sizeof(double));
    halox_atoms_reserve(&t->atoms, PER_RANK);
    uint64_t s = 777 + (uint64_t)t->rank;
    for (int i = 0; i < PER_RANK; i++) {
        int id = t->rank * PER_RANK + i;
        for (int d = 0; d < 3; d++) /* anywhere in [-2L, 3L): up to several boxes away */
            halox_atoms_set(&t->atoms, i, d,
                            (-2.0 + 5.0 * (double)(rng(&s) >> 11) * 0x1.0p-53) * B.len[d]);
        t->atoms.id[i] = id;
        double *e = (double *)t->atoms.extra + 2 * i;
        e[0] = 3.0 * id;
        e[1] = -0.5 * id;
    }
    t->atoms.n_home = t->atoms.n_total = PER_RANK;
    if (t->mode == 2 && t->rank == 5)
        halox_atoms_set(&t->atoms, 17, 1, NAN);
    long long expected = (long long)NR * PER_RANK + (t->mode == 1 ? 1 : 0);
    if (t->mode == 3) {
        /* a grid of 8 ranks on a team of 12: refused on every rank, no hang */
        halox_plan_params_t prm = {{{2, 2, 2}}, B, 2.0, 0.2, 0, 0};
        halox_plan_t plan;
        halox_plan_init(&plan);
        t->st = halox_comm_build_plan(comm, &prm, &t->atoms, &plan);
        halox_plan_free(&plan);
    } else {
        t->st = halox_comm_migrate(comm, &G, &B, &t->atoms, expected, 7);
    }
    snprintf(t->msg, sizeof t->msg, "%s", halox_last_error());
    halox_comm_destroy(comm);
    return NULL;
}

static void run_all(int mode, targ_t *t)
{
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(NR, 20.0, &team));
    pthread_t th[NR];
    for (int r = 0; r < NR; r++) {
        t[r] = (targ_t){.rank = r, .team = team, .mode = mode};
        pthread_create(&th[r], NULL, run, &t[r]);
    }
    for (int r = 0; r < NR; r++)
        pthread_join(th[r], NULL);
    halox_team_destroy(team);
}

int main(void)
{
    targ_t t[NR];
    run_all(0, t);
    int *seen = calloc((size_t)NR * PER_RANK, sizeof(int));
    long long total = 0;
    for (int r = 0; r < NR; r++) {
        CHECK_MSG(t[r].st == HALOX_OK, "rank %d: %s", r, t[r].msg);
        total += t[r].atoms.n_home;
        for (int i = 0; i < t[r].atoms.n_home; i++) {
            double x[3];
            for (int d = 0; d < 3; d++) {
                x[d] = halox_atoms_get(&t[r].atoms, i, d);
                CHECK(x[d] >= 0 && x[d] < B.len[d]);
            }
            CHECK_MSG(halox_owner_rank(&G, &B, x) == r, "atom %d on rank %d, owner %d",
                      t[r].atoms.id[i], r, halox_owner_rank(&G, &B, x));
            int id = t[r].atoms.id[i];
            CHECK(id >= 0 && id < NR * PER_RANK);
            if (id >= 0 && id < NR * PER_RANK)
                seen[id]++;
            const double *e = (const double *)t[r].atoms.extra + 2 * i;
            CHECK(e[0] == 3.0 * id && e[1] == -0.5 * id);
        }
        CHECK(t[r].atoms.n_total == t[r].atoms.n_home);
    }
    CHECK(total == (long long)NR * PER_RANK);
    for (int i = 0; i < NR * PER_RANK; i++)
        CHECK_MSG(seen[i] == 1, "atom %d seen %d times", i, seen[i]);
    /* the positions' true owners must be everywhere: every rank receives atoms */
    for (int r = 0; r < NR; r++)
        CHECK(t[r].atoms.n_home > 0);
    for (int r = 0; r < NR; r++)
        halox_atoms_free(&t[r].atoms);

    run_all(1, t);
    for (int r = 0; r < NR; r++) {
        CHECK(t[r].st == HALOX_ERR_ATOM_COUNT);
        CHECK_MSG(strstr(t[r].msg, "step 7") && strstr(t[r].msg, "4801"), "message: %s", t[r].msg);
        halox_atoms_free(&t[r].atoms);
    }
    run_all(2, t);
    for (int r = 0; r < NR; r++) {
        if (r == 5) {
            CHECK(t[r].st == HALOX_ERR_COORDINATE);
            CHECK_MSG(strstr(t[r].msg, "step 7") && strstr(t[r].msg, "non-finite"), "%s", t[r].msg);
        } else {
            CHECK_MSG(t[r].st == HALOX_ERR_ABORTED, "rank %d: %d %s", r, t[r].st, t[r].msg);
        }
        halox_atoms_free(&t[r].atoms);
    }
    run_all(3, t);
    for (int r = 0; r < NR; r++) {
        CHECK(t[r].st == HALOX_ERR_INVALID_ARG);
        CHECK_MSG(strstr(t[r].msg, "has 8 ranks but the threads transport runs 12"), "%s",
                  t[r].msg);
        halox_atoms_free(&t[r].atoms);
    }
    free(seen);
    TEST_DONE();
}
