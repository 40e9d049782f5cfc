/* A rank's endpoint on a transport: distributed plan build, halo exchange, migration and the few
 * collectives an engine needs. The transport is chosen by name at run time. */
#ifndef HALOX_COMM_H
#define HALOX_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "halox/atoms.h"
#include "halox/plan.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct halox_comm halox_comm_t;
typedef struct halox_team halox_team_t;

/** The longest bound on a wait that halox takes, in seconds (about 11.6 days): a larger value,
 *  inf or NaN, given or in HALOX_TIMEOUT_S, is refused (HALOX_ERR_INVALID_ARG). */
#define HALOX_TIMEOUT_MAX_S 1e6

/** The wait bound that an endpoint created with timeout_s would use (0: HALOX_TIMEOUT_S, else
 *  60 s), in *bound_p (may be NULL). HALOX_ERR_INVALID_ARG, naming the value, when timeout_s or
 *  HALOX_TIMEOUT_S is not finite, not > 0 or above HALOX_TIMEOUT_MAX_S: tools call it while
 *  reading their options, so a bad bound is refused before anything starts. */
halox_status_t halox_timeout_resolve(double timeout_s, double *bound_p);

/** What a transport needs to create a rank's endpoint. Unused fields stay zero. */
typedef struct halox_comm_args {
    halox_real_t real;  /**< precision of coordinates and forces */
    int stride;         /**< reals per atom (3 or 4) */
    double timeout_s;   /**< bound on every wait, > 0 and at most HALOX_TIMEOUT_MAX_S; 0:
                             HALOX_TIMEOUT_S or 60 s; anything else is refused */
    halox_team_t *team; /**< `threads`: the team the rank belongs to */
    int rank;           /**< `threads`: this thread's rank in the team */
    void *mpi_comm;     /**< MPI-based transports: pointer to an MPI_Comm (NULL: world) */
    int device;         /**< GPU transports: CUDA device ordinal, or -1 to pick the local
                             rank modulo the visible devices (0 is device 0) */
    int device_set;     /**< nonzero when `device` was given (so 0 is not "unset") */
    void *stream;       /**< GPU transports: cudaStream_t the exchanges are ordered on
                             (NULL: the endpoint creates a high-priority stream) */
} halox_comm_args_t;

/** Whether the transport moves data in GPU memory (bind then takes device pointers). */
int halox_transport_on_gpu(const char *name);

/** What a transport needs from the launch and offers its caller: ask these instead of comparing
 *  transport names. */
typedef struct halox_transport_caps {
    int threads;    /**< ranks are threads of one process (a halox_team_t); else MPI processes */
    int on_gpu;     /**< data in GPU memory: bind takes device pointers, exchanges are ordered on
                         the endpoint's stream */
    int capturable; /**< halox_comm_coords()/forces() can be captured in a CUDA graph */
    int symmetric;  /**< x and f must come from halox_comm_device_alloc() (symmetric memory) */
    int gpu_shared; /**< several ranks may share one GPU (under MPS); 0 for CPU transports */
    int inline_kernels; /**< the exchange can run inside the caller's kernels
                             (halox_comm_inline_view, halox/inline.h) */
    int graph_update;   /**< a graph that captured the exchanges may be moved to a new capture's
                             arguments with cudaGraphExecUpdate (the capture owns no resources
                             in the graph); 0: instantiate each new capture */
} halox_transport_caps_t;

/** The capabilities of a transport of this build in *caps. HALOX_ERR_UNKNOWN_TRANSPORT, naming
 *  the transports this build has, when `name` is not one of them (*caps is then all zero). */
halox_status_t halox_transport_caps(const char *name, halox_transport_caps_t *caps);

/** CUDA devices this process can use: 0 in a build without CUDA, without a driver or without a
 *  visible GPU (CUDA_VISIBLE_DEVICES). */
int halox_gpu_count(void);

/** GPU transports: the cudaStream_t the exchanges are enqueued on (NULL for CPU transports).
 *  halox_comm_coords()/halox_comm_forces() on a GPU transport order their work on this stream
 *  and may return before it completes; synchronise the stream (or wait on an event recorded on
 *  it) before reading the results on the host. */
void *halox_comm_stream(const halox_comm_t *comm);

