/* Bounded waits of the GPU transports (2 processes): rank 1 skips the coordinate exchange of
 * step 2; rank 0 must get HALOX_ERR_TIMEOUT within a few timeouts (mpi-staged and hybrid with
 * the pair declared unreachable inside that exchange; nccl, the NVSHMEM transports and hybrid
 * with the pair direct at their next exchange, since they only enqueue, the NVSHMEM kernels
 * giving up on their own after the timeout), with a message naming the
 * rank, the step, the pulse and the peer; the endpoint then refuses further exchanges with
 * HALOX_ERR_STATE, and both ranks can still destroy their endpoints. nvshmem-inline also with
 * the exchange inside kernels of the caller (tests/inline_kernels.cu): rank 0's consumer kernel
 * gives up, and halox_comm_inline_enqueued reports it the same way.
 *
 * Exit 77 (skipped) when no GPU is visible or not run on 2 processes. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halox/comm.h"
#include "halox/inline.h"
#include "halox/plan.h"
#include "harness.h"
#include "inline_kernels.h"
#include "mpi_common.h"
#include "test_gpu_common.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_transport(const char *name, int me)
{
    if (!halox_transport_available(name))
        return;
    const double timeout = 2.0;
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .timeout_s = timeout};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create(name, &args, &comm);
    if (st == HALOX_ERR_UNAVAILABLE) {
        if (me == 0)
            printf("%s: refused here, not tested: %s\n", name, halox_last_error());
        return;
    }
    CHECK_MSG(st == HALOX_OK, "%s: create: %s", name, halox_last_error());
    if (st != HALOX_OK)
        return;
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, 2.0, 0.5, 0};
    halox_atoms_t ref[2], mine;
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, 0, 800, 42, me, ref, &mine) == 0);
    halox_plan_t plan;
    halox_plan_init(&plan);
    CHECK_OK(halox_comm_build_plan(comm, &params, &mine, &plan));
    const size_t esize = 3 * sizeof(float);
    void *d_x = NULL, *d_f = NULL;
    CHECK_OK(halox_comm_device_alloc(comm, esize * (size_t)plan.n_total, &d_x));
    CHECK_OK(halox_comm_device_alloc(comm, esize * (size_t)plan.n_total, &d_f));
    TG_CUDA(cudaMemset(d_f, 0, esize * (size_t)plan.n_total));
    TG_CUDA(cudaMemcpy(d_x, mine.x, esize * (size_t)plan.n_total, cudaMemcpyHostToDevice));
    CHECK_OK(halox_comm_bind(comm, &plan, d_x, d_f));
    cudaStream_t stream = (cudaStream_t)halox_comm_stream(comm);

    /* step 1 on both ranks */
    CHECK_OK(halox_comm_coords(comm));
    CHECK_OK(halox_comm_forces(comm));
    TG_CUDA(cudaStreamSynchronize(stream));
    MPI_Barrier(MPI_COMM_WORLD);

    if (me == 0) {
        /* step 2: rank 1 is missing */
        double t0 = now_s();
        st = halox_comm_coords(comm);
        if (st == HALOX_OK) { /* nccl and nvshmem enqueue; the wait comes with the next one */
            CHECK_OK(halox_comm_forces(comm));
            st = halox_comm_coords(comm);
        }
        double dt = now_s() - t0;
        CHECK_MSG(st == HALOX_ERR_TIMEOUT, "%s: expected a timeout, got %s: %s", name,
                  halox_status_string(st), halox_last_error());
        const char *msg = halox_last_error();
        printf("%s: rank 0 timed out after %.2f s: %s\n", name, dt, msg);
        CHECK_MSG(dt >= 0.9 * timeout && dt < 10 * timeout, "%s: timed out after %.2f s", name, dt);
        CHECK(strstr(msg, "rank 0") != NULL);
        CHECK(strstr(msg, "step 2") != NULL);
        CHECK(strstr(msg, "pulse 0") != NULL);
        CHECK(strstr(msg, "rank 1") != NULL);
        /* unusable from now on, and says so */
        CHECK_STATUS(halox_comm_coords(comm), HALOX_ERR_STATE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* collective; after the failure the memory may be leaked, but no rank may hang */
    halox_comm_device_free(comm, d_x);
    halox_comm_device_free(comm, d_f);
    halox_comm_destroy(comm);
    if (me == 0)
        printf("%s: destroyed after the timeout\n", name);
    halox_plan_free(&plan);
    tm_free_ranks(ref, 2, &mine);
}

/* nvshmem-inline inside kernels of the caller (a plan by shifts: 2x1x1 forwards nothing) */
static void test_inline_kernels(int me)
{
    const char *name = "nvshmem-inline";
    if (!halox_transport_available(name))
        return;
    const double timeout = 2.0;
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .timeout_s = timeout};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create(name, &args, &comm);
    if (st != HALOX_OK) {
        CHECK_STATUS(st, HALOX_ERR_UNAVAILABLE);
        return;
    }
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, 2.0, 0.5, 1};
    halox_atoms_t ref[2], mine;
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, 0, 800, 42, me, ref, &mine) == 0);
    halox_plan_t plan;
    halox_plan_init(&plan);
    CHECK_OK(halox_comm_build_plan(comm, &params, &mine, &plan));
    const size_t esize = 3 * sizeof(float);
    void *d_x = NULL, *d_f = NULL;
    CHECK_OK(halox_comm_device_alloc(comm, esize * (size_t)plan.n_total, &d_x));
    CHECK_OK(halox_comm_device_alloc(comm, esize * (size_t)plan.n_total, &d_f));
    TG_CUDA(cudaMemset(d_f, 0, esize * (size_t)plan.n_total));
    TG_CUDA(cudaMemcpy(d_x, mine.x, esize * (size_t)plan.n_total, cudaMemcpyHostToDevice));
    CHECK_OK(halox_comm_bind(comm, &plan, d_x, d_f));
    cudaStream_t stream = (cudaStream_t)halox_comm_stream(comm);
    halox_inline_view_t v;
    CHECK_OK(halox_comm_inline_view(comm, &v));
    /* step 1 on both ranks */
    TG_CUDA(tk_inline_coords(&v, d_x, plan.n_home, 1, stream));
    TG_CUDA(tk_inline_forces(&v, d_f, plan.n_home, plan.n_total, 1, stream));
    CHECK_OK(halox_comm_inline_enqueued(comm, 1));
    TG_CUDA(cudaStreamSynchronize(stream));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        /* step 2: rank 1 is missing; the kernels give up on their own */
        double t0 = now_s();
        TG_CUDA(tk_inline_coords(&v, d_x, plan.n_home, 1, stream));
        TG_CUDA(tk_inline_forces(&v, d_f, plan.n_home, plan.n_total, 1, stream));
        TG_CUDA(cudaStreamSynchronize(stream));
        st = halox_comm_inline_enqueued(comm, 1);
        double dt = now_s() - t0;
        CHECK_MSG(st == HALOX_ERR_TIMEOUT, "%s (inline kernels): expected a timeout, got %s: %s",
                  name, halox_status_string(st), halox_last_error());
        const char *msg = halox_last_error();
        printf("%s, inside kernels: rank 0 timed out after %.2f s: %s\n", name, dt, msg);
        CHECK_MSG(dt >= 0.9 * timeout && dt < 10 * timeout, "timed out after %.2f s", dt);
        CHECK(strstr(msg, "rank 0") != NULL);
        CHECK(strstr(msg, "step 2") != NULL);
        CHECK(strstr(msg, "pulse 0") != NULL);
        CHECK(strstr(msg, "rank 1") != NULL);
        CHECK_STATUS(halox_comm_coords(comm), HALOX_ERR_STATE);
        CHECK_STATUS(halox_comm_inline_enqueued(comm, 1), HALOX_ERR_STATE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    halox_comm_device_free(comm, d_x);
    halox_comm_device_free(comm, d_f);
    halox_comm_destroy(comm);
    halox_plan_free(&plan);
    tm_free_ranks(ref, 2, &mine);
}

int main(int argc, char **argv)
{
    setenv("NCCL_NVLS_ENABLE", "0", 0); /* NVLink multicast stays off */
    int me, P;
    tm_mpi_init(&argc, &argv, &me, &P);
    if (tg_min_device_count() == 0)
        return tm_mpi_skip("no CUDA device visible");
    if (P != 2)
        return tm_mpi_skip("needs 2 processes");
    test_transport("mpi-staged", me);
    test_transport("nccl", me);
    test_transport("nvshmem-stream", me);
    test_transport("nvshmem-pulse", me);
    test_transport("nvshmem-fused", me);
    test_transport("nvshmem-inline", me);
    test_inline_kernels(me);
    /* hybrid: the pair direct (a wait kernel gives up), then through MPI (a receive times out) */
    test_transport("hybrid", me);
    setenv("HALOX_HYBRID_UNREACHABLE", "all", 1);
    if (me == 0)
        printf("hybrid with HALOX_HYBRID_UNREACHABLE=all:\n");
    test_transport("hybrid", me);
    unsetenv("HALOX_HYBRID_UNREACHABLE");
    tm_mpi_finish();
    TEST_DONE();
}
