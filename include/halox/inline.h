/** @file
 * The halo exchange inside the caller's own kernels (transport `nvshmem-inline`).
 *
 * With the separate-kernel transports a step enqueues pack kernels, signals and waits between
 * its own kernels. With `nvshmem-inline` the caller's kernels do it themselves: the kernel that
 * produces the home positions (the integration) stores each sent atom straight into the peers'
 * halos and raises the peers' signals (each block its share); the kernel that first reads the
 * halo waits inside itself for those signals; the kernel that produces the halo forces stores
 * them straight into the owners' force buffers and signals; the kernel that consumes the forces
 * (the final kick) waits and adds the returned forces of each home atom itself. No pack, unpack
 * or wait kernel runs between them and the host takes no part.
 *
 * This header is the host side: the view of the bound plan that such kernels take (by value, as a
 * kernel argument: every pointer in it is device memory), and the bookkeeping call. The device
 * side, the protocol's functions for the kernels, is halox/inline_device.cuh; a wait or a signal
 * that needs a kernel of its own is enqueued by halox_inline_launch_wait / _signal. The engine
 * (libhalox_md, md/platforms/cuda) uses all three; the separate-kernel exchange of the same
 * transport (halox_comm_coords / halox_comm_forces) keeps working and is what the reference tests
 * check bit for bit.
 *
 * When a view exists (halox_comm_inline_view returns HALOX_OK): the transport is nvshmem-inline,
 * a plan is bound, coordinates are float with stride 3, every peer of every pulse is reachable by
 * loads and stores (one node: NVLink, PCIe peers, or the same GPU), and no pulse forwards atoms
 * received by an earlier one (home atoms only: one pulse per decomposed dimension of a 1-D
 * decomposition, every grid N x 1 x 1 whose halo fits one domain). Otherwise use the exchange
 * calls; the engine does that by itself.
 *
 * Protocol (each direction independently; "exchange e" counts from 1 after every bind):
 *  - signals count exchanges in units of 2^HALOX_INLINE_SIG_SHIFT: exchange e has arrived when
 *    a signal reaches e units. A producer raises each pulse's signal by one unit per exchange:
 *    either every block of its launch adds its share once its own stores are fenced (the shares
 *    sum to one unit), or one thread (the launch's last block) adds the whole unit.
 *  - coordinates: every home atom a is stored into the halos it is sent to (sends[a], below),
 *    shifted by its pulse's shift; after the stores each pulse's coordinate signal at its
 *    receiver is raised by one unit (every pulse, also an empty one); the reader waits until its
 *    own signal k reaches epoch[0] + 1 units for every pulse k, reads, and after its last block
 *    has read raises epoch[0] by one.
 *  - forces: the halo atom j of pulse k (local index recv_offset <= j < recv_offset + recv_count)
 *    goes to f_peer[j - recv_offset]; after the stores each pulse's force signal at the owner is
 *    raised by one unit; the consumer waits until its signals HALOX_MAX_PULSES + k reach
 *    epoch[1] + 1 units, adds f_back[k] of each home atom's sends in descending pulse order (the
 *    reference exchange's order, so sums are those of halox_comm_forces), and raises epoch[1].
 *  - buffers are reused without resets by the chain order: a rank stores its next coordinates
 *    only after it has waited for the forces its peer computed with the previous ones, and its
 *    next forces only after it has waited for the peer's next coordinates.
 *  - every wait is bounded by the endpoint's timeout; a wait that gives up records direction,
 *    pulse, peer and exchange, every other wait leaves at once, and the endpoint's next call
 *    (halox_comm_inline_enqueued, halox_comm_graph_replayed, an exchange) returns
 *    HALOX_ERR_TIMEOUT naming them.
 *  - a kernel that waits must keep its grid within spin_blocks blocks (all of them resident next
 *    to anything else on the GPU, also when several ranks share it), or leave the wait to a
 *    one-thread kernel before it (docs/NVSHMEM.md, "Co-residency"). */
#ifndef HALOX_INLINE_H
#define HALOX_INLINE_H

#include "halox/endpoint.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Signals count exchanges in units of 2^HALOX_INLINE_SIG_SHIFT, so that the blocks of a launch
 * may each add a share (launches of at most 2^20 blocks; 2^44 exchanges per bind). */
#define HALOX_INLINE_SIG_SHIFT 20

/** One pulse as the kernels see it (device memory). */
typedef struct halox_inline_pulse {
    int dim;         /**< component of the coordinates the shift is added to */
    float shift;     /**< added to component dim of every coordinate sent (0: none) */
    int send_count;  /**< atoms this rank sends in the pulse (coordinates out, forces back) */
    int recv_offset; /**< this rank's halo atoms of the pulse: local indices
                          [recv_offset, recv_offset + recv_count) */
    int recv_count;  /**< this rank's halo atoms of the pulse: how many */
    int send_pe;     /**< the peer this rank sends to (for failure records) */
    int recv_pe;     /**< the peer this rank receives from (for failure records) */
    float *x_peer;   /**< the receiver's halo of the pulse (3 floats per atom) */
    unsigned long long *sig_x_peer; /**< the receiver's coordinate signal of the pulse */
    float *f_peer;                  /**< the owner's force buffer of the pulse (3 per atom) */
    unsigned long long *sig_f_peer; /**< the owner's force signal of the pulse */
    const float *f_back; /**< this rank's force buffer: forces returned for its sent atoms */
} halox_inline_pulse_t;

/** One send of a home atom: position `index` of pulse `pulse`'s send list. */
typedef struct halox_inline_send {
    int pulse; /**< the pulse, an index of halox_inline_view_t.pulse */
    int index; /**< the position in that pulse's send list (and in the receiver's halo of it) */
} halox_inline_send_t;

