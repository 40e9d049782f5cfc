/** @file
 * What an endpoint on a GPU transport adds (halox_transport_caps_t.on_gpu): the stream its
 * exchanges are ordered on, device memory for the arrays it binds, and CUDA graphs of its
 * exchanges. The exchange inside the caller's own kernels: halox/inline.h.
 *
 * The calls take and return CUDA objects as void pointers (cudaStream_t), so that this header
 * needs no CUDA header and C code can include it. One thread at a time per endpoint
 * (halox/endpoint.h). */
#ifndef HALOX_GPU_H
#define HALOX_GPU_H

#include <stddef.h>

#include "halox/endpoint.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** GPU transports: the cudaStream_t the exchanges are enqueued on (args.stream, else one the
 *  endpoint created and owns until its destruction); NULL for CPU transports. Local.
 *  halox_comm_coords()/halox_comm_forces() on a GPU transport order their work on this stream
 *  and may return before it completes; synchronise the stream (or wait on an event recorded on
 *  it) before reading the results on the host. Work of the caller that writes x or reads the
 *  exchanged halo is ordered on this stream or behind events recorded on it. */
void *halox_comm_stream(const halox_comm_t *comm);

/** GPU transports: declare (1) that every kernel of the caller that reads this endpoint's device
 *  state (the bound arrays' halo, an nvshmem-inline view, the maps) is enqueued on
 *  halox_comm_stream() or behind an event recorded on it after the bind; 0 (the default) makes
 *  no such promise. An ordered caller's binds may return with their uploads still enqueued
 *  (the NVSHMEM transports: one host wait fewer per bind; a failed upload then fails the next
 *  call instead of the bind). Per rank, no agreement (local); CPU transports ignore it. */
halox_status_t halox_comm_set_stream_ordered(halox_comm_t *comm, int ordered);

/** GPU transports: device memory for the arrays later bound as x and f (and halox_fixed_atoms_t
 *  x). Collective and blocking: every rank calls it, in the same order, with its own size;
 *  ptr_p gets memory for at least `bytes`. The NVSHMEM transports (caps.symmetric) allocate
 *  symmetric memory (the largest rank's size, on every rank) so that peers can store into it,
 *  and x and f MUST be bound from here; the other GPU transports take any device memory and
 *  allocate with cudaMalloc. Errors name the bytes needed (and NVSHMEM_SYMMETRIC_SIZE when the
 *  symmetric heap is too small). HALOX_ERR_UNAVAILABLE for CPU transports. The memory is the
 *  caller's to free with halox_comm_device_free(), before halox_comm_destroy(). */
halox_status_t halox_comm_device_alloc(halox_comm_t *comm, size_t bytes, void **ptr_p);

/** Free memory from halox_comm_device_alloc(); collective and blocking, in the same order on
 *  every rank, once the work that uses it is done. Bound arrays may be freed: the next exchange
 *  then needs a bind of other arrays first. */
halox_status_t halox_comm_device_free(halox_comm_t *comm, void *ptr);

/** CUDA graphs (caps.capturable). halox_comm_graph_mode(comm, 1) before capturing
 *  halox_comm_coords() and halox_comm_forces() on the transport's stream, (comm, 0) after: in
 *  between the exchanges only enqueue work (no host-side completion checks, which a capture
 *  cannot hold), so the caller must bound its own waits for each replay. Transports that wait
 *  on the host inside an exchange (mpi-staged, the CPU transports) refuse with
 *  HALOX_ERR_UNAVAILABLE. Local. */
halox_status_t halox_comm_graph_mode(halox_comm_t *comm, int on);

/** Count one replay of a captured coordinate + force exchange (the step counter and the
 *  statistics advance as if both had been called; nothing is enqueued), after each launch of
 *  the graph. Reports a failure that exchanges already enqueued recorded (HALOX_ERR_TIMEOUT
 *  naming the peer), without waiting for them. Local. */
halox_status_t halox_comm_graph_replayed(halox_comm_t *comm);

#ifdef __cplusplus
}
#endif
#endif
