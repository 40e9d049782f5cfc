/* halox_comm_build_plan_fixed against the serial reference, bit for bit, run by every rank
 * under mpiexec: the plan (counts, offsets, dependency offsets and masks, maps, zones) equals
 * halox_reference_build's for this rank, and the arrays hold the reference's halo coordinates,
 * ids and zones. Per case: first with arrays too small for the halo (every rank refuses with
 * HALOX_ERR_NO_MEMORY, the short ranks say how much they need, the home atoms are untouched),
 * then grown to what they said until the build succeeds. Grids of 1 to 8 ranks, copies and
 * shifts, 1 and 2 pulses per dimension, half and full shell, float and double, stride 3 and 4,
 * one endpoint for all cases (a smaller plan after a larger one); then a home atom outside its
 * domain, which every rank refuses and its rank names.
 *
 * Built twice: test_plan_device on the `mpi` transport (host arrays: the CPU transports' store),
 * and with HALOX_TEST_GPU as test_gpu_plan_device on every GPU transport compiled in, with device
 * arrays (x from halox_comm_device_alloc): the selection, packing and placement kernels of
 * src/transports/gpu/plan_device.c. That one exits 77 (skipped) when no GPU is visible. */
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
#ifdef HALOX_TEST_GPU
#include "test_gpu_common.h"
#endif

static int g_rank, g_size;
/* the cases' builds with halox_fixed_atoms_t.async: the plan's maps and zones reach the host in
 * the bind that follows, which the case then makes before comparing */
static int g_async;

/* The arrays of one rank, where its transport keeps atoms. */
typedef struct arrays {
    halox_comm_t *comm;
    int on_gpu;
    halox_fixed_atoms_t a;
} arrays_t;

static int arr_alloc(arrays_t *r, halox_comm_t *comm, int cap)
{
    memset(r, 0, sizeof *r);
    r->comm = comm;
    r->on_gpu = halox_transport_on_gpu(halox_comm_transport(comm));
    r->a.capacity = cap;
    if (!r->on_gpu) {
        r->a.x = malloc((size_t)cap * 4 * sizeof(double));
        r->a.id = malloc((size_t)cap * sizeof(int32_t));
        r->a.zone = malloc((size_t)cap);
        return r->a.x && r->a.id && r->a.zone ? 0 : -1;
    }
#ifdef HALOX_TEST_GPU
    /* collective (symmetric memory for NVSHMEM): every rank, in the same order */
    if (halox_comm_device_alloc(comm, (size_t)cap * 4 * sizeof(double), &r->a.x) != HALOX_OK)
        return -1;
    TG_CUDA(cudaMalloc((void **)&r->a.id, (size_t)cap * sizeof(int32_t)));
    TG_CUDA(cudaMalloc((void **)&r->a.zone, (size_t)cap));
    return 0;
#else
    return -1;
#endif
}

static void arr_free(arrays_t *r)
{
    if (!r->on_gpu) {
        free(r->a.x);
        free(r->a.id);
        free(r->a.zone);
    }
#ifdef HALOX_TEST_GPU
    else {
        if (r->a.x)
            halox_comm_device_free(r->comm, r->a.x);
        cudaFree(r->a.id);
        cudaFree(r->a.zone);
    }
#endif
    memset(&r->a, 0, sizeof r->a);
}

/* forces for a bind: as much room as the coordinates (collective where x is) */
static halox_status_t arr_alloc_f(arrays_t *r, void **f_p)
{
    const size_t bytes = (size_t)r->a.capacity * 4 * sizeof(double);
    *f_p = NULL;
    if (!r->on_gpu) {
        *f_p = calloc(1, bytes);
        return *f_p ? HALOX_OK : HALOX_ERR_NO_MEMORY;
    }
#ifdef HALOX_TEST_GPU
    return halox_comm_device_alloc(r->comm, bytes, f_p);
#else
    return HALOX_ERR_UNAVAILABLE;
#endif
}

