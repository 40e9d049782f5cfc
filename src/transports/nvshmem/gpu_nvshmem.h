/* Internal: the endpoint the NVSHMEM transports share (gpu_nvshmem.c: set-up, failure checks,
 * launches; gpu_nvshmem_bind.c: symmetric memory, bind; gpu_nvshmem_exchange.c: the start of
 * every exchange call, the nvshmem-stream/pulse/fused exchanges and their tables;
 * gpu_nvshmem_inline.c: nvshmem-inline, its exchange, view and table). `hybrid` (gpu_hybrid.c)
 * builds on it: its own init, bind (the shared halves around its routes), exchanges and table;
 * nothing here calls it. */
#ifndef HALOX_TRANSPORTS_GPU_NVSHMEM_H
#define HALOX_TRANSPORTS_GPU_NVSHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "core/route.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/gpu_staging.h"
#include "transports/nvshmem/nvshmem_halo.h"

enum {
    HALOX__SHM_STREAM,
    HALOX__SHM_PULSE,
    HALOX__SHM_FUSED,
    HALOX__SHM_HYBRID,
    HALOX__SHM_INLINE
};

#define HALOX__SHM_MAX_ALLOCS 64

/* The message kernels' symmetric signals (nvshmem_halo.h): per rank r, its arrival signal
 * (sig[r]) and its acknowledgement (ack[r]); the launches' last-block counters (this rank's). */
typedef struct halox__shm_msync {
    unsigned long long sig[HALOX__SHM_MSG_MAX];
    unsigned long long ack[HALOX__SHM_MSG_MAX];
    unsigned counter[2];
} halox__shm_msync_t;

typedef struct halox__shm {
    halox__gpu_t g; /* first: the shared GPU part */
    int mode;
    int use_put;       /* HALOX_NVSHMEM_PUT (HALOX_NVSHMEM_SIGNAL_ONLY: g.no_atoms) */
    int use_tma;       /* HALOX_NVSHMEM_TMA */
    double headroom;   /* HALOX_NVSHMEM_HEADROOM */
    int blocks_wanted; /* HALOX_NVSHMEM_BLOCKS (0: from the halo size) */
    int bind_agreed;   /* the bind's begin failed in its gather: every rank knows (no end
                          agreement) */
    int *pe_of;        /* comm rank -> PE */
    int *rank_of;      /* PE -> comm rank (-1: not in this endpoint) */
    int n_pes;
    int pes_per_gpu;           /* most PEs on one GPU */
    uint64_t *sig;             /* symmetric: 2 * HALOX_MAX_PULSES signals */
    char *fbuf;                /* symmetric: forces returned for the atoms sent, per pulse slot */
    char *stage;               /* symmetric: packed coordinates for puts, per pulse slot */
    size_t buf_cap;            /* bytes of fbuf and of stage (equal on every rank) */
    halox__shm_state_t *state; /* device */
    halox__shm_row_t *d_rows;  /* device, HALOX_MAX_PULSES */
    halox__shm_row_t rows[HALOX_MAX_PULSES];
    size_t peer_recv_off[HALOX_MAX_PULSES]; /* send_pe's recv_offset of pulse k (the bind's) */
    size_t peer_buf_rows[HALOX_MAX_PULSES]; /* recv_pe's atoms before pulse k in its buffers */
    /* symmetric: the reverse fields returned inside the force kernel, per field, laid out as
     * fbuf (rows of its bytes per atom); fr_cap: bytes (equal on every rank) */
    char *frbuf[HALOX_MAX_FIELDS];
    size_t fr_cap[HALOX_MAX_FIELDS];
    int *h_flag; /* mapped host memory: a kernel gave up */
    int *d_flag;
    int blocks_per_row;
    /* nvshmem-stream and hybrid: the pulse whose signal wait raises the epoch of a direction
     * (the last that waits: coordinates the highest, forces the lowest; -1: none waits) */
    int last_wait[2];
    unsigned long long h_epoch[2]; /* exchanges enqueued since bind, per direction (host) */
    long long step_of[2][64];      /* step of exchange e at [e % 64], for messages */
    halox__shm_launch_t call;      /* the exchange call in progress: its launch parameters */
    struct {
        void *p;
        size_t bytes;
    } alloc[HALOX__SHM_MAX_ALLOCS]; /* symmetric memory handed out by device_alloc */
    int n_alloc;
    /* hybrid only: HALOX_HYBRID_UNREACHABLE, the routes of the bound plan, the MPI leg */
    halox__unreach_t unreach;
    halox__route_t route;
    halox__hst_t hs;
    /* nvshmem-inline only (gpu_nvshmem_inline.c): the view of the bound plan for kernels of the
     * caller (inl_ok), or why there is none; its device arrays (pulse table, home atoms' sends,
     * scratch) and their capacities in bytes */
    int inl_ok;
    char inl_why[256];
    halox_inline_view_t inl_view;
    void *inl_pulses, *inl_start, *inl_send, *inl_scratch, *inl_scan;
    size_t inl_cap[5];
    /* the rebuild's messages device to device (gpu_nvshmem_msg.c, HALOX_NVSHMEM_DIRECT_MESSAGES):
     * the symmetric mailbox (mbox_cap bytes on every rank: two halves used in turn), the messages
     * so far, the event after its last copy out */
    int msg_direct;  /* HALOX_NVSHMEM_DIRECT_MESSAGES */
    int msg_verdict; /* agreed at the first message: 1 device to device, 0 host path, -1 not yet */
    int msg_kernels; /* agreed with it: the message kernels (2), no host wait or agreement */
    unsigned long long msg_seq;
    char *mbox;
    size_t mbox_cap;
    cudaEvent_t mbox_read;
    int mbox_pending;
    halox__shm_msync_t *msync; /* the message kernels' signals (symmetric) */
    unsigned msg_blocks[2];    /* blocks of every send (0) and receive (1) launch so far */
} halox__shm_t;

