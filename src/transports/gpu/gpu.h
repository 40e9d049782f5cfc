/* Internal: what the GPU transports (src/transports/gpu/, src/transports/nvshmem/) share.
 *
 * Every GPU transport keeps a halox__gpu_t as the first member of its state (comm->impl), so the
 * shared functions below can find it from the endpoint. Split in three files:
 *   gpu_device.c    device plan, kernels, bounded waits, CUDA errors (needs CUDA only)
 *   gpu_endpoint.c  endpoint life cycle: the inner CPU `mpi` endpoint that runs the set-up
 *                   collectives, device choice, stream; bind with the peers' handshake (MPI)
 *   pulse_gpu.c     the walk through an exchange's pulses on the stream (pulse_gpu.h; CUDA only)
 * The transports call them directly: a transport's table points at its own functions, which
 * call these as helpers (the exchanges pass no second table). Transport logic is plain C over the
 * CUDA runtime API; every kernel sits in a .cu file beside its transport behind a C launcher. */
#ifndef HALOX_TRANSPORTS_GPU_H
#define HALOX_TRANSPORTS_GPU_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "core/plan/pulse_deps.h"
#include "core/transport.h"
#include "halox/plan.h"

enum { HALOX__GPU_COORDS = 0, HALOX__GPU_FORCES = 1 };

/* The device copy of a plan: rebuilt completely on every bind (no stale pulses). */
typedef struct halox__gpu_plan {
    int n_pulses;                      /* pulses of the bound plan; entries past it are zero */
    long long generation;              /* plan->generation at upload */
    int *d_index;                      /* all maps back to back (device) */
    size_t index_capacity;             /* ints */
    int index_off[HALOX_MAX_PULSES];   /* pulse k's map at d_index + index_off[k] */
    char *d_buf;                       /* send_count atoms per pulse (device): packed coordinates,
                                          received forces (never both at once) */
    size_t buf_capacity;               /* bytes */
    size_t buf_off[HALOX_MAX_PULSES];  /* bytes, send_count atoms per pulse */
    size_t recv_off[HALOX_MAX_PULSES]; /* bytes, recv_count atoms per pulse (staging layouts) */
    size_t send_bytes;                 /* sum over pulses of send_count atoms */
    size_t recv_bytes;                 /* sum over pulses of recv_count atoms */
    uint32_t needs[HALOX_MAX_PULSES];  /* bit j: map k holds atoms received in pulse j */
    int home_prefix[HALOX_MAX_PULSES]; /* leading map entries that are home atoms */
} halox__gpu_plan_t;

typedef struct halox__plan_dev halox__plan_dev_t; /* plan_device.c */
typedef struct halox__mig_dev halox__mig_dev_t;   /* migrate_device.c */

typedef struct halox__gpu {
    const char *name;    /* transport name, for messages */
    halox_comm_t *inner; /* CPU `mpi` endpoint for the set-up collectives */
    int device;          /* CUDA device ordinal */
    cudaStream_t stream; /* == comm->stream */
    int own_stream;      /* created here (destroyed in fini) */
    int failed;          /* a wait timed out or CUDA/the network failed */
    int no_atoms;        /* pulses signal without atoms: no pack, no accumulate, empty messages
                            (HALOX_NVSHMEM_SIGNAL_ONLY: the benchmarks' floor) */
    char failure[512];
    int bound;
    halox__gpu_plan_t plan;
    /* one event per pulse and direction, recorded after that pulse's work on the stream: a
     * bounded wait can then name the pulse that did not complete */
    cudaEvent_t ev[2][HALOX_MAX_PULSES];
    int ev_live[2][HALOX_MAX_PULSES];
    long long ev_step[2]; /* step of the exchange the live events belong to */
    /* the pulse's peers and dimension when its event was recorded (for messages: the plan may
     * be gone or replaced by the time a wait names them) */
    int ev_from[2][HALOX_MAX_PULSES];
    int ev_to[2][HALOX_MAX_PULSES];
    int ev_dim[2][HALOX_MAX_PULSES];
    /* device scratch of halox_comm_build_plan_fixed (plan_device.c), kept between builds */
    halox__plan_dev_t *plan_dev;
    /* device scratch of halox_comm_migrate_fixed (migrate_device.c) */
    halox__mig_dev_t *mig_dev;
    /* the field exchange's scratch (gpu_fields.c): device rows, pinned host rows */
    void *fd_buf, *fh_buf;
    size_t fd_cap, fh_cap;
    /* the device plan build's set-up message (a sendrecv every rank calls) and the device
     * migration's all-to-all from device memory to device memory, where the transport can
     * (NVSHMEM: gpu_nvshmem_msg.c): *used 0 (the same on every rank) leaves them to the host
     * path; NULL: always the host path. most: the largest block any rank sends in it (the same
     * on every rank) */
    halox_status_t (*dsendrecv)(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                int src, void *rbuf, size_t rbytes, size_t most, int *used);
    halox_status_t (*dalltoallv)(halox_comm_t *comm, const void *sbuf, const size_t *sbytes,
                                 const size_t *soffs, void *rbuf, const size_t *rbytes,
                                 const size_t *roffs, size_t most, int *used);
    /* the transport's check of its kernels' waits (NULL: none): the stores' waits
     * (halox__gpu_drain) call it, so that a message kernel that gave up is named */
    halox_status_t (*check)(halox_comm_t *comm, void *ctx);
} halox__gpu_t;

