/* The NVSHMEM transports' memory errors (2 processes), each with the message a user needs:
 *  - a symmetric heap too small for a device_alloc (NVSHMEM_SYMMETRIC_SIZE set small here, before
 *    NVSHMEM starts): HALOX_ERR_NO_MEMORY on every rank, naming NVSHMEM_SYMMETRIC_SIZE and the
 *    bytes; the endpoint stays usable;
 *  - x or f not from halox_comm_device_alloc (plain cudaMalloc): bind refuses with
 *    HALOX_ERR_INVALID_ARG naming halox_comm_device_alloc;
 *  - after both, a bind on symmetric arrays and an exchange work, checked against the reference;
 *  - then a full-shell plan on the same endpoint (2 pulses each way in x, whose halo is deeper
 *    than a domain; self images in y and z, 1 pulse each way), its device build (the maps and
 *    halo as the reference's) and exchanges of coordinates and forces, bit for bit (8 pulses,
 *    the second half of each dimension's to the upper neighbour);
 *  - a CPU transport has no device memory: HALOX_ERR_UNAVAILABLE.
 *
 * Exit 77 (skipped) without a GPU, without NVSHMEM in the build, or not on 2 processes. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/gpu.h"
#include "halox/plan.h"
#include "halox/transport.h"
#include "harness.h"
#include "mpi_common.h"
#include "test_gpu_common.h"

/* The full-shell plan on comm (float, stride 3; 2 ranks): built on the device from symmetric
 * arrays (halox_comm_build_plan_fixed), bound, and 2 exchanges each way against the reference. */
static void test_full_shell(halox_comm_t *comm, int me)
{
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, 3.2, 1.5, 0, 1};
    halox_atoms_t ref[2], mine;
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, 0, 1200, 13, me, ref, &mine) == 0);
    tm_reference_t t;
    CHECK_OK(tm_reference_build(&t, &params, ref, 2));
    const halox_plan_t *want = &t.plans[me];
    CHECK(want->n_pulses == 8 && want->pulse[2].from_lower && want->pulse[3].pulse_in_dim == 1);
    const size_t esize = 3 * sizeof(float),
                 cap = (size_t)(t.plans[0].n_total > t.plans[1].n_total ? t.plans[0].n_total
                                                                        : t.plans[1].n_total) +
                       8;
    halox_fixed_atoms_t a;
    memset(&a, 0, sizeof a);
    a.capacity = (int)cap;
    a.n_home = mine.n_home;
    void *f = NULL;
    CHECK_OK(halox_comm_device_alloc(comm, cap * esize, &a.x));
    CHECK_OK(halox_comm_device_alloc(comm, cap * esize, &f));
    TG_CUDA(cudaMalloc((void **)&a.id, cap * sizeof(int32_t)));
    TG_CUDA(cudaMalloc((void **)&a.zone, cap));
    TG_CUDA(cudaMemcpy(a.x, mine.x, esize * (size_t)mine.n_home, cudaMemcpyHostToDevice));
    TG_CUDA(
        cudaMemcpy(a.id, mine.id, sizeof(int32_t) * (size_t)mine.n_home, cudaMemcpyHostToDevice));
    halox_plan_t plan;
    halox_plan_init(&plan);
    CHECK_OK(halox_comm_build_plan_fixed(comm, &params, &a, &plan));
    CHECK(plan.n_total == want->n_total && plan.n_pulses == want->n_pulses);
    for (int k = 0; k < plan.n_pulses && k < want->n_pulses; k++)
        CHECK(plan.pulse[k].send_count == want->pulse[k].send_count &&
              plan.pulse[k].dep_mask == want->pulse[k].dep_mask &&
              memcmp(plan.pulse[k].send_index, want->pulse[k].send_index,
                     sizeof(int) * (size_t)plan.pulse[k].send_count) == 0);
    const size_t bytes = esize * (size_t)want->n_total;
    float *h = malloc(bytes + 1);
    if (h && plan.n_total == want->n_total && halox_comm_bind(comm, &plan, a.x, f) == HALOX_OK) {
        cudaStream_t s = (cudaStream_t)halox_comm_stream(comm);
        uint64_t seed = 17;
        for (int step = 0; step < 2; step++) {
            tm_move_home(ref, 2, &seed);
            tm_reference_coords(&t);
            TG_CUDA(
                cudaMemcpy(a.x, ref[me].x, esize * (size_t)mine.n_home, cudaMemcpyHostToDevice));
            MPI_Barrier(MPI_COMM_WORLD); /* the peer stores into our halo once it starts */
            CHECK_OK(halox_comm_coords(comm));
            TG_CUDA(cudaStreamSynchronize(s));
            TG_CUDA(cudaMemcpy(h, a.x, bytes, cudaMemcpyDeviceToHost));
            CHECK_MSG(memcmp(h, ref[me].x, bytes) == 0,
                      "full shell step %d: halo coordinates differ from the reference", step);
            tm_random_forces(ref, t.fs, 2, &seed);
            TG_CUDA(cudaMemcpy(f, t.fs[me], bytes, cudaMemcpyHostToDevice));
            tm_reference_forces(&t);
            CHECK_OK(halox_comm_forces(comm));
            TG_CUDA(cudaStreamSynchronize(s));
            TG_CUDA(cudaMemcpy(h, f, bytes, cudaMemcpyDeviceToHost));
            CHECK_MSG(memcmp(h, t.fs[me], bytes) == 0,
                      "full shell step %d: forces differ from the reference", step);
        }
        if (me == 0)
            printf("full shell, %d pulses: device build and exchanges as the reference\n",
                   plan.n_pulses);
    } else {
        CHECK_MSG(0, "full shell: the build or the bind failed: %s", halox_last_error());
    }
    free(h);
    halox_plan_free(&plan);
    halox_comm_device_free(comm, f);
    halox_comm_device_free(comm, a.x);
    cudaFree(a.id);
    cudaFree(a.zone);
    tm_reference_free(&t);
    tm_free_ranks(ref, 2, &mine);
}

