/* The `mpi` transport against the serial reference, run by every rank under mpiexec.
 *
 * Every rank generates the same random system, runs the reference plan build and exchanges for
 * all ranks in-process, and compares its own share with what the transport produced: plan
 * (maps, counts, offsets, shifts, zones), halo coordinates and accumulated forces bit for bit,
 * in float and double, stride 3 and 4, over several steps, for the grids that the number of
 * processes allows and cut-offs needing 1 to 3 pulses. Then the collectives directly, migration
 * across several boundaries and corners (after one that a failure deferred on the last rank
 * stops everywhere before any atom moves), and an endpoint on a sub-communicator.
 *
 * Run with 1, 2, 4 or 8 processes (other counts use a 1-D grid). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/transport.h" /* the collectives of the table, tested directly */
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/transport.h"
#include "harness.h"
#include "mpi_common.h"

static int g_rank;

static halox_comm_t *make_comm(MPI_Comm *mc, halox_real_t real, int stride)
{
    halox_comm_args_t args = {0};
    args.real = real;
    args.stride = stride;
    args.timeout_s = 20; /* a broken exchange fails the test instead of hanging it */
    args.mpi_comm = mc;
    halox_comm_t *comm = NULL;
    CHECK_OK(halox_comm_create("mpi", &args, &comm));
    return comm;
}

/* ---- plan and exchange against the reference ------------------------------------------- */

static void check_plan(const halox_plan_t *got, const halox_plan_t *want, const char *ctx)
{
    CHECK_MSG(got->rank == want->rank && got->nranks == want->nranks, "%s: rank", ctx);
    CHECK_MSG(got->n_home == want->n_home, "%s: n_home %d vs %d", ctx, got->n_home, want->n_home);
    CHECK_MSG(got->n_total == want->n_total, "%s: n_total %d vs %d", ctx, got->n_total,
              want->n_total);
    CHECK_MSG(got->n_pulses == want->n_pulses, "%s: n_pulses %d vs %d", ctx, got->n_pulses,
              want->n_pulses);
    for (int d = 0; d < 3; d++)
        CHECK_MSG(got->pulses_per_dim[d] == want->pulses_per_dim[d], "%s: pulses in dim %d", ctx,
                  d);
    if (got->n_pulses != want->n_pulses || got->n_total != want->n_total)
        return;
    for (int k = 0; k < got->n_pulses; k++) {
        const halox_pulse_t *a = &got->pulse[k], *b = &want->pulse[k];
        CHECK_MSG(a->dim == b->dim && a->pulse_in_dim == b->pulse_in_dim &&
                      a->from_lower == b->from_lower,
                  "%s: pulse %d dim", ctx, k);
        CHECK_MSG(a->send_rank == b->send_rank && a->recv_rank == b->recv_rank,
                  "%s: pulse %d peers %d/%d vs %d/%d", ctx, k, a->send_rank, a->recv_rank,
                  b->send_rank, b->recv_rank);
        CHECK_MSG(a->send_count == b->send_count, "%s: pulse %d send_count %d vs %d", ctx, k,
                  a->send_count, b->send_count);
        CHECK_MSG(a->recv_count == b->recv_count, "%s: pulse %d recv_count %d vs %d", ctx, k,
                  a->recv_count, b->recv_count);
        CHECK_MSG(a->recv_offset == b->recv_offset, "%s: pulse %d recv_offset %d vs %d", ctx, k,
                  a->recv_offset, b->recv_offset);
        CHECK_MSG(a->dep_offset == b->dep_offset && a->dep_mask == b->dep_mask,
                  "%s: pulse %d dependencies", ctx, k);
        CHECK_MSG(memcmp(&a->shift, &b->shift, sizeof a->shift) == 0, "%s: pulse %d shift %g vs %g",
                  ctx, k, a->shift, b->shift);
        if (a->send_count == b->send_count && a->send_count > 0)
            CHECK_MSG(memcmp(a->send_index, b->send_index, sizeof(int) * (size_t)a->send_count) ==
                          0,
                      "%s: pulse %d send map differs", ctx, k);
    }
    CHECK_MSG(got->n_total == 0 || memcmp(got->zone, want->zone, (size_t)got->n_total) == 0,
              "%s: zones differ", ctx);
}

/* ref[0..P) hold every rank's home atoms and mine this rank's (copies of ref[me]'s). Builds the
 * plan both ways, then runs `steps` coordinate and force exchanges with fresh random values. */
