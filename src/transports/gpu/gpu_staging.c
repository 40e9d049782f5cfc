/* The CPU-orchestrated leg of the GPU transports: pinned host staging, MPI with bounded waits,
 * stream synchronisations. See gpu_staging.h. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "transports/gpu/gpu_staging.h"

void halox__hst_clear(halox__hst_t *h)
{
    for (int i = 0; i < HALOX__HST_NREQ; i++)
        h->req[i] = MPI_REQUEST_NULL;
}

void halox__hst_abandon(halox__hst_t *h)
{
    if (halox__mpiw_abandon(h->req, h->info, HALOX__HST_NREQ))
        h->leaked = 1;
}

static halox_status_t halox__hst_fail(halox_comm_t *comm, halox__hst_t *h, halox_status_t st)
{
    halox__gpu_fail(halox__gpu(comm));
    halox__hst_abandon(h);
    return st;
}

halox_status_t halox__hst_init(halox_comm_t *comm, const halox_comm_args_t *args, halox__hst_t *h)
{
    const char *name = halox__gpu(comm)->name;
    h->comm = MPI_COMM_NULL;
    halox__hst_clear(h);
    /* our own duplicate for the halo traffic, created without blocking beyond the timeout */
    MPI_Comm parent = args->mpi_comm ? *(const MPI_Comm *)args->mpi_comm : MPI_COMM_WORLD;
    const double deadline = halox__now() + comm->timeout_s;
    h->info[0] = (halox__mpiw_info_t){HALOX__MPIW_COLLECTIVE, -1, -1, 0};
    int rc = MPI_Comm_idup(parent, &h->comm, &h->req[0]);
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        h->comm = MPI_COMM_NULL;
        return halox__error(HALOX_ERR_COMM, "%s: MPI_Comm_idup failed: %s", name,
                            halox__mpiw_errstr(rc, es));
    }
    for (int polls = 0;; polls++) {
        int done = 0;
        MPI_Test(&h->req[0], &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        if (halox__now() > deadline) {
            h->comm = MPI_COMM_NULL; /* may still complete: leaked, never freed */
            h->req[0] = MPI_REQUEST_NULL;
            return halox__error(HALOX_ERR_TIMEOUT,
                                "%s: rank %d timed out after %.3g s duplicating the communicator: "
                                "not every rank created the endpoint",
                                name, comm->rank, comm->timeout_s);
        }
        halox__mpiw_backoff(polls);
    }
    h->req[0] = MPI_REQUEST_NULL;
    MPI_Comm_set_errhandler(h->comm, MPI_ERRORS_RETURN);
    return HALOX_OK;
}

void halox__hst_fini(halox__hst_t *h, int failed)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (h->comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&h->comm);
    h->comm = MPI_COMM_NULL;
    if (!h->leaked && !failed) {
        if (h->h_send)
            cudaFreeHost(h->h_send);
        if (h->h_recv)
            cudaFreeHost(h->h_recv);
        h->h_send = h->h_recv = NULL;
        h->h_send_capacity = h->h_recv_capacity = 0;
    }
}

static halox_status_t halox__hst_pinned(halox_comm_t *comm, char **p, size_t *cap, size_t need)
{
    if (*p && need <= *cap) /* never NULL, even when empty: offsets are added to it */
        return HALOX_OK;
    if (*p)
        cudaFreeHost(*p);
    *p = NULL;
    *cap = 0;
    size_t want = need + need / 4 + 256;
    cudaError_t e = cudaMallocHost((void **)p, want);
    if (e != cudaSuccess) {
        *p = NULL;
        return halox__gpu_cuda_error(comm, halox__gpu(comm), e, "cudaMallocHost (host staging)",
                                     HALOX_ERR_NO_MEMORY, 0);
    }
    *cap = want;
    return HALOX_OK;
}

halox_status_t halox__hst_bind(halox_comm_t *comm, halox__hst_t *h, size_t send_bytes,
                               size_t recv_bytes)
{
    if (h->leaked) /* abandoned requests may still write into the old buffers */
        return halox__error(HALOX_ERR_STATE,
                            "%s: rank %d: bind after a failed exchange: destroy the endpoint",
                            halox__gpu(comm)->name, comm->rank);
    halox_status_t st = halox__hst_pinned(comm, &h->h_send, &h->h_send_capacity, send_bytes);
    if (st == HALOX_OK)
        st = halox__hst_pinned(comm, &h->h_recv, &h->h_recv_capacity, recv_bytes);
    return st;
}

