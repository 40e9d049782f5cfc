/** @file
 * The halo plan: GROMACS-style half-shell import with staged forwarding, or a full shell.
 *
 * Dimensions are communicated in the fixed order x, y, z. In every pulse each rank sends to its
 * lower neighbour the atoms within the halo distance of its own lower boundary and receives from
 * its upper neighbour; received atoms are appended after the home atoms in pulse order, so each
 * pulse's atoms occupy one contiguous range. Pulse 0 of a dimension sends home atoms and the halo
 * atoms received in earlier dimensions (so edges and corners arrive without diagonal messages);
 * pulse p > 0 forwards the atoms received in pulse p-1 of the same dimension (for halo distances
 * larger than a domain). After the plan, a rank holds every atom image whose coordinates lie in
 * [lo_d, hi_d + halo_dist) in every dimension d.
 *
 * Zones: bit d of an atom's zone is set when the atom was imported across the upper boundary in
 * dimension d. A pair of local atoms is computed on this rank iff (zone_a & zone_b) == 0 (and
 * the distance is below the cut-off). That is the eighth-shell rule: each pair in the periodic
 * box is computed by exactly one rank, the one owning the corner (min x, min y, min z) of the
 * pair.
 *
 * Periodic images: copies or shifts (params.periodic_shifts). In a dimension with one rank the
 * rank is its own lower and upper neighbour. With periodic_shifts = 0 (copies, the default of
 * zero-initialised parameters) such a dimension still has its pulses: the rank copies its own
 * atoms near the lower boundary, shifted by the box edge, as halo atoms ("self images"), and
 * the rule above needs nothing else. With periodic_shifts = 1 (shifts) every dimension with one
 * rank has no pulses at all: no atom is imported in it, zone bit d is never set there, the domain
 * is the whole box edge, and the caller computes pairs with the minimum image in that dimension
 * (the dimensions are listed in plan.shift_dims; plain differences in the others). The rule stays
 * exact: every pair within the cut-off is computed exactly once over all ranks, with the minimum
 * image in the shift dimensions. Shifts need a box edge above twice the halo distance
 * (cutoff + buffer) in those dimensions, so that a pair has at most one image within the list
 * radius (halox_plan_check refuses less). A grid of 1x1x1 then has no pulses: n_pulses is 0 and
 * every exchange is a no-op.
 *
 * Full shell (params.full_shell = 1): each dimension with pulses has, after the pulses above,
 * as many pulses the other way (from_lower): each rank sends to its upper neighbour the atoms
 * within the halo distance of its own upper boundary (minus the box edge when that neighbour
 * wraps) and receives from its lower neighbour. Forwarding is the same: pulse p > 0 of a
 * direction forwards what pulse p-1 of that direction delivered; pulse 0 of either direction
 * sends home atoms and the halo atoms of earlier dimensions (both directions), never atoms
 * received in its own dimension. After the plan a rank holds every atom image in
 * [lo_d - halo_dist, hi_d + halo_dist) in every dimension d with pulses. Zone bit d: imported
 * across the upper boundary in d; bit 3 + d: across the lower one.
 *
 * The full shell's pair rule (newton on), halox_full_pair: a pair of local atoms is computed iff
 * both are home atoms, or one is home and the other's zone points into the upper half-space
 * (of the dimensions it crossed, the first was crossed upwards: halox_full_zone_upper). Why
 * exactly once: a pair of home atoms of one rank (plain difference, or the minimum image in the
 * shift dimensions) is computed there, and is nowhere else a home-halo pair. Any other pair
 * within the cut-off is an atom i with an image of atom j, shifted by a lattice vector n, where
 * the image lies in another domain of the periodic tiling; the full shell puts it on i's owner
 * as (i home, j's image halo), zone z, and on j's owner as (j home, i's image shifted by -n
 * halo), zone z' (the same rank when both have one owner: then these are two pairs of its list).
 * Per dimension the zone says whether the image's domain lies above or below the home atom's,
 * so z' is z with the two directions swapped, and exactly one of z, z' points upwards. Two halo
 * atoms are never computed. The cut-off below half of every box edge makes each such pair unique
 * (no second image within the cut-off). With newton off (full neighbour lists) compute every
 * pair of a home atom with any local atom within the cut-off, forces on the home atom only:
 * every pair is then seen from both of its atoms' owners. The force exchange adds nothing then
 * (zero forces on the halo) but still ends the step: endpoint.h pairs every coordinate exchange
 * with one.
 */
