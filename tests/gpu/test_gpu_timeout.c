/* Bounded waits of the GPU transports (2 processes): rank 1 skips the coordinate exchange of
 * step 2; rank 0 must get HALOX_ERR_TIMEOUT within a few timeouts (mpi-staged and hybrid with
 * the pair declared unreachable inside that exchange; nccl, the NVSHMEM transports and hybrid
 * with the pair direct at their next exchange, since they only enqueue, the NVSHMEM kernels
 * giving up on their own after the timeout), with a message naming the
 * rank, the step, the pulse and the peer; the endpoint then refuses further exchanges with
 * HALOX_ERR_STATE, and both ranks can still destroy their endpoints. nvshmem-inline also with
 * the exchange inside kernels of the caller (tests/gpu/inline_kernels.cu): rank 0's consumer kernel
 * gives up, and halox_comm_inline_enqueued reports it the same way.
 *
 * Exit 77 (skipped) when no GPU is visible or not run on 2 processes. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/gpu.h"
#include "halox/inline.h"
#include "halox/plan.h"
#include "halox/transport.h"
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

/* An endpoint bound to a 2x1x1 plan (shifts: periodic images of y and z by shifts, so nothing
 * is forwarded) with 800 atoms on device arrays; 0 when the transport refused (said) or failed. */
typedef struct {
    halox_comm_t *comm;
    halox_plan_t plan;
    halox_atoms_t ref[2], mine;
    void *d_x, *d_f;
    cudaStream_t stream;
} bound_t;

static const double k_timeout = 2.0;

static int bound_open(bound_t *b, const char *name, int shifts, int me)
{
    memset(b, 0, sizeof *b);
    if (!halox_transport_available(name))
        return 0;
    /* both ranks start the creation together: its collectives are bounded by the short timeout
     * too, and the teardown of a case that timed out can keep one rank away from them for longer
     * than that on a loaded machine (nocuda suite, CI of e163508: hybrid's MPI_Comm_idup) */
    MPI_Barrier(MPI_COMM_WORLD);
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .timeout_s = k_timeout};
    halox_status_t st = halox_comm_create(name, &args, &b->comm);
    if (st == HALOX_ERR_UNAVAILABLE) {
        if (me == 0)
            printf("%s: refused here, not tested: %s\n", name, halox_last_error());
        return 0;
    }
    CHECK_MSG(st == HALOX_OK, "%s: create: %s", name, halox_last_error());
    if (st != HALOX_OK)
        return 0;
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, 2.0, 0.5, shifts, 0};
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, 0, 800, 42, me, b->ref, &b->mine) == 0);
    halox_plan_init(&b->plan);
    CHECK_OK(halox_comm_build_plan(b->comm, &params, &b->mine, &b->plan));
    const size_t bytes = 3 * sizeof(float) * (size_t)b->plan.n_total;
    CHECK_OK(halox_comm_device_alloc(b->comm, bytes, &b->d_x));
    CHECK_OK(halox_comm_device_alloc(b->comm, bytes, &b->d_f));
    TG_CUDA(cudaMemset(b->d_f, 0, bytes));
    TG_CUDA(cudaMemcpy(b->d_x, b->mine.x, bytes, cudaMemcpyHostToDevice));
    CHECK_OK(halox_comm_bind(b->comm, &b->plan, b->d_x, b->d_f));
    b->stream = (cudaStream_t)halox_comm_stream(b->comm);
    return 1;
}

/* collective; after the failure the memory may be leaked, but no rank may hang */
static void bound_close(bound_t *b)
{
    halox_comm_device_free(b->comm, b->d_x);
    halox_comm_device_free(b->comm, b->d_f);
    halox_comm_destroy(b->comm);
    halox_plan_free(&b->plan);
    tm_free_ranks(b->ref, 2, &b->mine);
}

/* rank 0's timeout of step 2: within a few bounds, naming rank, step, pulse and peer */
static void check_timeout(const char *what, halox_status_t st, double dt)
{
    CHECK_MSG(st == HALOX_ERR_TIMEOUT, "%s: expected a timeout, got %s: %s", what,
              halox_status_string(st), halox_last_error());
    const char *msg = halox_last_error();
    printf("%s: rank 0 timed out after %.2f s: %s\n", what, dt, msg);
    CHECK_MSG(dt >= 0.9 * k_timeout && dt < 10 * k_timeout, "%s: timed out after %.2f s", what, dt);
    CHECK(strstr(msg, "rank 0") != NULL);
    CHECK(strstr(msg, "step 2") != NULL);
    CHECK(strstr(msg, "pulse 0") != NULL);
    CHECK(strstr(msg, "rank 1") != NULL);
}

