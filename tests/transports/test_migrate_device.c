/* halox_comm_migrate_fixed against halox_comm_migrate, bit for bit, run by every rank under
 * mpiexec (and the carried fields of every atom, checked by its id): the same atoms (coordinates
 * as wrapped, ids, extra bytes) in the same order on every
 * rank; and against the rules: every home atom inside its rank's domain afterwards, the ids of
 * the whole system each once. Positions are moved before each migration so that atoms leave
 * for neighbours, cross several domains, leave the box (wrapped), sit on -0, 0 and the edge.
 * First with arrays too small for the arrivals where a rank gains atoms (every rank refuses
 * with HALOX_ERR_NO_MEMORY before any atom moves, the short rank says what it needs), then grown.
 * Grids of 1 to 8 ranks, float and double, stride 3 and 4, with and without extra bytes, with
 * and without async (the placement left on the endpoint's stream, which the test then waits
 * for); a non-finite position is refused naming the atom.
 *
 * Built twice: test_migrate_device on the `mpi` transport (host arrays) and, with HALOX_TEST_GPU,
 * test_gpu_migrate_device on the GPU transports with device arrays (the kernels of
 * src/transports/gpu/migrate_device.c); that one exits 77 (skipped) without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/geometry.h"
#include "halox/gpu.h"
#include "halox/transport.h"
#include "harness.h"
#include "mpi_common.h"
#ifdef HALOX_TEST_GPU
#include "test_gpu_common.h"
#endif

static int g_rank, g_size;

/* Carried fields (halox_fixed_atoms_t.carry): an int32 and two doubles per atom, each a
 * function of the atom's id, so that where an atom lands its rows can be checked by its id. */
enum { NCARRY = 2 };
static const halox_type_t CARRY_T[NCARRY] = {HALOX_TYPE_INT32, HALOX_TYPE_DOUBLE};
static const int CARRY_N[NCARRY] = {1, 2};
static double carry_value(int f, int id, int e) { return f == 0 ? id * 3 + 1 : id + 0.25 - e * id; }

typedef struct arrays {
    int on_gpu;
    halox_fixed_atoms_t a;
    halox_field_t carry[NCARRY];
} arrays_t;

static void *mem_alloc(int on_gpu, size_t bytes)
{
    void *p = NULL;
    if (!on_gpu)
        return malloc(bytes ? bytes : 1);
#ifdef HALOX_TEST_GPU
    TG_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
#endif
    return p;
}

static void mem_free(int on_gpu, void *p)
{
    if (!on_gpu)
        free(p);
#ifdef HALOX_TEST_GPU
    else if (p)
        cudaFree(p);
#endif
}

static void mem_copy(int on_gpu, void *dst, const void *src, size_t bytes, int to_device)
{
    if (!bytes)
        return;
    if (!on_gpu) {
        memcpy(dst, src, bytes);
        return;
    }
#ifdef HALOX_TEST_GPU
    TG_CUDA(
        cudaMemcpy(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost));
#else
    (void)to_device;
#endif
}

/* arrays of cap entries holding a's home atoms */
static void arr_make(arrays_t *r, int on_gpu, const halox_atoms_t *a, int cap)
{
    const size_t es = halox_real_size(a->real) * (size_t)a->stride;
    memset(r, 0, sizeof *r);
    r->on_gpu = on_gpu;
    r->a.capacity = cap;
    r->a.extra_bytes = a->extra_bytes;
    r->a.x = mem_alloc(on_gpu, (size_t)cap * es);
    r->a.id = mem_alloc(on_gpu, (size_t)cap * sizeof(int32_t));
    r->a.extra = a->extra_bytes ? mem_alloc(on_gpu, (size_t)cap * a->extra_bytes) : NULL;
    r->a.n_home = a->n_home;
    mem_copy(on_gpu, r->a.x, a->x, (size_t)a->n_home * es, 1);
    mem_copy(on_gpu, r->a.id, a->id, (size_t)a->n_home * sizeof(int32_t), 1);
    if (a->extra_bytes)
        mem_copy(on_gpu, r->a.extra, a->extra, (size_t)a->n_home * a->extra_bytes, 1);
    for (int f = 0; f < NCARRY; f++) {
        const size_t row = halox_type_size(CARRY_T[f]) * (size_t)CARRY_N[f];
        char *h = calloc((size_t)cap, row);
        for (int i = 0; i < a->n_home; i++)
            for (int e = 0; e < CARRY_N[f]; e++) {
                const double v = carry_value(f, a->id[i], e);
                if (CARRY_T[f] == HALOX_TYPE_INT32)
                    ((int32_t *)h)[(size_t)i * CARRY_N[f] + e] = (int32_t)v;
                else
                    ((double *)h)[(size_t)i * CARRY_N[f] + e] = v;
            }
        r->carry[f] =
            (halox_field_t){mem_alloc(on_gpu, (size_t)cap * row), CARRY_T[f], CARRY_N[f], cap};
        mem_copy(on_gpu, r->carry[f].data, h, (size_t)cap * row, 1);
        free(h);
    }
    r->a.carry = r->carry;
    r->a.n_carry = NCARRY;
}