halox_status_t halox__hst_post(halox_comm_t *comm, halox__hst_t *h, int i, int recv, void *buf,
                               size_t bytes, int peer, int tag, int k, const halox__hst_op_t *op)
{
    const char *name = halox__gpu(comm)->name;
    if (bytes > (size_t)INT_MAX) {
        halox__error(HALOX_ERR_INVALID_ARG,
                     "%s: rank %d: pulse %d message of %zu bytes exceeds MPI's int count (%d): "
                     "use more ranks",
                     name, comm->rank, k, bytes, INT_MAX);
        return halox__hst_fail(comm, h, HALOX_ERR_INVALID_ARG);
    }
    h->info[i] = (halox__mpiw_info_t){recv ? HALOX__MPIW_RECV : HALOX__MPIW_SEND, peer, k, bytes};
    int rc = recv ? MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, h->comm, &h->req[i])
                  : MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, h->comm, &h->req[i]);
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        h->req[i] = MPI_REQUEST_NULL;
        halox__error(HALOX_ERR_COMM,
                     "%s: rank %d: %s with rank %d failed in the %s at step %lld (pulse %d): %s",
                     name, comm->rank, recv ? "MPI_Irecv" : "MPI_Isend", peer, op->name, comm->step,
                     k, halox__mpiw_errstr(rc, es));
        return halox__hst_fail(comm, h, HALOX_ERR_COMM);
    }
    return HALOX_OK;
}

halox_status_t halox__hst_wait(halox_comm_t *comm, halox__hst_t *h, int first, int count,
                               const halox__hst_op_t *op)
{
    halox_status_t st =
        halox__mpiw_wait(comm, halox__gpu(comm)->name, h->req + first, h->info + first, count,
                         h->index, h->status, op->name, op->deadline);
    return st == HALOX_OK ? HALOX_OK : halox__hst_fail(comm, h, st);
}

/* Called while the host waits for its stream. MPI moves a message only inside MPI calls of both
 * ends (a rendezvous send needs its sender's progress after the receiver arrives), and hybrid's
 * stream may wait in a kernel for a peer whose host waits, in MPI, for our earlier sends: without
 * progress here the two hosts wait for each other (seen with 8 ranks on one GPU: every rank timed
 * out). MPI_Iprobe drives Open MPI's progress engine without touching any request. */
static halox_status_t halox__hst_progress(halox_comm_t *comm, void *ctx)
{
    halox__hst_t *h = ctx;
    int flag = 0;
    if (h->comm != MPI_COMM_NULL)
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, h->comm, &flag, MPI_STATUS_IGNORE);
    return h->check ? h->check(comm, NULL) : HALOX_OK;
}

halox_status_t halox__hst_sync(halox_comm_t *comm, halox__hst_t *h, const halox__hst_op_t *op,
                               int pulse)
{
    halox__gpu_t *g = halox__gpu(comm);
    halox_status_t st = halox__gpu_stream_wait(comm, g, op->deadline + h->stream_grace,
                                               halox__hst_progress, h, op->name);
    if (st == HALOX_ERR_TIMEOUT && !g->failed) { /* (a check that failed said why already) */
        halox__error(HALOX_ERR_TIMEOUT,
                     "%s: rank %d timed out after %.3g s in the %s at step %lld (pulse %d) "
                     "waiting for its own GPU stream: the work queued on it (the caller's kernels "
                     "or this exchange's copies and waits) did not finish; this endpoint is "
                     "unusable now",
                     g->name, comm->rank, comm->timeout_s + h->stream_grace, op->name, comm->step,
                     pulse);
        return halox__hst_fail(comm, h, st);
    }
    if (st != HALOX_OK)
        halox__hst_abandon(h);
    return st;
}

halox_status_t halox__hst_cuda(halox_comm_t *comm, halox__hst_t *h, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return HALOX_OK;
    halox_status_t st = halox__gpu_cuda_error(comm, halox__gpu(comm), e, what, HALOX_ERR_COMM, 1);
    halox__hst_abandon(h);
    return st;
}

halox_status_t halox__hst_send(halox_comm_t *comm, halox__hst_t *h, int k, const void *dev,
                               void *host, size_t bytes, int peer, int tag,
                               const halox__hst_op_t *op)
{
    halox_status_t st = HALOX_OK;
    if (bytes > 0) {
        /* MPI reads the buffer from the host: the pack (or the forces) must be complete */
        if (host)
            st = halox__hst_cuda(
                comm, h,
                cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, halox__gpu(comm)->stream),
                "copying a pulse's data to the host");
        if (st == HALOX_OK)
            st = halox__hst_sync(comm, h, op, k);
    }
    if (st == HALOX_OK)
        st = halox__hst_post(comm, h, HALOX__HST_SEND + k, 0, host ? host : (void *)dev, bytes,
                             peer, tag, k, op);
    return st;
}

