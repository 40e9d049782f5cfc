/** @file
 * The rebuild step through an endpoint: each rank's plan built from its home atoms, and the
 * migration of atoms that left their domain to their new owners. Both come in two kinds:
 *  - on caller-owned arrays of a capacity the caller chose (halox_fixed_atoms_t, the calls
 *    ending in _fixed): the library never allocates, grows or moves them; when they are too
 *    small every rank fails with HALOX_ERR_NO_MEMORY, the short rank's `need` says how many
 *    entries it wants, and the caller grows its arrays and calls again. Host memory on the CPU
 *    transports, device memory on the GPU transports (where the transport keeps its atoms:
 *    halox_transport_caps_t.on_gpu). This is the interface of a code with arrays of its own
 *    (aligned, pooled, beside other per-atom arrays).
 *  - on host arrays that the library grows with realloc() (halox_atoms_t, halox/atoms.h): a
 *    convenience for a code that keeps its atoms in halox_atoms_t; the same plan and migration,
 *    bit for bit, but x, id and extra may move in every call.
 *
 * Every call here is collective over the endpoint's ranks and follows endpoint.h's contract
 * (MPI before and after, one thread at a time per endpoint, failures agreed on every rank).
 * A rebuild is: migrate, build the plan, halox_comm_bind() (the arrays may have moved and the
 * plan changed), then exchange again. A migration drops the halo: no exchange between it and
 * the next bind. */
#ifndef HALOX_BUILD_H
#define HALOX_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "halox/atoms.h"
#include "halox/endpoint.h"
#include "halox/fields.h"
#include "halox/geometry.h"
#include "halox/plan.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- on host arrays -------------------------------------------------------------------------- */

/** Build this rank's plan, exchanging counts and coordinates pulse by pulse with the other ranks
 *  (collective, blocking). atoms holds the home atoms, of the endpoint's precision and stride
 *  (HALOX_ERR_INVALID_ARG otherwise), each inside this rank's domain (halox_domain_bounds;
 *  HALOX_ERR_COORDINATE naming the atom otherwise); on return its halo part is filled (ids
 *  too) and n_total set. The arrays are grown with realloc() when the halo needs room, so
 *  atoms->x and ->id may move: bind after every build. plan is the caller's
 *  (halox_plan_init() once, halox_plan_free() at the end); its storage is reused and grown. The
 *  result is identical to halox_reference_build() for this rank. */
halox_status_t halox_comm_build_plan(halox_comm_t *comm, const halox_plan_params_t *params,
                                     halox_atoms_t *atoms, halox_plan_t *plan);

/** Move home atoms that left this rank's domain to their owners (collective, blocking).
 *  Positions are wrapped into the box first; atoms->extra travels with each atom. The global
 *  atom count is checked against expected_total; an error names the step and the ranks whose
 *  counts do not add up. Halo atoms are dropped (n_total = n_home) and the arrays may be grown
 *  with realloc(): rebuild the plan and bind afterwards. */
halox_status_t halox_comm_migrate(halox_comm_t *comm, const halox_grid_t *grid,
                                  const halox_box_t *box, halox_atoms_t *atoms,
                                  long long expected_total, long long step);

/* ---- on caller-owned arrays where the transport keeps its atoms ------------------------------ */

/** A rank's atoms in arrays the caller owns, of `capacity` entries each, where its transport keeps
 *  them: host memory for the CPU transports, device memory for the GPU transports (x from
 *  halox_comm_device_alloc() where the transport needs symmetric memory). The library reads and
 *  writes them only inside the calls that take them (and the exchanges of a bound x), never
 *  allocates, frees or moves them. */
