/* Bounded waits of the `mpi` transport, with 2 processes: a peer that skips an exchange makes
 * the other rank return HALOX_ERR_TIMEOUT after the timeout, with a message naming rank, pulse,
 * peer and step; the failed endpoint refuses further use; and both processes still exit
 * normally (no MPI_Abort: the abandoned requests are cancelled or released, and the skipping
 * rank waits for the timed-out one on a plain MPI barrier before it finalises).
 *
 * Round 1: rank 1 skips the coordinate exchange. Round 2: rank 1 does the coordinate exchange
 * but skips the force exchange. Round 3: rank 1 calls a barrier that rank 0 never joins.
 * Round 4: rank 1 calls an allgather that rank 0 joins only after rank 1 timed out: the
 * abandoned collective completes later, and must not write into rank 1's buffers, which a caller
 * may free as soon as the call returned (it did once: a plan build's gather freed its buffer and
 * the late block landed in freed memory, found by ASan in test_timeout_emu under load). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "harness.h"
#include "mpi_common.h"

/* long enough that set-up collectives on a loaded 2-core CI machine never hit it */
static const double timeout_s = 2.0;

typedef struct setup {
    halox_comm_t *comm;
    halox_atoms_t atoms;
    halox_plan_t plan;
    void *f;
} setup_t;

static int set_up(setup_t *s, int rank)
{
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .timeout_s = timeout_s};
    CHECK_OK(halox_comm_create("mpi", &args, &s->comm));
    if (!s->comm)
        return -1;
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{6.0, 6.0, 6.0}};
    halox_plan_params_t params = {grid, box, 1.5, 0.2, 0, 0};
    halox_atoms_t all[2];
    /* few atoms: every message stays small (eager), so a send completes without its receive */
    CHECK(tm_make_ranks(&grid, &box, HALOX_DOUBLE, 3, 0, 60, 11, rank, all, &s->atoms) == 0);
    tm_free_ranks(all, 2, NULL);
    halox_plan_init(&s->plan);
    CHECK_OK(halox_comm_build_plan(s->comm, &params, &s->atoms, &s->plan));
    s->f = calloc((size_t)s->plan.n_total + 1, 3 * sizeof(double));
    CHECK_OK(halox_comm_bind(s->comm, &s->plan, s->atoms.x, s->f));
    return 0;
}

static void tear_down(setup_t *s)
{
    halox_comm_destroy(s->comm);
    halox_plan_free(&s->plan);
    halox_atoms_free(&s->atoms);
    free(s->f);
}

/* The call timed out within a sane time, and the message says who, where and what to do. */
static void check_timeout(halox_status_t st, double elapsed, const char *what, long long step)
{
    CHECK_STATUS(st, HALOX_ERR_TIMEOUT);
    const char *msg = halox_last_error();
    printf("rank 0: %s returned after %.2f s: %s\n", what, elapsed, msg);
    fflush(stdout);
    CHECK(elapsed >= timeout_s * 0.99 && elapsed < timeout_s + 20);
    char want[64];
    CHECK(strstr(msg, "rank 0") != NULL);
    CHECK(strstr(msg, "rank 1") != NULL);
    CHECK(strstr(msg, "pulse 0") != NULL);
    snprintf(want, sizeof want, "step %lld", step);
    CHECK_MSG(strstr(msg, want) != NULL, "message lacks '%s'", want);
    CHECK(strstr(msg, "HALOX_TIMEOUT_S") != NULL);
}

int main(int argc, char **argv)
{
    int rank, size;
    tm_mpi_init(&argc, &argv, &rank, &size);
    if (size != 2)
        return tm_mpi_skip("needs 2 processes");

    /* round 1: rank 1 never joins the coordinate exchange */
    setup_t s;
    if (set_up(&s, rank) == 0) {
        if (rank == 0) {
            double t0 = MPI_Wtime();
            halox_status_t st = halox_comm_coords(s.comm);
            check_timeout(st, MPI_Wtime() - t0, "coordinate exchange", 1);
            /* the endpoint is unusable now, and says so instead of hanging */
            CHECK_STATUS(halox_comm_barrier(s.comm), HALOX_ERR_STATE);
            CHECK(strstr(halox_last_error(), "MPI_Abort") != NULL);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* rank 1 waits here until rank 0 has timed out */
        tear_down(&s);
    }

    /* round 2: rank 1 exchanges coordinates but never sends forces back */
    if (set_up(&s, rank) == 0) {
        halox_status_t st = halox_comm_coords(s.comm);
        CHECK_OK(st);
        if (rank == 0 && st == HALOX_OK) {
            double t0 = MPI_Wtime();
            st = halox_comm_forces(s.comm);
            check_timeout(st, MPI_Wtime() - t0, "force exchange", 1);
            CHECK(strstr(halox_last_error(), "force exchange") != NULL);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        tear_down(&s);
    }

    /* round 3: a collective that one rank never joins is bounded too */
    if (set_up(&s, rank) == 0) {
        if (rank == 1) {
            double t0 = MPI_Wtime();
            halox_status_t st = halox_comm_barrier(s.comm);
            double el = MPI_Wtime() - t0;
            CHECK_STATUS(st, HALOX_ERR_TIMEOUT);
            CHECK(el >= timeout_s * 0.99 && el < timeout_s + 20);
            CHECK(strstr(halox_last_error(), "barrier") != NULL);
            printf("rank 1: barrier returned after %.2f s: %s\n", el, halox_last_error());
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        /* rank 0 joins the abandoned barrier late, so rank 1's pending MPI_Ibarrier completes
         * (progressed by rank 1 inside the next MPI_Barrier) and both finalise cleanly */
        if (rank == 0)
            CHECK_OK(halox_comm_barrier(s.comm));
        MPI_Barrier(MPI_COMM_WORLD);
        tear_down(&s);
    }

    /* round 4: a late peer completes an abandoned allgather into the endpoint's memory only */
    if (set_up(&s, rank) == 0) {
        enum { NB = 64 }; /* 512 bytes a block: small messages (eager), as in set_up */
        double send[NB], *recv = malloc(2 * NB * sizeof(double));
        for (int i = 0; i < NB; i++)
            send[i] = rank + 1.0;
        for (int i = 0; i < 2 * NB && recv; i++)
            recv[i] = -7.0;
        if (rank == 1 && recv) {
            double t0 = MPI_Wtime();
            halox_status_t st = halox_comm_allgather(s.comm, send, recv, sizeof send);
            double el = MPI_Wtime() - t0;
            CHECK_STATUS(st, HALOX_ERR_TIMEOUT);
            CHECK(el >= timeout_s * 0.99 && el < timeout_s + 20);
            CHECK(strstr(halox_last_error(), "allgather") != NULL);
            for (int i = 0; i < 2 * NB; i++) /* what the call left does not matter */
                recv[i] = -7.0;
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0 && recv) { /* joins late: the collective completes on both sides */
            CHECK_OK(halox_comm_allgather(s.comm, send, recv, sizeof send));
            CHECK(recv[0] == 1.0 && recv[NB - 1] == 1.0 && recv[NB] == 2.0 &&
                  recv[2 * NB - 1] == 2.0);
        }
        /* rank 0's block reaches rank 1 (same pair, in order) before its barrier message */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 && recv) {
            int touched = 0;
            for (int i = 0; i < 2 * NB; i++)
                touched += recv[i] != -7.0;
            CHECK_MSG(touched == 0,
                      "rank 1: %d values of the caller's buffer written after the failed "
                      "allgather returned",
                      touched);
        }
        free(recv);
        tear_down(&s);
    }

    tm_mpi_finish();
    TEST_DONE();
}