static inline halox__gpu_t *halox__gpu(halox_comm_t *comm) { return (halox__gpu_t *)comm->impl; }

/* ---- gpu_device.c ------------------------------------------------------------------------ */

/* Record a CUDA failure as the error message (and clear CUDA's non-sticky error state):
 * "<transport>: rank R: <what> failed at step S: <cuda error>". Returns HALOX_ERR_NO_MEMORY for
 * allocation failures, else `st`. With g->failed set by fail != 0. */
halox_status_t halox__gpu_cuda_error(halox_comm_t *comm, halox__gpu_t *g, cudaError_t e,
                                     const char *what, halox_status_t st, int fail);

/* Upload the plan's maps and size the staging buffer (device memory on the current device,
 * work ordered on `stream`, then synchronised: the caller must have waited for earlier work).
 * Every per-pulse entry is rewritten; entries past plan->n_pulses are zeroed. Checks the plan's
 * pulses with halox__pulse_deps (ranks in 0..nranks-1, ranges inside the halo, maps inside
 * 0..n_total-1 and fed only by earlier pulses), which also gives needs and home_prefix. On failure
 * the device plan is empty (n_pulses 0). */
halox_status_t halox__gpu_plan_upload(halox__gpu_plan_t *dp, const halox_plan_t *plan,
                                      halox_real_t real, int stride, cudaStream_t stream,
                                      const char *name);
void halox__gpu_plan_free(halox__gpu_plan_t *dp);

/* Enqueue pulse k's pack into dst (device; NULL: the staging buffer) / the accumulation of src
 * (NULL: the staging buffer) into f. */
cudaError_t halox__gpu_pack(const halox__gpu_plan_t *dp, const halox_plan_t *plan, int k,
                            halox_real_t real, int stride, void *dst, const void *x,
                            cudaStream_t stream);
cudaError_t halox__gpu_add(const halox__gpu_plan_t *dp, const halox_plan_t *plan, int k,
                           halox_real_t real, int stride, void *f, const void *src,
                           cudaStream_t stream);

/* Poll until the stream has no work left, or until `deadline` (halox__now() seconds). `check`,
 * when given, is called now and then (it reports asynchronous network errors). Returns
 * HALOX_OK, HALOX_ERR_TIMEOUT (no message: the caller writes it) or a CUDA error's status. */
typedef halox_status_t (*halox__gpu_check_fn)(halox_comm_t *comm, void *ctx);
halox_status_t halox__gpu_stream_wait(halox_comm_t *comm, halox__gpu_t *g, double deadline,
                                      halox__gpu_check_fn check, void *ctx, const char *what);
/* A host wait for the endpoint's stream that began at `since` (halox__now()): counted and timed
 * in the endpoint's statistics (halox_comm_stats_t.device_waits). */
void halox__gpu_waited(halox_comm_t *comm, double since);

/* halox__gpu_stream_wait within the endpoint's timeout, a timeout as an error saying that `who`
 * (a plan build, a migration) waited for `what`. */
halox_status_t halox__gpu_drain(halox_comm_t *comm, halox__gpu_t *g, const char *who,
                                const char *what);

/* HALOX_OK, or the CUDA error e as the error message (HALOX_ERR_COMM; out of memory as
 * HALOX_ERR_NO_MEMORY), naming `what`. */
halox_status_t halox__gpu_check(halox_comm_t *comm, halox__gpu_t *g, cudaError_t e,
                                const char *what);

