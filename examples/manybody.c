/* A complete port: a small molecular-dynamics code with a many-body potential that keeps its own
 * arrays, cell list and force loop, and lets libhalox move its halo. Public API only.
 *
 *   mpirun -np 4 ./manybody                        1, 2, 4, 8 ... ranks: the same energies
 *   mpirun -np 4 ./manybody --reference serial.txt compare with a saved run (exit 1 if not)
 *   ./manybody --help                              every option
 *
 * The system: an FCC lattice in a periodic box, every site displaced at random and given a random
 * velocity, both drawn from the atom's id and the seed (so the system is the same whatever the
 * number of ranks). The potential is a Lennard-Jones pair term (cut-off rc, energy shifted to 0
 * at rc) plus an EAM-like many-body term:
 *
 *   E = sum_i F(rho_i) + 1/2 sum_i sum_j V(r_ij),   rho_i = sum_j phi(r_ij)
 *   phi(r) = (1 - (r/rc)^2)^2,   F(rho) = A u (u - 2) with u = rho / rho0
 *
 * The force on atom i needs F'(rho) of both atoms of each pair, so a step has two phases with an
 * exchange between them: the densities of the home atoms, then their F' forwarded to the halo
 * (halox_comm_forward), then the forces. Velocity Verlet in double precision (NVE); every
 * `rebuild` steps the atoms that left a domain migrate, the plan is rebuilt and the neighbour
 * lists with it; in between the halo's positions are refreshed by halox_comm_coords.
 *
 * What this code owns and what halox does:
 *   - the code owns every per-atom array at a capacity it chooses (x, id, zone, velocities, rho,
 *     F', forces) and grows them itself when halox says HALOX_ERR_NO_MEMORY with `need`
 *     (halox_fixed_atoms_t: the library never allocates, grows or moves them);
 *   - halox builds the plan (which atoms are halo), exchanges positions and per-atom fields over
 *     it, and migrates atoms (their velocities ride along as `extra`).
 *
 * Output (rank 0): one line per printed step, "step S pe PE ke KE etot E" (totals, %.15e), then
 * the energy drift. The totals are sums of per-atom energies gathered on rank 0 and added in id
 * order, so they depend on the number of ranks only through the rounding of each atom's own
 * sums (the order of its neighbours): runs on 1, 2 and 4 ranks agree to rounding. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <halox/halox.h>

#define OK(call) ok_or_abort((call), #call)

static void ok_or_abort(halox_status_t st, const char *what)
{
    if (st != HALOX_OK) { /* the library never prints: its message says what and why */
        fprintf(stderr, "manybody: %s: %s\n", what, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

static void *grow(void *p, size_t bytes)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) {
        fprintf(stderr, "manybody: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return q;
}

/* ---- the potential ------------------------------------------------------------------------- */

typedef struct potential {
    double rc, rc2;  /* cut-off of both terms */
    double lj_shift; /* V_LJ(rc), subtracted so that V(rc) = 0 */
    double a, rho0;  /* embedding F(rho) = a u (u - 2), u = rho / rho0: smooth, minimum at rho0 */
} potential_t;

static double embed(const potential_t *p, double rho) /* F(rho) */
{
    double u = rho / p->rho0;
    return p->a * u * (u - 2.0);
}

static double embed_d(const potential_t *p, double rho) /* F'(rho) */
{
    return 2.0 * p->a * (rho / p->rho0 - 1.0) / p->rho0;
}

/* ---- the atoms, in the code's own arrays ----------------------------------------------------- */

typedef struct system {
    int cap;       /* rows of every per-atom array below */
    double *x;     /* 3 per atom: home atoms, then halo (filled by the plan build and exchanges) */
    int32_t *id;   /* global ids 0 .. natoms-1, halo too */
    uint8_t *zone; /* written by the plan build; this code needs no zone (newton off) */
    double *v;     /* 3 per atom, home atoms only: halox migrates them as `extra` */
    double *rho;   /* many-body density, home atoms */
    double *fp;    /* F'(rho): home atoms computed here, halo rows forwarded by halox */
    double *f;     /* 3 per atom: forces on home atoms (the halo rows stay zero) */
    double *x0;    /* home positions at the last rebuild: how far each atom moved since */
    int n_home, n_total;
    /* full neighbour list of the home atoms (radius rc + skin), rebuilt with the plan */
    int *nstart, *nlist, ncap;
    /* the cell list over home + halo atoms it is built from */
    int *cell_start, *cell_atom, ncells_cap;
} system_t;

/* Every per-atom array to at least `need` rows, contents kept: the code's realloc, never halox's.
 * Head-room, because a plan build's later pulses may need more than the first refusal said. */
static void system_reserve(system_t *s, int need)
{
    if (need <= s->cap)
        return;
    int cap = need + need / 2 + 16;
    s->x = grow(s->x, sizeof(double) * 3 * (size_t)cap);
    s->id = grow(s->id, sizeof(int32_t) * (size_t)cap);
    s->zone = grow(s->zone, (size_t)cap);
    s->v = grow(s->v, sizeof(double) * 3 * (size_t)cap);
    s->rho = grow(s->rho, sizeof(double) * (size_t)cap);
    s->fp = grow(s->fp, sizeof(double) * (size_t)cap);
    s->f = grow(s->f, sizeof(double) * 3 * (size_t)cap);
    s->x0 = grow(s->x0, sizeof(double) * 3 * (size_t)cap);
    s->cap = cap;
}

static halox_fixed_atoms_t fixed_view(system_t *s)
{
    halox_fixed_atoms_t a = {.x = s->x,
                             .id = s->id,
                             .zone = s->zone,
                             .extra = s->v,
                             .extra_bytes = 3 * sizeof(double),
                             .n_home = s->n_home,
                             .capacity = s->cap};
    return a;
}

/* ---- the system at step 0 ----------------------------------------------------------------------
 */

static uint64_t splitmix(uint64_t *state) /* a stream of random bits per atom, from its id */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state) /* [0, 1) */
{
    return (double)(splitmix(state) >> 11) / 9007199254740992.0;
}