typedef struct halox_fixed_atoms {
    void *x;       /**< capacity atoms of the endpoint's precision and stride; home atoms first */
    int32_t *id;   /**< capacity ids: the caller's, carried and never interpreted. The build copies
                        them to the halo atoms (so a halo atom names its owner's atom), the
                        migration moves them with their atoms, errors name atoms by them; any
                        values do (duplicates too) */
    uint8_t *zone; /**< capacity zones, written by the build (home atoms 0) */
    void *extra;   /**< migration: capacity records of extra_bytes that travel with each atom
                        (velocities, ...); NULL with extra_bytes 0 */
    size_t extra_bytes; /**< bytes per record of extra (0: none) */
    int n_home;         /**< home atoms, in [0, capacity]; migration updates it */
    int capacity;       /**< entries of every array; the build and the migration never exceed it */
    int n_total;        /**< out: home + halo atoms */
    int need;           /**< out, after HALOX_ERR_NO_MEMORY for want of room: the capacity this
                             rank needed at least (0 when it had room); grow the arrays and build
                             again */
    int moved;          /**< out, migration: home atoms that left this rank */
    int max_hops;       /**< out, migration: the most domains (periodic grid steps in one dimension)
                             one of them crossed */
    int async; /**< in, migration on a GPU transport: 1 returns once the arrivals' placement
                    is enqueued on halox_comm_stream() (work ordered behind it there sees the
                    atoms, as halox_comm_build_plan_fixed does; synchronise that stream before
                    reading them on the host or on another stream); 0 returns after it.
                    Plan build on a GPU transport: 1 returns once the halo's placement and the
                    read of the maps and zones are enqueued on that stream (work ordered behind
                    it sees the halo atoms and zones on the device); the plan's counts and
                    offsets are complete on return, its maps (send_index) and zones on the
                    host only once the next halox_comm_bind() of that plan returns (bind it
                    next: a bind of another plan drops them); 0 returns with the plan complete */
    const halox_field_t *carry; /**< migration: n_carry more per-atom arrays of the caller's
                                     that travel with each home atom (after `extra` in its
                                     record, copied as bytes), each with a capacity of at least
                                     `capacity` rows; where the atoms live (host or device
                                     memory, as x); the same types and counts on every rank.
                                     NULL with n_carry 0; the plan build ignores them */
    int n_carry;                /**< entries of carry, 0 to HALOX_MAX_FIELDS */
} halox_fixed_atoms_t;

/** halox_comm_build_plan() for atoms in the transport's memory (collective; blocking unless
 *  atoms->async): the halo part of x, id and zone is filled where the atoms are (on the GPU for
 *  GPU transports: selection, packing and placement run as kernels on halox_comm_stream(); only
 *  counts and the set-up messages' bytes cross to the host for the MPI transports), and the plan
 *  (maps, counts, offsets, zones) is complete on the host, identical to halox_reference_build()
 *  for this rank, ready for halox_comm_bind(). The caller's work that wrote the home atoms on
 *  the device is ordered before the call (on that stream, or synchronised). The arrays cannot
 *  grow here: when a rank's halo does not fit, every rank returns HALOX_ERR_NO_MEMORY and that
 *  rank's atoms->need says how many entries it needs (the later pulses may need more: grow with
 *  head-room). The home atoms are unchanged then; call again after growing (every rank). */
halox_status_t halox_comm_build_plan_fixed(halox_comm_t *comm, const halox_plan_params_t *params,
                                           halox_fixed_atoms_t *atoms, halox_plan_t *plan);

/** halox_comm_migrate() for atoms in the transport's memory (collective; blocking unless
 *  atoms->async): the wrap, the owners, the packing of the leavers and the placement of the
 *  arrivals run where the atoms are (on the GPU for GPU transports, as kernels; the leavers'
 *  indices and the records that move cross to the host for the transport's all-to-all). The
 *  result is halox_comm_migrate()'s on the same atoms, bit for bit: the same atoms in the same
 *  order, wrapped alike. The arrays cannot grow: when a rank's arrivals do not fit, every rank
 *  returns HALOX_ERR_NO_MEMORY before any atom moves (positions may be wrapped already:
 *  harmless) and that rank's atoms->need says how many entries it needs; grow and migrate
 *  again. */
halox_status_t halox_comm_migrate_fixed(halox_comm_t *comm, const halox_grid_t *grid,
                                        const halox_box_t *box, halox_fixed_atoms_t *atoms,
                                        long long expected_total, long long step);

/* ---- failures between rebuild calls ---------------------------------------------------------- */

/** Carry this rank's failure into the next migration, plan build or bind, instead of agreeing
 *  on it with a collective of the caller's own. For a caller whose local work between two of
 *  those calls failed on some rank: every rank makes the call as it would have, and that call
 *  does none of its work and fails on every rank at its first agreement, this rank with `st` and
 *  the message halox_last_error() held when deferring, the others with HALOX_ERR_ABORTED naming
 *  this rank. (halox_comm_migrate, _migrate_fixed, _build_plan, _build_plan_fixed and
 *  halox_comm_bind take it; the other calls leave it pending.) The first deferred failure is
 *  kept until taken; HALOX_OK clears it. Local: nothing is sent. Saves one collective per call
 *  pair. */
halox_status_t halox_comm_defer_failure(halox_comm_t *comm, halox_status_t st);

#ifdef __cplusplus
}
#endif
#endif