static void arr_free_f(arrays_t *r, void *f)
{
    if (!f)
        return;
    if (!r->on_gpu)
        free(f);
#ifdef HALOX_TEST_GPU
    else
        halox_comm_device_free(r->comm, f);
#endif
}

/* home atoms in, everything past them poisoned */
static void arr_put(arrays_t *r, const halox_atoms_t *home)
{
    const size_t es = halox_real_size(home->real) * (size_t)home->stride;
    const size_t cap = (size_t)r->a.capacity, nh = (size_t)home->n_home;
    r->a.n_home = home->n_home;
    if (!r->on_gpu) {
        memset(r->a.x, 0xff, cap * es);
        memset(r->a.id, 0xff, cap * sizeof(int32_t));
        memset(r->a.zone, 0xee, cap);
        memcpy(r->a.x, home->x, nh * es);
        memcpy(r->a.id, home->id, nh * sizeof(int32_t));
        return;
    }
#ifdef HALOX_TEST_GPU
    TG_CUDA(cudaMemset(r->a.x, 0xff, cap * es));
    TG_CUDA(cudaMemset(r->a.id, 0xff, cap * sizeof(int32_t)));
    TG_CUDA(cudaMemset(r->a.zone, 0xee, cap));
    TG_CUDA(cudaMemcpy(r->a.x, home->x, nh * es, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(r->a.id, home->id, nh * sizeof(int32_t), cudaMemcpyHostToDevice));
#endif
}

/* n atoms of the arrays into host copies */
static void arr_get(const arrays_t *r, size_t es, int n, void *x, int32_t *id, uint8_t *zone)
{
    if (!r->on_gpu) {
        memcpy(x, r->a.x, (size_t)n * es);
        memcpy(id, r->a.id, (size_t)n * sizeof(int32_t));
        memcpy(zone, r->a.zone, (size_t)n);
        return;
    }
#ifdef HALOX_TEST_GPU
    TG_CUDA(cudaMemcpy(x, r->a.x, (size_t)n * es, cudaMemcpyDeviceToHost));
    TG_CUDA(cudaMemcpy(id, r->a.id, (size_t)n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    TG_CUDA(cudaMemcpy(zone, r->a.zone, (size_t)n, cudaMemcpyDeviceToHost));
#endif
}

static int all_max(int v)
{
    int m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* the plan against the reference plan, field by field */
static void compare_plan(const halox_plan_t *p, const halox_plan_t *q, const char *ctx)
{
    CHECK_MSG(p->n_home == q->n_home && p->n_total == q->n_total && p->n_pulses == q->n_pulses &&
                  p->shift_dims == q->shift_dims,
              "%s: rank %d: plan has %d/%d atoms, %d pulses, shifts %d; the reference %d/%d, "
              "%d, %d",
              ctx, g_rank, p->n_home, p->n_total, p->n_pulses, p->shift_dims, q->n_home, q->n_total,
              q->n_pulses, q->shift_dims);
    for (int k = 0; k < p->n_pulses && k < q->n_pulses; k++) {
        const halox_pulse_t *a = &p->pulse[k], *b = &q->pulse[k];
        CHECK_MSG(a->dim == b->dim && a->pulse_in_dim == b->pulse_in_dim &&
                      a->from_lower == b->from_lower && a->send_rank == b->send_rank &&
                      a->recv_rank == b->recv_rank && a->send_count == b->send_count &&
                      a->dep_offset == b->dep_offset && a->dep_mask == b->dep_mask &&
                      a->shift == b->shift && a->recv_count == b->recv_count &&
                      a->recv_offset == b->recv_offset,
                  "%s: rank %d pulse %d: send %d (dep %d, mask %#x) recv %d at %d; the "
                  "reference send %d (dep %d, mask %#x) recv %d at %d",
                  ctx, g_rank, k, a->send_count, a->dep_offset, a->dep_mask, a->recv_count,
                  a->recv_offset, b->send_count, b->dep_offset, b->dep_mask, b->recv_count,
                  b->recv_offset);
        if (a->send_count == b->send_count && a->send_count > 0)
            CHECK_MSG(memcmp(a->send_index, b->send_index, sizeof(int) * (size_t)a->send_count) ==
                          0,
                      "%s: rank %d pulse %d: the map differs from the reference", ctx, g_rank, k);
    }
    if (p->n_total == q->n_total)
        CHECK_MSG(memcmp(p->zone, q->zone, (size_t)p->n_total) == 0,
                  "%s: rank %d: the plan's zones differ from the reference", ctx, g_rank);
}

/* One case on comm: arrays too small, then grown until the build succeeds; then the plan and
 * the arrays against the reference. Returns 1 when run, 0 when the planner refuses the case. */
static int run_case(halox_comm_t *comm, halox_grid_t grid, double L, double rc, double buf,
                    int shifts, int full, int natoms, uint64_t seed, halox_real_t real, int stride)
{
    const int P = g_size, me = g_rank;
    halox_box_t box = {{L, L, L}};
    halox_plan_params_t params = {grid, box, rc, buf, shifts, full};
    int np[3];
    if (halox_plan_check(&params, np) != HALOX_OK)
        return 0;
    char ctx[200];
    snprintf(ctx, sizeof ctx, "%s: grid %dx%dx%d box %g rc %g buffer %g %s pulses %d,%d,%d %s %d",
             halox_comm_transport(comm), grid.n[0], grid.n[1], grid.n[2], L, rc, buf,
             shifts ? (full ? "shifts, full shell," : "shifts")
                    : (full ? "copies, full shell," : "copies"),
             np[0], np[1], np[2], test_real_name(real), stride);
    halox_atoms_t *ref = calloc((size_t)P, sizeof *ref), mine;
    CHECK(tm_make_ranks(&grid, &box, real, stride, 0, natoms, seed, me, ref, &mine) == 0);
    tm_reference_t t;
    CHECK_OK(tm_reference_build(&t, &params, ref, P));
    const halox_plan_t *want = &t.plans[me];
    const size_t es = halox_real_size(real) * (size_t)stride;
    /* too small for the halo wherever there is one */
    int short_any = 0;
    for (int r = 0; r < P; r++)
        short_any |= t.plans[r].n_total > t.plans[r].n_home + 1;
    arrays_t arr;
    CHECK(arr_alloc(&arr, comm, mine.n_home + 1) == 0);
    arr_put(&arr, &mine);
    arr.a.async = g_async;
    halox_plan_t plan;
    halox_plan_init(&plan);
    halox_status_t st = halox_comm_build_plan_fixed(comm, &params, &arr.a, &plan);
    int tries = 0;
    if (short_any) {
        CHECK_MSG(st == HALOX_ERR_NO_MEMORY, "%s: rank %d: arrays of %d entries for %d atoms: %s",
                  ctx, me, arr.a.capacity, want->n_total, halox_last_error());
        if (arr.a.need > 0) {
            CHECK_MSG(arr.a.need > arr.a.capacity && arr.a.need <= want->n_total,
                      "%s: rank %d: need %d with capacity %d, %d atoms in the end", ctx, me,
                      arr.a.need, arr.a.capacity, want->n_total);
            CHECK_MSG(strstr(halox_last_error(), "grow x, id and zone to at least") != NULL,
                      "%s: rank %d: the message does not say what to do: %s", ctx, me,
                      halox_last_error());
        }
        CHECK_MSG(all_max(arr.a.need) > 0, "%s: no rank said what it needs", ctx);
        /* the home atoms are untouched */
        void *hx = malloc((size_t)arr.a.capacity * es);
        int32_t *hid = malloc(sizeof(int32_t) * (size_t)arr.a.capacity);
        uint8_t *hz = malloc((size_t)arr.a.capacity);
        arr_get(&arr, es, mine.n_home, hx, hid, hz);
        CHECK_MSG(memcmp(hx, mine.x, (size_t)mine.n_home * es) == 0 &&
                      memcmp(hid, mine.id, sizeof(int32_t) * (size_t)mine.n_home) == 0,
                  "%s: rank %d: a refused build changed the home atoms", ctx, me);
        free(hx);
        free(hid);
        free(hz);
    } else {
        CHECK_MSG(st == HALOX_OK, "%s: rank %d: %s", ctx, me, halox_last_error());
    }
    /* grow to what was asked (with a little head-room, as a caller would) and build again */
    while (st == HALOX_ERR_NO_MEMORY && tries++ < 16) {
        int cap = arr.a.need > 0 ? arr.a.need + arr.a.need / 8 + 1 : arr.a.capacity;
        arr_free(&arr);
        CHECK(arr_alloc(&arr, comm, cap) == 0);
        arr_put(&arr, &mine);
        arr.a.async = g_async;
        st = halox_comm_build_plan_fixed(comm, &params, &arr.a, &plan);
    }
    CHECK_MSG(st == HALOX_OK, "%s: rank %d: after %d tries: %s", ctx, me, tries,
              halox_last_error());
    void *f = NULL; /* async: the bind that completes the plan on the host */
    if (st == HALOX_OK && g_async) {
        st = arr_alloc_f(&arr, &f);
        if (st == HALOX_OK)
            st = halox_comm_bind(comm, &plan, arr.a.x, f);
        CHECK_MSG(st == HALOX_OK, "%s: rank %d: the bind after an async build: %s", ctx, me,
                  halox_last_error());
    }
    if (st == HALOX_OK) {
        compare_plan(&plan, want, ctx);
        CHECK_MSG(arr.a.n_total == want->n_total, "%s: rank %d: n_total %d, the reference %d", ctx,
                  me, arr.a.n_total, want->n_total);
        const int n = want->n_total;
        void *hx = malloc((size_t)(n > 0 ? n : 1) * es);
        int32_t *hid = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
        uint8_t *hz = malloc((size_t)(n > 0 ? n : 1));
        arr_get(&arr, es, n, hx, hid, hz);
        CHECK_MSG(memcmp(hx, ref[me].x, (size_t)n * es) == 0,
                  "%s: rank %d: the coordinates differ from the reference", ctx, me);
        CHECK_MSG(memcmp(hid, ref[me].id, sizeof(int32_t) * (size_t)n) == 0,
                  "%s: rank %d: the ids differ from the reference", ctx, me);
        CHECK_MSG(memcmp(hz, want->zone, (size_t)n) == 0,
                  "%s: rank %d: the zones differ from the reference", ctx, me);
        free(hx);
        free(hid);
        free(hz);
    }
    ROOT_PRINTF("  %s%s: %d halo atoms on rank 0, %d build(s) after the refused one\n", ctx,
                g_async ? " async" : "", want->n_total - want->n_home, tries);
    arr_free_f(&arr, f);
    halox_plan_free(&plan);
    arr_free(&arr);
    tm_reference_free(&t);
    tm_free_ranks(ref, P, &mine);
    free(ref);
    return 1;
}

/* A home atom outside its rank's domain (on the last rank): every rank refuses, that rank names
 * the atom and says what to do. */
static void bad_atom_case(halox_comm_t *comm, halox_real_t real, int stride)
{
    const int P = g_size, me = g_rank;
    halox_grid_t grid = {{P, 1, 1}};
    halox_box_t box = {{10.0 * P, 10, 10}};
    halox_plan_params_t params = {grid, box, 2.0, 0.5, 1, 0};
    halox_atoms_t *ref = calloc((size_t)P, sizeof *ref), mine;
    CHECK(tm_make_ranks(&grid, &box, real, stride, 0, 400 * P, 77, me, ref, &mine) == 0);
    const int victim = P - 1, at = mine.n_home / 2;
    if (me == victim && mine.n_home > 0)
        halox_atoms_set(&mine, at, 1, -0.25); /* below the box in y */
    arrays_t arr;
    CHECK(arr_alloc(&arr, comm, mine.n_home * 3 + 16) == 0);
    arr_put(&arr, &mine);
    halox_plan_t plan;
    halox_plan_init(&plan);
    halox_status_t st = halox_comm_build_plan_fixed(comm, &params, &arr.a, &plan);
    CHECK_MSG(st != HALOX_OK, "rank %d: a build with an atom outside its domain succeeded", me);
    if (me == victim) {
        char want[64];
        snprintf(want, sizeof want, "home atom %d (id %d) has y = -0.25", at, mine.id[at]);
        CHECK_MSG(st == HALOX_ERR_COORDINATE && strstr(halox_last_error(), want) &&
                      strstr(halox_last_error(), "halox_comm_migrate"),
                  "rank %d: expected the atom named (%s): %s", me, want, halox_last_error());
    }
    ROOT_PRINTF("  %s: a home atom outside its domain refused on every rank\n",
                halox_comm_transport(comm));
    halox_plan_free(&plan);
    arr_free(&arr);
    tm_free_ranks(ref, P, &mine);
    free(ref);
}

static void test_transport(const char *name)
{
    static const struct {
        halox_real_t real;
        int stride;
    } kinds[] = {{HALOX_FLOAT, 3}, {HALOX_DOUBLE, 3}, {HALOX_FLOAT, 4}};
    /* box, cut-off, buffer, shifts: 1 pulse; 2 pulses where a dimension has 2+ ranks (and with
     * copies on one); shifts in the dimensions with one rank; 1 pulse again */
    static const struct {
        double L, rc, buf;
        int shifts;
    } cb[] = {{12, 2.0, 0.5, 0}, {8, 3.2, 1.5, 0}, {12, 2.0, 0.5, 1}, {10, 1.0, 0.2, 0}};
    halox_grid_t grids[4];
    int ng = tm_grids_for(g_size, 1, grids), cases = 0;
    for (int k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); k++) {
        halox_comm_t *comm = NULL;
        int direct = 0; /* set-up messages device to device; the last kind with rank 0 off */
        if (!tm_comm_create_direct(name, k, 2, kinds[k].real, kinds[k].stride, &comm, &direct))
            return;
        g_async = k == 1; /* one kind's builds leave the maps' read to a bind */
        for (int g = 0; g < ng; g++)
            for (int c = 0; c < (int)(sizeof cb / sizeof cb[0]); c++)
                cases += run_case(comm, grids[g], cb[c].L, cb[c].rc, cb[c].buf, cb[c].shifts, 0,
                                  1500, 5000 + (uint64_t)(k * 100 + g * 10 + c), kinds[k].real,
                                  kinds[k].stride);
        /* full-shell plans: pulses from both neighbours, the second direction selected by the
         * distance to the upper bound (float and double) */
        if (k != 2)
            for (int g = 0; g < ng; g++)
                for (int c = 0; c < (int)(sizeof cb / sizeof cb[0]); c++)
                    cases += run_case(comm, grids[g], cb[c].L, cb[c].rc, cb[c].buf, cb[c].shifts, 1,
                                      1500, 6000 + (uint64_t)(k * 100 + g * 10 + c), kinds[k].real,
                                      kinds[k].stride);
        if (k == 0) {
            /* so few atoms that some pulses select none */
            cases += run_case(comm, grids[0], 12, 2.0, 0.5, 0, 0, 10, 5999, kinds[k].real,
                              kinds[k].stride);
            bad_atom_case(comm, kinds[k].real, kinds[k].stride);
        }
        tm_check_direct(comm, name, direct);
        halox_comm_destroy(comm);
    }
    ROOT_PRINTF("%s: %d cases bit-identical to the reference\n", name, cases);
}

int main(int argc, char **argv)
{
#ifdef HALOX_TEST_GPU
    static const char *const names[] = {"mpi-staged", "nccl", "mpi-cuda", "nvshmem-fused",
                                        "hybrid"};
#else
    static const char *const names[] = {"mpi"};
#endif
    return tm_transports_main(argc, argv, names, sizeof names / sizeof names[0], TM_DEVICES,
                              test_transport, &g_rank, &g_size);
}
