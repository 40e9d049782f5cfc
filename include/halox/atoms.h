/** @file
 * A rank's local atoms: home atoms first, then halo atoms appended by the plan in pulse order. */
#ifndef HALOX_ATOMS_H
#define HALOX_ATOMS_H

#include <stddef.h>
#include <stdint.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Floating-point type of coordinates and forces. */
typedef enum halox_real {
    HALOX_FLOAT = 4,  /**< single precision (the default; what the GPU engine uses) */
    HALOX_DOUBLE = 8, /**< double precision (validation) */
} halox_real_t;

/** Size in bytes of one real of the given kind (4 or 8); 0 for an unknown kind. */
size_t halox_real_size(halox_real_t real);

/** The most local atoms (home and halo) one rank holds: counts are ints, with head-room for the
 *  arrays' growth. */
#define HALOX_ATOMS_MAX 0x7ffffff0 /* 2147483632 */

/** The local atoms of one rank.
 *
 *  x holds `stride` reals per atom (x, y, z and, for stride 4, a spare fourth component that
 *  travels with the atom). [0, n_home) are home atoms, [n_home, n_total) halo atoms written by
 *  the plan build and by each coordinate exchange. id holds a global id per atom (halo ids are
 *  filled by the plan build). extra holds extra_bytes of opaque per-atom data for home atoms
 *  only (velocities, for example); it moves with the atom on migration.
 *
 *  The arrays are owned by the caller but grown by the library with realloc() when a plan build
 *  or a migration needs more room, so they must come from malloc()/realloc() (or be NULL with
 *  capacity 0). Free them with halox_atoms_free(). */
typedef struct halox_atoms {
    halox_real_t real;  /**< precision of x (and of the forces bound with it) */
    int stride;         /**< reals per atom in x: 3, or 4 with a spare component */
    void *x;            /**< capacity * stride reals: home atoms, then halo atoms */
    int32_t *id;        /**< capacity global ids, in the order of x */
    void *extra;        /**< capacity records of extra_bytes, home atoms only; NULL with
                             extra_bytes 0 */
    size_t extra_bytes; /**< bytes of opaque data per atom that migrate with it (0: none) */
    int n_home;         /**< home atoms, [0, n_home) of every array */
    int n_total;        /**< home + halo atoms (n_home until a plan build adds the halo) */
    int capacity;       /**< atoms the arrays hold room for (0 with the arrays NULL) */
} halox_atoms_t;

/** Initialise an empty set of atoms (arrays NULL, counts 0). stride must be 3 or 4. */
halox_status_t halox_atoms_init(halox_atoms_t *atoms, halox_real_t real, int stride,
                                size_t extra_bytes);

/** Grow the arrays to hold at least `capacity` atoms, keeping the contents. */
halox_status_t halox_atoms_reserve(halox_atoms_t *atoms, int capacity);

/** Free the arrays and reset to empty. */
void halox_atoms_free(halox_atoms_t *atoms);

/** Component c (0..stride-1) of atom i as a double. */
double halox_atoms_get(const halox_atoms_t *atoms, int i, int c);

/** Set component c of atom i (rounded to the atoms' precision). */
void halox_atoms_set(halox_atoms_t *atoms, int i, int c, double value);

#ifdef __cplusplus
}
#endif
#endif
