/* Internal: what the files that build the initial system share. halox_md_system_create
 * (system.c) calls the builders, each calling only the files listed before it in md_internal.h:
 *   system_cache.c   HALOX_SYSTEM_CACHE: random placements kept as raw doubles
 *   system_fcc.c     the fcc lattice
 *   system_random.c  random non-overlapping placement (through the cache)
 *   read_file.c      a frame of an extended-XYZ file or a LAMMPS text dump (read.h)
 * Each builder allocates the system (md__system_alloc) and sets its box and positions. */
#ifndef HALOX_MD_SYSTEM_H
#define HALOX_MD_SYSTEM_H

#include <stdlib.h>

#include "halox/md.h"
#include "halox/status.h"

/* Positions and zeroed velocities for n atoms (on failure the caller destroys the system). */
static inline halox_status_t md__system_alloc(halox_md_system_t *sys, long long n)
{
    sys->natoms = n;
    sys->x = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    sys->v = calloc(3 * (size_t)(n > 0 ? n : 1), sizeof(double));
    if (!sys->x || !sys->v)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for a system of %lld atoms", n);
    return HALOX_OK;
}

/* system_cache.c */
/* The cache file of cfg's random placement into path (1), or 0: no cache (HALOX_SYSTEM_CACHE
 * unset) or a path longer than len. */
int md__system_cache_path(const halox_md_config_t *cfg, char *path, size_t len);
/* *hit 1: the positions of cfg's random placement (sys's box and min_distance set) were read
 * from the cache; 0: no cache, no file yet, or one of another format (replaced when the
 * placement is written). A file that fails a check (not a regular file, its size, header,
 * checksum, a coordinate not finite or outside the box): HALOX_ERR_IO naming the file. */
halox_status_t md__system_cache_read(const halox_md_config_t *cfg, halox_md_system_t *sys,
                                     int *hit);
/* Keep the placement in the cache; a failure is ignored (a cache only: the run goes on). */
void md__system_cache_write(const halox_md_config_t *cfg, const halox_md_system_t *sys);

/* system_fcc.c */
halox_status_t md__fcc(const halox_md_config_t *cfg, halox_md_system_t *sys);

/* system_random.c */
halox_status_t md__random(const halox_md_config_t *cfg, halox_md_system_t *sys);

/* read_file.c */
/* Scan `path`, choose frame `want` (from 0, or HALOX_MD_READ_LAST) and fill info; with sys,
 * read that frame's atoms into it (box from the frame, else box_given; velocities where the
 * frame has them and want_v). */
halox_status_t md__read_file(const char *path, long long want, const double box_given[3],
                             int want_v, halox_md_system_t *sys, halox_md_read_info_t *info);

#endif