static inline halox__shm_t *halox__shm(halox_comm_t *comm) { return (halox__shm_t *)comm->impl; }

/* ---- gpu_nvshmem.c ------------------------------------------------------------------------ */

/* A kernel gave up waiting: HALOX_ERR_TIMEOUT naming rank, step, pulse and peer, the endpoint
 * failed; HALOX_OK otherwise (a halox__gpu_check_fn). */
halox_status_t halox__shm_check(halox_comm_t *comm, void *ctx);
/* Bounded wait for the exchanges enqueued so far (the previous step's), reporting kernels that
 * gave up. */
halox_status_t halox__shm_drain(halox_comm_t *comm, const char *why);
/* Endpoint creation for a mode (HALOX__SHM_*): NVSHMEM, its PEs, signals and state. Collective;
 * on failure the endpoint is destroyed. */
halox_status_t halox__shm_init_mode(halox_comm_t *comm, const halox_comm_args_t *args, int mode,
                                    const char *name);
void halox__shm_fini(halox_comm_t *comm);
/* Bind: the rows, buffers and signals of the bound plan. In two halves for a transport that adds
 * its own work before the last agreement: _begin (collective, returns the same failures on every
 * rank except its local uploads'; st0: a failure before the bind, agreed in its gather), then
 * _end(st): waits for the stream and agrees on st (not after a failure of _begin's gather: every
 * rank has it). _begin is _head, then _table: a transport whose pulse table depends on its own
 * part of bind (hybrid: its routes) runs that part between them. _head: the arrays, the device
 * plan and its gather (*all_p: every rank's words, HALOX__BOUND_WORDS(2) each; NULL after a
 * failed gather), the symmetric buffers; _table(st, all): the pulse table and the grid when st
 * is HALOX_OK, and frees all. */
halox_status_t halox__shm_bind(halox_comm_t *comm, halox_status_t st0);
halox_status_t halox__shm_bind_begin(halox_comm_t *comm, halox_status_t st0);
halox_status_t halox__shm_bind_head(halox_comm_t *comm, halox_status_t st0, long long **all_p);
halox_status_t halox__shm_bind_table(halox_comm_t *comm, halox_status_t st, long long *all);
halox_status_t halox__shm_bind_end(halox_comm_t *comm, halox_status_t st);
halox_status_t halox__shm_dalloc(halox_comm_t *comm, size_t bytes, void **ptr_p);
/* nvshmem-fused's bound forward fields inside its coordinate kernel (halox/fields.h): whether
 * this rank can (fields in symmetric memory, every pulse's peer reached by stores), the rows'
 * field pointers filled from comm's bound fields (cleared when not in the kernel; an error when
 * a pulse's peer cannot take stores), and that table uploaded again once fields are bound. */
