/* Internal: the table of functions every transport fills, and the endpoint they share.
 * Core drives plans, migration and collectives through this table, so it needs neither MPI nor
 * CUDA; each transport lives in src/transports/<name>.c. */
#ifndef HALOX_CORE_TRANSPORT_H
#define HALOX_CORE_TRANSPORT_H

#include <stddef.h>

#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/fields.h"
#include "halox/gpu.h"
#include "halox/inline.h"
#include "halox/topology.h"
#include "halox/transport.h"

struct halox__plan_store; /* plan_build.h */
struct halox__mig_store;  /* migrate_store.h */

typedef struct halox_transport_ops {
    const char *name;
    const char *description;
    int on_gpu;     /* bind takes device pointers; exchanges are stream-ordered */
    int capturable; /* coords/forces enqueue only: a CUDA graph can capture them */
    int threads;    /* ranks are threads of one process (a halox_team_t), not MPI processes */
    int symmetric;  /* x and f must come from dalloc: peers store into them (NVSHMEM) */
    int gpu_alone;  /* a GPU transport that refuses ranks sharing a GPU (NCCL) */
    /* a captured exchange owns nothing in the graph (kernels and events only, no user objects
     * as NCCL's persistent plans are), so cudaGraphExecUpdate may move an executable to a new
     * capture's arguments */
    int graph_updatable;

    /* Set up comm->impl from args; comm->rank and comm->size must be set. Collective. */
    halox_status_t (*init)(halox_comm_t *comm, const halox_comm_args_t *args);
    void (*fini)(halox_comm_t *comm);

    /* Plain collectives on host memory, used at set-up time (plan builds, migration, output).
     * Every rank calls each of them in the same order. */

    /* Send sbytes to dst and receive exactly rbytes from src (rbytes is known to the caller). */
    halox_status_t (*sendrecv)(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                               int src, void *rbuf, size_t rbytes);
    /* Block r of send (sbytes[r] bytes at soffs[r]) goes to rank r; block from rank r lands at
     * roffs[r] with rbytes[r] bytes (caller exchanged the sizes first, with allgather). */
    halox_status_t (*alltoallv)(halox_comm_t *comm, const void *send, const size_t *sbytes,
                                const size_t *soffs, void *recv, const size_t *rbytes,
                                const size_t *roffs);
    /* Every rank's `bytes` into recv in rank order. */
    halox_status_t (*allgather)(halox_comm_t *comm, const void *send, void *recv, size_t bytes);
    halox_status_t (*barrier)(halox_comm_t *comm);

    /* The halo exchange on the bound plan and arrays. Core counts the bytes and the time of
     * every exchange (comm->stats): transports must not. After HALOX_ERR_TIMEOUT or
     * HALOX_ERR_COMM an endpoint may refuse every later call with HALOX_ERR_STATE: messages may
     * still be in flight, so the caller destroys it and stops the run. */
    /* bind: st0 is this rank's failure before it (its arguments, a deferred failure; comm->plan,
     * x and f are NULL then): the transport agrees on it in its first collective (GPU
     * transports: the bind's gather), so that every rank fails alike without a collective of
     * its own. */
    halox_status_t (*bind)(halox_comm_t *comm, halox_status_t st0);
    halox_status_t (*coords)(halox_comm_t *comm);
    halox_status_t (*forces)(halox_comm_t *comm);

    /* GPU transports: device memory for arrays bound later (collective; NVSHMEM: symmetric).
     * NULL for CPU transports. */
    halox_status_t (*dalloc)(halox_comm_t *comm, size_t bytes, void **ptr_p);
    halox_status_t (*dfree)(halox_comm_t *comm, void *ptr);
    /* Optional: report failures of exchanges already enqueued (graph replays); cheap. */
    halox_status_t (*poll)(halox_comm_t *comm);
    /* GPU transports: the store of a plan build over device atoms
     * (halox_comm_build_plan_fixed; plan_build.h). NULL: host arrays (core's store). */
    halox_status_t (*plan_store)(halox_comm_t *comm, halox_fixed_atoms_t *atoms,
                                 struct halox__plan_store *store);
    /* GPU transports: the store of a migration over device atoms (halox_comm_migrate_fixed;
     * migrate_store.h). NULL: host arrays (core's store). */
    halox_status_t (*mig_store)(halox_comm_t *comm, halox_fixed_atoms_t *atoms,
                                struct halox__mig_store *store);
    /* Optional (nvshmem-inline): the exchange inside the caller's kernels (halox/inline.h): the
     * bound plan's view, or HALOX_ERR_UNAVAILABLE with the reason; the bookkeeping of an exchange
     * the caller's kernels enqueued (after core advanced the step), reporting failed waits. */
    halox_status_t (*inline_view)(halox_comm_t *comm, halox_inline_view_t *view);
    halox_status_t (*inline_enqueued)(halox_comm_t *comm, int coords);
    /* Optional: the exchange of per-atom fields (halox/fields.h) over the bound plan, forward or
     * reverse, the arguments checked and agreed by core. NULL: core's walk over sendrecv (host
     * memory: the CPU transports); a GPU transport without it refuses fields. */
    halox_status_t (*fields)(halox_comm_t *comm, int reverse, int n, const halox_field_t *fields);
    /* Optional: whether this rank's coordinate exchange can store the n forward fields with the
     * atoms (reverse: its force exchange return and sum the n reverse fields with the forces),
     * inside its own kernels (local; core agrees on it over the ranks at
     * halox_comm_bind_fields), and the commit of the agreed choice (comm->fwd_in_kernel,
     * comm->rev_in_kernel, the bound fields) into the transport's tables. */
    int (*fields_in_kernel)(const halox_comm_t *comm, int reverse, int n, const halox_field_t *f);
    halox_status_t (*fields_bound)(halox_comm_t *comm);
} halox_transport_ops_t;

