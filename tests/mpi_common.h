/* Helpers shared by the MPI tests: one random global system generated identically on every
 * rank from a seed, split into the owners' home atoms, so each rank can run the serial reference
 * for all ranks and compare its own share with what the transport produced. */
#ifndef HALOX_TEST_MPI_COMMON_H
#define HALOX_TEST_MPI_COMMON_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halox/atoms.h"
#include "halox/geometry.h"

/* splitmix64: tiny, portable, the same sequence on every rank */
static inline uint64_t tm_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static inline double tm_uniform(uint64_t *s) { return (double)(tm_next(s) >> 11) * 0x1.0p-53; }

/* A value as stored in the given precision. */
static inline double tm_round(halox_real_t real, double v)
{
    return real == HALOX_FLOAT ? (double)(float)v : v;
}

/* Position component uniform in [0, len), exact in the given precision. */
static inline double tm_position(halox_real_t real, uint64_t *s, double len)
{
    double v = tm_round(real, tm_uniform(s) * len);
    return v >= len ? 0.0 : v;
}

/* Generate natoms atoms (ids 0..natoms-1) in the box and give each rank its home atoms, in id
 * order. atoms[] must hold halox_grid_size(grid) entries; each is initialised here. For stride
 * 4 the fourth component is a random "charge" that must travel with the atom. */
static inline int tm_make_system(const halox_grid_t *grid, const halox_box_t *box,
                                 halox_real_t real, int stride, size_t extra_bytes, int natoms,
                                 uint64_t seed, halox_atoms_t *atoms)
{
    int P = halox_grid_size(grid);
    double *x = malloc(sizeof(double) * 4 * (size_t)(natoms > 0 ? natoms : 1));
    int *owner = malloc(sizeof(int) * (size_t)(natoms > 0 ? natoms : 1));
    int *count = calloc((size_t)P, sizeof(int));
    if (!x || !owner || !count)
        return -1;
    uint64_t s = seed;
    for (int i = 0; i < natoms; i++) {
        for (int d = 0; d < 3; d++)
            x[4 * i + d] = tm_position(real, &s, box->len[d]);
        x[4 * i + 3] = tm_round(real, tm_uniform(&s) * 2 - 1);
        owner[i] = halox_owner_rank(grid, box, &x[4 * i]);
        count[owner[i]]++;
    }
    int rc = 0;
    for (int r = 0; r < P; r++) {
        if (halox_atoms_init(&atoms[r], real, stride, extra_bytes) != HALOX_OK ||
            halox_atoms_reserve(&atoms[r], count[r] > 0 ? count[r] : 1) != HALOX_OK)
            rc = -1;
        atoms[r].n_home = atoms[r].n_total = 0;
    }
    for (int i = 0; i < natoms && rc == 0; i++) {
        halox_atoms_t *a = &atoms[owner[i]];
        int k = a->n_home++;
        for (int c = 0; c < stride; c++)
            halox_atoms_set(a, k, c, x[4 * i + c]);
        a->id[k] = i;
        if (extra_bytes) {
            /* per-atom payload derived from the id, so migration can be checked */
            unsigned char *e = (unsigned char *)a->extra + (size_t)k * extra_bytes;
            for (size_t b = 0; b < extra_bytes; b++)
                e[b] = (unsigned char)(i * 31 + (int)b * 7);
        }
        a->n_total = a->n_home;
    }
    free(x);
    free(owner);
    free(count);
    return rc;
}

/* Copy the home atoms of src into dst (initialised with the same layout). */
static inline int tm_copy_home(halox_atoms_t *dst, const halox_atoms_t *src)
{
    if (halox_atoms_init(dst, src->real, src->stride, src->extra_bytes) != HALOX_OK ||
        halox_atoms_reserve(dst, src->n_home > 0 ? src->n_home : 1) != HALOX_OK)
        return -1;
    size_t rs = halox_real_size(src->real) * (size_t)src->stride;
    memcpy(dst->x, src->x, rs * (size_t)src->n_home);
    memcpy(dst->id, src->id, sizeof(int32_t) * (size_t)src->n_home);
    if (src->extra_bytes)
        memcpy(dst->extra, src->extra, src->extra_bytes * (size_t)src->n_home);
    dst->n_home = dst->n_total = src->n_home;
    return 0;
}

#endif