int halox__shm_fields_in_kernel(const halox_comm_t *comm, int reverse, int n,
                                const halox_field_t *f);
halox_status_t halox__shm_rows_fields(halox_comm_t *comm);
halox_status_t halox__shm_fields_bound(halox_comm_t *comm);
/* gpu_nvshmem_alloc.c: collective symmetric allocation of the largest rank's `bytes` (agreed: on
 * failure no rank holds it, and the message names NVSHMEM_SYMMETRIC_SIZE). */
halox_status_t halox__shm_sym_alloc(halox_comm_t *comm, size_t bytes, void **ptr_p,
                                    const char *what);
halox_status_t halox__shm_dfree(halox_comm_t *comm, void *ptr);
halox_status_t halox__shm_poll(halox_comm_t *comm);
/* The launch parameters every kernel of this endpoint shares. */
halox__shm_launch_t halox__shm_launch_base(halox_comm_t *comm);
/* A failed launch or NVSHMEM call: the endpoint fails, and NVSHMEM is not finalised at exit. */
halox_status_t halox__shm_launch_error(halox_comm_t *comm, cudaError_t e, const char *what);

/* ---- gpu_nvshmem_msg.c --------------------------------------------------------------------- */

/* halox__gpu_t.dsendrecv and .dalltoallv of the NVSHMEM transports; the mailbox's release
 * (fini: collective, healthy ranks only). */
halox_status_t halox__shm_dsendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                    int src, void *rbuf, size_t rbytes, size_t most, int *used);
halox_status_t halox__shm_dalltoallv(halox_comm_t *comm, const void *sbuf, const size_t *sbytes,
                                     const size_t *soffs, void *rbuf, const size_t *rbytes,
                                     const size_t *roffs, size_t most, int *used);
void halox__shm_msg_fini(halox__shm_t *m, int collective);

/* ---- gpu_nvshmem_exchange.c ---------------------------------------------------------------- */

/* The start of every exchange call of the NVSHMEM transports in direction dir (HALOX__GPU_*):
 * the endpoint usable and bound (halox__gpu_bound), for coordinates the bounded wait for the
 * exchanges enqueued so far (halox__shm_drain; not while a graph is captured), then the call's
 * launch parameters (call) and the epoch of its messages. */
halox_status_t halox__shm_begin(halox_comm_t *comm, int dir);
/* nvshmem-stream's parts of pulse k on the stream, also hybrid's direct ones. put: the
 * put-with-signal of its atoms (coordinates: the packed atoms into the receiver's halo; forces:
 * the halo forces into the owner's force buffer; no bytes under g.no_atoms). await: the
 * one-thread kernel that waits (bounded) for this PE's own signal of the pulse (coordinates in,
 * forces back), raising the direction's epoch when it is the last wait (last_wait). */
halox_status_t halox__shm_put(halox_comm_t *comm, int dir, int k);
halox_status_t halox__shm_await(halox_comm_t *comm, int dir, int k);

/* The table of an NVSHMEM transport: the shared set-up and symmetric memory, its own init, bind
 * and exchanges; fieldsfn: halox__shm_fields_in_kernel where its coordinate kernel carries bound
 * forward fields (nvshmem-fused), else NULL. */
#define HALOX__SHM_OPS(var, nm, desc, initfn, bindfn, coordsfn, forcesfn, capt, fieldsfn)          \
    const halox_transport_ops_t var = {                                                            \
        .name = nm,                                                                                \
        .description = desc,                                                                       \
        HALOX__GPU_OPS_SHARED,                                                                     \
        .capturable = capt,                                                                        \
        .graph_updatable = capt,                                                                   \
        .symmetric = 1,                                                                            \
        .init = initfn,                                                                            \
        .fini = halox__shm_fini,                                                                   \
        .bind = bindfn,                                                                            \
        .coords = coordsfn,                                                                        \
        .forces = forcesfn,                                                                        \
        .dalloc = halox__shm_dalloc,                                                               \
        .dfree = halox__shm_dfree,                                                                 \
        .poll = halox__shm_poll,                                                                   \
        .fields_in_kernel = fieldsfn,                                                              \
        .fields_bound = halox__shm_fields_bound,                                                   \
    }

#endif