/** GPU transports: declare (1) that every kernel of the caller that reads this endpoint's device
 *  state (the bound arrays' halo, an nvshmem-inline view, the maps) is enqueued on
 *  halox_comm_stream() or behind an event recorded on it after the bind; 0 (the default) makes
 *  no such promise. An ordered caller's binds may return with their uploads still enqueued
 *  (the NVSHMEM transports: one host wait fewer per bind; a failed upload then fails the next
 *  call instead of the bind). Per rank, no agreement; CPU transports ignore it. */
halox_status_t halox_comm_set_stream_ordered(halox_comm_t *comm, int ordered);

/** CUDA graphs. halox_comm_graph_mode(comm, 1) before capturing halox_comm_coords() and
 *  halox_comm_forces() on the transport's stream, (comm, 0) after: in between the exchanges
 *  only enqueue work (no host-side completion checks, which a capture cannot hold), so the
 *  caller must bound its own waits for each replay. Transports that wait on the host inside an
 *  exchange (mpi-staged, the CPU transports) refuse with HALOX_ERR_UNAVAILABLE. */
halox_status_t halox_comm_graph_mode(halox_comm_t *comm, int on);

/** Count one replay of a captured coordinate + force exchange (the step counter and the
 *  statistics advance as if both had been called; nothing is enqueued). */
halox_status_t halox_comm_graph_replayed(halox_comm_t *comm);

/** GPU transports: device memory for the arrays later bound as x and f. Collective: every rank
 *  calls it, in the same order, with its own size; ptr_p gets memory for at least `bytes`.
 *  The NVSHMEM transports allocate symmetric memory (the largest rank's size, on every rank) so
 *  that peers can store into it and MUST be bound to x and f from here; the other GPU transports
 *  take any device memory and allocate with cudaMalloc. Errors name the bytes needed (and
 *  NVSHMEM_SYMMETRIC_SIZE when the symmetric heap is too small). HALOX_ERR_UNAVAILABLE for CPU
 *  transports. */
halox_status_t halox_comm_device_alloc(halox_comm_t *comm, size_t bytes, void **ptr_p);
/** Free memory from halox_comm_device_alloc(); collective, in the same order on every rank. */
halox_status_t halox_comm_device_free(halox_comm_t *comm, void *ptr);

/** The CPUs the calling thread may run on, as a Linux CPU list ("0-15,32-47"), for reports of
 *  the binding (HALOX_CPU_AFFINITY=gpu binds GPU ranks near their GPU at endpoint creation).
 *  0 on success, -1 when unknown or buf is too small. */
int halox_affinity_describe(char *buf, size_t len);

/** What the automatic choice of transport looks at. */
typedef struct halox_topology {
    int ranks;           /**< ranks of the job */
    int mpi;             /**< the ranks are MPI processes (else threads of one process) */
    int gpus;            /**< distinct GPUs the ranks use (0: the data stays on the CPU) */
    int ranks_per_gpu;   /**< most ranks on one GPU */
    int load_store;      /**< every rank's GPU can load and store into every other's (one node,
                              NVLink or PCIe peer access), or there is a single GPU, and no pair
                              is declared unreachable (HALOX_HYBRID_UNREACHABLE) */
    int load_store_some; /**< not every pair, but some: ranks reach the others of their node and
                              not those of other nodes, or HALOX_HYBRID_UNREACHABLE declares
                              some pairs (not all) unreachable */
} halox_topology_t;

/** The transport halox's measurements favour on this topology (a name this build has), with
 *  the reason in why (may be NULL). The rule and its figures: src/transports/choose.c and
 *  docs/NVSHMEM.md. Pure: every rank gets the same answer from the same inputs. */
const char *halox_transport_choose(const halox_topology_t *t, long long atoms, char *why,
                                   size_t why_len);

/** Whether every pair of the visible GPUs can access each other's memory (peer access); 1 with
 *  one GPU, 0 without GPUs. */
int halox_gpu_peer_access_all(void);

/** The job's topology as far as this process can tell before the ranks talk: `ranks` in all,
 *  `local_ranks` on this node (<= 0: unknown, taken as one node), data on GPUs or not; GPUs from
 *  the visible ones and their peer access, less the pairs HALOX_HYBRID_UNREACHABLE declares
 *  unreachable. With on_gpu and no GPU visible it assumes one GPU per rank (so a GPU transport
 *  is chosen, which then says what is missing). */
