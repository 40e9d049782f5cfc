/** @file
 * The few collectives a particle code needs beside the halo exchange (energies, counts, output
 * gathered on one rank), run over the endpoint's own transport so that a code on the `threads`
 * transport needs no MPI of its own.
 *
 * Every call here is collective and blocking: every rank of the endpoint calls it, in the same
 * order, with host memory (also on GPU transports), bounded by the endpoint's timeout; a failure
 * on any rank fails it on every rank. The buffers are the caller's and free to reuse on return.
 * One thread at a time per endpoint (halox/endpoint.h). Each counts in
 * halox_comm_stats_t.collectives. */
#ifndef HALOX_COLLECTIVES_H
#define HALOX_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "halox/endpoint.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Sum n doubles over all ranks, in place; every rank gets the same bits (summed in rank order,
 *  whatever the transport). */
halox_status_t halox_comm_allreduce_sum(halox_comm_t *comm, double *values, int n);

/** Largest of n doubles over all ranks, in place. */
halox_status_t halox_comm_allreduce_max(halox_comm_t *comm, double *values, int n);

/** Sum n 64-bit integers over all ranks, in place (wrapping around as unsigned on overflow). */
halox_status_t halox_comm_allreduce_sum_i64(halox_comm_t *comm, int64_t *values, int n);

/** Gather `bytes` from every rank into recv (size() * bytes) on every rank, in rank order. */
halox_status_t halox_comm_allgather(halox_comm_t *comm, const void *send, void *recv, size_t bytes);

/** Gather variable-sized blocks on root, in rank order: recv (root only) must hold the sum of
 *  all counts, recv_capacity bytes (HALOX_ERR_INVALID_ARG on every rank otherwise); counts_p
 *  (root only, may be NULL elsewhere) gets each rank's byte count. */
halox_status_t halox_comm_gatherv(halox_comm_t *comm, const void *send, size_t bytes, void *recv,
                                  size_t recv_capacity, size_t *counts_p, int root);

/** Return once every rank has called it. */
halox_status_t halox_comm_barrier(halox_comm_t *comm);

#ifdef __cplusplus
}
#endif
#endif
