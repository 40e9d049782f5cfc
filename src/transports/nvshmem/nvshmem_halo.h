/* C entry points of the NVSHMEM runtime wrappers and of the GPU-initiated halo kernels
 * (src/transports/nvshmem/nvshmem_rt.cu, src/transports/nvshmem/nvshmem_halo.cu).
 *
 * nvshmem.h is C++ only, so every NVSHMEM call lives in those two files; the transports
 * (src/transports/nvshmem/gpu_nvshmem.c) see plain C types here.
 *
 * Signal protocol (all three NVSHMEM transports):
 *  - Each PE owns 2 * HALOX_MAX_PULSES symmetric 64-bit signals: [k] is raised by the PE that
 *    sends it pulse k's coordinates, [HALOX_MAX_PULSES + k] by the PE that returns pulse k's
 *    forces. Every pulse raises its signal by one (NVSHMEM_SIGNAL_ADD) per exchange, also when
 *    it carries no atoms, so a signal counts exchanges and only grows.
 *  - Each PE counts its own exchanges per direction in device memory (epoch[dir], raised by the
 *    last block of the last kernel of that direction): exchange e waits for signal >= e. The
 *    expected value never comes from the host, so captured CUDA graphs replay correctly.
 *  - Signals, epochs and counters are zeroed at bind only, when every PE's stream is idle and
 *    before the bind's final agreement, so no peer can signal into a reset.
 *  - Buffers are reused without resets by the chain order: a PE's next coordinate store into a
 *    peer follows the forces that peer returned after using the previous coordinates. */
#ifndef HALOX_KERNELS_NVSHMEM_HALO_H
#define HALOX_KERNELS_NVSHMEM_HALO_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "halox/fields.h"
#include "halox/inline.h"
#include "halox/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- runtime (nvshmem_rt.cu) ------------------------------------------------------------ */

/* Bytes of NVSHMEM's unique id (broadcast from rank 0 by the caller). */
size_t halox__shm_uid_size(void);
/* Make a unique id (rank 0). Returns 0 on success. */
int halox__shm_uid(void *uid);
/* Initialise NVSHMEM once per process (later calls only check that rank/nranks match the first
 * one's PE set and return 0). Collective over the nranks processes; the current CUDA device must
 * be set. Never exits the process: returns nonzero and a reason in why[] on failure. */
int halox__shm_init(int rank, int nranks, const void *uid, char *why, size_t why_len);
int halox__shm_my_pe(void);
int halox__shm_n_pes(void);
const char *halox__shm_version(void);
/* Collective over all PEs (same size everywhere); NULL when NVSHMEM has no room. */
void *halox__shm_malloc(size_t bytes);
void halox__shm_free(void *p); /* collective */
/* Load/store pointer to the peer's copy of a symmetric address (NULL: not reachable). */
void *halox__shm_ptr(const void *sym, int pe);
/* Bytes of the symmetric heap that halox holds now (equal on every PE). */
size_t halox__shm_in_use(void);
/* Whether p lies in this PE's symmetric heap (NULL is not). */
int halox__shm_is_symmetric(const void *p);
/* The symmetric heap's size: NVSHMEM_SYMMETRIC_SIZE as NVSHMEM reads it (bytes), and whether
 * the user set it. */
size_t halox__shm_heap_size(int *user_set);
/* Mark a failure: the process then skips NVSHMEM's collective finalisation at exit (it would
 * wait for a peer that may be gone). */
void halox__shm_poison(void);

/* On-stream communication (nvshmem-stream): the put delivers bytes before it raises the peer's
 * signal by one; bytes == 0 only raises the signal. Return cudaGetLastError()'s view. */
cudaError_t halox__shm_put_signal_on_stream(void *dest_sym, const void *src, size_t bytes,
                                            uint64_t *sig_sym, int pe, cudaStream_t stream);
/* bytes from src (this GPU's memory) to dst, a peer's memory through its load/store pointer
 * (halox__shm_ptr), by a kernel on the stream. */
cudaError_t halox__shm_copy_to_peer(void *dst, const void *src, size_t bytes, cudaStream_t stream);

/* ---- kernels (nvshmem_halo.cu) ---------------------------------------------------------- */

/* One pulse as the kernels see it (uploaded to device memory at bind). Addresses of peers are
 * either load/store pointers (NVLink, same GPU) or NULL, with the symmetric address for puts. */