/** Where a wait that gave up writes (first failure wins). */
typedef struct halox_inline_fail {
    int code;  /**< 0 none, 1 timeout */
    int dir;   /**< 0 coordinates, 1 forces, 2 a device rebuild's message (the library's own) */
    int pulse; /**< the pulse waited for (index in the view's pulse) */
    int peer;  /**< PE that did not signal (-1: a dependency of this rank) */
    unsigned long long epoch; /**< the exchange waited for (since bind) */
    unsigned long long seen;  /**< whole exchanges the signal held when the wait gave up */
} halox_inline_fail_t;

/** Size of halox_inline_view_t.ticket. */
enum {
    HALOX_INLINE_TICKETS = 8 /**< last-block counters for the caller's kernels */
};

/** The bound plan for kernels that exchange inside themselves. Valid until the next bind. */
typedef struct halox_inline_view {
    int n_pulses;                      /**< pulses of the plan */
    const halox_inline_pulse_t *pulse; /**< n_pulses entries */
    int n_home;                        /**< home atoms of the plan */
    /** home atom a's sends: send[send_start[a] .. send_start[a + 1]), pulses descending */
    const int *send_start;
    const halox_inline_send_t *send; /**< every home atom's sends, indexed by send_start */
    unsigned long long *sig;   /**< this rank's signals: [k] coordinates, [HALOX_MAX_PULSES + k]
                                    forces of pulse k */
    unsigned long long *epoch; /**< [2]: exchanges completed per direction */
    /** zero between launches; ticket i serves one kernel of the caller at a time (the library's
     *  engine: 0 coordinates out, 1 coordinates in, 2 forces out, 3 forces in) */
    unsigned *ticket;
    int *abort;                /**< set when any wait of this rank gave up: the others leave */
    halox_inline_fail_t *fail; /**< the record of the first wait that gave up */
    volatile int *host_flag;   /**< mapped host memory: 1 once a wait gave up */
    long long timeout_ns;      /**< bound of every wait */
    int spin_blocks;           /**< the largest grid of a kernel that waits inside itself */
    int no_atoms; /**< HALOX_NVSHMEM_SIGNAL_ONLY: signals without atoms (a benchmark floor) */
} halox_inline_view_t;

/** The view of the bound plan (a host copy; its pointers are device memory). HALOX_ERR_UNAVAILABLE
 *  with the reason when the transport or the plan has none (see above); local, not collective.
 *  The bind fills the device side on halox_comm_stream() and may return before that completes
 *  (a caller that declared halox_comm_set_stream_ordered): order the kernels that take the view
 *  behind that stream (enqueue them on it, or wait on an event recorded on it after the bind). */
halox_status_t halox_comm_inline_view(halox_comm_t *comm, halox_inline_view_t *view);

/** Enqueue on `stream` (a cudaStream_t; NULL the legacy default stream) one kernel of one thread
 *  that waits, bounded by the view's timeout, until every pulse's signal of direction `dir` (0
 *  coordinates, 1 forces) holds the next exchange, then completes that exchange on this rank (as
 *  halox_inline_wait and halox_inline_complete of halox/inline_device.cuh do in the caller's
 *  kernel). For a consumer whose grid is larger than view->spin_blocks, which must not wait inside
 *  itself (co-residency): enqueue this before it on the same stream, and the consumer reads
 *  without waiting. A wait that gives up is recorded as the device functions record it (reported
 *  by the endpoint's next call).
 *
 *  Stream semantics: returns once the kernel is enqueued, never waiting for the GPU. The kernel
 *  is launched chained (a programmatic dependent launch) where every device target of the build
 *  is sm_90 or newer: it may start while the kernel before it in the stream finishes, and waits
 *  for that kernel's completion before it touches memory, so the stream's order holds as with a
 *  plain launch. Thread safety: as a CUDA launch; launches of one view's direction must follow
 *  one another on one stream (the wait and the complete of exchange e).
 *
 *  HALOX_ERR_INVALID_ARG for a NULL view or another dir; HALOX_ERR_COMM naming the CUDA error
 *  when the launch fails (the runtime's last error is left set, as a launch leaves it, for callers
 *  that report CUDA errors themselves). Local, not collective. In builds with CUDA
 *  (HALOX_FEATURE_CUDA) only: a program that calls it is a CUDA program. */
halox_status_t halox_inline_launch_wait(const halox_inline_view_t *view, int dir, void *stream);

/** Enqueue on `stream` one kernel of one thread that raises every pulse's signal of direction
 *  `dir` at its peer by one unit (halox_inline_signal after a system-scope fence), every pulse,
 *  also one without atoms: for a producer that has nothing to store this exchange (a rank without
 *  home atoms still signals every pulse, or its peers would wait for it). Order it after the
 *  kernels whose stores the signal publishes. Stream semantics, errors and builds as
 *  halox_inline_launch_wait(). */
halox_status_t halox_inline_launch_signal(const halox_inline_view_t *view, int dir, void *stream);

/** Bookkeeping for an exchange the caller's kernels enqueued (coordinates when `coords`, and the
 *  forces): the endpoint's step and statistics advance as halox_comm_coords and
 *  halox_comm_forces would advance them, and a wait that gave up earlier is reported
 *  (HALOX_ERR_TIMEOUT). Not inside a stream capture: after a captured step's launch call
 *  halox_comm_graph_replayed instead. */
halox_status_t halox_comm_inline_enqueued(halox_comm_t *comm, int coords);

#ifdef __cplusplus
}
#endif
#endif