static void test_transport(const char *name, int me)
{
    bound_t b;
    if (!bound_open(&b, name, 0, me))
        return;
    /* step 1 on both ranks */
    CHECK_OK(halox_comm_coords(b.comm));
    CHECK_OK(halox_comm_forces(b.comm));
    TG_CUDA(cudaStreamSynchronize(b.stream));
    MPI_Barrier(MPI_COMM_WORLD);

    if (me == 0) {
        /* step 2: rank 1 is missing */
        double t0 = now_s();
        halox_status_t st = halox_comm_coords(b.comm);
        if (st == HALOX_OK) { /* nccl and nvshmem enqueue; the wait comes with the next one */
            CHECK_OK(halox_comm_forces(b.comm));
            st = halox_comm_coords(b.comm);
        }
        check_timeout(name, st, now_s() - t0);
        /* unusable from now on, and says so */
        CHECK_STATUS(halox_comm_coords(b.comm), HALOX_ERR_STATE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bound_close(&b);
    if (me == 0)
        printf("%s: destroyed after the timeout\n", name);
}

/* nvshmem-inline inside kernels of the caller (tests/gpu/inline_kernels.cu; the plan by shifts) */
static void test_inline_kernels(int me)
{
    bound_t b;
    if (!bound_open(&b, "nvshmem-inline", 1, me))
        return;
    halox_inline_view_t v;
    CHECK_OK(halox_comm_inline_view(b.comm, &v));
    const int nh = b.plan.n_home, n = b.plan.n_total;
    /* step 1 on both ranks */
    TG_CUDA(tk_inline_coords(&v, b.d_x, nh, 1, b.stream));
    TG_CUDA(tk_inline_forces(&v, b.d_f, nh, n, 1, b.stream));
    CHECK_OK(halox_comm_inline_enqueued(b.comm, 1));
    TG_CUDA(cudaStreamSynchronize(b.stream));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        /* step 2: rank 1 is missing; the kernels give up on their own */
        double t0 = now_s();
        TG_CUDA(tk_inline_coords(&v, b.d_x, nh, 1, b.stream));
        TG_CUDA(tk_inline_forces(&v, b.d_f, nh, n, 1, b.stream));
        TG_CUDA(cudaStreamSynchronize(b.stream));
        check_timeout("nvshmem-inline, inside kernels", halox_comm_inline_enqueued(b.comm, 1),
                      now_s() - t0);
        CHECK_STATUS(halox_comm_coords(b.comm), HALOX_ERR_STATE);
        CHECK_STATUS(halox_comm_inline_enqueued(b.comm, 1), HALOX_ERR_STATE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    bound_close(&b);
}

#ifdef HALOX_TEST_EMU_GPU
/* The device rebuild's messages by kernels (HALOX_NVSHMEM_DIRECT_MESSAGES=2), on the emulation
 * only (its hook halox_emu_drop): rank 1's GPU drops the send kernel of the plan build's first
 * set-up message after its host took part in the counts' agreement. Rank 0's receive kernel must
 * give up after the timeout and its plan build fail with HALOX_ERR_TIMEOUT naming the peer and the
 * message; rank 1's fails too (the verdict, or its own wait for rank 0's next message, which an
 * endpoint that gave up no longer sends); neither hangs. */
static void test_message_kernels(int me)
{
    setenv("HALOX_NVSHMEM_DIRECT_MESSAGES", "2", 1); /* the default, whatever the caller set */
    bound_t b;
    const int ok = bound_open(&b, "nvshmem-fused", 0, me);
    unsetenv("HALOX_NVSHMEM_DIRECT_MESSAGES");
    if (!ok)
        return;
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, 2.0, 0.5, 0, 0};
    const int nh = b.plan.n_home, cap = 4 * b.plan.n_total + 64;
    halox_fixed_atoms_t a;
    memset(&a, 0, sizeof a);
    CHECK_OK(halox_comm_device_alloc(b.comm, sizeof(float) * 3 * (size_t)cap, &a.x));
    TG_CUDA(cudaMalloc((void **)&a.id, sizeof(int32_t) * (size_t)cap));
    TG_CUDA(cudaMalloc((void **)&a.zone, (size_t)cap));
    TG_CUDA(cudaMemcpy(a.x, b.mine.x, sizeof(float) * 3 * (size_t)nh, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(a.id, b.mine.id, sizeof(int32_t) * (size_t)nh, cudaMemcpyHostToDevice));
    a.n_home = nh;
    a.capacity = cap;
    halox_plan_t plan;
    halox_plan_init(&plan);
    /* a healthy build first: the messages' verdict and mailbox are set up */
    CHECK_OK(halox_comm_build_plan_fixed(b.comm, &params, &a, &plan));
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1)
        halox_emu_drop("halox__shm_msg_send_kernel", 1);
    const double t0 = now_s();
    halox_status_t st = halox_comm_build_plan_fixed(b.comm, &params, &a, &plan);
    const double dt = now_s() - t0;
    halox_emu_drop(NULL, 0);
    const char *msg = halox_last_error();
    printf("message kernels: rank %d: the plan build failed after %.2f s: %s\n", me, dt, msg);
    CHECK_MSG(st != HALOX_OK && dt < 10 * k_timeout, "rank %d: %s after %.2f s", me,
              halox_status_string(st), dt);
    if (me == 0) {
        CHECK_MSG(st == HALOX_ERR_TIMEOUT, "rank 0: expected a timeout, got %s",
                  halox_status_string(st));
        CHECK(dt >= 0.9 * k_timeout);
        CHECK(strstr(msg, "rank 1") != NULL);
        CHECK(strstr(msg, "message of the device rebuild") != NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    halox_plan_free(&plan);
    halox_comm_device_free(b.comm, a.x);
    cudaFree(a.id);
    cudaFree(a.zone);
    bound_close(&b);
}
#endif

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
#ifdef HALOX_TEST_EMU_GPU
    test_message_kernels(me);
#endif
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
