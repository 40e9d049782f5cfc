/* halox_comm_build_plan_fixed and halox_comm_migrate_fixed on the `threads` transport (host
 * arrays: the CPU transports' store), where neither MPI nor a GPU is needed (so the builds
 * without MPI and the TSan build run them): on teams of 1, 3 and 4 thread ranks,
 *   - the plan over arrays too small for the halo: every rank refuses with HALOX_ERR_NO_MEMORY,
 *     the short ones say what they need; grown to that, the plan and the arrays equal
 *     halox_reference_build's bit for bit (maps, counts, offsets, masks, zones, coordinates, ids),
 *     half-shell and full-shell plans;
 *   - the migration of moved atoms over arrays too small for a rank that gains atoms: refused
 *     on every rank before any atom moves; grown, the same atoms, order and bits as
 *     halox_comm_migrate on a copy, with the leavers counted.
 *   - one rank's arrays refused (too many home atoms, async neither 0 nor 1): every rank returns
 *     from the same agreement, none waits.
 * Rank threads record what they saw; the main thread judges (the checks are not thread-safe).
 * Built twice: test_device_threads (the `threads` transport: the host store) and, with
 * HALOX_TEST_EMU_GPU, test_device_stores_emu: the same checks through the GPU transports' device
 * stores (src/transports/gpu/plan_device.c, migrate_device.c, their kernels) on the CPU, over the
 * host emulation of tests/emu. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "harness.h"
#include "mpi_common.h"
#ifdef HALOX_TEST_EMU_GPU
#include "emu_transport.h"
#endif

/* the endpoint under test: `threads` (the host store), or with HALOX_TEST_EMU_GPU the GPU
 * transports' device stores over emulated device memory (tests/emu) */
static halox_status_t make_comm(const halox_comm_args_t *args, halox_comm_t **comm_p)
{
#ifdef HALOX_TEST_EMU_GPU
    return emu_gpu_create(args, comm_p);
#else
    return halox_comm_create("threads", args, comm_p);
#endif
}

typedef struct shared {
    halox_plan_params_t params;
    int P, natoms;
    uint64_t seed;
    halox_atoms_t *ref;        /* every rank's atoms after the reference build (read-only) */
    const halox_plan_t *plans; /* the reference plans */
    int bad[64];               /* per rank: checks that failed */
    char why[64][256];         /* per rank: the first of them */
} shared_t;

#define FAIL_IF(cond, ...)                                                                         \
    do {                                                                                           \
        if (cond) {                                                                                \
            if (!sh->bad[rank]++)                                                                  \
                snprintf(sh->why[rank], sizeof sh->why[rank], __VA_ARGS__);                        \
        }                                                                                          \
    } while (0)

static int same_pulse(const halox_pulse_t *a, const halox_pulse_t *b)
{
    return a->dim == b->dim && a->pulse_in_dim == b->pulse_in_dim &&
           a->from_lower == b->from_lower && a->send_rank == b->send_rank &&
           a->recv_rank == b->recv_rank && a->send_count == b->send_count &&
           a->dep_offset == b->dep_offset && a->dep_mask == b->dep_mask && a->shift == b->shift &&
           a->recv_count == b->recv_count && a->recv_offset == b->recv_offset &&
           (a->send_count == 0 ||
            !memcmp(a->send_index, b->send_index, sizeof(int) * (size_t)a->send_count));
}

static void dev_arrays(halox_fixed_atoms_t *a, const halox_atoms_t *home, int cap)
{
    const size_t es = halox_real_size(home->real) * (size_t)home->stride;
    memset(a, 0, sizeof *a);
    a->capacity = cap;
    a->x = calloc((size_t)cap, es);
    a->id = calloc((size_t)cap, sizeof(int32_t));
    a->zone = calloc((size_t)cap, 1);
    a->extra_bytes = home->extra_bytes;
    a->extra = home->extra_bytes ? calloc((size_t)cap, home->extra_bytes) : NULL;
    a->n_home = home->n_home;
    memcpy(a->x, home->x, es * (size_t)home->n_home);
    memcpy(a->id, home->id, sizeof(int32_t) * (size_t)home->n_home);
    if (home->extra_bytes)
        memcpy(a->extra, home->extra, home->extra_bytes * (size_t)home->n_home);
}

