/* Internal: the caller's fixed arrays of halox_fixed_atoms_t (halox_comm_build_plan_fixed,
 * halox_comm_migrate_fixed): their checks, and their view as host atoms that cannot grow (the
 * CPU transports' stores run on it). */
#ifndef HALOX_CORE_FIXED_ATOMS_H
#define HALOX_CORE_FIXED_ATOMS_H

#include "halox/build.h"
#include "halox/endpoint.h"

/* HALOX_OK, or an error naming `op` and rank: x and id (with `zone`: zone too; with extra_bytes:
 * extra) required, capacity >= 1, n_home in [0, capacity]. */
halox_status_t halox__fixed_atoms_check(const halox_fixed_atoms_t *a, int rank, const char *op,
                                        int zone);

/* The arrays as halox_atoms_t of the endpoint's precision and stride (no storage of its own:
 * never free or grow it). */
void halox__fixed_atoms_view(halox_atoms_t *view, halox_real_t real, int stride,
                             const halox_fixed_atoms_t *a);

#endif