typedef struct halox__shm_row {
    int pulse;            /* k */
    int dim;              /* shift component */
    double shift;         /* added to component dim of every coordinate sent (0: none) */
    int send_count;       /* atoms sent in pulse k (coordinates out, forces back in) */
    int recv_count;       /* atoms received in pulse k */
    int home_prefix;      /* map[0, home_prefix) are home atoms: sendable at once */
    uint32_t needs;       /* coordinates: bit j, map holds atoms received in pulse j */
    int feeds;            /* forces: some later pulse forwards atoms received in this one */
    int send_pe;          /* coordinates go to send_pe, forces come back from it */
    int recv_pe;          /* coordinates come from recv_pe, forces go back to it */
    const int *map;       /* send_count local indices (device) */
    void *x_peer;         /* send_pe's halo for pulse k (its x + its recv_offset): store pointer */
    void *x_sym;          /* the same as a symmetric address, for puts */
    void *stage;          /* this PE's symmetric staging for the put path (send_count atoms) */
    void *f_src;          /* this PE's f + recv_offset: forces on the atoms received in pulse k */
    void *fb_peer;        /* recv_pe's force buffer slot for pulse k: store pointer */
    void *fb_sym;         /* the same as a symmetric address */
    void *fb_mine;        /* this PE's force buffer slot for pulse k (send_count atoms) */
    uint64_t *sig_x_peer; /* send_pe's coordinate signal k: store pointer, or NULL */
    /* fields forwarded inside the coordinate kernel (halox_comm_bind_fields): send_pe's rows
     * for pulse k of each (store pointers; the fused direct path only) */
    void *fd_peer[HALOX_MAX_FIELDS];
    /* fields returned inside the force kernel: recv_pe's buffer rows for pulse k of each (store
     * pointers) and this PE's (send_count rows), the halo rows' first index (recv_offset) */
    void *fr_peer[HALOX_MAX_FIELDS];
    void *fr_mine[HALOX_MAX_FIELDS];
    int recv_offset;
    uint64_t *sig_f_peer; /* recv_pe's force signal k: store pointer, or NULL */
} halox__shm_row_t;

/* Where a kernel that gave up waiting says why (device memory; `flag` in mapped host memory so
 * the host notices without a copy). First failure wins. The same record as the in-kernel
 * exchange's (halox/inline.h), whose waits write it too. */
typedef halox_inline_fail_t halox__shm_fail_t;

/* Device state of an endpoint (one allocation, zeroed at bind). */
typedef struct halox__shm_state {
    unsigned long long epoch[2];                   /* exchanges done per direction */
    unsigned int row_done[2][HALOX_MAX_PULSES];    /* blocks done per row (send phase) */
    unsigned int acc_blocks[HALOX_MAX_PULSES];     /* forces: blocks done accumulating */
    unsigned long long acc_done[HALOX_MAX_PULSES]; /* forces: epoch whose accumulation is done */
    unsigned int launch_done[2][HALOX_MAX_PULSES]; /* rows signalled per launch */
    int abort;                                     /* a wait failed: everyone leaves */
    halox__shm_fail_t fail;
    /* nvshmem-inline: last-block counters of its pack and send kernels (per direction and
     * pulse) and of the caller's kernels (halox_inline_view_t.ticket); zero between launches */
    unsigned inl_ticket[2][HALOX_MAX_PULSES];
    unsigned ticket[HALOX_INLINE_TICKETS];
} halox__shm_state_t;

typedef struct halox__shm_launch {
    const halox__shm_row_t *rows; /* device, indexed by pulse */
    int n_pulses;                 /* of the bound plan */
    int first;                    /* first pulse of this launch (forces: the highest) */
    int count;                    /* pulses in this launch (forces go down from first) */
    int blocks_per_row;
    int real_double; /* 0 float, 1 double */
    int stride;
    void *x, *f;               /* this PE's arrays */
    uint64_t *sig;             /* this PE's symmetric signals */
    halox__shm_state_t *state; /* device */
    volatile int *host_flag;   /* mapped host memory: set to 1 on a failure */
    long long timeout_ns;
    int use_put;     /* never store to peers: put-with-signal (RDMA path) */
    int signal_only; /* benchmark floors: 1 signals without payload, 2 the launches alone */
    int tma;         /* store path: stage in shared memory, write with bulk async copies */
    int bump;        /* the launch's last block raises epoch[dir] */
    /* coordinates: the bound forward fields the kernel stores with the atoms (rows.fd_peer):
     * this PE's arrays and their bytes per atom */
    int n_fields;
    const void *fd_src[HALOX_MAX_FIELDS];
    unsigned fd_row[HALOX_MAX_FIELDS];
    /* forces: the bound reverse fields the kernel returns with the forces and sums into their
     * owners (rows.fr_peer, rows.fr_mine): this PE's arrays, bytes per atom, type, count */
    int n_rfields;
    void *fr_data[HALOX_MAX_FIELDS];
    unsigned fr_row[HALOX_MAX_FIELDS];
    int fr_type[HALOX_MAX_FIELDS];
    int fr_count[HALOX_MAX_FIELDS];
} halox__shm_launch_t;

