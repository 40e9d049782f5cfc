/* Per-atom fields (halox/fields.h) through an endpoint, checked against what the fields mean,
 * by global id, and against the serial reference bit for bit:
 * - forward alone: every halo row equals the row its owner holds for the same id (int32 x1,
 *   double x3, float x2 and a 5-byte struct), the halo written beforehand with garbage;
 * - reverse alone: every local row (home and halo) starts at a small integer value of its rank
 *   and index; afterwards each home row is the sum over every copy of that id on every rank
 *   (exact: small integers), and the same bits as halox_reference_reverse();
 * - fields bound to the coordinate and force exchanges (halox_comm_bind_fields), three steps:
 *   each coordinate exchange forwards them and each force exchange reverses them;
 * - refusals on every rank alike: a byte field reversed, a count that differs on one rank, a
 *   field too short for the plan on one rank (at the call and at a bind).
 * Half and full shell, copies and shifts, several pulses, one-rank dimensions.
 * Without FIELDS_MPI: thread ranks of the `threads` transport; with it: MPI processes of `mpi`;
 * with HALOX_TEST_GPU too: every GPU transport, fields and coordinates in device memory (the
 * checks read host mirrors copied after the stream is done). */
#define _POSIX_C_SOURCE 200809L
#ifdef FIELDS_MPI
#include <mpi.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/fields.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "harness.h"
#include "mpi_common.h"
#ifdef HALOX_TEST_GPU
#include "halox/gpu.h"
#include "test_gpu_common.h"
#endif

typedef struct shared {
    halox_plan_params_t params;
    int P, natoms;
    uint64_t seed;
    halox_atoms_t *ref;        /* every rank's atoms after the reference build (ids of the halo) */
    const halox_plan_t *plans; /* the reference plans */
    int bad[64];
    char why[64][256];
} shared_t;

#define FAIL_IF(cond, ...)                                                                         \
    do {                                                                                           \
        if (cond) {                                                                                \
            if (!sh->bad[rank]++)                                                                  \
                snprintf(sh->why[rank], sizeof sh->why[rank], __VA_ARGS__);                        \
        }                                                                                          \
    } while (0)

enum { NF = 4 };
static const halox_type_t TYPES[NF] = {HALOX_TYPE_INT32, HALOX_TYPE_DOUBLE, HALOX_TYPE_FLOAT,
                                       HALOX_TYPE_BYTE};
static const int COUNTS[NF] = {1, 3, 2, 5};

/* Field f's element e of the atom with global id g: what its owner holds (forward). */
static double owner_value(int f, int g, int e)
{
    return (double)((g * 37 + f * 11 + e * 5) % 1000);
}
/* The starting value of rank r's local row i (reverse): a small integer, so sums are exact. */
static double start_value(int f, int r, int i, int e)
{
    return (double)((r * 131 + i * 7 + f * 3 + e) % 23);
}

static void set_elem(halox_field_t *fl, int i, int e, double v)
{
    size_t k = (size_t)i * (size_t)fl->count + (size_t)e;
    switch (fl->type) {
    case HALOX_TYPE_INT32:
        ((int32_t *)fl->data)[k] = (int32_t)v;
        break;
    case HALOX_TYPE_DOUBLE:
        ((double *)fl->data)[k] = v;
        break;
    case HALOX_TYPE_FLOAT:
        ((float *)fl->data)[k] = (float)v;
        break;
    case HALOX_TYPE_BYTE:
        ((unsigned char *)fl->data)[k] = (unsigned char)((long)v & 0xff);
        break;
    default:
        break;
    }
}

static double get_elem(const halox_field_t *fl, int i, int e)
{
    size_t k = (size_t)i * (size_t)fl->count + (size_t)e;
    switch (fl->type) {
    case HALOX_TYPE_INT32:
        return ((const int32_t *)fl->data)[k];
    case HALOX_TYPE_DOUBLE:
        return ((const double *)fl->data)[k];
    case HALOX_TYPE_FLOAT:
        return ((const float *)fl->data)[k];
    case HALOX_TYPE_BYTE:
        return ((const unsigned char *)fl->data)[k];
    default:
        return 0;
    }
}

