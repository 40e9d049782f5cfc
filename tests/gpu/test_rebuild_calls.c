/* The host's calls of a device rebuild, against a budget (a rebuild's host time is nearly all
 * calls into the CUDA runtime and NVSHMEM: docs/MD-DESIGN.md#rebuilds-on-the-device). Built
 * only over the host emulation (tests/emu), which counts every call the host makes by kind
 * (halox_emu_calls): the migration (halox_comm_migrate_fixed with the velocities as extra
 * bytes), the plan build (halox_comm_build_plan_fixed) and the bind (halox_comm_bind) of the
 * NVSHMEM transports the engine runs, as the engine calls them at a rebuild, once sizes have
 * settled (the first rebuilds allocate). Each phase's calls of every kind must stay within the
 * budget below: a change that adds calls to a rebuild fails here, and the budget comes down
 * with every call taken out. The atoms after each rebuild are checked too (every id once, every
 * home atom inside its domain, the halo the plan says), so that a budget is not met by a
 * rebuild that does less. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/geometry.h"
#include "halox/gpu.h"
#include "halox/plan.h"
#include "harness.h"
#include "mpi_common.h"
#include "test_gpu_common.h"

static int g_rank, g_size;

enum { PH_MIGRATE, PH_PLAN, PH_BIND, PHASES };
static const char *const ph_name[PHASES] = {"migration", "plan build", "bind"};
/* the emulation's kinds, then the library's collectives (halox_comm_stats_t.collectives) */
enum { KINDS = HALOX_EMU_KINDS + 1 };
static const char *const kind_name[KINDS] = {"launches", "copies", "sets",    "events",     "waits",
                                             "graphs",   "allocs", "nvshmem", "collectives"};

/* the most calls of each kind a settled rebuild's phase may make, per transport and way of
 * sending the rebuild's messages (HALOX_NVSHMEM_DIRECT_MESSAGES; one pulse each way here: 2 ranks
 * in x, periodic shifts in y and z); allocations: none */
typedef struct budget {
    const char *transport;
    int messages;
    int most[PHASES][KINDS];
} budget_t;
static const budget_t budgets[] = {
    /* launches, copies, sets, events, waits, graphs, allocs, nvshmem, collectives; per phase.
     * With host agreements (1): the migration waits for its scan's counts (which come with the
     * first leavers and their owners in one strided copy), for its message (its last copy out
     * done, this copy in landed) and for the arrivals' placement; the plan build for the home
     * selection's counts and its message's two waits (built async, as the engine does: the maps'
     * read is waited for by the bind's first wait); the bind for its stream before its gather
     * (not for its uploads: the endpoint is stream-ordered, as the engine's), and agrees in its
     * gather (with the arguments' verdict) and at its end; each message costs a collective. By
     * the message kernels (2): a message costs a launch each way and no wait, event or
     * collective. */
    {"nvshmem-inline",
     1,
     {{5, 3, 1, 1, 4, 0, 0, 0, 2}, {4, 4, 1, 1, 3, 0, 0, 0, 3}, {3, 3, 3, 0, 1, 0, 0, 0, 2}}},
    {"nvshmem-fused",
     1,
     {{5, 3, 1, 1, 4, 0, 0, 0, 2}, {4, 4, 1, 1, 3, 0, 0, 0, 3}, {0, 2, 2, 0, 1, 0, 0, 0, 2}}},
    {"nvshmem-inline",
     2,
     {{6, 2, 1, 0, 2, 0, 0, 0, 1}, {5, 3, 1, 0, 1, 0, 0, 0, 2}, {3, 3, 3, 0, 1, 0, 0, 0, 2}}},
    {"nvshmem-fused",
     2,
     {{6, 2, 1, 0, 2, 0, 0, 0, 1}, {5, 3, 1, 0, 1, 0, 0, 0, 2}, {0, 2, 2, 0, 1, 0, 0, 0, 2}}},
};