/* Rows of the carried fields that are not their atom's (by id), over the home atoms. */
static int carry_wrong(const arrays_t *r, const int32_t *id)
{
    int wrong = 0;
    for (int f = 0; f < NCARRY; f++) {
        const size_t row = halox_type_size(CARRY_T[f]) * (size_t)CARRY_N[f];
        char *h = malloc(row * (size_t)(r->a.n_home + 1));
        mem_copy(r->on_gpu, h, r->carry[f].data, row * (size_t)r->a.n_home, 0);
        for (int i = 0; i < r->a.n_home; i++)
            for (int e = 0; e < CARRY_N[f]; e++) {
                const size_t k = (size_t)i * CARRY_N[f] + e;
                const double v =
                    CARRY_T[f] == HALOX_TYPE_INT32 ? ((int32_t *)h)[k] : ((double *)h)[k];
                wrong += v != carry_value(f, id[i], e);
            }
        free(h);
    }
    return wrong;
}

static void arr_free(arrays_t *r)
{
    mem_free(r->on_gpu, r->a.x);
    mem_free(r->on_gpu, r->a.id);
    mem_free(r->on_gpu, r->a.extra);
    for (int f = 0; f < NCARRY; f++)
        mem_free(r->on_gpu, r->carry[f].data);
    memset(&r->a, 0, sizeof r->a);
}

/* the arrays' home atoms into b (initialised like the reference) */
static void arr_read(const arrays_t *r, halox_atoms_t *b)
{
    const size_t es = halox_real_size(b->real) * (size_t)b->stride;
    CHECK(halox_atoms_reserve(b, r->a.n_home > 0 ? r->a.n_home : 1) == HALOX_OK);
    b->n_home = b->n_total = r->a.n_home;
    mem_copy(r->on_gpu, b->x, r->a.x, (size_t)r->a.n_home * es, 0);
    mem_copy(r->on_gpu, b->id, r->a.id, (size_t)r->a.n_home * sizeof(int32_t), 0);
    if (b->extra_bytes)
        mem_copy(r->on_gpu, b->extra, r->a.extra, (size_t)r->a.n_home * b->extra_bytes, 0);
}