void halox_topology_guess(int ranks, int local_ranks, int on_gpu, halox_topology_t *t);

/** Names of the transports compiled into this build, NULL-terminated. */
const char *const *halox_transport_names(void);

/** One-line description of a transport, or NULL when unknown. */
const char *halox_transport_description(const char *name);

/** Whether a transport is compiled in. */
int halox_transport_available(const char *name);

/** A transport named by a user through `source`: an option ("--transport") or an environment
 *  variable ("HALOX_TRANSPORT"). HALOX_OK when this build has it; else
 *  HALOX_ERR_UNKNOWN_TRANSPORT with a message that names the source and the value, lists the
 *  transports of this build and adds `more` (NULL: nothing), another value the caller takes,
 *  such as "auto (the automatic choice)". */
halox_status_t halox_transport_check_name(const char *name, const char *source, const char *more);

/** A team of ranks that live as threads of one process (the `threads` transport). A rank whose
 *  endpoint is created with timeout_s 0 uses the team's timeout (timeout_s as in
 *  halox_comm_args_t). After an abort or any
 *  timeout the team is failed for good: destroy the endpoints, then the team. Destroy the team
 *  only after every rank destroyed its endpoint. */
halox_status_t halox_team_create(int nranks, double timeout_s, halox_team_t **team_p);
void halox_team_destroy(halox_team_t *team);
/** Mark the team failed so that every rank's waits return HALOX_ERR_ABORTED (no hangs). */
void halox_team_abort(halox_team_t *team, int rank, const char *why);

/** The work of one rank of a team (halox_team_run). */
typedef halox_status_t (*halox_team_fn)(int rank, halox_team_t *team, void *arg);
/** Run fn(rank, team, arg) for ranks 0..nranks-1 as threads of this process and wait for them.
 *  A rank whose fn fails aborts the team, so the others' waits end instead of hanging; a thread
 *  that cannot start aborts it too and the call returns HALOX_ERR_INTERNAL naming the rank, with
 *  *started_p (when not NULL) below nranks. status[r] (when not NULL) is rank r's result
 *  (HALOX_ERR_ABORTED for a rank never started). Otherwise returns HALOX_OK when every rank
 *  succeeded, else the first failure that was not HALOX_ERR_ABORTED (a rank stopped because
 *  another failed), else the first. The team is the caller's to destroy. */
halox_status_t halox_team_run(halox_team_t *team, int nranks, halox_team_fn fn, void *arg,
                              halox_status_t *status, int *started_p);

/** Create this rank's endpoint on the named transport. Collective over the ranks. */
halox_status_t halox_comm_create(const char *transport, const halox_comm_args_t *args,
                                 halox_comm_t **comm_p);
/** Destroy an endpoint. */
void halox_comm_destroy(halox_comm_t *comm);

int halox_comm_rank(const halox_comm_t *comm);
int halox_comm_size(const halox_comm_t *comm);
const char *halox_comm_transport(const halox_comm_t *comm);

/** Build this rank's plan, exchanging counts and coordinates pulse by pulse with the other ranks
 *  (collective). atoms holds the home atoms; on return its halo part is filled. The result is
 *  identical to halox_reference_build() for this rank. */
halox_status_t halox_comm_build_plan(halox_comm_t *comm, const halox_plan_params_t *params,
                                     halox_atoms_t *atoms, halox_plan_t *plan);

/** A rank's atoms where its transport keeps them: device memory for the GPU transports (x from
 *  halox_comm_device_alloc() where the transport needs symmetric memory), host memory for the CPU
 *  transports. Arrays of `capacity` entries; the caller owns them and they never move. */