halox_status_t halox__hst_land(halox_comm_t *comm, halox__hst_t *h, int k, void *dev,
                               const void *host, size_t bytes, const halox__hst_op_t *op,
                               const char *what)
{
    halox_status_t st = halox__hst_wait(comm, h, HALOX__HST_RECV + k, 1, op);
    if (st == HALOX_OK && host && bytes > 0)
        st = halox__hst_cuda(
            comm, h,
            cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, halox__gpu(comm)->stream),
            what);
    return st;
}

/* ---- a pulse's leg, in the host layout ------------------------------------------------------- */

static size_t halox__hst_esize(halox_comm_t *comm)
{
    return halox__gpu(comm)->no_atoms ? 0 : halox__atom_bytes(comm->real, comm->stride, 1);
}

/* Pulse k's device memory on the receiving side: the halo range (coordinates), the device plan's
 * staging buffer (forces). */
static char *halox__hst_dev_in(halox_comm_t *comm, int dir, int k, size_t esize)
{
    const halox__gpu_plan_t *dp = &halox__gpu(comm)->plan;
    return dir == HALOX__GPU_COORDS
               ? (char *)comm->x + (size_t)comm->plan->pulse[k].recv_offset * esize
               : dp->d_buf + dp->buf_off[k];
}

halox_status_t halox__hst_open(halox_comm_t *comm, halox__hst_t *h, int dir, uint32_t which,
                               const halox__hst_op_t *op)
{
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &halox__gpu(comm)->plan;
    const size_t esize = halox__hst_esize(comm);
    halox_status_t st = HALOX_OK;
    halox__hst_clear(h);
    for (int k = 0; k < dp->n_pulses && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (!(which & (1u << k)))
            continue;
        void *dev = halox__hst_dev_in(comm, dir, k, esize);
        st = dir == HALOX__GPU_COORDS
                 ? halox__hst_post(comm, h, HALOX__HST_RECV + k, 1,
                                   h->device ? dev : h->h_recv + dp->recv_off[k],
                                   (size_t)p->recv_count * esize, p->recv_rank,
                                   HALOX__HST_TAG_COORDS + k, k, op)
                 : halox__hst_post(comm, h, HALOX__HST_RECV + k, 1,
                                   h->device ? dev : h->h_send + dp->buf_off[k],
                                   (size_t)p->send_count * esize, p->send_rank,
                                   HALOX__HST_TAG_FORCES + k, k, op);
    }
    return st;
}

halox_status_t halox__hst_pulse_send(halox_comm_t *comm, halox__hst_t *h, int dir, int k,
                                     const void *dev, const halox__hst_op_t *op)
{
    const halox_pulse_t *p = &comm->plan->pulse[k];
    const halox__gpu_plan_t *dp = &halox__gpu(comm)->plan;
    const size_t esize = halox__hst_esize(comm);
    if (dir == HALOX__GPU_COORDS)
        return halox__hst_send(comm, h, k, dev ? dev : dp->d_buf + dp->buf_off[k],
                               h->device ? NULL : h->h_send + dp->buf_off[k],
                               (size_t)p->send_count * esize, p->send_rank,
                               HALOX__HST_TAG_COORDS + k, op);
    return halox__hst_send(comm, h, k, dev ? dev : (char *)comm->f + (size_t)p->recv_offset * esize,
                           h->device ? NULL : h->h_recv + dp->recv_off[k],
                           (size_t)p->recv_count * esize, p->recv_rank, HALOX__HST_TAG_FORCES + k,
                           op);
}

halox_status_t halox__hst_pulse_land(halox_comm_t *comm, halox__hst_t *h, int dir, int k, void *dev,
                                     const halox__hst_op_t *op)
{
    const halox_pulse_t *p = &comm->plan->pulse[k];
    const halox__gpu_plan_t *dp = &halox__gpu(comm)->plan;
    const size_t esize = halox__hst_esize(comm);
    void *to = dev ? dev : halox__hst_dev_in(comm, dir, k, esize);
    if (dir == HALOX__GPU_COORDS)
        return halox__hst_land(comm, h, k, to, h->device ? NULL : h->h_recv + dp->recv_off[k],
                               (size_t)p->recv_count * esize, op,
                               "copying received coordinates to the device");
    return halox__hst_land(comm, h, k, to, h->device ? NULL : h->h_send + dp->buf_off[k],
                           (size_t)p->send_count * esize, op,
                           "copying returned forces to the device");
}