#ifndef HALOX_PLAN_H
#define HALOX_PLAN_H

#include <stdint.h>

#include "halox/atoms.h"
#include "halox/geometry.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most pulses in one dimension and direction. */
#define HALOX_MAX_PULSES_PER_DIM 4
/** Most pulses in a plan: three dimensions, two directions with the full shell. */
#define HALOX_MAX_PULSES (2 * 3 * HALOX_MAX_PULSES_PER_DIM)

/** Parameters that decide a plan. */
typedef struct halox_plan_params {
    halox_grid_t grid;   /**< the grid of ranks */
    halox_box_t box;     /**< the periodic box */
    double cutoff;       /**< interaction cut-off; must be below half of every box edge */
    double buffer;       /**< pair-list buffer (skin); the halo distance is cutoff + buffer */
    int periodic_shifts; /**< 0: a dimension with one rank imports its own atoms as periodic
                              images (copies); 1: it has no pulses and the caller takes the
                              minimum image there (plan.shift_dims); see the header comment */
    int full_shell;      /**< 0: half shell (the default of zero-initialised parameters): atoms
                              come from the upper neighbours only, pairs by halox_zone_pair;
                              1: full shell: from both neighbours in every dimension with
                              pulses, pairs by halox_full_pair; see the header comment. Every
                              transport builds and exchanges it, the GPU ones included */
} halox_plan_params_t;

/** One pulse of one rank, in both roles: sender to send_rank, receiver from recv_rank. */
typedef struct halox_pulse {
    int dim;           /**< 0 = x, 1 = y, 2 = z */
    int pulse_in_dim;  /**< 0 .. pulses_per_dim[dim]-1, counted in its direction */
    int from_lower;    /**< 0: from the upper neighbour to the lower one (every half-shell
                            pulse); 1 (full shell only): from the lower neighbour to the upper
                            one */
    int send_rank;     /**< gets our atoms: the lower neighbour in dim (the upper one when
                            from_lower) */
    int recv_rank;     /**< sends us its atoms: the upper neighbour in dim (the lower one when
                            from_lower) */
    int send_count;    /**< atoms we send (may be 0: the pulse still signals) */
    int *send_index;   /**< local indices of the atoms we send, ascending */
    int dep_offset;    /**< send_index[0, dep_offset) are home atoms, sendable at once */
    uint32_t dep_mask; /**< bit j set: send_index holds atoms received in pulse j */
    double shift;      /**< added to component dim of every atom we send: box length when the
                            lower neighbour wraps around the box (minus the box length when
                            from_lower and the upper neighbour wraps), else 0 */
    int recv_count;    /**< atoms we receive */
    int recv_offset;   /**< received atoms land at local indices [recv_offset, +recv_count) */
} halox_pulse_t;

/** A rank's halo plan. Plain data that transports read (the GPU transports copy what they need
 *  to the device). Built by halox_reference_build(), halox_comm_build_plan() or
 *  halox_comm_build_plan_fixed(); the caller owns the struct, the library its storage (free it
 *  with halox_plan_free()). */
typedef struct halox_plan {
    halox_plan_params_t params; /**< the parameters it was built from */
    double halo_dist;           /**< cutoff + buffer: the depth of the halo */
    int rank;                   /**< this rank */
    int nranks;                 /**< ranks in the grid */
    int coord[3];               /**< this rank's grid coordinates (halox_grid_coords()) */
    double lo[3];               /**< lower bounds of this rank's domain (halox_domain_bounds()) */
    double hi[3];               /**< upper bounds of this rank's domain, excluded */
    int n_home;                 /**< home atoms: local indices [0, n_home) */
    int n_total;                /**< home + halo atoms: the halo is [n_home, n_total) */
    int n_pulses;               /**< pulses in use, pulse[0, n_pulses), x first, then y, z; in
                                     each dimension the pulses from the upper neighbour, then
                                     (full shell) those from the lower one */
    int pulses_per_dim[3];      /**< pulses per direction in each dimension (the full shell has
                                     twice as many in the plan); 0 in the shift dimensions */
    int shift_dims;             /**< bit d set: dimension d has one rank and periodic_shifts is on,
                                     so it has no pulses and pairs take the minimum image in it (the
                                     domain is the whole box edge); 0 with copies */
    halox_pulse_t pulse[HALOX_MAX_PULSES]; /**< the pulses, in exchange order */
    uint8_t *zone;                         /**< n_total zones; home atoms 0 (bit d: imported
                                                across the upper boundary in d; full shell
                                                also bit 3 + d: across the lower one) */
    long long generation; /**< incremented on every build, so stale copies can be detected */
    int zone_capacity;    /**< library storage: entries allocated in zone */
    int send_capacity[HALOX_MAX_PULSES]; /**< library storage: entries allocated in each
                                              pulse's send_index */
} halox_plan_t;