/* Coordinates: pack (two passes: home atoms, then forwarded atoms once the pulses that brought
 * them have signalled), store or put to the peer, signal; then wait for this PE's incoming
 * signals of the launch's pulses. */
cudaError_t halox__shm_coords(const halox__shm_launch_t *l, cudaStream_t stream);
/* Forces, pulses from `first` down: return the halo's forces (after the later pulses that
 * forward them have accumulated), signal; wait for the returned forces and accumulate them into
 * f in reverse pulse order (bit-identical to the reference). */
cudaError_t halox__shm_forces(const halox__shm_launch_t *l, cudaStream_t stream);
/* nvshmem-stream: wait (bounded) in a one-thread kernel until this PE's signal `slot` (0..2*MAX)
 * reaches epoch[dir] + 1; with bump, raise epoch[dir] afterwards. */
cudaError_t halox__shm_wait(const halox__shm_launch_t *l, int dir, int slot, int peer,
                            cudaStream_t stream);
/* nvshmem-stream: raise epoch[dir] (when no wait of that direction did). */
cudaError_t halox__shm_bump(halox__shm_state_t *state, int dir, cudaStream_t stream);

/* ---- rebuild messages (nvshmem_msg.cu) ---------------------------------------------------- */

/* A rebuild message (the plan build's set-up message, the migration's all-to-all:
 * gpu_nvshmem_msg.c) from device memory into the receivers' symmetric mailboxes and out again,
 * ordered by signals between the GPUs instead of host waits and agreements. Every rank has, in
 * symmetric memory, an arrival signal and an acknowledgement per rank: a sender raises its
 * receiver's arrival signal for it to seq + 1 once its block of message seq landed; a receiver,
 * once it copied message seq out of its mailbox, raises every rank's acknowledgement for it to seq
 * + 1. The mailbox has two halves used in turn (message seq in half seq % 2), so a sender waits,
 * before it writes message seq, until its receiver acknowledged message seq - 2 (acknowledgement >=
 * seq - 1). Waits are bounded as the halo kernels' (the record says HALOX__SHM_DIR_MSG). */
enum { HALOX__SHM_MSG_MAX = 32 }; /* ranks the message kernels serve; more: the host path */
enum { HALOX__SHM_DIR_MSG = 2 };  /* halox__shm_fail_t.dir of a message's wait */
enum { HALOX__SHM_MSG_ARRIVAL = 0, HALOX__SHM_MSG_ACK = 1 }; /* its .pulse: what it waited for */

typedef struct halox__shm_msg_block {
    char *dst;       /* send: the receiver's slot (load/store pointer); receive: where it goes */
    const char *src; /* send: this rank's block; receive: this rank's slot for the sender */
    size_t bytes;
    unsigned long long *sig; /* send: the receiver's arrival signal for this rank (load/store
                                pointer); receive: this rank's arrival signal for the sender */
    unsigned long long *ack; /* send: this rank's acknowledgement from the receiver */
    int pe;                  /* the peer, for a timeout's record */
} halox__shm_msg_block_t;

typedef struct halox__shm_msg_launch {
    halox__shm_launch_t L;  /* the waits' state, host flag and bound */
    unsigned long long seq; /* the message's number (the same on every rank) */
    int n;                  /* blocks of the message this rank sends or receives */
    halox__shm_msg_block_t b[HALOX__SHM_MSG_MAX];
    /* receive: every rank's acknowledgement for this rank (load/store pointers) */
    unsigned long long *ack_peer[HALOX__SHM_MSG_MAX];
    int n_ack;
    /* the launch's last block signals (send) or acknowledges (receive): it brings *counter (this
     * rank's device memory, zeroed once) to target, the blocks of every such launch so far */
    unsigned *counter;
    unsigned target;
} halox__shm_msg_launch_t;

/* Send: wait for the receivers' acknowledgements of message seq - 2, copy the blocks into their
 * slots, raise their arrival signals. Receive: wait for the arrival signals, copy the blocks out,
 * acknowledge to every rank. `blocks` CUDA blocks each (the counter's target counts them). */
cudaError_t halox__shm_msg_send(const halox__shm_msg_launch_t *l, int blocks, cudaStream_t stream);
cudaError_t halox__shm_msg_recv(const halox__shm_msg_launch_t *l, int blocks, cudaStream_t stream);

/* Blocks a launch may use without risking non-resident spinning blocks: the SMs of the current
 * device divided among the PEs sharing it. */
int halox__shm_max_blocks(int pes_per_gpu);

#ifdef __cplusplus
}
#endif
#endif