static void run_exchange(halox_comm_t *comm, const halox_plan_params_t *params, halox_atoms_t *ref,
                         halox_atoms_t *mine, int steps, uint64_t seed, const char *ctx)
{
    const int P = halox_comm_size(comm), me = halox_comm_rank(comm);
    const size_t esize = halox_real_size(mine->real) * (size_t)mine->stride;
    tm_reference_t t;
    CHECK_OK(tm_reference_build(&t, params, ref, P));
    halox_plan_t plan;
    halox_plan_init(&plan);
    void *f = NULL;
    halox_status_t st = halox_comm_build_plan(comm, params, mine, &plan);
    CHECK_MSG(st == HALOX_OK, "%s: build_plan: %s", ctx, halox_last_error());
    if (st != HALOX_OK) /* failed on every rank (the build agrees on failure) */
        goto out;
    check_plan(&plan, &t.plans[me], ctx);
    CHECK_MSG(mine->n_total == ref[me].n_total, "%s: n_total", ctx);
    if (mine->n_total != ref[me].n_total || plan.n_total != mine->n_total)
        goto out_bind; /* keep the collective calls below in step with the other ranks */
    CHECK_MSG(memcmp(mine->x, ref[me].x, esize * (size_t)mine->n_total) == 0,
              "%s: halo coordinates of the plan build differ", ctx);
    CHECK_MSG(memcmp(mine->id, ref[me].id, sizeof(int32_t) * (size_t)mine->n_total) == 0,
              "%s: halo ids differ", ctx);

out_bind:
    f = calloc((size_t)(plan.n_total > 0 ? plan.n_total : 1), esize);
    st = halox_comm_bind(comm, &plan, mine->x, f);
    CHECK_MSG(st == HALOX_OK, "%s: bind: %s", ctx, halox_last_error());
    if (st != HALOX_OK)
        goto out;
    halox_comm_stats_t s0, s1;
    halox_comm_get_stats(comm, &s0);
    uint64_t s = seed;
    for (int step = 0; step < steps; step++) {
        /* new home coordinates everywhere, the same on every rank */
        tm_move_home(ref, P, &s);
        memcpy(mine->x, ref[me].x, esize * (size_t)mine->n_home);
        tm_reference_coords(&t);
        st = halox_comm_coords(comm);
        CHECK_MSG(st == HALOX_OK, "%s: coords step %d: %s", ctx, step, halox_last_error());
        if (st != HALOX_OK)
            break;
        CHECK_MSG(memcmp(mine->x, ref[me].x, esize * (size_t)plan.n_total) == 0,
                  "%s: step %d: halo coordinates differ from the reference", ctx, step);

        tm_random_forces(ref, t.fs, P, &s);
        memcpy(f, t.fs[me], esize * (size_t)plan.n_total);
        tm_reference_forces(&t);
        st = halox_comm_forces(comm);
        CHECK_MSG(st == HALOX_OK, "%s: forces step %d: %s", ctx, step, halox_last_error());
        if (st != HALOX_OK)
            break;
        CHECK_MSG(memcmp(f, t.fs[me], esize * (size_t)plan.n_home) == 0,
                  "%s: step %d: home forces differ from the reference", ctx, step);
        CHECK_MSG(memcmp(f, t.fs[me], esize * (size_t)plan.n_total) == 0,
                  "%s: step %d: halo forces differ from the reference", ctx, step);
    }
    halox_comm_get_stats(comm, &s1);
    if (st == HALOX_OK) {
        long long atoms_per_step = 0;
        for (int k = 0; k < plan.n_pulses; k++)
            atoms_per_step += plan.pulse[k].send_count + plan.pulse[k].recv_count;
        CHECK_MSG(s1.coord_exchanges - s0.coord_exchanges == steps, "%s: coord_exchanges", ctx);
        CHECK_MSG(s1.force_exchanges - s0.force_exchanges == steps, "%s: force_exchanges", ctx);
        CHECK_MSG(s1.bytes_sent - s0.bytes_sent == steps * atoms_per_step * (long long)esize,
                  "%s: bytes_sent grew by %lld, expected %lld", ctx, s1.bytes_sent - s0.bytes_sent,
                  steps * atoms_per_step * (long long)esize);
    }
out:
    free(f);
    halox_plan_free(&plan);
    tm_reference_free(&t);
}