static double owner_elem(int f, int g, int e)
{
    double v = owner_value(f, g, e);
    return TYPES[f] == HALOX_TYPE_BYTE ? (double)((long)v & 0xff) : v;
}

/* Forward: home rows from the ids, halo rows garbage; then every halo row is its owner's. */
static void fill_forward(halox_field_t *fl, int nf, const int32_t *id, int n_home, int cap)
{
    for (int f = 0; f < nf; f++) {
        memset(fl[f].data, 0xa5, halox_type_size(fl[f].type) * (size_t)fl[f].count * (size_t)cap);
        for (int i = 0; i < n_home; i++)
            for (int e = 0; e < fl[f].count; e++)
                set_elem(&fl[f], i, e, owner_value(f, id[i], e));
    }
}

static int check_forward(const halox_field_t *fl, int nf, const int32_t *id, int n_total)
{
    int wrong = 0;
    for (int f = 0; f < nf; f++)
        for (int i = 0; i < n_total; i++)
            for (int e = 0; e < fl[f].count; e++)
                wrong += get_elem(&fl[f], i, e) != owner_elem(f, id[i], e);
    return wrong;
}

/* Reverse: the expected sum of every id's copies, over all ranks (the reference's atoms). */
static double expected_sum(const shared_t *sh, int f, int g, int e)
{
    double s = 0;
    for (int r = 0; r < sh->P; r++)
        for (int i = 0; i < sh->ref[r].n_total; i++)
            if (sh->ref[r].id[i] == g)
                s += start_value(f, r, i, e);
    return s;
}

static void fill_reverse(halox_field_t *fl, int nf, int rank, int n_total)
{
    for (int f = 0; f < nf; f++)
        for (int i = 0; i < n_total; i++)
            for (int e = 0; e < fl[f].count; e++)
                set_elem(&fl[f], i, e, start_value(f, rank, i, e));
}

static int check_reverse(const shared_t *sh, const halox_field_t *fl, int nf, const int32_t *id,
                         int n_home)
{
    int wrong = 0;
    for (int f = 0; f < nf; f++)
        for (int i = 0; i < n_home; i++)
            for (int e = 0; e < fl[f].count; e++)
                wrong += get_elem(&fl[f], i, e) != expected_sum(sh, f, id[i], e);
    return wrong;
}

/* The reference reverse of field f over every rank, as this rank's bytes. */
static int same_as_reference_reverse(const shared_t *sh, const halox_field_t *mine, int f, int rank)
{
    halox_field_t *all = calloc((size_t)sh->P, sizeof *all);
    for (int r = 0; r < sh->P; r++) {
        all[r] = (halox_field_t){
            calloc((size_t)sh->ref[r].n_total + 1, halox_type_size(TYPES[f]) * (size_t)COUNTS[f]),
            TYPES[f], COUNTS[f], sh->ref[r].n_total};
        for (int i = 0; i < sh->ref[r].n_total; i++)
            for (int e = 0; e < COUNTS[f]; e++)
                set_elem(&all[r], i, e, start_value(f, r, i, e));
    }
    halox_reference_reverse(sh->plans, sh->P, all);
    int same =
        !memcmp(all[rank].data, mine->data,
                halox_type_size(TYPES[f]) * (size_t)COUNTS[f] * (size_t)sh->ref[rank].n_home);
    for (int r = 0; r < sh->P; r++)
        free(all[r].data);
    free(all);
    return same;
}

/* The fields the calls see: device copies on a GPU transport (up: host rows to the device,
 * down: back once the endpoint's stream is done), the host arrays themselves otherwise. */
typedef struct mirror {
    halox_comm_t *comm;
    halox_field_t *host, dev[NF];
} mirror_t;

#ifdef HALOX_TEST_GPU
static size_t field_bytes(const halox_field_t *f)
{
    return halox_type_size(f->type) * (size_t)f->count * (size_t)f->capacity;
}
#endif

