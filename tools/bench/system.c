/* Systems and plans the benchmarks run on: the water-density-like random system (the plan of a
 * real decomposition) and a synthetic two-rank plan (one pulse, any message size). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

uint64_t bench_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double bench_uniform(uint64_t *s) { return (double)(bench_rand(s) >> 11) * 0x1.0p-53; }

/* the library's default grid (halox-md takes the same under mpirun) */
void bench_make_grid(int P, halox_grid_t *g) { halox_grid_default(P, g); }

void bench_water_params(long long natoms, const halox_grid_t *grid, halox_plan_params_t *p)
{
    /* density 0.8 and cut-off 5.0: the halo slabs are as thick relative to the box as water's
     * with a 1 nm cut-off; about 420 neighbours per atom */
    const double len = cbrt((double)natoms / 0.8);
    memset(p, 0, sizeof *p);
    p->grid = *grid;
    for (int d = 0; d < 3; d++)
        p->box.len[d] = len;
    p->cutoff = 5.0;
    p->buffer = 0.5;
}

int bench_make_system(const halox_plan_params_t *p, halox_real_t real, int stride, long long natoms,
                      uint64_t seed, halox_atoms_t *atoms)
{
    const int P = halox_grid_size(&p->grid);
    int *owner = malloc(sizeof(int) * (size_t)natoms), *count = calloc((size_t)P, sizeof(int));
    double *x = malloc(sizeof(double) * 4 * (size_t)natoms);
    int rc = owner && count && x ? 0 : -1;
    uint64_t s = seed;
    for (long long i = 0; rc == 0 && i < natoms; i++) {
        for (int d = 0; d < 3; d++) {
            double v = bench_uniform(&s) * p->box.len[d];
            if (real == HALOX_FLOAT)
                v = (double)(float)v;
            x[4 * i + d] = v >= p->box.len[d] ? 0.0 : v;
        }
        x[4 * i + 3] = bench_uniform(&s) * 2 - 1;
        owner[i] = halox_owner_rank(&p->grid, &p->box, &x[4 * i]);
        count[owner[i]]++;
    }
    for (int r = 0; rc == 0 && r < P; r++) {
        if (halox_atoms_init(&atoms[r], real, stride, 0) != HALOX_OK ||
            halox_atoms_reserve(&atoms[r], count[r] > 0 ? count[r] : 1) != HALOX_OK)
            rc = -1;
        else
            atoms[r].n_home = atoms[r].n_total = 0;
    }
    for (long long i = 0; rc == 0 && i < natoms; i++) {
        halox_atoms_t *a = &atoms[owner[i]];
        int k = a->n_home++;
        for (int c = 0; c < stride; c++)
            halox_atoms_set(a, k, c, x[4 * i + c]);
        a->id[k] = (int32_t)i;
        a->n_total = a->n_home;
    }
    free(owner);
    free(count);
    free(x);
    return rc;
}

int bench_copy_home(const halox_atoms_t *src, halox_atoms_t *dst)
{
    if (halox_atoms_init(dst, src->real, src->stride, 0) != HALOX_OK ||
        halox_atoms_reserve(dst, src->n_home + 1) != HALOX_OK)
        return -1;
    if (src->n_home > 0) {
        memcpy(dst->x, src->x, halox_real_size(src->real) * src->stride * (size_t)src->n_home);
        memcpy(dst->id, src->id, sizeof(int32_t) * (size_t)src->n_home);
    }
    dst->n_home = dst->n_total = src->n_home;
    return 0;
}

int bench_pair_plan(int rank, int n, long long generation, halox_plan_t *plan)
{
    halox_plan_init(plan);
    const int sender = rank == 0;
    plan->params.grid = (halox_grid_t){{2, 1, 1}};
    plan->params.box = (halox_box_t){{2.0, 1.0, 1.0}};
    plan->params.cutoff = 0.25;
    plan->halo_dist = 0.25;
    plan->rank = rank;
    plan->nranks = 2;
    plan->coord[0] = rank;
    plan->lo[0] = rank;
    plan->hi[0] = rank + 1.0;
    plan->hi[1] = plan->hi[2] = 1.0;
    /* the receiver keeps one home atom so that no array is empty */
    plan->n_home = sender ? n : 1;
    plan->n_total = sender ? n : 1 + n;
    plan->n_pulses = 1;
    plan->pulses_per_dim[0] = 1;
    plan->generation = generation;
    halox_pulse_t *p = &plan->pulse[0];
    p->dim = 0;
    p->send_rank = p->recv_rank = 1 - rank;
    p->send_count = sender ? n : 0;
    p->dep_offset = p->send_count;
    p->recv_count = sender ? 0 : n;
    p->recv_offset = plan->n_home;
    p->send_index = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    plan->zone = calloc((size_t)plan->n_total, 1);
    if (!p->send_index || !plan->zone)
        return -1;
    for (int i = 0; i < p->send_count; i++)
        p->send_index[i] = i;
    for (int i = plan->n_home; i < plan->n_total; i++)
        plan->zone[i] = 1;
    plan->zone_capacity = plan->n_total;
    plan->send_capacity[0] = n > 0 ? n : 1;
    return 0;
}