static void test_memory_errors(const char *name, int me)
{
    halox_comm_args_t args = {.real = HALOX_FLOAT, .stride = 3, .timeout_s = 20};
    halox_comm_t *comm = NULL;
    CHECK_OK(halox_comm_create(name, &args, &comm));
    if (!comm)
        return;

    /* 1. larger than the heap: every rank gets the error, and it says what to set */
    void *big = NULL;
    halox_status_t st = halox_comm_device_alloc(comm, (size_t)256 << 20, &big);
    CHECK_STATUS(st, HALOX_ERR_NO_MEMORY);
    CHECK(big == NULL);
    const char *msg = halox_last_error();
    if (me == 0)
        printf("%s: 256 MiB on a 64 MiB heap: %s\n", name, msg);
    CHECK(strstr(msg, "NVSHMEM_SYMMETRIC_SIZE") != NULL);
    CHECK(strstr(msg, "268435456") != NULL); /* the bytes asked for */

    /* the plan of a small system */
    halox_grid_t grid = {{2, 1, 1}};
    halox_box_t box = {{9.0, 8.0, 7.0}};
    halox_plan_params_t params = {grid, box, 2.0, 0.5, 0, 0};
    halox_atoms_t ref[2], mine;
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, 0, 900, 7, me, ref, &mine) == 0);
    halox_plan_t plan, plans[2];
    halox_plan_init(&plan);
    halox_plan_init(&plans[0]);
    halox_plan_init(&plans[1]);
    CHECK_OK(halox_comm_build_plan(comm, &params, &mine, &plan));
    CHECK_OK(halox_reference_build(&params, ref, plans));
    const size_t esize = 3 * sizeof(float), bytes = esize * (size_t)plan.n_total;

    /* 2. plain device memory: peers cannot store into it */
    void *px = NULL, *pf = NULL;
    TG_CUDA(cudaMalloc(&px, bytes));
    TG_CUDA(cudaMalloc(&pf, bytes));
    st = halox_comm_bind(comm, &plan, px, pf);
    CHECK_STATUS(st, HALOX_ERR_INVALID_ARG);
    if (me == 0)
        printf("%s: bind on cudaMalloc'ed arrays: %s\n", name, halox_last_error());
    CHECK(strstr(halox_last_error(), "halox_comm_device_alloc") != NULL);
    cudaFree(px);
    cudaFree(pf);

    /* 3. still usable: symmetric arrays, one exchange each way, against the reference */
    void *x = NULL, *f = NULL;
    CHECK_OK(halox_comm_device_alloc(comm, bytes, &x));
    CHECK_OK(halox_comm_device_alloc(comm, bytes, &f));
    if (x && f) {
        TG_CUDA(cudaMemcpy(x, mine.x, bytes, cudaMemcpyHostToDevice));
        TG_CUDA(cudaMemset(f, 0, bytes));
        CHECK_OK(halox_comm_bind(comm, &plan, x, f));
        CHECK_OK(halox_comm_coords(comm));
        CHECK_OK(halox_comm_forces(comm));
        cudaStream_t s = (cudaStream_t)halox_comm_stream(comm);
        TG_CUDA(cudaStreamSynchronize(s));
        void *xs[2] = {ref[0].x, ref[1].x};
        halox_reference_coords(plans, 2, HALOX_FLOAT, 3, xs);
        float *hx = malloc(bytes);
        TG_CUDA(cudaMemcpy(hx, x, bytes, cudaMemcpyDeviceToHost));
        CHECK(hx && ref[me].n_total == plan.n_total && memcmp(hx, ref[me].x, bytes) == 0);
        free(hx);
    }
    halox_comm_device_free(comm, x);
    halox_comm_device_free(comm, f);
    test_full_shell(comm, me);
    halox_comm_destroy(comm);
    halox_plan_free(&plan);
    halox_plan_free(&plans[0]);
    halox_plan_free(&plans[1]);
    tm_free_ranks(ref, 2, &mine);
}

int main(int argc, char **argv)
{
    /* before NVSHMEM starts: a heap small enough to overflow on purpose */
    setenv("NVSHMEM_SYMMETRIC_SIZE", "64M", 1);
    int me, P;
    tm_mpi_init(&argc, &argv, &me, &P);

    /* a CPU transport has no device memory (runs without a GPU too) */
    {
        halox_comm_args_t a = {.real = HALOX_DOUBLE, .stride = 3};
        halox_comm_t *c = NULL;
        CHECK_OK(halox_comm_create("mpi", &a, &c));
        void *p = (void *)&a;
        CHECK_STATUS(halox_comm_device_alloc(c, 64, &p), HALOX_ERR_UNAVAILABLE);
        CHECK(p == NULL);
        halox_comm_destroy(c);
    }

    if (tg_min_device_count() == 0)
        return tm_mpi_skip("no CUDA device visible");
    if (P != 2)
        return tm_mpi_skip("needs 2 processes");
    if (!halox_transport_available("nvshmem-fused"))
        return tm_mpi_skip("no NVSHMEM in this build");
    test_memory_errors("nvshmem-fused", me);
    tm_mpi_finish();
    TEST_DONE();
}