static void mirror_open(mirror_t *m, halox_comm_t *comm, halox_field_t *host)
{
    m->comm = comm;
    m->host = host;
    for (int k = 0; k < NF; k++) {
        m->dev[k] = host[k];
#ifdef HALOX_TEST_GPU
        /* symmetric memory on the NVSHMEM transports: nvshmem-fused stores bound forward
         * fields inside its coordinate kernel then */
        CHECK_OK(halox_comm_device_alloc(comm, field_bytes(&host[k]), &m->dev[k].data));
#endif
    }
}

/* rows [0, rows) of every field up (home rows only before a coordinate exchange of bound
 * fields: peers may store the halo rows from their last force exchange on) */
static void up_rows(mirror_t *m, int rows)
{
#ifdef HALOX_TEST_GPU
    for (int k = 0; k < NF; k++)
        TG_CUDA(
            cudaMemcpy(m->dev[k].data, m->host[k].data,
                       halox_type_size(m->host[k].type) * (size_t)m->host[k].count * (size_t)rows,
                       cudaMemcpyHostToDevice));
#else
    (void)m, (void)rows;
#endif
}

static void up(mirror_t *m) { up_rows(m, m->host[0].capacity); }

static void down(mirror_t *m)
{
#ifdef HALOX_TEST_GPU
    TG_CUDA(cudaStreamSynchronize((cudaStream_t)halox_comm_stream(m->comm)));
    for (int k = 0; k < NF; k++)
        TG_CUDA(cudaMemcpy(m->host[k].data, m->dev[k].data, field_bytes(&m->host[k]),
                           cudaMemcpyDeviceToHost));
#else
    (void)m;
#endif
}

static void mirror_close(mirror_t *m)
{
#ifdef HALOX_TEST_GPU
    for (int k = 0; k < NF; k++)
        CHECK_OK(halox_comm_device_free(m->comm, m->dev[k].data));
#else
    (void)m;
#endif
}