/* one case of the exchange tests in the endpoint's precision and stride */
static void exchange_case(halox_comm_t *comm, halox_grid_t grid, halox_box_t box, double cutoff,
                          double buffer, int natoms, uint64_t seed)
{
    tm_exchange_case(comm, run_exchange, NULL, grid, box, cutoff, buffer, natoms, seed, comm->real,
                     comm->stride);
}

static void test_exchanges(halox_comm_t *comm)
{
    const int P = halox_comm_size(comm);
    halox_grid_t grids[4];
    int ng = tm_grids_for(P, 0, grids);
    halox_box_t box = {{9.0, 8.0, 7.0}};
    /* halo distances from a fraction of a domain to more than the box edge: 1 to 3 pulses
     * (a single rank in a dimension exchanges with itself, several times for the large ones) */
    static const double cb[][2] = {{0.8, 0.2}, {2.0, 0.5}, {3.2, 1.5}, {3.0, 7.0}};
    for (int g = 0; g < ng; g++)
        for (size_t c = 0; c < sizeof cb / sizeof cb[0]; c++)
            exchange_case(comm, grids[g], box, cb[c][0], cb[c][1], 300,
                          1000 + (uint64_t)(g * 10 + (int)c));
    /* full-shell plans: ghosts from both neighbours (both the same rank with two in a
     * dimension), one-rank dimensions by copies (both ways) and by shifts, several pulses */
    for (int g = 0; g < ng; g++)
        for (size_t c = 0; c < sizeof cb / sizeof cb[0]; c++)
            for (int shifts = 0; shifts <= 1; shifts++)
                tm_exchange_case_full(comm, run_exchange, "full shell", grids[g], box, cb[c][0],
                                      cb[c][1], 300, 2000 + (uint64_t)(g * 10 + (int)c), comm->real,
                                      comm->stride, shifts, 1);
}

/* ---- collectives --------------------------------------------------------------------- */

