/* A minimal halo exchange on the CPU over MPI, checked against halox's serial reference.
 *
 *   mpirun -np 2 ./cpu_exchange
 *
 * Each rank keeps its atoms in arrays of its own, at a capacity it chooses (the library never
 * allocates or moves them: it says how much room it needs, and the rank grows them), places
 * random atoms in its own domain and, twice: builds its plan through an `mpi` endpoint, binds
 * its arrays, moves its atoms a little, exchanges coordinates, computes a trivial force,
 * exchanges forces and migrates the atoms that left its domain. The halo it receives is
 * compared, bit for bit, with the reference exchange (halox_reference_build and
 * halox_reference_coords) run here over every rank's atoms; the forces with a count. Exit status
 * 0 when everything matches, 1 when not. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <halox/halox.h>

#define OK(call) ok_or_abort((call), #call)

static void ok_or_abort(halox_status_t st, const char *what)
{
    if (st != HALOX_OK) { /* the library never prints: its message says what and why */
        fprintf(stderr, "%s: %s\n", what, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static double uniform(unsigned long long *s) /* [0, 1), xorshift64 */
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* This rank's atoms: positions, ids, zones and forces at one capacity. */
typedef struct mine {
    halox_fixed_atoms_t a;
    double *f;
} mine_t;

static void grow(mine_t *m, int cap)
{
    m->a.x = realloc(m->a.x, sizeof(double) * 3 * (size_t)cap);
    m->a.id = realloc(m->a.id, sizeof(int32_t) * (size_t)cap);
    m->a.zone = realloc(m->a.zone, (size_t)cap);
    m->f = realloc(m->f, sizeof(double) * 3 * (size_t)cap);
    if (!m->a.x || !m->a.id || !m->a.zone || !m->f) {
        fprintf(stderr, "no memory for %d atoms\n", cap);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    m->a.capacity = cap;
}

/* After HALOX_ERR_NO_MEMORY from a call on fixed arrays (every rank gets it; the short ones
 * with `need` set): grow where needed, and every rank calls again. */
static void grow_to_need(mine_t *m)
{
    if (m->a.need > m->a.capacity)
        grow(m, m->a.need + m->a.need / 4); /* head-room: later pulses may need more */
}

/* Every rank's home atoms (positions, ids) into ref[r] on every rank, for the reference. */
static void gather_home(const halox_fixed_atoms_t *mine, halox_atoms_t *ref, int rank, int size)
{
    for (int r = 0; r < size; r++) {
        int n = mine->n_home;
        MPI_Bcast(&n, 1, MPI_INT, r, MPI_COMM_WORLD);
        OK(halox_atoms_reserve(&ref[r], n));
        ref[r].n_home = n;
        if (r == rank) {
            memcpy(ref[r].x, mine->x, sizeof(double) * 3 * (size_t)n);
            memcpy(ref[r].id, mine->id, sizeof(int32_t) * (size_t)n);
        }
        MPI_Bcast(ref[r].x, 3 * n, MPI_DOUBLE, r, MPI_COMM_WORLD);
        MPI_Bcast(ref[r].id, n, MPI_INT32_T, r, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* before the endpoint; MPI_Finalize after it is destroyed */
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 400; /* home atoms per rank at the start */
    halox_plan_params_t params = {.box = {{10.0, 10.0, 10.0}}, .cutoff = 2.5, .buffer = 0.3};
    halox_grid_default(size, &params.grid); /* 2 ranks: 2x1x1 */

    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3};
    halox_comm_t *comm = NULL;
    OK(halox_comm_create("mpi", &args, &comm));

    mine_t m = {0};
    halox_atoms_t *ref = calloc((size_t)size, sizeof *ref);
    halox_plan_t plan, *ref_plans = calloc((size_t)size, sizeof *ref_plans);
    void **ref_x = calloc((size_t)size, sizeof *ref_x);
    double lo[3], hi[3];
    unsigned long long seed = 0x9e3779b97f4a7c15ull * (unsigned)(rank + 1);
    grow(&m, n); /* room for the home atoms; the halo's comes when the plan asks */
    halox_domain_bounds(&params.grid, &params.box, rank, lo, hi);
    for (int i = 0; i < n; i++, m.a.n_home++) {
        for (int d = 0; d < 3; d++)
            ((double *)m.a.x)[3 * i + d] = lo[d] + (hi[d] - lo[d]) * uniform(&seed);
        m.a.id[i] = rank * n + i;
    }
    halox_plan_init(&plan);
    for (int r = 0; r < size; r++) {
        halox_plan_init(&ref_plans[r]);
        OK(halox_atoms_init(&ref[r], HALOX_DOUBLE, 3, 0));
    }

    for (int round = 0; round < 2; round++) {
        /* the plan (it fills the halo: grow when it says so), then the arrays bound to it */
        gather_home(&m.a, ref, rank, size);
        halox_status_t st;
        while ((st = halox_comm_build_plan_fixed(comm, &params, &m.a, &plan)) ==
               HALOX_ERR_NO_MEMORY)
            grow_to_need(&m);
        ok_or_abort(st, "halox_comm_build_plan_fixed");
        OK(halox_comm_bind(comm, &plan, m.a.x, m.f));
        OK(halox_reference_build(&params, ref, ref_plans));
        const int n_home = m.a.n_home, n_total = m.a.n_total;
        double *x = m.a.x, *f = m.f;

        /* the home atoms move a little; the coordinate exchange brings their images along */
        for (int i = 0; i < 3 * n_home; i++)
            x[i] += 0.2 * (uniform(&seed) - 0.5);
        OK(halox_comm_coords(comm));
        gather_home(&m.a, ref, rank, size);
        for (int r = 0; r < size; r++)
            ref_x[r] = ref[r].x;
        halox_reference_coords(ref_plans, size, HALOX_DOUBLE, 3, ref_x);
        bad |= n_total != ref[rank].n_total ||
               memcmp(x, ref[rank].x, sizeof(double) * 3 * (size_t)n_total) ||
               memcmp(m.a.id, ref[rank].id, sizeof(int32_t) * (size_t)n_total) ||
               memcmp(m.a.zone, ref_plans[rank].zone, (size_t)n_total);

        /* a trivial force, 1 along x on every local atom: the owners collect one per image */
        for (int i = 0; i < 3 * n_total; i++)
            f[i] = i % 3 == 0;
        OK(halox_comm_forces(comm));
        double sum[2] = {0.0, (double)n_total};
        for (int i = 0; i < n_home; i++)
            sum[0] += f[3 * i];
        OK(halox_comm_allreduce_sum(comm, sum, 2));
        bad |= sum[0] != sum[1];

        /* atoms that left the domain go to their owners; the next round builds a new plan */
        while ((st = halox_comm_migrate_fixed(comm, &params.grid, &params.box, &m.a,
                                              (long long)n * size, round)) == HALOX_ERR_NO_MEMORY)
            grow_to_need(&m);
        ok_or_abort(st, "halox_comm_migrate_fixed");
    }

    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0)
        printf("cpu_exchange: %d ranks, grid %dx%dx%d: halo and forces %s the reference\n", size,
               params.grid.n[0], params.grid.n[1], params.grid.n[2], bad ? "DIFFER from" : "match");
    halox_comm_destroy(comm);
    for (int r = 0; r < size; r++) {
        halox_plan_free(&ref_plans[r]);
        halox_atoms_free(&ref[r]);
    }
    halox_plan_free(&plan);
    free(m.a.x), free(m.a.id), free(m.a.zone), free(m.f);
    free(ref), free(ref_plans), free(ref_x);
    MPI_Finalize();
    return bad ? 1 : 0;
}