/* What the scratch of each device store (plan_device.c, migrate_device.c) begins with: its
 * endpoint and the small counters it reads back (on the device, and their pinned mirror). */
typedef struct halox__gpu_store_head {
    halox_comm_t *comm;
    halox__gpu_t *g;
    int *d_small, *h_small;
} halox__gpu_store_head_t;

/* The start of a device store's call `what`: the endpoint usable, its device current, and its
 * scratch *slot (a struct of `bytes` beginning with a halox__gpu_store_head_t) made zeroed on
 * first use with n_small counters (none: d_small and h_small stay NULL). On failure nothing is
 * made. */
halox_status_t halox__gpu_store_open(halox_comm_t *comm, const char *what, void **slot,
                                     size_t bytes, int n_small);

/* Device (pinned: pinned host) memory of at least `bytes` in *p, *cap what it holds, with
 * head-room; the contents are not kept when it grows. */
halox_status_t halox__gpu_scratch(halox_comm_t *comm, halox__gpu_t *g, void **p, size_t *cap,
                                  size_t bytes, int pinned, const char *what);
/* halox__gpu_scratch in device memory, zeroed on the endpoint's stream when it is new (a
 * compaction's tile words and ticket start at zero: include/halox/device/compact.cuh). */
halox_status_t halox__gpu_scratch_zeroed(halox_comm_t *comm, halox__gpu_t *g, void **p, size_t *cap,
                                         size_t bytes, const char *what);

/* Poll the live events of one direction in the order they were recorded; on HALOX_ERR_TIMEOUT
 * *pulse_p is the first pulse whose work did not complete. Completed events are retired. */
halox_status_t halox__gpu_events_wait(halox_comm_t *comm, halox__gpu_t *g, int dir, double deadline,
                                      halox__gpu_check_fn check, void *ctx, int *pulse_p);

/* Record pulse k's event of one direction on the stream (after its work); remembers the pulse's
 * peers (coordinates: from recv_rank, to send_rank; forces the other way) and dimension. */
halox_status_t halox__gpu_record(halox_comm_t *comm, halox__gpu_t *g, int dir, int k);

/* HALOX_ERR_STATE when the endpoint failed earlier or nothing is bound. */
halox_status_t halox__gpu_usable(halox_comm_t *comm, halox__gpu_t *g, const char *op);
/* The start of every exchange: usable, bound to the current plan, and its device current. */
halox_status_t halox__gpu_bound(halox_comm_t *comm, halox__gpu_t *g, const char *op);

/* Make the endpoint's device current (the caller's thread may have switched). */
halox_status_t halox__gpu_set_device(halox_comm_t *comm, halox__gpu_t *g);

/* A host poll's pause: spin-yield first (the GPU is usually microseconds away), then sleep
 * briefly so that ranks sharing cores leave them to the ones they wait for. */
void halox__gpu_backoff(long polls);

/* halox_comm_device_alloc/free for transports that take any device memory: cudaMalloc on the
 * endpoint's device, agreed over all ranks (all succeed or none keeps memory). */
halox_status_t halox__gpu_dalloc(halox_comm_t *comm, size_t bytes, void **ptr_p);
halox_status_t halox__gpu_dfree(halox_comm_t *comm, void *ptr);

/* Mark failed, keeping the current error message as the reason. */
void halox__gpu_fail(halox__gpu_t *g);

/* ---- plan_device.c ----------------------------------------------------------------------- */

struct halox__plan_store;
/* The device store of halox_comm_build_plan_fixed (core/plan_build.h): kernels on the
 * endpoint's stream over the caller's device arrays. */
halox_status_t halox__gpu_plan_store(halox_comm_t *comm, halox_fixed_atoms_t *atoms,
                                     struct halox__plan_store *store);
/* Free the store's device scratch (the stream must be idle). */
void halox__gpu_plan_dev_free(halox__gpu_t *g);
/* A build with atoms->async left its maps and zones on their way to the host (on the stream):
 * the bind, after waiting for the stream (ok: the wait succeeded), copies them into that plan's
 * host arrays when `plan` is the plan built then and unchanged since; the pending read is
 * dropped either way. */
void halox__gpu_plan_dev_settle(halox__gpu_t *g, const halox_plan_t *plan, int ok);

/* ---- migrate_device.c --------------------------------------------------------------------- */

struct halox__mig_store;
/* The device store of halox_comm_migrate_fixed (core/migrate_store.h). */
halox_status_t halox__gpu_mig_store(halox_comm_t *comm, halox_fixed_atoms_t *atoms,
                                    struct halox__mig_store *store);
