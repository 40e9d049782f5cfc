/** @file
 * Periodic orthorhombic box and the grid of ranks that splits it into equal domains. */
#ifndef HALOX_GEOMETRY_H
#define HALOX_GEOMETRY_H

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Orthorhombic periodic box with edges len[0..2]; positions live in [0, len[d]). */
typedef struct halox_box {
    double len[3]; /**< edge lengths in x, y, z, in the caller's length unit */
} halox_box_t;

/** nx x ny x nz grid of ranks. Rank r has grid coordinates (cx, cy, cz) with
 *  r = cx + nx * (cy + ny * cz). */
typedef struct halox_grid {
    int n[3]; /**< ranks along x, y, z: nx, ny, nz */
} halox_grid_t;

/** Check a box: every edge finite and > 0. */
halox_status_t halox_box_check(const halox_box_t *box);

/** Check a grid: every n[d] >= 1 and the product fits an int. */
halox_status_t halox_grid_check(const halox_grid_t *grid);

/** Parse "NXxNYxNZ" (also "NX,NY,NZ"). */
halox_status_t halox_grid_parse(const char *text, halox_grid_t *grid_p);

/** Number of ranks in the grid; -1 for a grid that halox_grid_check() refuses (a dimension
 *  below 1, more than 2^31-1 ranks). */
int halox_grid_size(const halox_grid_t *grid);

/** The default grid for P ranks (P >= 1): the factorisation nx >= ny >= nz with the smallest
 *  halo surface (nx ny + ny nz + nx nz): 1 -> 1x1x1, 2 -> 2x1x1, 4 -> 2x2x1, 8 -> 2x2x2. */
void halox_grid_default(int P, halox_grid_t *grid_p);

/** Grid coordinates of a rank. */
void halox_grid_coords(const halox_grid_t *grid, int rank, int coord_p[3]);

/** Rank at grid coordinates; each coordinate is wrapped periodically first. */
int halox_grid_rank(const halox_grid_t *grid, const int coord[3]);

/** Neighbour of a rank one step in dimension dim, direction -1 (lower) or +1 (upper). */
int halox_grid_neighbour(const halox_grid_t *grid, int rank, int dim, int direction);

/** Bounds [lo, hi) of the domain of a rank. */
void halox_domain_bounds(const halox_grid_t *grid, const halox_box_t *box, int rank, double lo_p[3],
                         double hi_p[3]);

/** Grid coordinate in dimension dim owning position component x (x already in [0, len)).
 *  The one definition of ownership used everywhere (planner checks, migration). */
int halox_owner_coord(const halox_grid_t *grid, const halox_box_t *box, int dim, double x);

/** Rank owning a position that lies in the box. */
int halox_owner_rank(const halox_grid_t *grid, const halox_box_t *box, const double x[3]);

/** Wrap a coordinate into [0, len) exactly (never returns len itself). */
double halox_wrap(double x, double len);

#ifdef __cplusplus
}
#endif
#endif