typedef struct halox_device_atoms {
    void *x;       /**< capacity atoms of the endpoint's precision and stride; home atoms first */
    int32_t *id;   /**< capacity ids */
    uint8_t *zone; /**< capacity zones, written by the build (home atoms 0) */
    void *extra;   /**< migration: capacity records of extra_bytes that travel with each atom
                        (velocities, ...); NULL with extra_bytes 0 */
    size_t extra_bytes;
    int n_home; /**< home atoms, in [0, capacity]; migration updates it */
    int capacity;
    int n_total;  /**< out: home + halo atoms */
    int need;     /**< out, after HALOX_ERR_NO_MEMORY for want of room: the capacity this rank
                       needed at least (0 when it had room); grow the arrays and build again */
    int moved;    /**< out, migration: home atoms that left this rank */
    int max_hops; /**< out, migration: the most domains (periodic grid steps in one dimension)
                       one of them crossed */
    int async;    /**< in, migration on a GPU transport: 1 returns once the arrivals' placement
                       is enqueued on halox_comm_stream() (work ordered behind it there sees the
                       atoms, as halox_comm_build_plan_device does; synchronise that stream before
                       reading them on the host or on another stream); 0 returns after it.
                       Plan build on a GPU transport: 1 returns once the halo's placement and the
                       read of the maps and zones are enqueued on that stream (work ordered behind
                       it sees the halo atoms and zones on the device); the plan's counts and
                       offsets are complete on return, its maps (send_index) and zones on the
                       host only once the next halox_comm_bind() of that plan returns (bind it
                       next: a bind of another plan drops them); 0 returns with the plan complete */
} halox_device_atoms_t;

/** halox_comm_build_plan() for atoms in the transport's memory (collective): the halo part of x,
 *  id and zone is filled where the atoms are (on the GPU for GPU transports: selection, packing
 *  and placement run as kernels; only counts and the set-up messages' bytes cross to the host
 *  for the MPI transports), and the plan (maps, counts, offsets, zones) is complete on the host,
 *  identical to halox_reference_build() for this rank, ready for halox_comm_bind(). The arrays
 *  cannot grow here: when a rank's halo does not fit, every rank returns HALOX_ERR_NO_MEMORY and
 *  that rank's atoms->need says how many entries it needs (the later pulses may need more: grow
 *  with head-room). The home atoms are unchanged then; call again after growing (every rank). */
halox_status_t halox_comm_build_plan_device(halox_comm_t *comm, const halox_plan_params_t *params,
                                            halox_device_atoms_t *atoms, halox_plan_t *plan);

/** Bind the coordinate and force arrays that the following exchanges use (collective): x as
 *  filled by the plan build, f with room for plan->n_total forces. Call after every plan build
 *  and whenever an array moves. The plan build filled the halo, so the first exchange after a
 *  bind may be a force exchange (no coordinate exchange needed on rebuild steps). A failure on
 *  any rank (bad arguments included) fails the bind on every rank, and nothing is bound then:
 *  exchanges return HALOX_ERR_STATE until a bind succeeds. After an exchange failed (a timeout,
 *  a peer's error) keep x and f allocated until the job ends: a message of a late peer that MPI
 *  could not cancel may still land in the halo of x or be sent from f. (The collectives and the
 *  set-up calls of the MPI-based transports copy through the endpoint's own memory, so their
 *  buffers are the caller's to free as soon as they return, failed or not.) */
halox_status_t halox_comm_bind(halox_comm_t *comm, const halox_plan_t *plan, void *x, void *f);

/** Coordinate halo exchange: fills the halo part of the bound x from the owners' home atoms.
 *  The halo stays valid until halox_comm_forces() is called; every coordinate exchange must be
 *  followed by a force exchange before the next one (the causal chain that protects receivers'
 *  arrays from being overwritten while in use). */
halox_status_t halox_comm_coords(halox_comm_t *comm);

/** Force halo exchange: sends the forces on halo atoms back to their owners and adds them there,
 *  pulses in reverse order. On return the home forces of the bound f are complete. Halo entries
 *  are not cleared, and those of forwarded halo atoms also hold the contributions added on their
 *  way back: treat the halo part of f as scratch. */
halox_status_t halox_comm_forces(halox_comm_t *comm);

/** Move home atoms that left this rank's domain to their owners (collective). Positions are
 *  wrapped into the box first. The global atom count is checked against expected_total; an error
 *  names the step and the ranks whose counts do not add up. Halo atoms are dropped: rebuild the
 *  plan afterwards. */
halox_status_t halox_comm_migrate(halox_comm_t *comm, const halox_grid_t *grid,
                                  const halox_box_t *box, halox_atoms_t *atoms,
                                  long long expected_total, long long step);

