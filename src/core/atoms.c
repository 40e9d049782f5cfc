/* Local atom arrays: allocation and typed access. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "halox/atoms.h"

size_t halox_real_size(halox_real_t real)
{
    return real == HALOX_FLOAT ? 4 : real == HALOX_DOUBLE ? 8 : 0;
}

halox_status_t halox_atoms_init(halox_atoms_t *atoms, halox_real_t real, int stride,
                                size_t extra_bytes)
{
    if (!atoms)
        return halox__error(HALOX_ERR_INVALID_ARG, "atoms is NULL");
    if (halox_real_size(real) == 0)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "unknown precision %d: use HALOX_FLOAT or HALOX_DOUBLE", (int)real);
    if (stride != 3 && stride != 4)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "stride %d: coordinates have 3 or 4 reals per atom", stride);
    memset(atoms, 0, sizeof *atoms);
    atoms->real = real;
    atoms->stride = stride;
    atoms->extra_bytes = extra_bytes;
    return HALOX_OK;
}

halox_status_t halox_atoms_reserve(halox_atoms_t *atoms, int capacity)
{
    if (capacity <= atoms->capacity)
        return HALOX_OK;
    int cap = atoms->capacity;
    size_t rs = halox_real_size(atoms->real) * (size_t)atoms->stride;
    /* grow every array to the same capacity: one call decides it */
    int newcap = cap > 0 ? cap : 16;
    while (newcap < capacity)
        newcap = newcap > 0x3fffffff ? 0x7fffffff : newcap * 2;
    void *x = realloc(atoms->x, (size_t)newcap * rs);
    if (!x)
        return halox__error(HALOX_ERR_NO_MEMORY, "could not grow coordinates to %d atoms", newcap);
    atoms->x = x;
    int32_t *id = realloc(atoms->id, (size_t)newcap * sizeof(int32_t));
    if (!id)
        return halox__error(HALOX_ERR_NO_MEMORY, "could not grow ids to %d atoms", newcap);
    atoms->id = id;
    if (atoms->extra_bytes) {
        void *e = realloc(atoms->extra, (size_t)newcap * atoms->extra_bytes);
        if (!e)
            return halox__error(HALOX_ERR_NO_MEMORY, "could not grow per-atom data to %d atoms",
                                newcap);
        atoms->extra = e;
    }
    atoms->capacity = newcap;
    return HALOX_OK;
}

void halox_atoms_free(halox_atoms_t *atoms)
{
    if (!atoms)
        return;
    free(atoms->x);
    free(atoms->id);
    free(atoms->extra);
    halox_real_t real = atoms->real;
    int stride = atoms->stride;
    size_t eb = atoms->extra_bytes;
    memset(atoms, 0, sizeof *atoms);
    atoms->real = real;
    atoms->stride = stride;
    atoms->extra_bytes = eb;
}

double halox_atoms_get(const halox_atoms_t *atoms, int i, int c)
{
    size_t k = (size_t)i * atoms->stride + c;
    return atoms->real == HALOX_FLOAT ? (double)((const float *)atoms->x)[k]
                                      : ((const double *)atoms->x)[k];
}

void halox_atoms_set(halox_atoms_t *atoms, int i, int c, double value)
{
    size_t k = (size_t)i * atoms->stride + c;
    if (atoms->real == HALOX_FLOAT)
        ((float *)atoms->x)[k] = (float)value;
    else
        ((double *)atoms->x)[k] = value;
}