/* Free the store's scratch (the stream must be idle). */
void halox__gpu_mig_dev_free(halox__gpu_t *g);

/* ---- gpu_endpoint.c (MPI) ---------------------------------------------------------------- */

/* Create the inner `mpi` endpoint (rank, size), choose the device, set up the stream and the
 * events. `g` is comm->impl's first member and zeroed. Collective; on failure everything made
 * here is released again by halox__gpu_fini(). */
halox_status_t halox__gpu_init(halox_comm_t *comm, const halox_comm_args_t *args, halox__gpu_t *g,
                               const char *name);
/* Wait (bounded) for the stream, then free the device plan, events, stream and inner endpoint. */
void halox__gpu_fini(halox_comm_t *comm, halox__gpu_t *g);

/* What halox__gpu_bind gathers from every rank, in one collective: [0] the status, [1] the
 * pulse count, per pulse k (HALOX__BOUND_PULSE words from HALOX__BOUND_HEAD + k times that) the
 * send and receive counts, the ranks sent to and received from and the receive offset, then the
 * transport's own words (at most HALOX__BOUND_EXTRA_MAX). */
enum { HALOX__BOUND_HEAD = 2, HALOX__BOUND_PULSE = 5, HALOX__BOUND_EXTRA_MAX = 4 };
#define HALOX__BOUND_WORDS(n_extra)                                                                \
    (HALOX__BOUND_HEAD + HALOX__BOUND_PULSE * HALOX_MAX_PULSES + (n_extra))
/* Rank r's words of pulse k in a table of `words` per rank. */
static inline const long long *halox__bound_pulse(const long long *all, int words, int r, int k)
{
    return all + (size_t)r * (size_t)words + HALOX__BOUND_HEAD + HALOX__BOUND_PULSE * k;
}

/* Bind: wait for earlier work (bounded), upload the plan, and in one collective agree on
 * success over all ranks and check each pulse's counts against its peers'. st0: the caller's
 * status so far (a failure skips the work and is agreed). `extra` (n_extra words) travels with
 * it; on success *all_p (NULL: not wanted) gets every rank's message, rank after rank,
 * HALOX__BOUND_WORDS(n_extra) words each (the caller frees it). */
halox_status_t halox__gpu_bind(halox_comm_t *comm, halox__gpu_t *g, halox_status_t st0,
                               const long long *extra, int n_extra, long long **all_p);

/* Where every rank's GPU is: host name and PCI bus id (or "device-N"). */
typedef struct halox__gpu_who {
    char host[64];
    char bus[32];
} halox__gpu_who_t;
/* Gather every rank's halox__gpu_who_t: *all_p gets comm->size entries in rank order (the caller
 * frees them; NULL on failure). Collective: the allocation is agreed as `what`; messages start
 * with `name`. */
halox_status_t halox__gpu_who(halox_comm_t *comm, const char *name, const char *what,
                              halox__gpu_who_t **all_p);

/* The per-atom field exchange of every GPU transport, staged through the host (gpu_fields.c),
 * and the release of its scratch (endpoint destruction, once the stream is idle). */
halox_status_t halox__gpu_fields(halox_comm_t *comm, int reverse, int n,
                                 const halox_field_t *fields);
void halox__gpu_fields_free(halox__gpu_t *g);

/* The set-up collectives, forwarded to the inner `mpi` endpoint. */
halox_status_t halox__gpu_sendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                   int src, void *rbuf, size_t rbytes);
halox_status_t halox__gpu_alltoallv(halox_comm_t *comm, const void *send, const size_t *sbytes,
                                    const size_t *soffs, void *recv, const size_t *rbytes,
                                    const size_t *roffs);
halox_status_t halox__gpu_allgather(halox_comm_t *comm, const void *send, void *recv, size_t bytes);
halox_status_t halox__gpu_barrier(halox_comm_t *comm);

/* The entries of a transport table that every GPU transport shares: GPU data, the set-up
 * collectives over the inner `mpi` endpoint. */
#define HALOX__GPU_OPS_SHARED                                                                      \
    .on_gpu = 1, .sendrecv = halox__gpu_sendrecv, .alltoallv = halox__gpu_alltoallv,               \
    .allgather = halox__gpu_allgather, .barrier = halox__gpu_barrier,                              \
    .plan_store = halox__gpu_plan_store, .mig_store = halox__gpu_mig_store,                        \
    .fields = halox__gpu_fields

#endif