static void test_collectives(halox_comm_t *comm)
{
    const int P = halox_comm_size(comm), me = halox_comm_rank(comm);
    CHECK_OK(halox_comm_barrier(comm));

    /* allgather, separate buffers and in place */
    int mine[3] = {me, me * me, 42};
    int *all = calloc((size_t)P * 3, sizeof(int));
    CHECK_OK(halox_comm_allgather(comm, mine, all, sizeof mine));
    for (int r = 0; r < P; r++)
        CHECK(all[3 * r] == r && all[3 * r + 1] == r * r && all[3 * r + 2] == 42);
    memset(all, 0, sizeof(int) * 3 * (size_t)P);
    memcpy(all + 3 * me, mine, sizeof mine);
    CHECK_OK(halox_comm_allgather(comm, all + 3 * me, all, sizeof mine));
    for (int r = 0; r < P; r++)
        CHECK(all[3 * r] == r && all[3 * r + 1] == r * r);
    free(all);
    CHECK_OK(halox_comm_allgather(comm, NULL, NULL, 0));

    /* reductions: the same bits everywhere, summed in rank order */
    double v[2] = {me == 0 ? 1e16 : 1.0 + me * 0.1, -(double)me};
    double want0 = 0;
    for (int r = 0; r < P; r++)
        want0 += r == 0 ? 1e16 : 1.0 + r * 0.1;
    CHECK_OK(halox_comm_allreduce_sum(comm, v, 2));
    CHECK(memcmp(&v[0], &want0, sizeof want0) == 0);
    double bits[2] = {v[0], v[1]}, *gathered = calloc((size_t)P * 2, sizeof(double));
    CHECK_OK(halox_comm_allgather(comm, bits, gathered, sizeof bits));
    for (int r = 0; r < P; r++)
        CHECK(memcmp(&gathered[2 * r], bits, sizeof bits) == 0);
    free(gathered);
    double mx[1] = {(double)((me * 5) % P)};
    CHECK_OK(halox_comm_allreduce_max(comm, mx, 1));
    double want_mx = 0;
    for (int r = 0; r < P; r++)
        want_mx = (double)((r * 5) % P) > want_mx ? (double)((r * 5) % P) : want_mx;
    CHECK(mx[0] == want_mx);
    int64_t iv[2] = {(int64_t)me + 1, INT64_C(1) << 40};
    CHECK_OK(halox_comm_allreduce_sum_i64(comm, iv, 2));
    CHECK(iv[0] == (int64_t)P * (P + 1) / 2 && iv[1] == ((int64_t)P << 40));

    /* gatherv on the last rank, rank 1 contributes nothing */
    int root = P - 1;
    size_t nb = me == 1 ? 0 : (size_t)(me + 1) * 3;
    unsigned char *sb = malloc(nb + 1);
    for (size_t i = 0; i < nb; i++)
        sb[i] = (unsigned char)(me * 16 + (int)i);
    size_t cap = 0;
    for (int r = 0; r < P; r++)
        cap += r == 1 ? 0 : (size_t)(r + 1) * 3;
    unsigned char *rb = malloc(cap + 1);
    size_t *counts = calloc((size_t)P, sizeof(size_t));
    CHECK_OK(halox_comm_gatherv(comm, sb, nb, me == root ? rb : NULL, me == root ? cap : 0,
                                me == root ? counts : NULL, root));
    if (me == root) {
        size_t off = 0;
        for (int r = 0; r < P; r++) {
            size_t want = r == 1 ? 0 : (size_t)(r + 1) * 3;
            CHECK(counts[r] == want);
            for (size_t i = 0; i < want; i++)
                CHECK(rb[off + i] == (unsigned char)(r * 16 + (int)i));
            off += want;
        }
    }
    free(sb);
    free(rb);
    free(counts);

    /* the table's sendrecv: a ring with sizes that depend on the sender, including 0 bytes,
     * then with oneself */
    const halox_transport_ops_t *ops = comm->ops;
    int dst = (me + 1) % P, src = (me + P - 1) % P;
    size_t ssz = (size_t)(me % 3) * 5, rsz = (size_t)(src % 3) * 5;
    unsigned char s1[16], r1[16];
    for (size_t i = 0; i < ssz; i++)
        s1[i] = (unsigned char)(me + i);
    memset(r1, 0xee, sizeof r1);
    CHECK_OK(ops->sendrecv(comm, dst, s1, ssz, src, r1, rsz));
    for (size_t i = 0; i < rsz; i++)
        CHECK(r1[i] == (unsigned char)(src + i));
    CHECK(r1[rsz] == 0xee);
    CHECK_OK(ops->sendrecv(comm, me, s1, 4, me, r1, 4));
    CHECK(memcmp(s1, r1, 4) == 0);
    CHECK_STATUS(ops->sendrecv(comm, P, s1, 4, me, r1, 4), HALOX_ERR_INVALID_ARG);

    /* the table's alltoallv: block r->s holds ((r + 2s) % 5) * 7 bytes, empty ones included */
    size_t *sbytes = calloc((size_t)P * 4, sizeof(size_t));
    size_t *soffs = sbytes + P, *rbytes = sbytes + 2 * P, *roffs = sbytes + 3 * P;
    size_t stot = 0, rtot = 0;
    for (int r = 0; r < P; r++) {
        sbytes[r] = (size_t)((me + 2 * r) % 5) * 7;
        soffs[r] = stot;
        stot += sbytes[r];
        rbytes[r] = (size_t)((r + 2 * me) % 5) * 7;
        roffs[r] = rtot;
        rtot += rbytes[r];
    }
    unsigned char *sa = malloc(stot + 1), *ra = malloc(rtot + 1);
    for (int r = 0; r < P; r++)
        for (size_t i = 0; i < sbytes[r]; i++)
            sa[soffs[r] + i] = (unsigned char)(me * 37 + r * 11 + (int)i);
    CHECK_OK(ops->alltoallv(comm, sa, sbytes, soffs, ra, rbytes, roffs));
    for (int r = 0; r < P; r++)
        for (size_t i = 0; i < rbytes[r]; i++)
            CHECK(ra[roffs[r] + i] == (unsigned char)(r * 37 + me * 11 + (int)i));
    free(sa);
    free(ra);
    free(sbytes);
    CHECK_OK(halox_comm_barrier(comm));
    ROOT_PRINTF("  collectives: done\n");
}

/* ---- migration -------------------------------------------------------------------------- */

/* Position after displacement and the wrap that migration applies, in the atoms' precision. */
static double moved(halox_real_t real, double x, double d, double len)
{
    double v = tm_round(real, x + d);
    double w = tm_round(real, halox_wrap(v, len));
    return w >= len ? 0.0 : w;
}