/** halox_comm_migrate() for atoms in the transport's memory (collective): the wrap, the owners,
 *  the packing of the leavers and the placement of the arrivals run where the atoms are (on the
 *  GPU for GPU transports, as kernels; the leavers' indices and the records that move cross to
 *  the host for the transport's all-to-all). The result is halox_comm_migrate()'s on the same
 *  atoms, bit for bit: the same atoms in the same order, wrapped alike. The arrays cannot grow:
 *  when a rank's arrivals do not fit, every rank returns HALOX_ERR_NO_MEMORY before any atom
 *  moves (positions may be wrapped already: harmless) and that rank's atoms->need says how many
 *  entries it needs; grow and migrate again. */
halox_status_t halox_comm_migrate_device(halox_comm_t *comm, const halox_grid_t *grid,
                                         const halox_box_t *box, halox_device_atoms_t *atoms,
                                         long long expected_total, long long step);

/** Carry this rank's failure into the next migration, plan build or bind, instead of agreeing
 *  on it with a collective of the caller's own. For a caller whose local work between two of
 *  those calls failed on some rank: every rank makes the call as it would have, and that call
 *  does none of its work and fails on every rank at its first agreement, this rank with `st` and
 *  the message halox_last_error() held when deferring, the others with HALOX_ERR_ABORTED naming
 *  this rank. (halox_comm_migrate, _migrate_device, _build_plan, _build_plan_device and
 *  halox_comm_bind take it; the other calls leave it pending.) The first deferred failure is
 *  kept until taken; HALOX_OK clears it. Local: nothing is sent. Saves one collective per call
 *  pair: a rebuild's allgathers cost 4-8 us each plus the slowest rank. */
halox_status_t halox_comm_defer_failure(halox_comm_t *comm, halox_status_t st);

/** Sum n doubles over all ranks; every rank gets the same bits (summed in rank order). */
halox_status_t halox_comm_allreduce_sum(halox_comm_t *comm, double *values, int n);
/** Largest of n doubles over all ranks. */
halox_status_t halox_comm_allreduce_max(halox_comm_t *comm, double *values, int n);
/** Sum n 64-bit integers over all ranks. */
halox_status_t halox_comm_allreduce_sum_i64(halox_comm_t *comm, int64_t *values, int n);
/** Gather `bytes` from every rank into recv (size() * bytes) on every rank, in rank order. */
halox_status_t halox_comm_allgather(halox_comm_t *comm, const void *send, void *recv, size_t bytes);
/** Gather variable-sized blocks on root: recv (root only) must hold the sum of all counts;
 *  counts_p (root only, may be NULL elsewhere) gets each rank's byte count. */
halox_status_t halox_comm_gatherv(halox_comm_t *comm, const void *send, size_t bytes, void *recv,
                                  size_t recv_capacity, size_t *counts_p, int root);
halox_status_t halox_comm_barrier(halox_comm_t *comm);

/** Exchange statistics of this rank since creation. */
typedef struct halox_comm_stats {
    long long coord_exchanges;
    long long force_exchanges;
    long long bytes_sent;      /**< payload bytes sent in coordinate and force exchanges */
    double coord_seconds;      /**< wall time in halox_comm_coords() */
    double force_seconds;      /**< wall time in halox_comm_forces() */
    long long device_bytes;    /**< NVSHMEM transports: symmetric memory this process holds (x and f
                                    from halox_comm_device_alloc, force buffers, staging, signals),
                                    as of the last bind; 0 for the other transports */
    long long direct_messages; /**< messages of halox_comm_build_plan_device() and
                                    halox_comm_migrate_device() that went device to device
                                    (NVSHMEM transports, HALOX_NVSHMEM_DIRECT_MESSAGES); the
                                    others were staged through the host */
    long long collectives;     /**< collectives the library ran (agreements, gathers, reductions,
                                    barriers: halox_comm_allgather, _allreduce_*, _barrier and
                                    those inside migrations, plan builds and binds) */
    double collective_seconds; /**< wall time inside them, the wait for the slowest rank included */
    long long device_waits;    /**< GPU transports: host waits for the endpoint's stream (inside
                                    migrations, plan builds, binds, messages, exchanges) */
    double device_wait_seconds; /**< wall time inside them */
} halox_comm_stats_t;
void halox_comm_get_stats(const halox_comm_t *comm, halox_comm_stats_t *stats_p);

#ifdef __cplusplus
}
#endif
#endif