/* Every rank walks all lattice sites in id order and keeps those in its domain: the atoms, their
 * displacements and velocities are the same bits whatever the grid. The velocities get the total
 * momentum removed and are scaled to the temperature, from sums over all atoms in id order. */
static void system_init(system_t *s, const halox_plan_params_t *pp, int rank, int cells,
                        double lattice, double temp, uint64_t seed)
{
    static const double basis[4][3] = {{0, 0, 0}, {.5, .5, 0}, {.5, 0, .5}, {0, .5, .5}};
    int natoms = 4 * cells * cells * cells;
    double *xa = grow(NULL, sizeof(double) * 3 * (size_t)natoms);
    double *va = grow(NULL, sizeof(double) * 3 * (size_t)natoms);
    double p[3] = {0, 0, 0}, v2 = 0.0;
    for (int n = 0; n < natoms; n++) {
        int b = n % 4, c = n / 4, cell[3] = {c % cells, c / cells % cells, c / cells / cells};
        uint64_t st = seed ^ (0xd1b54a32d192ed03ull * (uint64_t)(n + 1));
        for (int d = 0; d < 3; d++) {
            double site = (cell[d] + basis[b][d]) * lattice;
            xa[3 * n + d] = halox_wrap(site + 0.1 * lattice * (uniform(&st) - 0.5), pp->box.len[d]);
            va[3 * n + d] = uniform(&st) - 0.5;
            p[d] += va[3 * n + d];
        }
    }
    for (int n = 0; n < natoms; n++)
        for (int d = 0; d < 3; d++) {
            va[3 * n + d] -= p[d] / natoms;
            v2 += va[3 * n + d] * va[3 * n + d];
        }
    double scale = sqrt(3.0 * (natoms - 1) * temp / v2); /* unit mass, k_B = 1 */
    s->n_home = 0;
    for (int n = 0; n < natoms; n++) {
        if (halox_owner_rank(&pp->grid, &pp->box, &xa[3 * n]) != rank)
            continue; /* the one definition of ownership: the migration's too */
        system_reserve(s, s->n_home + 1);
        for (int d = 0; d < 3; d++) {
            s->x[3 * s->n_home + d] = xa[3 * n + d];
            s->v[3 * s->n_home + d] = va[3 * n + d] * scale;
        }
        s->id[s->n_home++] = n;
    }
    s->n_total = s->n_home;
    free(xa), free(va);
}