static void counts(const halox_comm_t *comm, long c[KINDS])
{
    for (int k = 0; k < HALOX_EMU_KINDS; k++)
        c[k] = halox_emu_calls(k);
    halox_comm_stats_t s;
    halox_comm_get_stats(comm, &s);
    c[HALOX_EMU_KINDS] = (long)s.collectives;
}

/* the device arrays of one rank, as the engine keeps them */
typedef struct arrays {
    halox_fixed_atoms_t a;
    void *f;
    float *v;
} arrays_t;

/* the home atoms from the device into *h (x, id, the velocities as extra bytes) */
static void read_home(const arrays_t *r, halox_atoms_t *h)
{
    const int n = r->a.n_home;
    CHECK(halox_atoms_reserve(h, n > 0 ? n : 1) == HALOX_OK);
    TG_CUDA(cudaMemcpy(h->x, r->a.x, sizeof(float) * 3 * (size_t)n, cudaMemcpyDeviceToHost));
    TG_CUDA(cudaMemcpy(h->id, r->a.id, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost));
    TG_CUDA(cudaMemcpy(h->extra, r->v, sizeof(float) * 3 * (size_t)n, cudaMemcpyDeviceToHost));
    h->n_home = h->n_total = n;
}

static void write_home(arrays_t *r, const halox_atoms_t *h)
{
    const int n = h->n_home;
    TG_CUDA(cudaMemcpy(r->a.x, h->x, sizeof(float) * 3 * (size_t)n, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(r->a.id, h->id, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(r->v, h->extra, sizeof(float) * 3 * (size_t)n, cudaMemcpyHostToDevice));
    r->a.n_home = r->a.n_total = n;
}

/* every atom a little (most stay, some cross to a neighbour or leave the box: wrapped) */
static void nudge(halox_atoms_t *h, uint64_t *s, double step)
{
    for (int i = 0; i < h->n_home; i++)
        for (int c = 0; c < 3; c++)
            halox_atoms_set(h, i, c, halox_atoms_get(h, i, c) + (tm_uniform(s) - 0.5) * 2.0 * step);
}

/* After a rebuild: every id once over all ranks, every home atom inside this rank's domain,
 * and as many atoms in the arrays as the plan says. */
static void check_atoms(const arrays_t *r, const halox_plan_t *plan, const halox_grid_t *grid,
                        const halox_box_t *box, int natoms, const char *ctx)
{
    halox_atoms_t h;
    CHECK(halox_atoms_init(&h, HALOX_FLOAT, 3, sizeof(float) * 3) == HALOX_OK);
    read_home(r, &h);
    double lo[3], hi[3];
    halox_domain_bounds(grid, box, g_rank, lo, hi);
    int outside = 0;
    long long v[2] = {h.n_home, 0}, tot[2];
    for (int i = 0; i < h.n_home; i++) {
        for (int c = 0; c < 3; c++) {
            const double x = halox_atoms_get(&h, i, c);
            outside += !(x >= lo[c] && x < hi[c]);
        }
        v[1] += h.id[i];
    }
    MPI_Allreduce(v, tot, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    CHECK_MSG(outside == 0, "%s: rank %d: %d coordinates outside the domain", ctx, g_rank, outside);
    CHECK_MSG(tot[0] == natoms && tot[1] == (long long)natoms * (natoms - 1) / 2,
              "%s: %lld atoms, id sum %lld", ctx, tot[0], tot[1]);
    CHECK_MSG(r->a.n_total == plan->n_total && plan->n_home == h.n_home &&
                  plan->n_total > plan->n_home,
              "%s: rank %d: %d atoms in the arrays, the plan %d (%d home)", ctx, g_rank,
              r->a.n_total, plan->n_total, plan->n_home);
    halox_atoms_free(&h);
}

static void test_transport(const char *name)
{
    const char *e = getenv("HALOX_NVSHMEM_DIRECT_MESSAGES");
    const int messages = e && *e ? atoi(e) : 2; /* the library's default */
    const budget_t *b = NULL;
    for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++)
        if (!strcmp(budgets[k].transport, name) && budgets[k].messages == messages)
            b = &budgets[k];
    CHECK_MSG(b != NULL, "%s: no budget with HALOX_NVSHMEM_DIRECT_MESSAGES=%d", name, messages);
    halox_comm_t *comm = NULL;
    if (!b || !tm_comm_create(name, HALOX_FLOAT, 3, &comm))
        return;
    /* the promise's bad arguments are refused, saying what to give */
    CHECK_STATUS(halox_comm_set_stream_ordered(NULL, 1), HALOX_ERR_INVALID_ARG);
    CHECK_STATUS(halox_comm_set_stream_ordered(comm, 2), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "ordered is 2") != NULL, "%s", halox_last_error());
    CHECK_OK(halox_comm_set_stream_ordered(comm, 1)); /* as the engine: its binds need not wait */
    /* the engine's water-density geometry at a small size: density 0.8, cut-off 5, skin 3 */
    const int natoms = 3000;
    const double L = 18.0;
    halox_grid_t grid = {{g_size, 1, 1}};
    halox_box_t box = {{L, L, L}};
    halox_plan_params_t params = {grid, box, 5.0, 3.0, 1, 0};
    halox_atoms_t *all = calloc((size_t)g_size, sizeof *all), mine;
    CHECK(tm_make_ranks(&grid, &box, HALOX_FLOAT, 3, sizeof(float) * 3, natoms, 99, g_rank, all,
                        &mine) == 0);
    arrays_t r;
    memset(&r, 0, sizeof r);
    const int cap = natoms; /* room for any plan here: no growth in the library */
    const size_t xb = sizeof(float) * 3 * (size_t)cap;
    CHECK_OK(halox_comm_device_alloc(comm, xb, &r.a.x));
    CHECK_OK(halox_comm_device_alloc(comm, xb, &r.f));
    TG_CUDA(cudaMalloc((void **)&r.a.id, sizeof(int32_t) * (size_t)cap));
    TG_CUDA(cudaMalloc((void **)&r.a.zone, (size_t)cap));
    TG_CUDA(cudaMalloc((void **)&r.v, xb));
    r.a.capacity = cap;
    r.a.extra = r.v;
    r.a.extra_bytes = sizeof(float) * 3;
    write_home(&r, &mine);
    halox_plan_t plan;
    halox_plan_init(&plan);
    uint64_t s = 1234 + (uint64_t)g_rank;
    long most[PHASES][KINDS];
    memset(most, 0, sizeof most);
    /* the scratch grows with head-room over the first rebuilds (allocations), then settles */
    const int warm = 3, reps = 6;
    for (int rep = 0; rep < reps; rep++) {
        char ctx[96];
        snprintf(ctx, sizeof ctx, "%s: rebuild %d", name, rep);
        if (rep > 0) { /* the atoms move between rebuilds, as in a run */
            halox_atoms_t h;
            CHECK(halox_atoms_init(&h, HALOX_FLOAT, 3, sizeof(float) * 3) == HALOX_OK);
            read_home(&r, &h);
            nudge(&h, &s, 0.6);
            write_home(&r, &h);
            halox_atoms_free(&h);
        }
        long c[PHASES + 1][KINDS];
        counts(comm, c[0]);
        r.a.capacity = cap;
        r.a.async = 0; /* as the engine: the migration waits for its placement, the plan build */
        halox_status_t st = halox_comm_migrate_fixed(comm, &grid, &box, &r.a, natoms, rep);
        CHECK_MSG(st == HALOX_OK, "%s: migration: %s", ctx, halox_last_error());
        counts(comm, c[1]);
        r.a.capacity = cap;
        r.a.async = 1; /* leaves the maps' read to the bind, which waits for the stream anyway */
        if (st == HALOX_OK)
            st = halox_comm_build_plan_fixed(comm, &params, &r.a, &plan);
        CHECK_MSG(st == HALOX_OK, "%s: plan build: %s", ctx, halox_last_error());
        counts(comm, c[2]);
        if (st == HALOX_OK)
            st = halox_comm_bind(comm, &plan, r.a.x, r.f);
        CHECK_MSG(st == HALOX_OK, "%s: bind: %s", ctx, halox_last_error());
        counts(comm, c[3]);
        if (st != HALOX_OK)
            break;
        for (int p = 0; p < PHASES && rep >= warm; p++)
            for (int k = 0; k < KINDS; k++) {
                const long n = c[p + 1][k] - c[p][k];
                most[p][k] = n > most[p][k] ? n : most[p][k];
            }
        TG_CUDA(cudaStreamSynchronize((cudaStream_t)halox_comm_stream(comm)));
        check_atoms(&r, &plan, &grid, &box, natoms, ctx);
    }
    /* the budget, on every rank; rank 0 says what it counted */
    long total = 0;
    for (int p = 0; p < PHASES; p++) {
        char line[256];
        int at = snprintf(line, sizeof line, "  %s, %d ranks, messages %d, %s:", name, g_size,
                          messages, ph_name[p]);
        long sum = 0;
        for (int k = 0; k < KINDS; k++) {
            sum += k < HALOX_EMU_KINDS ? most[p][k] : 0;
            if (most[p][k])
                at += snprintf(line + at, sizeof line - (size_t)at, " %ld %s", most[p][k],
                               kind_name[k]);
            CHECK_MSG(most[p][k] <= b->most[p][k],
                      "%s: rank %d: the %s makes %ld %s (budget %d): a rebuild's host calls cost "
                      "a few us each; take the new ones out or justify a new budget",
                      name, g_rank, ph_name[p], most[p][k], kind_name[k], b->most[p][k]);
        }
        total += sum;
        ROOT_PRINTF("%s (%ld calls into the runtime)\n", line, sum);
    }
    ROOT_PRINTF("%s: %ld host calls into the runtime per settled rebuild (migration, plan build, "
                "bind), HALOX_NVSHMEM_DIRECT_MESSAGES=%d\n",
                name, total, messages);
    /* a bind with a bad argument on the last rank only: every rank fails in the bind's one
     * collective (its gather carries the arguments' verdict), and nothing stays bound */
    {
        halox_comm_stats_t s0, s1;
        halox_comm_get_stats(comm, &s0);
        const int bad = g_rank == g_size - 1;
        halox_status_t st = halox_comm_bind(comm, &plan, bad ? NULL : r.a.x, r.f);
        halox_comm_get_stats(comm, &s1);
        CHECK_MSG(st != HALOX_OK && s1.collectives - s0.collectives == 1,
                  "%s: rank %d: a bind with x NULL on rank %d: %d after %lld collectives (%s)",
                  name, g_rank, g_size - 1, (int)st, s1.collectives - s0.collectives,
                  halox_last_error());
        CHECK_MSG(!bad || strstr(halox_last_error(), "x and f are required"),
                  "%s: the failing rank's message: %s", name, halox_last_error());
        CHECK_MSG(halox_comm_coords(comm) == HALOX_ERR_STATE,
                  "%s: rank %d: an exchange after the failed bind: %s", name, g_rank,
                  halox_last_error());
        st = halox_comm_bind(comm, &plan, r.a.x, r.f);
        CHECK_MSG(st == HALOX_OK, "%s: bind again: %s", name, halox_last_error());
    }
    halox_plan_free(&plan);
    halox_comm_device_free(comm, r.a.x);
    halox_comm_device_free(comm, r.f);
    cudaFree(r.a.id);
    cudaFree(r.a.zone);
    cudaFree(r.v);
    tm_free_ranks(all, g_size, &mine);
    free(all);
    halox_comm_destroy(comm);
}

int main(int argc, char **argv)
{
    static const char *const names[] = {"nvshmem-inline", "nvshmem-fused"};
    return tm_transports_main(argc, argv, names, sizeof names / sizeof names[0], TM_DEVICES,
                              test_transport, &g_rank, &g_size);
}
