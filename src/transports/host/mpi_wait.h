/* Internal: bounded waiting on MPI requests, shared by the MPI-based transports (mpi, and the
 * GPU transports mpi-staged and mpi-cuda), so the polling, the size checks and the messages
 * that name rank, pulse, peer and step exist once. */
#ifndef HALOX_TRANSPORTS_MPI_WAIT_H
#define HALOX_TRANSPORTS_MPI_WAIT_H

#include <mpi.h>
#include <stddef.h>

#include "core/transport.h"

typedef enum halox__mpiw_kind {
    HALOX__MPIW_SEND,
    HALOX__MPIW_RECV,
    HALOX__MPIW_COLLECTIVE, /* cannot be cancelled or freed (MPI-3 nonblocking collectives) */
} halox__mpiw_kind_t;

/* What one outstanding request is, for messages and for clean-up after a failure. */
typedef struct halox__mpiw_info {
    halox__mpiw_kind_t kind;
    int peer;     /* -1 for collectives */
    int pulse;    /* -1 outside the halo exchange */
    size_t bytes; /* expected size of a receive */
} halox__mpiw_info_t;

/* MPI's text for an error code, in buf (MPI_MAX_ERROR_STRING bytes). */
const char *halox__mpiw_errstr(int rc, char *buf);

/* Yield first (a late peer is usually microseconds away), then sleep briefly so that
 * oversubscribed ranks leave the cores to the peers they wait for. */
void halox__mpiw_backoff(int polls);

/* Poll req[0, count) until every request completed, checking that each receive brought exactly
 * info[i].bytes. On an MPI error or when `deadline` (halox__now() clock) passes with requests
 * still pending, record a message prefixed by `who` (the transport's name) that names the
 * rank, operation `op`, step, pulse and peer, and return HALOX_ERR_COMM or HALOX_ERR_TIMEOUT:
 * the caller then abandons its outstanding requests. index and status are scratch arrays of
 * count entries. */
/* Give up on the outstanding requests req[0, n) after a failure: receives are cancelled (with
 * one short grace period for all, so a failure returns promptly; a cancel can fail when the
 * message is already half in), sends released to finish on their own, collectives (which can
 * be neither cancelled nor freed) dropped. Returns nonzero when some request may still touch
 * its buffer: the caller must never free those buffers then. */
int halox__mpiw_abandon(MPI_Request *req, const halox__mpiw_info_t *info, int n);

halox_status_t halox__mpiw_wait(halox_comm_t *comm, const char *who, MPI_Request *req,
                                const halox__mpiw_info_t *info, int count, int *index,
                                MPI_Status *status, const char *op, double deadline);

#endif