static void dev_free(halox_fixed_atoms_t *a)
{
    free(a->x);
    free(a->id);
    free(a->zone);
    free(a->extra);
}

static halox_status_t rank_fn(int rank, halox_team_t *team, void *arg)
{
    shared_t *sh = arg;
    const halox_plan_params_t *prm = &sh->params;
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .team = team, .rank = rank};
    halox_comm_t *comm = NULL;
    halox_status_t st = make_comm(&args, &comm);
    if (st != HALOX_OK)
        return st;
    /* this rank's home atoms, as the reference had them before its build */
    halox_atoms_t *all = calloc((size_t)sh->P, sizeof *all), mine;
    FAIL_IF(tm_make_ranks(&prm->grid, &prm->box, HALOX_FLOAT, 3, 12, sh->natoms, sh->seed, rank,
                          all, &mine) != 0,
            "no memory");
    const halox_plan_t *want = &sh->plans[rank];
    const size_t es = 3 * sizeof(float);

    halox_fixed_atoms_t a;
    /* ---- one rank's arrays refused (more home atoms than capacity): every rank returns an
     * error from the same agreement (that rank INVALID_ARG, the others ABORTED), none waits */
    if (sh->P > 1) {
        const int liar = sh->P - 1;
        halox_plan_t bad_plan;
        halox_plan_init(&bad_plan);
        dev_arrays(&a, &mine, mine.n_home + 1);
        if (rank == liar)
            a.n_home = a.capacity + 1;
        st = halox_comm_build_plan_fixed(comm, prm, &a, &bad_plan);
        FAIL_IF(st != (rank == liar ? HALOX_ERR_INVALID_ARG : HALOX_ERR_ABORTED),
                "plan with rank %d's bad arrays: %s", liar, halox_status_string(st));
        st = halox_comm_migrate_fixed(comm, &prm->grid, &prm->box, &a, sh->natoms, 1);
        FAIL_IF(st != (rank == liar ? HALOX_ERR_INVALID_ARG : HALOX_ERR_ABORTED),
                "migration with rank %d's bad arrays: %s", liar, halox_status_string(st));
        /* neither 0 nor 1 for async: named */
        a.n_home = mine.n_home;
        a.async = rank == liar ? 2 : 1;
        st = halox_comm_migrate_fixed(comm, &prm->grid, &prm->box, &a, sh->natoms, 1);
        FAIL_IF(st != (rank == liar ? HALOX_ERR_INVALID_ARG : HALOX_ERR_ABORTED) ||
                    (rank == liar && !strstr(halox_last_error(), "async 2: give 0 or 1")),
                "migration with rank %d's async 2: %s", liar, halox_last_error());
        halox_plan_free(&bad_plan);
        dev_free(&a);
    }

    /* ---- the plan, too small first */
    dev_arrays(&a, &mine, mine.n_home + 1);
    halox_plan_t plan;
    halox_plan_init(&plan);
    st = halox_comm_build_plan_fixed(comm, prm, &a, &plan);
    int short_any = 0;
    for (int r = 0; r < sh->P; r++)
        short_any |= sh->plans[r].n_total > sh->plans[r].n_home + 1;
    FAIL_IF(short_any && st != HALOX_ERR_NO_MEMORY, "plan: too small arrays: %s",
            halox_status_string(st));
    FAIL_IF(a.need && a.need > want->n_total, "plan: need %d for %d atoms", a.need, want->n_total);
    for (int tries = 0; st == HALOX_ERR_NO_MEMORY && tries < 16; tries++) {
        int cap = a.need > 0 ? a.need + a.need / 8 + 1 : a.capacity;
        dev_free(&a);
        dev_arrays(&a, &mine, cap);
        st = halox_comm_build_plan_fixed(comm, prm, &a, &plan);
    }
    FAIL_IF(st != HALOX_OK, "plan: %s", halox_last_error());
    if (st == HALOX_OK) {
        int same = plan.n_total == want->n_total && plan.n_pulses == want->n_pulses &&
                   a.n_total == want->n_total;
        for (int k = 0; same && k < plan.n_pulses; k++)
            same = same_pulse(&plan.pulse[k], &want->pulse[k]);
        same = same && !memcmp(plan.zone, want->zone, (size_t)plan.n_total) &&
               !memcmp(a.zone, want->zone, (size_t)plan.n_total) &&
               !memcmp(a.x, sh->ref[rank].x, es * (size_t)plan.n_total) &&
               !memcmp(a.id, sh->ref[rank].id, sizeof(int32_t) * (size_t)plan.n_total);
        FAIL_IF(!same, "plan: not the reference's plan or halo");
    }
    halox_plan_free(&plan);
    dev_free(&a);

    /* ---- the migration of moved atoms, too small first where a rank gains */
    uint64_t s = sh->seed * 7 + (uint64_t)rank;
    for (int i = 0; i < mine.n_home; i++)
        for (int c = 0; c < 3; c++)
            halox_atoms_set(&mine, i, c,
                            halox_atoms_get(&mine, i, c) +
                                (tm_uniform(&s) - 0.5) * 0.6 * prm->box.len[c]);
    halox_atoms_t ref_m;
    FAIL_IF(tm_copy_home(&ref_m, &mine) != 0, "no memory");
    st = halox_comm_migrate(comm, &prm->grid, &prm->box, &ref_m, sh->natoms, 1);
    FAIL_IF(st != HALOX_OK, "host migration: %s", halox_last_error());
    dev_arrays(&a, &mine, mine.n_home > 0 ? mine.n_home : 1);
    st = halox_comm_migrate_fixed(comm, &prm->grid, &prm->box, &a, sh->natoms, 1);
    for (int tries = 0; st == HALOX_ERR_NO_MEMORY && tries < 4; tries++) {
        FAIL_IF(a.n_home != mine.n_home, "a refused migration moved atoms");
        int cap = a.need > a.capacity ? a.need + 4 : a.capacity;
        dev_free(&a);
        dev_arrays(&a, &mine, cap);
        /* the device store without its last wait (an emulated launch is done on return; the
         * CPU store has none to skip) */
        a.async = 1;
        st = halox_comm_migrate_fixed(comm, &prm->grid, &prm->box, &a, sh->natoms, 1);
    }
    FAIL_IF(st != HALOX_OK, "migration: %s", halox_last_error());
    if (st == HALOX_OK)
        FAIL_IF(a.n_home != ref_m.n_home || memcmp(a.x, ref_m.x, es * (size_t)a.n_home) ||
                    memcmp(a.id, ref_m.id, sizeof(int32_t) * (size_t)a.n_home) ||
                    memcmp(a.extra, ref_m.extra, 12 * (size_t)a.n_home),
                "migration: %d atoms, the host's %d: not the same atoms, order or bits", a.n_home,
                ref_m.n_home);
    dev_free(&a);
    halox_atoms_free(&ref_m);
    tm_free_ranks(all, sh->P, &mine);
    free(all);
    halox_comm_destroy(comm);
    return HALOX_OK;
}

