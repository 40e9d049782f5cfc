/* The checking library behind halox-check and the plan tests: random systems, distribution to
 * ranks, pair search under the zone rule, brute-force references, a simple pair force.
 * Independent of the planner except through its public API, so it can judge it. */
#ifndef HALOX_CHECKSYS_H
#define HALOX_CHECKSYS_H

#include <stdint.h>

#include "halox/atoms.h"
#include "halox/plan.h"

typedef enum { CHK_UNIFORM = 0, CHK_CLUSTERED = 1, CHK_SLAB = 2 } chk_dist_t;

/** A global system in double precision. */
typedef struct chk_system {
    halox_box_t box;
    int n;
    double *x; /* 3n */
} chk_system_t;

/** n random atoms: uniform, clustered (a few Gaussian blobs: some domains may be empty) or in a
 *  slab (half the box in x empty). Same seed, same system on every process. */
int chk_system_make(chk_system_t *sys, const halox_box_t *box, int n, chk_dist_t dist,
                    uint64_t seed);
void chk_system_free(chk_system_t *sys);
/** "uniform", "clustered" or "slab". */
const char *chk_dist_name(chk_dist_t dist);

/** Give every rank its home atoms (positions rounded to atoms[r].real, ids = global index).
 *  atoms[r] must be initialised. */
/** Round positions to the precision the ranks store (so references see the same values). */
void chk_system_round(chk_system_t *sys, halox_real_t real);

halox_status_t chk_distribute(const chk_system_t *sys, const halox_grid_t *grid,
                              halox_atoms_t *atoms);

/** A random system given to the ranks of a grid, with a plan per rank (initialised, for
 *  halox_reference_build): what the plan tests start from. */
typedef struct chk_world {
    int P; /* ranks */
    chk_system_t sys;
    halox_atoms_t *atoms; /* P: home atoms (then the halo a plan build fills) */
    halox_plan_t *plans;  /* P */
} chk_world_t;
/** n atoms (dist, seed) rounded to real, distributed over prm's grid into atoms of `stride`
 *  reals (the caller builds the plans: this library links no planner). Free with
 *  chk_world_free, also after a failure. */
halox_status_t chk_world_make(chk_world_t *w, const halox_plan_params_t *prm, int n,
                              chk_dist_t dist, uint64_t seed, halox_real_t real, int stride);
void chk_world_free(chk_world_t *w);

/** A case of the plan tests: grid, box edges, atoms, cut-off, buffer, distribution. */
typedef struct chk_case {
    int g[3];
    double L[3];
    int n;
    double rc, buf;
    chk_dist_t dist;
} chk_case_t;
/** The plan parameters of a case (periodic_shifts as given). */
halox_plan_params_t chk_case_params(const chk_case_t *c, int periodic_shifts);
/** How far a case's rounding may move a pair across a distance: a few units in the last place
 *  of the largest coordinate plus the halo distance, in the precision. */
double chk_case_tol(const chk_case_t *c, halox_real_t real);

/** A sorted list of pairs, each (min id << 32 | max id). */
typedef struct chk_pairs {
    uint64_t *key;
    long long n, cap;
} chk_pairs_t;
void chk_pairs_free(chk_pairs_t *p);
void chk_pairs_sort(chk_pairs_t *p);
/** Append a key (any 64 bits); -1 when out of memory. */
int chk_pairs_add(chk_pairs_t *p, uint64_t key);
/** Whether the sorted list holds the key (binary search). */
int chk_pairs_has(const chk_pairs_t *p, uint64_t key);

/** Pairs of one rank's local atoms that the plan's pair rule (halox_zone_pair, or
 *  halox_full_pair for a full-shell plan) gives to this rank with distance < rc,
 *  distances computed in double from the stored (local-frame) coordinates. Appends to out.
 *  Uses cells, so large local sets are fine. -1 when out of memory or a coordinate is not
 *  finite. */
int chk_rank_pairs(const halox_plan_t *plan, const halox_atoms_t *atoms, double rc,
                   chk_pairs_t *out);

/** All minimum-image pairs of the global system with distance < rc, in double. Brute force
 *  (every pair) below `brute_limit` atoms, else a global cell grid. -1 when out of memory or
 *  (cell grid) a coordinate is not finite. */
int chk_global_pairs(const chk_system_t *sys, double rc, long long brute_limit, chk_pairs_t *out);

/** The check's pair force on atom i from j: F = (1 - r^2/rc^2)^2 * (x_i - x_j); smooth at rc so
 *  borderline pairs contribute almost nothing. */
/** Forces on one rank's local atoms (home and halo) from the pairs the plan's pair rule gives it,
 * in the atoms' precision; f has n_total * stride reals and is overwritten. -1 (f zero or partial)
 * when out of memory or a coordinate is not finite. */
int chk_rank_forces(const halox_plan_t *plan, const halox_atoms_t *atoms, double rc, void *f);

/** Serial reference forces on every atom of the global system (3n doubles), minimum image. */
int chk_global_forces(const chk_system_t *sys, double rc, double *f);

/** The largest difference between the home forces of ranks 0..P-1 (f[r]: stride reals per atom
 *  in precision real, after the force exchange) and the global reference fg (3n doubles, by
 *  atom id); *fscale: the largest component of fg. */
double chk_home_force_error(const halox_atoms_t *atoms, void *const *f, int P, halox_real_t real,
                            int stride, const double *fg, int n, double *fscale);

/** chk_home_force_error against chk_global_forces(sys, rc): the largest difference, or -1
 *  (and *fscale 0) when out of memory or a coordinate is not finite. */
double chk_force_error(const chk_system_t *sys, double rc, const halox_atoms_t *atoms,
                       void *const *f, int P, halox_real_t real, int stride, double *fscale);

/** Compare: every pair of `strict` in `got`, every pair of `got` in `loose`, no duplicates in
 *  `got`. Returns the number of violations; prints up to `report` of them to stderr. */
long long chk_compare_pairs(const chk_pairs_t *got, const chk_pairs_t *strict,
                            const chk_pairs_t *loose, int report);

/** Deterministic small displacement of every home atom (each component by up to amp/2) that
 *  keeps it inside its domain, so that an exchange after the plan build moves new data. Same on
 *  every transport. Keep the total displacement below half the buffer so the halo stays
 *  complete: amp = buffer / (4 * steps) does. */
void chk_jiggle(const halox_plan_t *plan, halox_atoms_t *atoms, uint64_t seed, int step,
                double amp);

#endif