/* ---- the rebuild: migration, plan, bind, cell list, neighbour list --------------------------- */

/* Call a fixed-capacity build or migration until the arrays are large enough. On
 * HALOX_ERR_NO_MEMORY every rank fails together; the short one's `need` says how many rows it
 * wants (0 on the others): grow and call again, every rank. */
static void rebuild_halo(halox_comm_t *comm, const halox_plan_params_t *pp, system_t *s,
                         halox_plan_t *plan, long long natoms, long long step)
{
    halox_status_t st;
    halox_fixed_atoms_t a;
    if (step > 0) { /* atoms that left their domain move to their owners, velocities with them */
        do {
            a = fixed_view(s);
            st = halox_comm_migrate_fixed(comm, &pp->grid, &pp->box, &a, natoms, step);
            if (st == HALOX_ERR_NO_MEMORY)
                system_reserve(s, a.need);
        } while (st == HALOX_ERR_NO_MEMORY);
        OK(st);
        s->n_home = a.n_home;
    }
    do {
        a = fixed_view(s);
        st = halox_comm_build_plan_fixed(comm, pp, &a, plan);
        if (st == HALOX_ERR_NO_MEMORY)
            system_reserve(s, a.need);
    } while (st == HALOX_ERR_NO_MEMORY);
    OK(st);
    s->n_total = a.n_total;
    /* the arrays may have grown (moved) and the plan changed: bind again. f is bound because an
     * endpoint binds coordinates and forces together; this code never sends forces back */
    OK(halox_comm_bind(comm, plan, s->x, s->f));
    memcpy(s->x0, s->x, sizeof(double) * 3 * (size_t)s->n_home);
}

/* The code's own cell list over home + halo atoms (cells of at least rlist), then each home
 * atom's full list of neighbours within rlist = rc + skin. Plain coordinate differences: with
 * periodic_shifts = 0 the plan brings every periodic image within reach as a halo atom. */
static void build_lists(system_t *s, double rlist)
{
    double lo[3], hi[3];
    int nc[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = hi[d] = s->x[d];
        for (int i = 1; i < s->n_total; i++) {
            lo[d] = fmin(lo[d], s->x[3 * i + d]);
            hi[d] = fmax(hi[d], s->x[3 * i + d]);
        }
        nc[d] = (int)((hi[d] - lo[d]) / rlist);
        nc[d] = nc[d] < 1 ? 1 : nc[d];
    }
    int ncells = nc[0] * nc[1] * nc[2];
    if (ncells + 1 > s->ncells_cap) {
        s->ncells_cap = ncells + 1;
        s->cell_start = grow(s->cell_start, sizeof(int) * (size_t)s->ncells_cap);
    }
    s->cell_atom = grow(s->cell_atom, sizeof(int) * (size_t)s->n_total);
    int *cell_of = grow(NULL, sizeof(int) * (size_t)s->n_total);
    memset(s->cell_start, 0, sizeof(int) * (size_t)(ncells + 1));
    for (int i = 0; i < s->n_total; i++) { /* counting sort of the atoms by cell */
        int c[3];
        for (int d = 0; d < 3; d++) {
            c[d] = (int)((s->x[3 * i + d] - lo[d]) / (hi[d] - lo[d] + 1e-12) * nc[d]);
            c[d] = c[d] >= nc[d] ? nc[d] - 1 : c[d];
        }
        cell_of[i] = c[0] + nc[0] * (c[1] + nc[1] * c[2]);
        s->cell_start[cell_of[i] + 1]++;
    }
    for (int c = 0; c < ncells; c++)
        s->cell_start[c + 1] += s->cell_start[c];
    for (int i = 0; i < s->n_total; i++)
        s->cell_atom[s->cell_start[cell_of[i]]++] = i;
    for (int c = ncells; c > 0; c--) /* the fill advanced each start to the next cell's */
        s->cell_start[c] = s->cell_start[c - 1];
    s->cell_start[0] = 0;

    s->nstart = grow(s->nstart, sizeof(int) * (size_t)(s->n_home + 1));
    int n = 0;
    for (int i = 0; i < s->n_home; i++) {
        s->nstart[i] = n;
        int ci = cell_of[i], c[3] = {ci % nc[0], ci / nc[0] % nc[1], ci / nc[0] / nc[1]};
        for (int dz = -1; dz <= 1; dz++)
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int k[3] = {c[0] + dx, c[1] + dy, c[2] + dz};
                    if (k[0] < 0 || k[1] < 0 || k[2] < 0 || k[0] >= nc[0] || k[1] >= nc[1] ||
                        k[2] >= nc[2])
                        continue; /* no wrap: the halo holds the images */
                    int cell = k[0] + nc[0] * (k[1] + nc[1] * k[2]);
                    for (int m = s->cell_start[cell]; m < s->cell_start[cell + 1]; m++) {
                        int j = s->cell_atom[m];
                        double r2 = 0.0;
                        for (int d = 0; d < 3; d++) {
                            double dd = s->x[3 * i + d] - s->x[3 * j + d];
                            r2 += dd * dd;
                        }
                        if (j == i || r2 >= rlist * rlist)
                            continue;
                        if (n == s->ncap) {
                            s->ncap = 2 * s->ncap + 1024;
                            s->nlist = grow(s->nlist, sizeof(int) * (size_t)s->ncap);
                        }
                        s->nlist[n++] = j;
                    }
                }
    }
    s->nstart[s->n_home] = n;
    free(cell_of);
}