static void test_migrate(halox_comm_t *comm, halox_grid_t grid, uint64_t seed)
{
    const int P = halox_comm_size(comm), me = halox_comm_rank(comm);
    const halox_real_t real = comm->real;
    const int stride = comm->stride;
    const size_t esize = halox_real_size(real) * (size_t)stride, xb = 12;
    halox_box_t box = {{9.0, 8.0, 7.0}};
    const int natoms = 400;
    halox_atoms_t *ref = calloc((size_t)P, sizeof *ref), *want = calloc((size_t)P, sizeof *want);
    halox_atoms_t mine;
    CHECK(tm_make_ranks(&grid, &box, real, stride, xb, natoms, seed, me, ref, &mine) == 0);

    /* displacements by id: none, random up to 1.5 domains, across the periodic boundary, and
     * into a diagonal neighbour (a corner) */
    double *disp = calloc((size_t)natoms * 3, sizeof(double));
    uint64_t s = seed ^ 0x5eedull;
    for (int i = 0; i < natoms; i++)
        for (int d = 0; d < 3; d++) {
            double w = box.len[d] / grid.n[d];
            double u = tm_uniform(&s);
            switch (i % 4) {
            case 0:
                disp[3 * i + d] = 0;
                break;
            case 1:
                disp[3 * i + d] = (u * 3 - 1.5) * w;
                break;
            case 2:
                disp[3 * i + d] = d == i % 3 ? (u < 0.5 ? -box.len[d] * 0.9 : box.len[d] * 1.1) : 0;
                break;
            default:
                disp[3 * i + d] = (u < 0.5 ? -1 : 1) * (0.5 + u) * w;
                break;
            }
        }

    /* the expected outcome: stayers in order, then arrivals by source rank in its order */
    int total_moved = 0;
    for (int r = 0; r < P; r++) {
        CHECK(halox_atoms_init(&want[r], real, stride, xb) == HALOX_OK);
        CHECK(halox_atoms_reserve(&want[r], natoms) == HALOX_OK);
    }
    for (int pass = 0; pass < 2; pass++)
        for (int src = 0; src < P; src++) {
            halox_atoms_t *a = &ref[src];
            for (int i = 0; i < a->n_home; i++) {
                int id = a->id[i];
                double x[3];
                for (int d = 0; d < 3; d++)
                    x[d] = moved(real, halox_atoms_get(a, i, d), disp[3 * id + d], box.len[d]);
                int to = halox_owner_rank(&grid, &box, x);
                /* pass 0: stayers of every rank; pass 1: arrivals in source order */
                if ((pass == 0) != (to == src))
                    continue;
                total_moved += pass;
                halox_atoms_t *w = &want[to];
                int k = w->n_home++;
                for (int c = 0; c < stride; c++)
                    halox_atoms_set(w, k, c, c < 3 ? x[c] : halox_atoms_get(a, i, c));
                w->id[k] = id;
                memcpy((char *)w->extra + (size_t)k * xb, (char *)a->extra + (size_t)i * xb, xb);
                w->n_total = w->n_home;
            }
        }
    CHECK(P == 1 || total_moved > natoms / 4); /* on one rank migration only wraps */

    for (int i = 0; i < mine.n_home; i++)
        for (int d = 0; d < 3; d++)
            halox_atoms_set(&mine, i, d, halox_atoms_get(&mine, i, d) + disp[3 * mine.id[i] + d]);
    /* a failure deferred on the last rank (halox_comm_defer_failure) stops the migration on
     * every rank in its one agreement, before any atom moves; the next one is the real one */
    const int last = P - 1, n0 = mine.n_home;
    halox_status_t own = HALOX_OK;
    if (me == last) {
        const halox_plan_params_t bad = {grid, box, 100.0, 0.0, 0, 0};
        own = halox_plan_check(&bad, NULL);
        CHECK(own != HALOX_OK && halox_comm_defer_failure(comm, own) == HALOX_OK);
    }
    halox_comm_stats_t s0, s1;
    halox_comm_get_stats(comm, &s0);
    halox_status_t st = halox_comm_migrate(comm, &grid, &box, &mine, natoms, 41);
    halox_comm_get_stats(comm, &s1);
    CHECK_MSG(me == last ? st == own : st == HALOX_ERR_ABORTED, "deferred: %s: %s",
              halox_status_string(st), halox_last_error());
    CHECK_MSG(s1.collectives - s0.collectives == 1 && mine.n_home == n0,
              "deferred: %lld collectives, %d home atoms (were %d)",
              s1.collectives - s0.collectives, mine.n_home, n0);
    st = halox_comm_migrate(comm, &grid, &box, &mine, natoms, 42);
    CHECK_MSG(st == HALOX_OK, "migrate: %s", halox_last_error());
    if (st == HALOX_OK) {
        CHECK_MSG(mine.n_home == want[me].n_home, "migrate: %d home atoms, expected %d",
                  mine.n_home, want[me].n_home);
        CHECK(mine.n_total == mine.n_home);
        if (mine.n_home == want[me].n_home) {
            CHECK(memcmp(mine.id, want[me].id, sizeof(int32_t) * (size_t)mine.n_home) == 0);
            CHECK(memcmp(mine.x, want[me].x, esize * (size_t)mine.n_home) == 0);
            CHECK(memcmp(mine.extra, want[me].extra, xb * (size_t)mine.n_home) == 0);
        }
        for (int i = 0; i < mine.n_home; i++) {
            double x[3] = {halox_atoms_get(&mine, i, 0), halox_atoms_get(&mine, i, 1),
                           halox_atoms_get(&mine, i, 2)};
            CHECK_MSG(halox_owner_rank(&grid, &box, x) == me, "atom %d is not owned by rank %d",
                      mine.id[i], me);
        }
        int64_t n[1] = {mine.n_home};
        CHECK_OK(halox_comm_allreduce_sum_i64(comm, n, 1));
        CHECK(n[0] == natoms);
    }

    /* a wrong expected total is reported on every rank, naming the step */
    st = halox_comm_migrate(comm, &grid, &box, &mine, natoms + 1, 43);
    CHECK_STATUS(st, HALOX_ERR_ATOM_COUNT);
    CHECK(strstr(halox_last_error(), "step 43") != NULL);

    /* the plan rebuilt after migration agrees with the reference built from the expected
     * layout, and exchanges on it are exact */
    halox_plan_params_t params = {grid, box, 2.0, 0.4, 0, 0};
    char ctx[128];
    snprintf(ctx, sizeof ctx, "after migration, grid %dx%dx%d %s stride %d", grid.n[0], grid.n[1],
             grid.n[2], test_real_name(real), stride);
    run_exchange(comm, &params, want, &mine, 2, seed + 99, ctx);
    ROOT_PRINTF("  migration on %dx%dx%d %s stride %d: %d atoms moved\n", grid.n[0], grid.n[1],
                grid.n[2], test_real_name(real), stride, total_moved);

    free(disp);
    tm_free_ranks(ref, P, &mine);
    tm_free_ranks(want, P, NULL);
    free(ref);
    free(want);
}