static void run_rank(halox_comm_t *comm, shared_t *sh, int rank)
{
    const halox_plan_params_t *prm = &sh->params;
    halox_atoms_t *all = calloc((size_t)sh->P, sizeof *all), mine;
    FAIL_IF(tm_make_ranks(&prm->grid, &prm->box, HALOX_DOUBLE, 3, 0, sh->natoms, sh->seed, rank,
                          all, &mine) != 0,
            "no memory");
    halox_plan_t plan;
    halox_plan_init(&plan);
    halox_status_t st = halox_comm_build_plan(comm, prm, &mine, &plan);
    FAIL_IF(st != HALOX_OK, "build: %s", halox_last_error());
    const int cap = mine.n_total + 1, n_home = mine.n_home, n_total = mine.n_total;
    FAIL_IF(n_total != sh->ref[rank].n_total ||
                memcmp(mine.id, sh->ref[rank].id, sizeof(int32_t) * (size_t)n_total),
            "build: not the reference's halo");
    double *f = calloc((size_t)cap, 3 * sizeof(double));
    void *bx = mine.x, *bf = f;
#ifdef HALOX_TEST_GPU
    CHECK_OK(halox_comm_device_alloc(comm, 3 * sizeof(double) * (size_t)cap, &bx));
    CHECK_OK(halox_comm_device_alloc(comm, 3 * sizeof(double) * (size_t)cap, &bf));
    TG_CUDA(cudaMemcpy(bx, mine.x, 3 * sizeof(double) * (size_t)n_total, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemset(bf, 0, 3 * sizeof(double) * (size_t)cap));
#endif
    st = halox_comm_bind(comm, &plan, bx, bf);
    FAIL_IF(st != HALOX_OK, "bind: %s", halox_last_error());
    halox_field_t fl[NF];
    for (int k = 0; k < NF; k++)
        fl[k] = (halox_field_t){calloc((size_t)cap, halox_type_size(TYPES[k]) * (size_t)COUNTS[k]),
                                TYPES[k], COUNTS[k], cap};
    mirror_t m;
    mirror_open(&m, comm, fl);

    /* ---- forward alone, then reverse alone (the byte field has no sum) */
    fill_forward(fl, NF, mine.id, n_home, cap);
    up(&m);
    st = halox_comm_forward(comm, NF, m.dev);
    down(&m);
    FAIL_IF(st != HALOX_OK, "forward: %s", halox_last_error());
    FAIL_IF(check_forward(fl, NF, mine.id, n_total), "forward: %d rows not their owner's",
            check_forward(fl, NF, mine.id, n_total));
    fill_reverse(fl, NF - 1, rank, n_total);
    up(&m);
    st = halox_comm_reverse(comm, NF - 1, m.dev);
    down(&m);
    FAIL_IF(st != HALOX_OK, "reverse: %s", halox_last_error());
    FAIL_IF(check_reverse(sh, fl, NF - 1, mine.id, n_home), "reverse: %d sums wrong",
            check_reverse(sh, fl, NF - 1, mine.id, n_home));
    for (int k = 0; k < NF - 1; k++)
        FAIL_IF(!same_as_reference_reverse(sh, &fl[k], k, rank),
                "reverse: field %d not the reference's bits", k);

    /* ---- bound to the coordinate (int32, bytes) and force (double x3) exchanges */
    halox_field_t fwd[2] = {m.dev[0], m.dev[3]}, rev[1] = {m.dev[1]};
    st = halox_comm_bind_fields(comm, 2, fwd, 1, rev);
    FAIL_IF(st != HALOX_OK, "bind_fields: %s", halox_last_error());
    for (int step = 0; step < 3 && st == HALOX_OK; step++) {
        fill_forward(fl, NF, mine.id, n_home, cap);
        up_rows(&m, n_home);
        st = halox_comm_coords(comm);
        down(&m);
        FAIL_IF(st != HALOX_OK, "coords with fields: %s", halox_last_error());
        halox_field_t chk[2] = {fl[0], fl[3]};
        int bad = 0;
        for (int i = 0; i < n_total; i++) {
            bad += get_elem(&chk[0], i, 0) != owner_elem(0, mine.id[i], 0);
            for (int e = 0; e < 5; e++)
                bad += get_elem(&chk[1], i, e) != owner_elem(3, mine.id[i], e);
        }
        FAIL_IF(bad, "step %d: %d bound forward rows wrong", step, bad);
        fill_reverse(fl, NF - 1, rank, n_total);
        up(&m);
        st = halox_comm_forces(comm);
        down(&m);
        FAIL_IF(st != HALOX_OK, "forces with fields: %s", halox_last_error());
        FAIL_IF(!same_as_reference_reverse(sh, &fl[1], 1, rank), "step %d: bound reverse wrong",
                step);
    }
    struct halox_comm_stats stats;
    halox_comm_get_stats(comm, &stats);
    FAIL_IF(stats.field_exchanges != 2 + 6, "%lld field exchanges counted, 8 made",
            stats.field_exchanges);
    /* nvshmem-fused stores the bound forward fields with the atoms and returns the reverse one
     * with the forces (its three coordinate and three force exchanges); every other transport
     * passes them on its own */
    const int in_kernel = !strcmp(halox_comm_transport(comm), "nvshmem-fused");
    FAIL_IF(stats.fields_in_kernel != (in_kernel ? 6 : 0),
            "%lld exchanges carried the fields in the transport's kernels, %d expected",
            stats.fields_in_kernel, in_kernel ? 6 : 0);

    /* ---- refusals, on every rank alike */
    halox_field_t one = m.dev[3];
    st = halox_comm_reverse(comm, 1, &one);
    FAIL_IF(st != HALOX_ERR_INVALID_ARG || !strstr(halox_last_error(), "no sum"),
            "reverse of bytes: %s", halox_last_error());
    one = m.dev[1];
    if (rank == sh->P - 1)
        one.count = 2;
    st = halox_comm_forward(comm, 1, &one);
    FAIL_IF(sh->P > 1 && (st != HALOX_ERR_INVALID_ARG || !strstr(halox_last_error(), "differ")),
            "forward with a count of 2 on rank %d: %s", sh->P - 1, halox_last_error());
    one = m.dev[1];
    if (rank == 0)
        one.capacity = n_total - 1;
    st = halox_comm_forward(comm, 1, &one);
    FAIL_IF(n_total > 0 && st == HALOX_OK, "forward with a short field on rank 0 succeeded");
    FAIL_IF(rank == 0 && n_total > 0 && !strstr(halox_last_error(), "grow it"), "short field: %s",
            halox_last_error());
    /* a bound field too short for the plan at a bind: the bind fails everywhere */
    halox_field_t shortf = m.dev[1];
    if (rank == 0)
        shortf.capacity = 0;
    st = halox_comm_bind_fields(comm, 0, NULL, 1, &shortf);
    FAIL_IF(n_total > 0 && st == HALOX_OK, "bind_fields with a short field succeeded");
    shortf = m.dev[1];
    FAIL_IF(halox_comm_bind_fields(comm, 0, NULL, 1, &shortf) != HALOX_OK, "rebind: %s",
            halox_last_error());
    FAIL_IF(halox_comm_bind(comm, &plan, bx, bf) != HALOX_OK, "rebind plan: %s",
            halox_last_error());
    FAIL_IF(halox_comm_bind_fields(comm, 0, NULL, 0, NULL) != HALOX_OK, "unbind: %s",
            halox_last_error());

    mirror_close(&m);
    for (int k = 0; k < NF; k++)
        free(fl[k].data);
#ifdef HALOX_TEST_GPU
    CHECK_OK(halox_comm_device_free(comm, bx));
    CHECK_OK(halox_comm_device_free(comm, bf));
#endif
    free(f);
    halox_plan_free(&plan);
    tm_free_ranks(all, sh->P, &mine);
    free(all);
}

static int setup(shared_t *sh, halox_grid_t grid, const double L[3], double rc, double buf,
                 int shifts, int full, int natoms, uint64_t seed, tm_reference_t *t)
{
    memset(sh, 0, sizeof *sh);
    sh->P = halox_grid_size(&grid);
    sh->natoms = natoms;
    sh->seed = seed;
    sh->params = (halox_plan_params_t){grid, {{L[0], L[1], L[2]}}, rc, buf, shifts, full};
    sh->ref = calloc((size_t)sh->P, sizeof *sh->ref);
    if (tm_make_system(&grid, &sh->params.box, HALOX_DOUBLE, 3, 0, natoms, seed, sh->ref) != 0 ||
        tm_reference_build(t, &sh->params, sh->ref, sh->P) != HALOX_OK)
        return 0;
    sh->plans = t->plans;
    return 1;
}

static void teardown(shared_t *sh, tm_reference_t *t)
{
    tm_reference_free(t);
    for (int r = 0; r < sh->P; r++)
        halox_atoms_free(&sh->ref[r]);
    free(sh->ref);
}

static const struct {
    int g[3];
    double L[3], rc, buf;
    int shifts, full, natoms;
} CASES[] = {
    {{1, 1, 1}, {10, 10, 10}, 2.0, 0.5, 0, 0, 600}, /* self images in every dimension */
    {{1, 1, 1}, {10, 10, 10}, 2.0, 0.5, 0, 1, 600},
    {{2, 1, 1}, {10, 10, 10}, 2.5, 0.3, 0, 0, 800},
    {{2, 1, 1}, {10, 10, 10}, 2.5, 0.3, 1, 1, 800}, /* shifts: one-rank dimensions without pulses */
    {{2, 2, 1}, {8, 8, 8}, 3.2, 0.6, 0, 1, 1000},
    {{4, 1, 1}, {8, 8, 8}, 2.5, 0.6, 0, 1, 900}, /* two pulses per direction */
    {{2, 2, 2}, {10, 10, 10}, 2.0, 0.2, 0, 0, 1500},
    {{2, 2, 2}, {10, 10, 10}, 2.0, 0.2, 0, 1, 1500},
    {{4, 2, 1}, {16, 8, 10}, 2.5, 0.5, 1, 0, 1500},
};
#define NCASES (sizeof CASES / sizeof CASES[0])

#ifndef FIELDS_MPI
static void report(shared_t *sh, size_t c)
{
    for (int r = 0; r < sh->P; r++)
        CHECK_MSG(sh->bad[r] == 0, "case %zu rank %d: %d failed, first: %s", c, r, sh->bad[r],
                  sh->why[r]);
}

static halox_status_t rank_fn(int rank, halox_team_t *team, void *arg)
{
    shared_t *sh = arg;
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .team = team, .rank = rank};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    if (st != HALOX_OK)
        return st;
    run_rank(comm, sh, rank);
    halox_comm_destroy(comm);
    return HALOX_OK;
}