/* ---- the forces
 * ---------------------------------------------------------------------------------- */

/* Newton off, as LAMMPS does with full lists: every home atom sums over all its neighbours, home
 * or halo, and only home atoms get forces; a pair that crosses a domain boundary is computed on
 * both owners. That costs twice the pair work of newton on, but needs one exchange per step
 * instead of three: each home atom's density is complete from its own list (no reverse exchange
 * of rho), and so is its force (no reverse exchange of forces); only F' must reach the halo.
 * Each atom's sums are also the same whatever the decomposition, up to the order of the terms.
 * Newton on would compute each pair once (halox_full_pair on this plan, or halox_zone_pair on a
 * half-shell one), sum rho on halo atoms too and send it back with halox_comm_reverse, forward
 * F', and send the halo forces back with halox_comm_forces.
 * Per-atom potential energies go to pe[] (home atoms), for the rank-independent total. */
static void compute_forces(halox_comm_t *comm, const potential_t *pot, system_t *s, double *pe)
{
    /* phase 1: the density of every home atom, and its F'(rho) */
    for (int i = 0; i < s->n_home; i++) {
        double rho = 0.0;
        for (int m = s->nstart[i]; m < s->nstart[i + 1]; m++) {
            int j = s->nlist[m];
            double r2 = 0.0;
            for (int d = 0; d < 3; d++) {
                double dd = s->x[3 * i + d] - s->x[3 * j + d];
                r2 += dd * dd;
            }
            if (r2 < pot->rc2) {
                double w = 1.0 - r2 / pot->rc2;
                rho += w * w;
            }
        }
        s->rho[i] = rho;
        s->fp[i] = embed_d(pot, rho);
        pe[i] = embed(pot, rho);
    }

    /* F' of the halo atoms: their owners computed it, halox copies it to the halo rows (a field
     * of one double per atom, no periodic shift). Without it the forces of the atoms near a
     * domain's boundary are wrong, on one rank too (its halo holds the periodic copies of its
     * own atoms), and differently for every grid. Per-atom data that changes only at rebuilds
     * (types, charges) would rather ride with every coordinate exchange:
     * halox_comm_bind_fields. */
    halox_field_t fp = {.data = s->fp, .type = HALOX_TYPE_DOUBLE, .count = 1, .capacity = s->cap};
    OK(halox_comm_forward(comm, 1, &fp));

    /* phase 2: the forces on home atoms, and their pair energies (half of each pair's) */
    memset(s->f, 0, sizeof(double) * 3 * (size_t)s->n_total);
    for (int i = 0; i < s->n_home; i++) {
        double fi[3] = {0, 0, 0}, epair = 0.0;
        for (int m = s->nstart[i]; m < s->nstart[i + 1]; m++) {
            int j = s->nlist[m];
            double dx[3], r2 = 0.0;
            for (int d = 0; d < 3; d++) {
                dx[d] = s->x[3 * i + d] - s->x[3 * j + d];
                r2 += dx[d] * dx[d];
            }
            if (r2 >= pot->rc2)
                continue;
            double ir2 = 1.0 / r2, ir6 = ir2 * ir2 * ir2;
            double w = 1.0 - r2 / pot->rc2;
            /* -dE/dr / r: LJ, then phi'(r) / r = -4 w / rc^2 weighted by F'(rho_i) + F'(rho_j) */
            double fr =
                (48.0 * ir6 * ir6 - 24.0 * ir6) * ir2 + (s->fp[i] + s->fp[j]) * 4.0 * w / pot->rc2;
            for (int d = 0; d < 3; d++)
                fi[d] += fr * dx[d];
            epair += 0.5 * (4.0 * (ir6 * ir6 - ir6) - pot->lj_shift);
        }
        for (int d = 0; d < 3; d++)
            s->f[3 * i + d] = fi[d];
        pe[i] += epair;
    }
}

