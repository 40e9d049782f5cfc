/* Internal: the CPU-orchestrated leg of the GPU transports. Data goes from device memory to
 * pinned host memory (or stays on the device with CUDA-aware MPI), over MPI on the transport's
 * own communicator, and back; every wait is bounded (one deadline per exchange call) and names
 * rank, operation, step, pulse and peer.
 *
 * Shared by mpi-staged and mpi-cuda (src/transports/gpu/gpu_mpi.c: every pulse) and hybrid
 * (src/transports/nvshmem/gpu_hybrid.c: the pulses whose peer is not reachable by loads and
 * stores). The transport's state starts with its halox__gpu_t (comm->impl) and holds a
 * halox__hst_t.
 *
 * Request slots: [0, HALOX_MAX_PULSES) receives of pulse k, [HALOX_MAX_PULSES, 2x) sends.
 * Host layout: h_send holds send_count atoms per pulse at the device plan's buf_off[k]
 * (coordinates out, forces back in), h_recv recv_count atoms per pulse at recv_off[k]
 * (coordinates in, forces back out). After a failure the endpoint refuses every exchange;
 * requests that could not be completed are abandoned and their host buffers never freed. */
#ifndef HALOX_TRANSPORTS_GPU_STAGING_H
#define HALOX_TRANSPORTS_GPU_STAGING_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "transports/gpu/gpu.h"
#include "transports/host/mpi_wait.h"

enum {
    HALOX__HST_TAG_COORDS = 1000,       /* + pulse */
    HALOX__HST_TAG_FORCES = 2000,       /* + pulse */
    HALOX__HST_RECV = 0,                /* request slot of pulse k's receive: k */
    HALOX__HST_SEND = HALOX_MAX_PULSES, /* of its send: HALOX__HST_SEND + k */
    HALOX__HST_NREQ = 2 * HALOX_MAX_PULSES,
};

/* One exchange call: what it is (for messages) and the deadline of all its waits. */
typedef struct halox__hst_op {
    const char *name; /* "coordinate exchange", "force exchange" */
    double deadline;  /* halox__now() clock */
} halox__hst_op_t;

typedef struct halox__hst {
    MPI_Comm comm; /* our duplicate; MPI_COMM_NULL until created */
    int leaked;    /* abandoned requests may still touch the host buffers: never free them */
    MPI_Request req[HALOX__HST_NREQ];
    halox__mpiw_info_t info[HALOX__HST_NREQ];
    MPI_Status status[HALOX__HST_NREQ];
    int index[HALOX__HST_NREQ];
    char *h_send; /* pinned (cudaMallocHost); NULL with CUDA-aware MPI */
    size_t h_send_capacity;
    char *h_recv;
    size_t h_recv_capacity;
    /* hybrid: checked while waiting for the stream (its in-kernel waits record timeouts), and
     * how much longer than the exchange's deadline a stream wait may take, so that those waits,
     * which name pulse and peer, report first (NULL, 0: mpi-staged, mpi-cuda) */
    halox__gpu_check_fn check;
    double stream_grace;
    int device; /* CUDA-aware MPI (mpi-cuda): messages move device memory, no host staging */
    halox__hst_op_t op; /* the exchange call in progress (set by its transport's open) */
} halox__hst_t;

/* Duplicate the caller's communicator (args->mpi_comm, else world) for the halo traffic, bounded
 * by comm->timeout_s. Collective. On failure h->comm stays MPI_COMM_NULL (or is leaked). */
halox_status_t halox__hst_init(halox_comm_t *comm, const halox_comm_args_t *args, halox__hst_t *h);
/* Free the communicator and, unless requests were abandoned or the endpoint failed (`failed`),
 * the pinned buffers. Call before halox__gpu_fini(). */
void halox__hst_fini(halox__hst_t *h, int failed);

/* Pinned host buffers for the bound plan's send_bytes / recv_bytes (grown, never shrunk). */
halox_status_t halox__hst_bind(halox_comm_t *comm, halox__hst_t *h, size_t send_bytes,
                               size_t recv_bytes);

/* Forget the previous exchange's (completed) requests. */
void halox__hst_clear(halox__hst_t *h);

/* Post slot i: a receive (recv != 0) into buf or a send of buf, `bytes` (may be 0) with peer,
 * tag and pulse k. */
halox_status_t halox__hst_post(halox_comm_t *comm, halox__hst_t *h, int i, int recv, void *buf,
                               size_t bytes, int peer, int tag, int k, const halox__hst_op_t *op);
/* Wait for slots [first, first + count), checking every receive's size. */
halox_status_t halox__hst_wait(halox_comm_t *comm, halox__hst_t *h, int first, int count,
                               const halox__hst_op_t *op);

/* Pulse k's send in slot HALOX__HST_SEND + k: `bytes` at dev (already enqueued on the stream),
 * copied to host first when host != NULL, the stream drained (bounded), then sent from host (or
 * from dev: CUDA-aware MPI). Every pulse sends, also with no bytes. */
halox_status_t halox__hst_send(halox_comm_t *comm, halox__hst_t *h, int k, const void *dev,
                               void *host, size_t bytes, int peer, int tag,
                               const halox__hst_op_t *op);
/* Pulse k's receive (slot k) completes; when host != NULL its bytes are enqueued for the copy to
 * dev. */
halox_status_t halox__hst_land(halox_comm_t *comm, halox__hst_t *h, int k, void *dev,
                               const void *host, size_t bytes, const halox__hst_op_t *op,
                               const char *what);

/* The leg of pulse k in an exchange call (dir HALOX__GPU_COORDS or HALOX__GPU_FORCES) in the
 * host layout above, the endpoint's bytes per atom (none when it moves no atoms). dev, the
 * pulse's device memory of that leg; NULL: the device plan's own (coordinates: the halo range at
 * recv_offset in, the staging buffer out; forces: f at recv_offset out, the staging buffer in).
 *
 * Forget the previous call's requests and post the receives of the pulses in `which` (bit k:
 * pulse k): coordinates from recv_rank into h_recv, forces from send_rank into h_send (device:
 * straight into the device plan's own memory). */
halox_status_t halox__hst_open(halox_comm_t *comm, halox__hst_t *h, int dir, uint32_t which,
                               const halox__hst_op_t *op);
/* Pulse k's send (halox__hst_send): coordinates its packed atoms to send_rank, forces those on
 * its received atoms back to recv_rank. */
halox_status_t halox__hst_pulse_send(halox_comm_t *comm, halox__hst_t *h, int dir, int k,
                                     const void *dev, const halox__hst_op_t *op);
/* Pulse k's receive completes, and its copy to dev is enqueued (halox__hst_land). */
halox_status_t halox__hst_pulse_land(halox_comm_t *comm, halox__hst_t *h, int dir, int k, void *dev,
                                     const halox__hst_op_t *op);

/* Give up on every outstanding request after a failure (see mpi.c): receives are cancelled,
 * sends released; whatever cannot complete now may still touch its buffer (then h->leaked). The
 * functions here do it themselves when they fail. */
void halox__hst_abandon(halox__hst_t *h);

/* Bounded wait for the stream (pulse < 0: outside a pulse); a timeout fails the endpoint. */
halox_status_t halox__hst_sync(halox_comm_t *comm, halox__hst_t *h, const halox__hst_op_t *op,
                               int pulse);
/* A CUDA call's result: on failure the message names `what`, the endpoint fails and the
 * outstanding requests are abandoned. */
halox_status_t halox__hst_cuda(halox_comm_t *comm, halox__hst_t *h, cudaError_t e,
                               const char *what);

#endif