/* ---- main ----------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    /* before MPI_Init the transport refuses, and says what to do */
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .timeout_s = 5};
    halox_comm_t *early = NULL;
    CHECK_STATUS(halox_comm_create("mpi", &args, &early), HALOX_ERR_STATE);
    CHECK(strstr(halox_last_error(), "MPI_Init") != NULL);

    int P;
    tm_mpi_init(&argc, &argv, &g_rank, &P);
    CHECK(halox_transport_available("mpi"));
    ROOT_PRINTF("mpi transport on %d process(es): %s\n", P, halox_transport_description("mpi"));

    static const struct {
        halox_real_t real;
        int stride;
    } kinds[] = {{HALOX_FLOAT, 3}, {HALOX_DOUBLE, 3}, {HALOX_FLOAT, 4}, {HALOX_DOUBLE, 4}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        halox_comm_t *comm = make_comm(NULL, kinds[k].real, kinds[k].stride);
        if (!comm)
            break;
        CHECK(halox_comm_rank(comm) == g_rank && halox_comm_size(comm) == P);
        CHECK(strcmp(halox_comm_transport(comm), "mpi") == 0);
        if (k == 0)
            test_collectives(comm);
        test_exchanges(comm);
        halox_grid_t grids[4];
        int ng = tm_grids_for(P, 0, grids);
        test_migrate(comm, grids[k % (size_t)ng], 500 + k);
        halox_comm_destroy(comm);
    }

    /* an endpoint on a sub-communicator: two independent halves (or the odd one out alone) */
    if (P >= 2) {
        MPI_Comm half;
        int color = g_rank < P / 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, g_rank, &half);
        int hp;
        MPI_Comm_size(half, &hp);
        halox_comm_t *comm = make_comm(&half, HALOX_DOUBLE, 3);
        if (comm) {
            CHECK(halox_comm_size(comm) == hp);
            halox_box_t box = {{9.0, 8.0, 7.0}};
            exchange_case(comm, (halox_grid_t){{hp, 1, 1}}, box, 2.0, 0.5, 200,
                          77 + (uint64_t)color);
            test_collectives(comm);
            halox_comm_destroy(comm);
        }
        MPI_Comm_free(&half);
    }

    tm_mpi_finish();
    TEST_DONE();
}