/* ---- the energies, summed the same way whatever the number of ranks -------------------------- */

typedef struct energies {
    double pe, ke;
} energies_t;

/* (id, pe, ke) of every home atom gathered on rank 0 and added there in id order. */
static energies_t total_energies(halox_comm_t *comm, const system_t *s, const double *pe,
                                 int natoms, double *rec, double *all)
{
    for (int i = 0; i < s->n_home; i++) {
        const double *v = &s->v[3 * i];
        rec[3 * i] = s->id[i];
        rec[3 * i + 1] = pe[i];
        rec[3 * i + 2] = 0.5 * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    }
    int root = halox_comm_rank(comm) == 0;
    OK(halox_comm_gatherv(comm, rec, sizeof(double) * 3 * (size_t)s->n_home, root ? all : NULL,
                          root ? sizeof(double) * 3 * (size_t)natoms : 0, NULL, 0));
    energies_t e = {0.0, 0.0};
    if (!root)
        return e;
    double *by_id = grow(NULL, sizeof(double) * 2 * (size_t)natoms);
    for (int n = 0; n < natoms; n++) {
        int id = (int)all[3 * n];
        by_id[2 * id] = all[3 * n + 1];
        by_id[2 * id + 1] = all[3 * n + 2];
    }
    for (int n = 0; n < natoms; n++)
        e.pe += by_id[2 * n], e.ke += by_id[2 * n + 1];
    free(by_id);
    return e;
}

/* Rank 0: the largest relative difference between our printed steps and those of a saved run's
 * output (lines "step S pe PE ke KE etot E"); -1 when a step of ours is missing there. */
static double compare_reference(const char *path, int nrows, const long long *steps,
                                const double (*rows)[3])
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(stderr, "manybody: cannot read the reference %s\n", path);
        return -1.0;
    }
    double worst = 0.0;
    int found = 0;
    char line[512];
    while (fgets(line, sizeof line, fp)) {
        long long step;
        double e[3];
        if (sscanf(line, "step %lld pe %lf ke %lf etot %lf", &step, &e[0], &e[1], &e[2]) != 4)
            continue;
        for (int r = 0; r < nrows; r++) {
            if (steps[r] != step)
                continue;
            found++;
            for (int k = 0; k < 3; k++) {
                double scale = fmax(fabs(rows[r][k]), fabs(e[k]));
                double rel = scale > 0.0 ? fabs(rows[r][k] - e[k]) / scale : 0.0;
                worst = fmax(worst, rel);
            }
        }
    }
    fclose(fp);
    return found == nrows ? worst : -1.0;
}

/* ---- the program ----------------------------------------------------------------------------- */

