/** @file
 * A rank's endpoint on a transport: create it, bind a plan with the coordinate and force arrays,
 * exchange coordinates (forward) and forces (reverse), read its statistics, destroy it. The
 * transport is chosen by name at run time (halox/transport.h lists them; halox/topology.h
 * chooses one). Plans and migration through an endpoint: halox/build.h; its collectives:
 * halox/collectives.h; what only GPU transports have (stream, device memory, graphs):
 * halox/gpu.h.
 *
 * The contract every endpoint call keeps (each declaration adds its own):
 *  - Life cycle. On the MPI-based transports (every one but `threads`) MPI_Init (or
 *    MPI_Init_thread) comes before halox_comm_create() and MPI_Finalize after
 *    halox_comm_destroy(): halox never initialises or finalises MPI. The NVSHMEM transports
 *    initialise NVSHMEM once per process, at the first endpoint, so every NVSHMEM endpoint of a
 *    process spans the same processes; NVSHMEM is finalised at exit.
 *  - Collective calls are made by every rank of the endpoint, in the same order. A failure on
 *    any rank fails the call on every rank (the ranks agree before acting), so no rank waits for
 *    one that stopped; every wait is bounded by the endpoint's timeout. After HALOX_ERR_TIMEOUT
 *    or HALOX_ERR_COMM an endpoint may refuse every later call with HALOX_ERR_STATE (messages
 *    may still be in flight): destroy it and end the job (MPI_Abort).
 *  - Blocking. Every call returns with its work done, except the exchanges of the GPU
 *    transports and the device builds asked to return early (halox_fixed_atoms_t.async), which
 *    are ordered on the endpoint's stream (halox_transport_caps_t.stream_ordered; halox/gpu.h).
 *  - Threads. An endpoint is used by one thread at a time (its calls take no locks); endpoints
 *    of different ranks may be used at once from different threads (the `threads` transport:
 *    one thread per rank). The MPI-based transports call MPI from the calling thread: initialise
 *    MPI with the thread level that needs (MPI_THREAD_FUNNELED when only the main thread calls
 *    halox, MPI_THREAD_MULTIPLE when several threads use endpoints at once).
 *    halox_last_error() is per thread.
 *  - Rank order. An endpoint's rank is the process's rank in args->mpi_comm (MPI-based
 *    transports) or args->rank (`threads`); halox gives rank r the domain at grid coordinates
 *    halox_grid_coords(grid, r): x fastest, r = cx + nx * (cy + ny * cz). An MPI Cartesian
 *    communicator numbers its last dimension fastest and may reorder ranks: pass it through
 *    halox_grid_from_cart(), whose communicator gives each process the domain of its own
 *    Cartesian coordinates.
 *  - Ownership. The caller owns every plan and array it passes; the library never frees them.
 *    An endpoint keeps pointers to the bound plan, x and f until the next bind or its
 *    destruction: they must outlive the binding, unchanged except as the calls below say. A
 *    team (halox/topology.h) and a stream given in halox_comm_args_t outlive the endpoint. */
#ifndef HALOX_ENDPOINT_H
#define HALOX_ENDPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "halox/atoms.h"
#include "halox/geometry.h"
#include "halox/plan.h"
#include "halox/status.h"
#include "halox/topology.h"
#include "halox/transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A rank's endpoint (opaque). */
typedef struct halox_comm halox_comm_t;

/** The longest bound on a wait that halox takes, in seconds (about 11.6 days): a larger value,
 *  inf or NaN, given or in HALOX_TIMEOUT_S, is refused (HALOX_ERR_INVALID_ARG). */
#define HALOX_TIMEOUT_MAX_S 1e6

/** The wait bound that an endpoint created with timeout_s would use (0: HALOX_TIMEOUT_S, else
 *  60 s), in *bound_p (may be NULL). HALOX_ERR_INVALID_ARG, naming the value, when timeout_s or
 *  HALOX_TIMEOUT_S is not finite, not > 0 or above HALOX_TIMEOUT_MAX_S: tools call it while
 *  reading their options, so a bad bound is refused before anything starts. Local. */
halox_status_t halox_timeout_resolve(double timeout_s, double *bound_p);