/* The endpoint: core's part plus the transport's private state. */
struct halox_comm {
    const halox_transport_ops_t *ops;
    int rank;
    int size;
    halox_real_t real;
    int stride;
    double timeout_s;
    /* bound by halox_comm_bind() */
    const halox_plan_t *plan;
    void *x;
    void *f;
    long long step;     /* exchanges counter: grows by one per coordinate exchange */
    int coords_pending; /* a coordinate exchange awaits its force exchange */
    int halo_fresh;     /* bound after a plan build: the halo is current, forces may come
                           without a coordinate exchange */
    halox_comm_stats_t stats;
    void *stream;       /* GPU transports: cudaStream_t of the exchanges */
    int graph_mode;     /* capturing: enqueue only, no host-side completion bookkeeping */
    int stream_ordered; /* halox_comm_set_stream_ordered: the caller's kernels follow the stream */
    /* halox_comm_bind_fields: the fields every coordinate (force) exchange also forwards
     * (reverses); the CPU walk's message buffer */
    halox_field_t bound_fwd[HALOX_MAX_FIELDS], bound_rev[HALOX_MAX_FIELDS];
    int n_bound_fwd, n_bound_rev;
    int fwd_in_kernel; /* the transport's coordinate kernels store the forward fields */
    int rev_in_kernel; /* its force kernels return and sum the reverse fields */
    void *field_buf;
    size_t field_cap;
    /* halox_comm_defer_failure: taken by the next migration, plan build or bind */
    halox_status_t deferred;
    char deferred_msg[1024];
    void *impl; /* transport's own state */
};

/* An endpoint of the transport `ops`: what halox_comm_create() does once it found the table by
 * name (transports that need another inside them, such as the GPU transports' mpi endpoint for
 * set-up, pass its table: they never go back up to the registry). */
halox_status_t halox__comm_create_ops(const halox_transport_ops_t *ops,
                                      const halox_comm_args_t *args, halox_comm_t **comm_p);

/* The failure halox_comm_defer_failure left for this call (HALOX_OK: none), taken: its message
 * is halox_last_error()'s again. Local. */
halox_status_t halox__comm_take_deferred(halox_comm_t *comm);

/* Collective: if any rank's local step failed, every rank returns an error (the failing one its
 * own status), so no rank walks into a collective the others will never join. */
halox_status_t halox__agree(halox_comm_t *comm, halox_status_t mine, const char *what);

/* HALOX_ERR_STATE for a call `op` on an endpoint of transport `name` that an earlier failure
 * (`failure`) left unusable: what may still be in flight (`pending`: "work", "its messages")
 * keeps it from being used again. */
halox_status_t halox__endpoint_refused(const char *name, int rank, const char *op,
                                       const char *failure, const char *pending);

/* halox__agree with a payload, in one allgather: msg holds n values, msg[0] is
 * set to `mine`; all (NULL: not wanted) receives every rank's msg, rank after rank. */
halox_status_t halox__agree_gather(halox_comm_t *comm, halox_status_t mine, const char *what,
                                   long long *msg, int n, long long *all);

#endif