static void usage(void)
{
    printf("usage: manybody [options]\n"
           "  --cells N        FCC cells per box edge (4 N^3 atoms; default 6)\n"
           "  --steps N        time steps (default 100)\n"
           "  --dt T           time step (default 0.0025)\n"
           "  --rebuild N      steps between rebuilds: migration, plan, lists (default 10)\n"
           "  --print N        steps between printed energies (default 10)\n"
           "  --temp T         initial temperature (default 0.5)\n"
           "  --seed S         random seed of the displacements and velocities (default 1)\n"
           "  --grid NXxNYxNZ  grid of ranks (default: halox_grid_default of the MPI size)\n"
           "  --transport T    halox transport (default mpi)\n"
           "  --reference F    compare every printed step with the output F of another run\n"
           "  --tolerance R    largest relative difference allowed there (default 1e-12)\n"
           "  --max-drift D    largest |etot - etot(0)| per atom allowed (default 1e-4)\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv); /* before the endpoint; MPI_Finalize after it is destroyed */
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int cells = 6, steps = 100, rebuild = 10, every = 10, seed = 1;
    double dt = 0.0025, temp = 0.5, tol = 1e-12, max_drift = 1e-4;
    const char *transport = "mpi", *reference = NULL, *grid_text = NULL;
    const struct option {
        const char *name;
        int *i;         /* an integer option, */
        double *d;      /* a real one, */
        const char **s; /* or text */
    } opts[] = {{"--cells", .i = &cells},         {"--steps", .i = &steps},
                {"--rebuild", .i = &rebuild},     {"--print", .i = &every},
                {"--seed", .i = &seed},           {"--dt", .d = &dt},
                {"--temp", .d = &temp},           {"--tolerance", .d = &tol},
                {"--max-drift", .d = &max_drift}, {"--grid", .s = &grid_text},
                {"--transport", .s = &transport}, {"--reference", .s = &reference}};
    for (int i = 1; i < argc; i++) {
        const struct option *o = NULL;
        for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++)
            o = !o && !strcmp(argv[i], opts[k].name) ? &opts[k] : o;
        if (!o || i + 1 == argc) {
            if (rank == 0 && strcmp(argv[i], "--help"))
                fprintf(stderr, "manybody: bad option %s\n", argv[i]);
            if (rank == 0)
                usage();
            MPI_Finalize();
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
        const char *val = argv[++i];
        if (o->i)
            *o->i = atoi(val);
        else if (o->d)
            *o->d = atof(val);
        else
            *o->s = val;
    }
    if (cells < 1 || steps < 0 || rebuild < 1 || every < 1) {
        if (rank == 0)
            fprintf(stderr, "manybody: --cells, --rebuild and --print take N >= 1\n");
        MPI_Finalize();
        return 2;
    }

    /* Reduced units: LJ sigma = epsilon = mass = 1, the density of the LJ triple point. The
     * skin lets the neighbour lists and the plan serve `rebuild` steps: an atom may move up to
     * skin / 2 before a pair within rc can be missing from the lists or from the halo. */
    const double lattice = cbrt(4.0 / 0.8442), rc = 2.5, skin = 0.3;
    potential_t pot = {.rc = rc, .rc2 = rc * rc, .a = 1.0, .rho0 = 10.0};
    pot.lj_shift = 4.0 * (pow(rc, -12) - pow(rc, -6));
    /* the full shell: newton off needs every neighbour of a home atom, on all sides of the
     * domain (the half shell imports atoms from the upper neighbours only) */
    halox_plan_params_t pp = {.cutoff = rc, .buffer = skin, .full_shell = 1};
    for (int d = 0; d < 3; d++)
        pp.box.len[d] = cells * lattice;
    if (grid_text)
        OK(halox_grid_parse(grid_text, &pp.grid));
    else
        halox_grid_default(size, &pp.grid);
    if (halox_grid_size(&pp.grid) != size) {
        if (rank == 0)
            fprintf(stderr, "manybody: the grid %s has %d ranks, MPI has %d\n",
                    grid_text ? grid_text : "", halox_grid_size(&pp.grid), size);
        MPI_Finalize();
        return 2;
    }
    OK(halox_plan_check(&pp, NULL)); /* a box too small for the grid fails here, saying why */

    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3};
    halox_comm_t *comm = NULL;
    OK(halox_comm_create(transport, &args, &comm));

    system_t s = {0};
    halox_plan_t plan;
    halox_plan_init(&plan);
    const int natoms = 4 * cells * cells * cells;
    system_init(&s, &pp, rank, cells, lattice, temp, (uint64_t)seed);
    /* every rank's first build grows the arrays: system_init reserved only its home atoms */
    rebuild_halo(comm, &pp, &s, &plan, natoms, 0);
    build_lists(&s, rc + skin);

    double *pe = NULL, *rec = NULL, *all = rank == 0 ? grow(NULL, sizeof(double) * 3 * natoms) : 0;
    int nrows = steps / every + 1, row = 0;
    long long *row_step = grow(NULL, sizeof(long long) * (size_t)nrows);
    double(*rows)[3] = grow(NULL, sizeof(double[3]) * (size_t)nrows);
    double drift = 0.0;
    for (int step = 0; step <= steps; step++) {
        if (step > 0) {
            /* first half kick and drift of the home atoms, with the forces of the last step */
            double moved2 = 0.0;
            for (int i = 0; i < 3 * s.n_home; i++) {
                s.v[i] += 0.5 * dt * s.f[i];
                s.x[i] += dt * s.v[i];
            }
            for (int i = 0; i < s.n_home; i++) {
                double r2 = 0.0;
                for (int d = 0; d < 3; d++)
                    r2 += (s.x[3 * i + d] - s.x0[3 * i + d]) * (s.x[3 * i + d] - s.x0[3 * i + d]);
                moved2 = fmax(moved2, r2);
            }
            if (moved2 > 0.25 * skin * skin) { /* a pair within rc could be missed: say so */
                fprintf(stderr,
                        "manybody: rank %d step %d: an atom moved %g > skin / 2 since the "
                        "last rebuild: rebuild more often (--rebuild)\n",
                        rank, step, sqrt(moved2));
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            if (step % rebuild == 0) {
                rebuild_halo(comm, &pp, &s, &plan, natoms, step); /* fills the halo itself */
                build_lists(&s, rc + skin);
            } else {
                OK(halox_comm_coords(comm)); /* halo positions from their owners, shifted */
            }
        }
        pe = grow(pe, sizeof(double) * (size_t)s.cap);
        rec = grow(rec, sizeof(double) * 3 * (size_t)s.cap);
        compute_forces(comm, &pot, &s, pe);
        /* The endpoint pairs every coordinate exchange with a force exchange (endpoint.h): the
         * halo rows of f are zero (newton off), so this one adds nothing to the home forces */
        OK(halox_comm_forces(comm));
        if (step > 0)
            for (int i = 0; i < 3 * s.n_home; i++) /* second half kick */
                s.v[i] += 0.5 * dt * s.f[i];

        if (step % every == 0) {
            energies_t e = total_energies(comm, &s, pe, natoms, rec, all);
            if (rank == 0) {
                row_step[row] = step;
                rows[row][0] = e.pe, rows[row][1] = e.ke, rows[row][2] = e.pe + e.ke;
                drift = fmax(drift, fabs(rows[row][2] - rows[0][2]) / natoms);
                printf("step %d pe %.15e ke %.15e etot %.15e\n", step, e.pe, e.ke, e.pe + e.ke);
                row++;
            }
        }
    }

    int bad = 0;
    if (rank == 0) {
        printf("manybody: %d atoms, %d ranks, grid %dx%dx%d, transport %s, %d steps: energy "
               "drift %.3e per atom (allowed %.0e)\n",
               natoms, size, pp.grid.n[0], pp.grid.n[1], pp.grid.n[2], transport, steps, drift,
               max_drift);
        bad |= !(drift <= max_drift);
        if (reference) {
            double worst = compare_reference(reference, row, row_step, (const double(*)[3])rows);
            if (worst < 0.0)
                printf("manybody: %s lacks some of the printed steps\n", reference);
            else
                printf("manybody: largest relative difference from %s: %.3e (allowed %.0e)\n",
                       reference, worst, tol);
            bad |= !(worst >= 0.0 && worst <= tol);
        }
        printf("manybody: %s\n", bad ? "FAILED" : "passed");
    }
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);

    halox_comm_destroy(comm);
    halox_plan_free(&plan);
    free(s.x), free(s.id), free(s.zone), free(s.v), free(s.rho), free(s.fp), free(s.f), free(s.x0);
    free(s.nstart), free(s.nlist), free(s.cell_start), free(s.cell_atom);
    free(pe), free(rec), free(all), free(row_step), free(rows);
    MPI_Finalize();
    return bad;
}