/** What a transport needs to create a rank's endpoint. Unused fields stay zero. */
typedef struct halox_comm_args {
    halox_real_t real;  /**< precision of coordinates and forces (0: HALOX_FLOAT) */
    int stride;         /**< reals per atom (3 or 4; 0: 3) */
    double timeout_s;   /**< bound on every wait, > 0 and at most HALOX_TIMEOUT_MAX_S; 0:
                             HALOX_TIMEOUT_S or 60 s; anything else is refused */
    halox_team_t *team; /**< `threads`: the team the rank belongs to */
    int rank;           /**< `threads`: this thread's rank in the team */
    void *mpi_comm;     /**< MPI-based transports: pointer to an MPI_Comm (NULL: world); the
                             endpoint duplicates it, so the caller may free it after creation */
    int device;         /**< GPU transports: CUDA device ordinal, or -1 to pick the local
                             rank modulo the visible devices (0 is device 0) */
    int device_set;     /**< nonzero when `device` was given (so 0 is not "unset") */
    void *stream;       /**< GPU transports: cudaStream_t the exchanges are ordered on
                             (NULL: the endpoint creates a high-priority stream); it must
                             outlive the endpoint */
} halox_comm_args_t;

/** A code's own 3-D Cartesian MPI communicator as halox's grid and rank order: *grid_p gets the
 *  communicator's dimensions (dims[0], dims[1], dims[2] as x, y, z: pad a 1-D or 2-D code's
 *  communicator to 3 dimensions with 1s), and *comm_out (an MPI_Comm, for
 *  halox_comm_args_t.mpi_comm) the same processes renumbered so that the process at Cartesian
 *  coordinates (c0, c1, c2) is halox's rank c0 + n0 * (c1 + n1 * c2), whose domain is the cell
 *  (c0, c1, c2) of the grid: each process keeps the domain of its own coordinates. cart_comm
 *  points to an MPI_Comm with a Cartesian topology of 3 dimensions, all periodic (halox's box
 *  is). Collective over cart_comm (MPI_Comm_split); the caller frees *comm_out
 *  (MPI_Comm_free) once the endpoints over it are created. HALOX_ERR_INVALID_ARG naming what is
 *  wrong; HALOX_ERR_UNAVAILABLE in a build without MPI. */
halox_status_t halox_grid_from_cart(const void *cart_comm, halox_grid_t *grid_p, void *comm_out);

/** Create this rank's endpoint on the named transport in *comm_p (NULL on failure).
 *  Collective over the ranks (MPI: the ranks of args->mpi_comm; `threads`: the team's), bounded
 *  by the timeout; blocking. MPI initialised first (see above). */
halox_status_t halox_comm_create(const char *transport, const halox_comm_args_t *args,
                                 halox_comm_t **comm_p);

/** Destroy an endpoint (NULL is fine); blocking. Collective on the MPI-based transports (the
 *  endpoint's MPI communicator is freed; the GPU transports drain their stream and free
 *  symmetric memory together, bounded by the timeout, and after a failure leave allocated what a
 *  peer may still touch); `threads`: local, once no peer is inside an exchange. Free what
 *  halox_comm_device_alloc() gave first; MPI_Finalize and halox_team_destroy() come after. */
void halox_comm_destroy(halox_comm_t *comm);

/** This rank's number in [0, size) (local). */
int halox_comm_rank(const halox_comm_t *comm);
/** The ranks of the endpoint (local). */
int halox_comm_size(const halox_comm_t *comm);
/** The transport's name (static storage; local). */
const char *halox_comm_transport(const halox_comm_t *comm);

/** The capabilities of the endpoint's transport in *caps (halox_transport_caps_t,
 *  halox/transport.h): where bound arrays live, whether exchanges are stream-ordered,
 *  GPU-initiated, capturable, need symmetric memory, can run inside the caller's kernels.
 *  Local; HALOX_ERR_INVALID_ARG when comm or caps is NULL (*caps all zero then). */
halox_status_t halox_comm_caps(const halox_comm_t *comm, halox_transport_caps_t *caps);

