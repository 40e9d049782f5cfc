/* Internal: packing coordinates and adding forces (src/core/pack.c), once, so that the
 * reference exchange and every CPU transport perform the very same floating-point operations
 * (bit-identical coordinates and forces), and the sizes and reads of atom arrays. */
#ifndef HALOX_CORE_PACK_H
#define HALOX_CORE_PACK_H

#include <stddef.h>

#include "halox/atoms.h"

/* dst[i] = x[index[i]] for n atoms (stride reals each), adding shift to component dim when
 * shift != 0 (the add happens in the data's own precision). */
void halox__pack_coords(halox_real_t real, int stride, void *dst, const void *x, const int *index,
                        int n, int dim, double shift);

/* f[index[i]] += src[i] for n atoms, components 0..2 (in order i = 0..n-1). */
void halox__add_forces(halox_real_t real, int stride, void *f, const int *index, int n,
                       const void *src);

/* Bytes of n atoms' worth of stride reals. */
static inline size_t halox__atom_bytes(halox_real_t real, int stride, long long n)
{
    return (size_t)n * (size_t)stride * halox_real_size(real);
}

/* halox_atoms_get, inline for the loops over every atom. */
static inline double halox__atom_coord(const halox_atoms_t *a, int i, int c)
{
    size_t k = (size_t)i * (size_t)a->stride + (size_t)c;
    return a->real == HALOX_FLOAT ? (double)((const float *)a->x)[k] : ((const double *)a->x)[k];
}

#endif