static int all_max(int v)
{
    int m = 0;
    MPI_Allreduce(&v, &m, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

/* Move the home atoms: most a little, some across several domains, some out of the box, some
 * onto -0, 0 and the edge (the same on every process for the same seed). */
static void move_atoms(halox_atoms_t *a, const halox_box_t *box, uint64_t seed)
{
    uint64_t s = seed;
    for (int i = 0; i < a->n_home; i++) {
        const double u = tm_uniform(&s);
        for (int c = 0; c < 3; c++) {
            double x = halox_atoms_get(a, i, c), L = box->len[c];
            if (u < 0.6)
                x += (tm_uniform(&s) - 0.5) * 0.2 * L;
            else if (u < 0.8)
                x += (tm_uniform(&s) - 0.5) * 2.2 * L; /* far, often out of the box */
            else if (u < 0.85)
                x = c == 0 ? -0.0 : x;
            else if (u < 0.9)
                x = c == 1 ? L : x;
            else if (u < 0.93)
                x = c == 2 ? -L * 1e-17 : x; /* wraps to the edge in double: 0 */
            halox_atoms_set(a, i, c, x);
        }
    }
}

static int same_atoms(const halox_atoms_t *p, const halox_atoms_t *q)
{
    const size_t es = halox_real_size(p->real) * (size_t)p->stride;
    return p->n_home == q->n_home && !memcmp(p->x, q->x, (size_t)p->n_home * es) &&
           !memcmp(p->id, q->id, sizeof(int32_t) * (size_t)p->n_home) &&
           (!p->extra_bytes || !memcmp(p->extra, q->extra, p->extra_bytes * (size_t)p->n_home));
}

static void run_case(halox_comm_t *comm, int on_gpu, halox_grid_t grid, halox_real_t real,
                     int stride, size_t eb, int natoms, uint64_t seed, int async)
{
    const int P = g_size, me = g_rank;
    halox_box_t box = {{12.0, 10.0, 9.0}};
    char ctx[160];
    snprintf(ctx, sizeof ctx, "%s: grid %dx%dx%d %s stride %d extra %zu%s",
             halox_comm_transport(comm), grid.n[0], grid.n[1], grid.n[2], test_real_name(real),
             stride, eb, async ? " async" : "");
    halox_atoms_t *all = calloc((size_t)P, sizeof *all), mine, want, got;
    CHECK(tm_make_ranks(&grid, &box, real, stride, eb, natoms, seed, me, all, &mine) == 0);
    move_atoms(&mine, &box, seed * 31 + (uint64_t)me);
    /* the host migration on a copy: what the device one must give */
    CHECK(tm_copy_home(&want, &mine) == 0);
    halox_status_t st = halox_comm_migrate(comm, &grid, &box, &want, natoms, 7);
    CHECK_MSG(st == HALOX_OK, "%s: rank %d: host migration: %s", ctx, me, halox_last_error());
    /* too small where a rank gains atoms */
    const int gains = all_max(want.n_home > mine.n_home);
    arrays_t arr;
    arr_make(&arr, on_gpu, &mine, mine.n_home > 0 ? mine.n_home : 1);
    arr.a.async = async;
    st = halox_comm_migrate_fixed(comm, &grid, &box, &arr.a, natoms, 7);
    int tries = 0;
    CHECK(halox_atoms_init(&got, real, stride, eb) == HALOX_OK);
    if (gains) {
        CHECK_MSG(st == HALOX_ERR_NO_MEMORY, "%s: rank %d: arrays of %d for %d arrivals: %s", ctx,
                  me, arr.a.capacity, want.n_home, halox_last_error());
        if (arr.a.need)
            CHECK_MSG(arr.a.need == want.n_home && strstr(halox_last_error(), "grow x, id"),
                      "%s: rank %d: need %d for %d atoms: %s", ctx, me, arr.a.need, want.n_home,
                      halox_last_error());
        CHECK_MSG(all_max(arr.a.need) > 0, "%s: no rank said what it needs", ctx);
        arr_read(&arr, &got);
        CHECK_MSG(got.n_home == mine.n_home &&
                      !memcmp(got.id, mine.id, sizeof(int32_t) * (size_t)mine.n_home),
                  "%s: rank %d: a refused migration moved atoms", ctx, me);
        while (st == HALOX_ERR_NO_MEMORY && tries++ < 4) {
            int cap = arr.a.need > arr.a.capacity ? arr.a.need + 8 : arr.a.capacity;
            arr_free(&arr);
            arr_make(&arr, on_gpu, &mine, cap);
            arr.a.async = async;
            st = halox_comm_migrate_fixed(comm, &grid, &box, &arr.a, natoms, 7);
        }
    }
    CHECK_MSG(st == HALOX_OK, "%s: rank %d: %s", ctx, me, halox_last_error());
    if (st == HALOX_OK) {
#ifdef HALOX_TEST_GPU
        /* async: the placement may still run on the endpoint's stream */
        if (on_gpu && arr.a.async)
            TG_CUDA(cudaStreamSynchronize((cudaStream_t)halox_comm_stream(comm)));
#endif
        arr_read(&arr, &got);
        CHECK_MSG(same_atoms(&got, &want),
                  "%s: rank %d: %d atoms, the host migration %d: not the same atoms, order or bits",
                  ctx, me, got.n_home, want.n_home);
        CHECK(arr.a.n_total == arr.a.n_home);
        CHECK_MSG(carry_wrong(&arr, got.id) == 0, "%s: rank %d: %d carried rows not their atom's",
                  ctx, me, carry_wrong(&arr, got.id));
        /* the leavers: mine that are not among the stayers at the front */
        char *was = calloc((size_t)natoms, 1);
        for (int i = 0; i < mine.n_home; i++)
            was[mine.id[i]] = 1;
        int stayed = 0;
        while (stayed < want.n_home && was[want.id[stayed]])
            stayed++;
        free(was);
        const int most = (grid.n[0] > grid.n[1] ? grid.n[0] : grid.n[1]) > grid.n[2]
                             ? (grid.n[0] > grid.n[1] ? grid.n[0] : grid.n[1])
                             : grid.n[2];
        CHECK_MSG(arr.a.moved == mine.n_home - stayed &&
                      (arr.a.moved == 0 ? arr.a.max_hops == 0
                                        : arr.a.max_hops >= 1 && arr.a.max_hops <= most / 2),
                  "%s: rank %d: moved %d (expected %d), max hops %d", ctx, me, arr.a.moved,
                  mine.n_home - stayed, arr.a.max_hops);
        double lo[3], hi[3];
        halox_domain_bounds(&grid, &box, me, lo, hi);
        int outside = 0;
        long long idsum = 0, n = got.n_home;
        for (int i = 0; i < got.n_home; i++) {
            for (int c = 0; c < 3; c++) {
                double x = halox_atoms_get(&got, i, c);
                outside += !(x >= lo[c] && x < hi[c]);
            }
            idsum += got.id[i];
        }
        CHECK_MSG(outside == 0, "%s: rank %d: %d coordinates outside the domain", ctx, me, outside);
        long long v[2] = {n, idsum}, tot[2];
        MPI_Allreduce(v, tot, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK_MSG(tot[0] == natoms && tot[1] == (long long)natoms * (natoms - 1) / 2,
                  "%s: %lld atoms, id sum %lld", ctx, tot[0], tot[1]);
    }
    ROOT_PRINTF("  %s: %d home atoms on rank 0 after, %d retries\n", ctx, got.n_home, tries);
    arr_free(&arr);
    halox_atoms_free(&got);
    halox_atoms_free(&want);
    tm_free_ranks(all, P, &mine);
    free(all);
}

/* a non-finite position on the last rank: every rank refuses, that one names the atom */
static void bad_case(halox_comm_t *comm, int on_gpu)
{
    const int P = g_size, me = g_rank;
    halox_grid_t grid = {{P, 1, 1}};
    halox_box_t box = {{6.0 * P, 6, 6}};
    halox_atoms_t *all = calloc((size_t)P, sizeof *all), mine;
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, 0, 100 * P, 99, me, all, &mine) == 0);
    const int at = mine.n_home / 3;
    if (me == P - 1 && mine.n_home > 0)
        halox_atoms_set(&mine, at, 2, NAN);
    arrays_t arr;
    arr_make(&arr, on_gpu, &mine, mine.n_home * 2 + 8);
    halox_status_t st = halox_comm_migrate_fixed(comm, &grid, &box, &arr.a, 100 * P, 3);
    CHECK_MSG(st != HALOX_OK, "rank %d: a NaN position migrated", me);
    if (me == P - 1) {
        char want[64];
        snprintf(want, sizeof want, "atom id %d has a non-finite position", mine.id[at]);
        CHECK_MSG(st == HALOX_ERR_COORDINATE && strstr(halox_last_error(), want),
                  "rank %d: expected '%s': %s", me, want, halox_last_error());
    }
    ROOT_PRINTF("  %s: a non-finite position refused on every rank\n", halox_comm_transport(comm));
    arr_free(&arr);
    /* carried fields that differ between ranks: refused on every rank, naming the sizes */
    arr_make(&arr, on_gpu, &all[me], all[me].n_home * 2 + 8);
    if (me == P - 1)
        arr.a.n_carry = 1;
    st = halox_comm_migrate_fixed(comm, &grid, &box, &arr.a, 100 * P, 4);
    CHECK_MSG(P == 1 ? st == HALOX_OK
                     : st == HALOX_ERR_INVALID_ARG && strstr(halox_last_error(), "bytes per atom"),
              "rank %d: carried fields that differ: %s", me, halox_last_error());
    arr_free(&arr);
    tm_free_ranks(all, P, &mine);
    free(all);
}

static void test_transport(const char *name)
{
    static const struct {
        halox_real_t real;
        int stride;
        size_t eb;
    } kinds[] = {{HALOX_FLOAT, 3, 12}, {HALOX_DOUBLE, 3, 0}, {HALOX_FLOAT, 4, 24}};
    halox_grid_t grids[4];
    const int ng = tm_grids_for(g_size, 0, grids);
    for (int k = 0; k < (int)(sizeof kinds / sizeof kinds[0]); k++) {
        halox_comm_t *comm = NULL;
        int direct = 0; /* the leavers device to device; the last kind with rank 0 turning it off */
        if (!tm_comm_create_direct(name, k, 2, kinds[k].real, kinds[k].stride, &comm, &direct))
            return;
        const int on_gpu = halox_transport_on_gpu(name);
        for (int g = 0; g < ng; g++)
            for (int rep = 0; rep < 2; rep++)
                run_case(comm, on_gpu, grids[g], kinds[k].real, kinds[k].stride, kinds[k].eb,
                         rep ? 40 : 2000, 700 + (uint64_t)(k * 50 + g * 5 + rep), k == 0 && rep);
        if (k == 0)
            bad_case(comm, on_gpu);
        tm_check_direct(comm, name, direct);
        halox_comm_destroy(comm);
    }
}

int main(int argc, char **argv)
{
#ifdef HALOX_TEST_GPU
    static const char *const names[] = {"mpi-staged", "nccl", "nvshmem-fused", "hybrid"};
#else
    static const char *const names[] = {"mpi"};
#endif
    return tm_transports_main(argc, argv, names, sizeof names / sizeof names[0], TM_DEVICES,
                              test_transport, &g_rank, &g_size);
}