/** Pair rule of the half shell: compute the pair of local atoms with zones za and zb on this
 *  rank? Each pair within the cut-off is computed by exactly one rank (the eighth-shell rule). */
static inline int halox_zone_pair(uint8_t za, uint8_t zb) { return (za & zb) == 0; }

/** Whether a full-shell zone z points into the upper half-space: of the dimensions in which the
 *  atom was imported, the first (x, then y, z) was crossed at the upper boundary. */
static inline int halox_full_zone_upper(uint8_t z)
{
    unsigned m = (z | (z >> 3)) & 7u; /* the dimensions crossed, either way */
    return (m & (0u - m) & z) != 0;   /* the lowest of them crossed upwards */
}

/** Pair rule of the full shell (newton on): compute the pair of local atoms with zones za and zb
 *  on this rank? Both home (zone 0), or one home and the other's zone in the upper half-space
 *  (halox_full_zone_upper); never two halo atoms. Each pair within the cut-off is computed by
 *  exactly one rank, with forces on both atoms; halox_comm_forces() sums the halo's into the
 *  owners. With newton off, compute instead every pair of a home atom with any local atom
 *  (forces on the home atom only; the force exchange adds nothing): see the header comment. */
static inline int halox_full_pair(uint8_t za, uint8_t zb)
{
    return za == 0 ? (zb == 0 || halox_full_zone_upper(zb))
                   : (zb == 0 && halox_full_zone_upper(za));
}

/** Validate parameters and compute the pulses per dimension (same on every rank; 0 in the
 *  shift dimensions). Errors say which dimension fails and what would fix it. */
halox_status_t halox_plan_check(const halox_plan_params_t *params, int pulses_per_dim_p[3]);

/** Initialise an empty plan (no allocation). */
void halox_plan_init(halox_plan_t *plan);

/** Free a plan's storage. */
void halox_plan_free(halox_plan_t *plan);

/** Total bytes of coordinates a rank sends per coordinate exchange under this plan. */
long long halox_plan_send_bytes(const halox_plan_t *plan, halox_real_t real, int stride);

/** Build the plans of all ranks in one process, serially: the reference. atoms[r] holds rank r's
 *  home atoms (n_home, x, id); on return its halo part and n_total are filled and plans[r] is
 *  rank r's plan. Home atoms must lie in their rank's domain (HALOX_ERR_COORDINATE otherwise). */
halox_status_t halox_reference_build(const halox_plan_params_t *params, halox_atoms_t *atoms,
                                     halox_plan_t *plans);

/** Reference coordinate exchange over all ranks: writes every rank's halo coordinates from the
 *  owners' current home coordinates, pulse by pulse, adding shifts. x[r] is rank r's coordinate
 *  array (stride reals per atom). Transports must reproduce it bit for bit. */
void halox_reference_coords(const halox_plan_t *plans, int nranks, halox_real_t real, int stride,
                            void *const *x);

/** Reference force exchange over all ranks: pulses in reverse order, each receiver sends the
 *  forces of the atoms it received and the sender adds them to the atoms of its map; forwarded
 *  atoms collect forces from later pulses before they are sent back. f[r] holds n_total forces
 *  (stride reals per atom); on return the home forces hold every contribution. */
void halox_reference_forces(const halox_plan_t *plans, int nranks, halox_real_t real, int stride,
                            void *const *f);

#ifdef __cplusplus
}
#endif
#endif