int main(void)
{
    for (size_t c = 0; c < NCASES; c++) {
        shared_t *sh = malloc(sizeof *sh);
        tm_reference_t t = {0};
        halox_grid_t g = {{CASES[c].g[0], CASES[c].g[1], CASES[c].g[2]}};
        CHECK(setup(sh, g, CASES[c].L, CASES[c].rc, CASES[c].buf, CASES[c].shifts, CASES[c].full,
                    CASES[c].natoms, 100 + c, &t));
        halox_team_t *team = NULL;
        CHECK_OK(halox_team_create(sh->P, 30, &team));
        CHECK_OK(halox_team_run(team, sh->P, rank_fn, sh, NULL, NULL));
        report(sh, c);
        printf("threads: grid %dx%dx%d, %s, %s: fields forward, reverse, bound\n", g.n[0], g.n[1],
               g.n[2], CASES[c].full ? "full shell" : "half shell",
               CASES[c].shifts ? "shifts" : "copies");
        halox_team_destroy(team);
        teardown(sh, &t);
        free(sh);
    }
    TEST_DONE();
}
#else

static void run_transport(const char *name)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (size_t c = 0; c < NCASES; c++) {
        halox_grid_t g = {{CASES[c].g[0], CASES[c].g[1], CASES[c].g[2]}};
        if (halox_grid_size(&g) != size)
            continue;
        shared_t *sh = malloc(sizeof *sh);
        tm_reference_t t = {0};
        CHECK(setup(sh, g, CASES[c].L, CASES[c].rc, CASES[c].buf, CASES[c].shifts, CASES[c].full,
                    CASES[c].natoms, 100 + c, &t));
        halox_comm_t *comm = NULL;
        if (tm_comm_create(name, HALOX_DOUBLE, 3, &comm)) {
            run_rank(comm, sh, rank);
            halox_comm_destroy(comm);
            CHECK_MSG(sh->bad[rank] == 0, "%s case %zu rank %d: %d failed, first: %s", name, c,
                      rank, sh->bad[rank], sh->why[rank]);

            ROOT_PRINTF("%s: grid %dx%dx%d, %s, %s: fields forward, reverse, bound\n", name, g.n[0],
                        g.n[1], g.n[2], CASES[c].full ? "full shell" : "half shell",
                        CASES[c].shifts ? "shifts" : "copies");
        }
        teardown(sh, &t);
        free(sh);
    }
}

int main(int argc, char **argv)
{
#ifdef HALOX_TEST_GPU
    static const char *const names[] = {"mpi-staged",     "nccl",          "mpi-cuda",
                                        "nvshmem-stream", "nvshmem-pulse", "nvshmem-fused",
                                        "nvshmem-inline", "hybrid"};
#else
    static const char *const names[] = {"mpi"};
#endif
    int rank, size;
    return tm_transports_main(argc, argv, names, sizeof names / sizeof names[0], TM_DEVICES,
                              run_transport, &rank, &size);
}
#endif