/** Bind the coordinate and force arrays that the following exchanges use (collective,
 *  blocking): x as filled by the plan build, f with room for plan->n_total forces, both of the
 *  endpoint's precision and stride; device pointers on GPU transports (from
 *  halox_comm_device_alloc() where caps.symmetric), host pointers otherwise. The endpoint keeps
 *  plan, x and f until the next bind, and its exchanges read them: rebuild, move or free them
 *  only to bind again (or to destroy the endpoint). Call after every
 *  plan build and whenever an array moves. The plan build filled the halo, so the first exchange
 *  after a bind may be a force exchange (no coordinate exchange needed on rebuild steps). A
 *  failure on any rank (bad arguments included) fails the bind on every rank, and nothing is
 *  bound then: exchanges return HALOX_ERR_STATE until a bind succeeds. After an exchange failed
 *  (a timeout, a peer's error) keep x and f allocated until the job ends: a message of a late
 *  peer that MPI could not cancel may still land in the halo of x or be sent from f. (The
 *  collectives and the set-up calls of the MPI-based transports copy through the endpoint's own
 *  memory, so their buffers are the caller's to free as soon as they return, failed or not.) */
halox_status_t halox_comm_bind(halox_comm_t *comm, const halox_plan_t *plan, void *x, void *f);

/** Coordinate halo exchange (collective): fills the halo part of the bound x from the owners'
 *  home atoms, pulse by pulse with the periodic shifts, bit for bit as
 *  halox_reference_coords(). The halo stays valid until halox_comm_forces() is called; every
 *  coordinate exchange must be followed by a force exchange before the next one (the causal
 *  chain that protects receivers' arrays from being overwritten while in use). CPU transports:
 *  blocking; GPU transports: ordered on halox_comm_stream(), may return before it completes.
 *  Between the call and its completion the caller writes neither x's halo nor its home atoms. */
halox_status_t halox_comm_coords(halox_comm_t *comm);

/** Force halo exchange (collective): sends the forces on halo atoms back to their owners and
 *  adds them there, pulses in reverse order, bit for bit as halox_reference_forces(). On
 *  completion the home forces of the bound f are complete (CPU transports: on return; GPU
 *  transports: ordered on halox_comm_stream()). Halo entries are not cleared, and those of
 *  forwarded halo atoms also hold the contributions added on their way back: treat the halo part
 *  of f as scratch. */
halox_status_t halox_comm_forces(halox_comm_t *comm);

/** Exchange statistics of this rank since creation. */
typedef struct halox_comm_stats {
    long long coord_exchanges; /**< calls of halox_comm_coords() */
    long long force_exchanges; /**< calls of halox_comm_forces() */
    long long bytes_sent;      /**< payload bytes sent in coordinate and force exchanges */
    double coord_seconds;      /**< wall time in halox_comm_coords() */
    double force_seconds;      /**< wall time in halox_comm_forces() */
    long long device_bytes;    /**< NVSHMEM transports: symmetric memory this process holds (x and f
                                    from halox_comm_device_alloc, force buffers, staging, signals),
                                    as of the last bind; 0 for the other transports */
    long long direct_messages; /**< messages of halox_comm_build_plan_fixed() and
                                    halox_comm_migrate_fixed() that went device to device
                                    (NVSHMEM transports, HALOX_NVSHMEM_DIRECT_MESSAGES); the
                                    others were staged through the host */
    long long collectives;     /**< collectives the library ran (agreements, gathers, reductions,
                                    barriers: halox_comm_allgather, `_allreduce_*`, _barrier and
                                    those inside migrations, plan builds and binds) */
    double collective_seconds; /**< wall time inside them, the wait for the slowest rank included */
    long long device_waits;    /**< GPU transports: host waits for the endpoint's stream (inside
                                    migrations, plan builds, binds, messages, exchanges) */
    double device_wait_seconds; /**< wall time inside them */
    long long field_exchanges;  /**< field exchanges (halox/fields.h): each halox_comm_forward()
                                     and _reverse(), and each coordinate or force exchange that
                                     carried bound fields; their bytes are in bytes_sent */
    double field_seconds;       /**< wall time in them (on stream-ordered transports: to enqueue) */
    long long fields_in_kernel; /**< of the coordinate (force) exchanges that carried bound
                                     forward (reverse) fields, those whose own kernels moved the
                                     fields with the atoms (forces) (nvshmem-fused:
                                     halox/fields.h) */
} halox_comm_stats_t;

/** This rank's statistics in *stats_p (local; host times of the calls: on stream-ordered
 *  transports the time to enqueue). */
void halox_comm_get_stats(const halox_comm_t *comm, halox_comm_stats_t *stats_p);

#ifdef __cplusplus
}
#endif
#endif