static void run_team(halox_grid_t grid, const double L[3], double rc, double buf, int shifts,
                     int full, int natoms, uint64_t seed)
{
    shared_t *sh = calloc(1, sizeof *sh);
    sh->P = halox_grid_size(&grid);
    sh->natoms = natoms;
    sh->seed = seed;
    sh->params = (halox_plan_params_t){grid, {{L[0], L[1], L[2]}}, rc, buf, shifts, full};
    if (halox_plan_check(&sh->params, NULL) != HALOX_OK) {
        CHECK_MSG(0, "grid %dx%dx%d: the planner refuses the case: %s", grid.n[0], grid.n[1],
                  grid.n[2], halox_last_error());
        free(sh);
        return;
    }
    sh->ref = calloc((size_t)sh->P, sizeof *sh->ref);
    CHECK(tm_make_system(&grid, &sh->params.box, HALOX_FLOAT, 3, 12, natoms, seed, sh->ref) == 0);
    tm_reference_t t;
    CHECK_OK(tm_reference_build(&t, &sh->params, sh->ref, sh->P));
    sh->plans = t.plans;
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(sh->P, 30, &team));
    halox_status_t st = halox_team_run(team, sh->P, rank_fn, sh, NULL, NULL);
    CHECK_MSG(st == HALOX_OK, "grid %dx%dx%d: %s", grid.n[0], grid.n[1], grid.n[2],
              halox_status_string(st));
    for (int r = 0; r < sh->P; r++)
        CHECK_MSG(sh->bad[r] == 0, "grid %dx%dx%d rank %d: %d failed, first: %s", grid.n[0],
                  grid.n[1], grid.n[2], r, sh->bad[r], sh->why[r]);
    int np[3];
    halox_plan_check(&sh->params, np);
    printf("grid %dx%dx%d, %s%s, pulses %d,%d,%d, %d atoms: plan and migration on fixed arrays as "
           "the host's\n",
           grid.n[0], grid.n[1], grid.n[2], shifts ? "shifts" : "copies",
           full ? ", full shell" : "", np[0], np[1], np[2], natoms);
    halox_team_destroy(team);
    tm_reference_free(&t);
    for (int r = 0; r < sh->P; r++)
        halox_atoms_free(&sh->ref[r]);
    free(sh->ref);
    free(sh);
}

int main(void)
{
    /* grids, boxes, cut-offs and buffers of the planner's own tests (test_plan_reference): 1 to 4
     * pulses per dimension, up to 64 ranks, elongated boxes, empty domains (few atoms) */
    static const struct {
        int g[3];
        double L[3], rc, buf;
        int shifts, natoms;
    } cases[] = {
        {{1, 1, 1}, {10, 10, 10}, 2.0, 0.5, 0, 800},  {{3, 1, 1}, {12, 12, 12}, 2.0, 0.5, 1, 1500},
        {{2, 2, 1}, {8, 8, 8}, 3.2, 0.6, 0, 1500},    {{2, 2, 1}, {12, 12, 12}, 2.0, 0.5, 1, 20},
        {{2, 2, 2}, {10, 10, 10}, 2.0, 0.2, 0, 2500}, {{4, 3, 2}, {16, 12, 10}, 2.5, 0.3, 0, 3000},
        {{6, 1, 1}, {12, 9, 9}, 4.0, 0.5, 0, 2000},   {{2, 2, 1}, {6, 6, 8}, 2.9, 0.4, 0, 1200},
        {{1, 1, 1}, {6, 6, 6}, 2.9, 3.5, 0, 800},     {{2, 3, 4}, {6, 30, 40}, 2.5, 0.5, 0, 3000},
        {{4, 4, 4}, {12, 12, 12}, 4.0, 0.3, 0, 5000}, {{3, 3, 3}, {9, 9, 9}, 4.4, 2.0, 0, 1200},
        {{8, 1, 1}, {16, 14, 14}, 6.5, 0.5, 0, 1000}, {{4, 2, 1}, {16, 8, 30}, 2.5, 0.5, 1, 2000},
        {{2, 1, 1}, {10, 10, 10}, 2.5, 0.3, 0, 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        run_team((halox_grid_t){{cases[c].g[0], cases[c].g[1], cases[c].g[2]}}, cases[c].L,
                 cases[c].rc, cases[c].buf, cases[c].shifts, 0, cases[c].natoms, 11 + c);
        fflush(stdout);
    }
    /* full-shell plans: as the reference (one rank, two ranks in a dimension, several pulses,
     * shifts), on either store */
    static const int full[] = {0, 1, 3, 4, 6, 7, 8, 12, 13, 14};
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        const int c = full[i];
        run_team((halox_grid_t){{cases[c].g[0], cases[c].g[1], cases[c].g[2]}}, cases[c].L,
                 cases[c].rc, cases[c].buf, cases[c].shifts, 1, cases[c].natoms, 31 + c);
        fflush(stdout);
    }
    TEST_DONE();
}
