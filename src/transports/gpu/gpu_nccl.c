/* The `nccl` transport: coordinates and forces live in device memory; every pulse is a pack
 * kernel and an ncclSend/ncclRecv pair inside one group, all ordered on the endpoint's stream.
 * The host never waits inside an exchange: halox_comm_coords()/halox_comm_forces() only enqueue.
 * Received coordinates land straight in the halo (x + recv_offset); returned forces land in a
 * device staging buffer and an accumulate kernel adds them, pulses in reverse order, so the
 * results are bit-identical to the reference.
 *
 * The NCCL communicator is made from the MPI job (unique id from rank 0, spread with the inner
 * `mpi` endpoint's allgather, right after every rank proved alive) in NCCL's blocking mode: in
 * nonblocking mode every ncclGroupEnd() starts a thread. Should NCCL still answer
 * ncclInProgress, the communicator is polled against the timeout. NCCL refuses two ranks on one
 * GPU; that is detected here first and refused with HALOX_ERR_UNAVAILABLE (use mpi-staged, or one
 * rank per GPU).
 *
 * Bounded waits: one event per pulse and direction is recorded after that pulse's work. The next
 * coordinate exchange (and bind, and destruction) polls the previous step's events against the
 * timeout, together with ncclCommGetAsyncError(), so the host runs at most one step ahead of the
 * GPU and a missing peer becomes HALOX_ERR_TIMEOUT naming rank, step, pulse and peers; the NCCL
 * communicator is then aborted and the endpoint refuses every later exchange. */
#define _POSIX_C_SOURCE 200809L

#include <nccl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/pulse_gpu.h"
#include "transports/registry.h"

typedef struct halox__nccl {
    halox__gpu_t g; /* first: the shared GPU part */
    ncclComm_t nccl;
} halox__nccl_t;

static halox__nccl_t *halox__nccl(halox_comm_t *comm) { return (halox__nccl_t *)comm->impl; }

static ncclDataType_t halox__nccl_type(halox_real_t real)
{
    return real == HALOX_FLOAT ? ncclFloat32 : ncclFloat64;
}

static halox_status_t halox__nccl_abort(halox_comm_t *comm, halox_status_t st)
{
    halox__nccl_t *m = halox__nccl(comm);
    halox__gpu_fail(&m->g);
    if (m->nccl) {
        ncclCommAbort(m->nccl);
        m->nccl = NULL;
    }
    return st;
}

static halox_status_t halox__nccl_error(halox_comm_t *comm, ncclResult_t r, const char *what)
{
    halox__nccl_t *m = halox__nccl(comm);
    halox__error(HALOX_ERR_COMM, "nccl: rank %d: %s failed at step %lld: %s (%s)", comm->rank, what,
                 comm->step, ncclGetErrorString(r), ncclGetLastError(m->nccl));
    return halox__nccl_abort(comm, HALOX_ERR_COMM);
}

/* Asynchronous errors of the communicator (a peer that died, a network failure). */
static halox_status_t halox__nccl_check(halox_comm_t *comm, void *ctx)
{
    (void)ctx;
    halox__nccl_t *m = halox__nccl(comm);
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(m->nccl, &async);
    if (r != ncclSuccess)
        return halox__nccl_error(comm, r, "ncclCommGetAsyncError");
    if (async != ncclSuccess && async != ncclInProgress)
        return halox__nccl_error(comm, async, "an exchange in flight (asynchronous NCCL error)");
    return HALOX_OK;
}

/* Nonblocking mode: wait until the communicator leaves ncclInProgress, bounded. */
static halox_status_t halox__nccl_settle(halox_comm_t *comm, double deadline, const char *what)
{
    halox__nccl_t *m = halox__nccl(comm);
    for (long polls = 0;; polls++) {
        ncclResult_t async = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(m->nccl, &async);
        if (r != ncclSuccess)
            return halox__nccl_error(comm, r, what);
        if (async == ncclSuccess)
            return HALOX_OK;
        if (async != ncclInProgress)
            return halox__nccl_error(comm, async, what);
        if (halox__now() > deadline) {
            halox__error(HALOX_ERR_TIMEOUT,
                         "nccl: rank %d timed out after %.3g s in %s (step %lld): not every rank "
                         "took part; check that all ranks make the same halox calls in the same "
                         "order and are alive; the NCCL communicator was aborted and this endpoint "
                         "is unusable now (end the job: MPI_Abort)",
                         comm->rank, comm->timeout_s, what, comm->step);
            return halox__nccl_abort(comm, HALOX_ERR_TIMEOUT);
        }
        halox__gpu_backoff(polls);
    }
}

/* Wait for the exchanges enqueued so far (the previous step's), coordinates then forces, each in
 * the order its pulses run; a pulse that does not complete is named in the message. */
static halox_status_t halox__nccl_drain(halox_comm_t *comm, const char *why)
{
    halox__nccl_t *m = halox__nccl(comm);
    const double deadline = halox__now() + comm->timeout_s;
    for (int dir = HALOX__GPU_COORDS; dir <= HALOX__GPU_FORCES; dir++) {
        int k = -1;
        halox_status_t st =
            halox__gpu_events_wait(comm, &m->g, dir, deadline, halox__nccl_check, NULL, &k);
        if (st == HALOX_ERR_TIMEOUT) {
            const int known = k >= 0 && k < HALOX_MAX_PULSES;
            const int from = known ? m->g.ev_from[dir][k] : -1,
                      to = known ? m->g.ev_to[dir][k] : -1;
            const char dim = known ? "xyz"[m->g.ev_dim[dir][k]] : '?';
            halox__error(HALOX_ERR_TIMEOUT,
                         "nccl: rank %d timed out after %.3g s (%s) waiting for the %s exchange of "
                         "step %lld, pulse %d (dim %c): the receive from rank %d or the send to "
                         "rank %d did not complete; check that those ranks are alive and make the "
                         "same exchange calls for the same step, or raise HALOX_TIMEOUT_S if one "
                         "is only slow; the NCCL communicator was aborted and this endpoint is "
                         "unusable now (end the job: MPI_Abort)",
                         comm->rank, comm->timeout_s, why,
                         dir == HALOX__GPU_COORDS ? "coordinate" : "force", m->g.ev_step[dir], k,
                         dim, from, to);
            return halox__nccl_abort(comm, st);
        }
        if (st != HALOX_OK) {
            if (m->nccl && !m->g.failed)
                halox__nccl_abort(comm, st);
            return st;
        }
    }
    return HALOX_OK;
}

/* ---- life cycle ------------------------------------------------------------------------- */

static void halox__nccl_fini(halox_comm_t *comm);

/* NCCL refuses two ranks on one GPU: find that first and say what to do instead. */
static halox_status_t halox__nccl_one_per_gpu(halox_comm_t *comm)
{
    halox__gpu_who_t *all = NULL;
    halox_status_t st = halox__gpu_who(comm, "nccl", "nccl endpoint creation", &all);
    for (int a = 0; a < comm->size && st == HALOX_OK; a++)
        for (int b = a + 1; b < comm->size && st == HALOX_OK; b++)
            if (strcmp(all[a].host, all[b].host) == 0 && strcmp(all[a].bus, all[b].bus) == 0)
                st = halox__error(HALOX_ERR_UNAVAILABLE,
                                  "nccl: ranks %d and %d share the GPU %s on %s, and NCCL needs "
                                  "one rank per GPU: start one rank per GPU, or use mpi-staged "
                                  "for several ranks per GPU",
                                  a, b, all[a].bus, all[a].host);
    free(all);
    return st; /* the same verdict on every rank: all saw the same table */
}

static halox_status_t halox__nccl_init(halox_comm_t *comm, const halox_comm_args_t *args)
{
    halox__nccl_t *m = calloc(1, sizeof *m);
    if (!m)
        return halox__error(HALOX_ERR_NO_MEMORY, "nccl: no memory for the endpoint");
    comm->impl = m;
    halox_status_t st = halox__gpu_init(comm, args, &m->g, "nccl");
    if (st == HALOX_OK)
        st = halox__nccl_one_per_gpu(comm);
    if (st != HALOX_OK)
        goto fail;

    /* the unique id from rank 0 to everyone */
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (comm->rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess)
            st = halox__error(HALOX_ERR_COMM, "nccl: ncclGetUniqueId failed: %s (%s)",
                              ncclGetErrorString(r), ncclGetLastError(NULL));
    }
    st = halox__agree(comm, st, "nccl endpoint creation");
    ncclUniqueId *ids = NULL;
    if (st == HALOX_OK) {
        ids = malloc(sizeof *ids * (size_t)comm->size);
        st = halox__agree(comm,
                          ids ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "nccl: no memory"),
                          "nccl endpoint creation");
    }
    if (st == HALOX_OK)
        st = halox__gpu_allgather(comm, &id, ids, sizeof id);
    if (st == HALOX_OK)
        id = ids[0];
    free(ids);
    if (st != HALOX_OK)
        goto fail;

    /* Blocking mode: in nonblocking mode NCCL runs every ncclGroupEnd() on a new thread, which
     * would cost more than a whole pulse. The ranks just proved alive in the allgather above,
     * so creation is bounded in practice by that and by NCCL's own bootstrap timeouts. */
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 1;
    ncclResult_t r = ncclCommInitRankConfig(&m->nccl, comm->size, id, comm->rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        st = halox__error(HALOX_ERR_COMM, "nccl: rank %d: ncclCommInitRankConfig failed: %s (%s)",
                          comm->rank, ncclGetErrorString(r), ncclGetLastError(m->nccl));
        if (m->nccl) {
            ncclCommAbort(m->nccl);
            m->nccl = NULL;
        }
    } else {
        st = halox__nccl_settle(comm, halox__now() + comm->timeout_s,
                                "the NCCL communicator's creation");
        if (st != HALOX_OK)
            m->g.failed = 0; /* nothing was in flight: the endpoint is just not made */
    }
    st = halox__agree(comm, st, "nccl endpoint creation");
    if (st != HALOX_OK)
        goto fail;
    return HALOX_OK;

fail:
    halox__nccl_fini(comm);
    return st;
}

/* Finalising and destroying a communicator may wait for the other ranks of the node, which may
 * have failed: it runs on a helper thread, waited for up to the timeout and abandoned after
 * that (the thread frees its own state when it ends late). */
enum { HALOX__NCCL_CLOSE_RUNNING, HALOX__NCCL_CLOSE_DONE, HALOX__NCCL_CLOSE_ABANDONED };
typedef struct halox__nccl_closer {
    ncclComm_t nccl;
    int device;
    _Atomic int state;
} halox__nccl_closer_t;

static void *halox__nccl_close_main(void *arg)
{
    halox__nccl_closer_t *c = arg;
    (void)cudaSetDevice(c->device);
    ncclResult_t r = ncclCommFinalize(c->nccl);
    if (r == ncclSuccess || r == ncclInProgress) {
        ncclResult_t async = ncclInProgress;
        while (r == ncclSuccess && async == ncclInProgress) {
            r = ncclCommGetAsyncError(c->nccl, &async);
            if (async == ncclInProgress)
                sched_yield();
        }
        if (r == ncclSuccess && async == ncclSuccess)
            ncclCommDestroy(c->nccl);
        else
            ncclCommAbort(c->nccl);
    } else {
        ncclCommAbort(c->nccl);
    }
    if (atomic_exchange(&c->state, HALOX__NCCL_CLOSE_DONE) == HALOX__NCCL_CLOSE_ABANDONED)
        free(c); /* nobody waits any more */
    return NULL;
}

/* Returns 1 when the communicator was closed in time, 0 when it was abandoned to the thread. */
static int halox__nccl_close(halox_comm_t *comm, ncclComm_t nccl, int device)
{
    halox__nccl_closer_t *c = calloc(1, sizeof *c);
    pthread_t th;
    if (!c) {
        ncclCommAbort(nccl);
        return 1;
    }
    c->nccl = nccl;
    c->device = device;
    atomic_init(&c->state, HALOX__NCCL_CLOSE_RUNNING);
    if (pthread_create(&th, NULL, halox__nccl_close_main, c) != 0) {
        free(c);
        ncclCommAbort(nccl);
        return 1;
    }
    const double deadline = halox__now() + comm->timeout_s;
    for (long polls = 0; atomic_load(&c->state) == HALOX__NCCL_CLOSE_RUNNING; polls++) {
        if (halox__now() > deadline) {
            if (atomic_exchange(&c->state, HALOX__NCCL_CLOSE_ABANDONED) ==
                HALOX__NCCL_CLOSE_RUNNING) {
                pthread_detach(th);
                return 0;
            }
            break; /* it finished just now */
        }
        halox__gpu_backoff(polls);
    }
    pthread_join(th, NULL);
    free(c);
    return 1;
}

static void halox__nccl_fini(halox_comm_t *comm)
{
    halox__nccl_t *m = halox__nccl(comm);
    if (!m)
        return;
    if (m->nccl && !m->g.failed && halox__gpu_set_device(comm, &m->g) == HALOX_OK) {
        /* drain (bounded), then let NCCL flush and free its resources (bounded too) */
        if (halox__nccl_drain(comm, "endpoint destruction") == HALOX_OK &&
            halox__gpu_stream_wait(comm, &m->g, halox__now() + comm->timeout_s, halox__nccl_check,
                                   NULL, "endpoint destruction") == HALOX_OK) {
            ncclComm_t c = m->nccl;
            m->nccl = NULL;
            halox__nccl_close(comm, c, m->g.device);
        }
    }
    if (m->nccl) {
        ncclCommAbort(m->nccl);
        m->nccl = NULL;
    }
    halox__gpu_fini(comm, &m->g);
    free(m);
    comm->impl = NULL;
}

/* ---- halo exchange ---------------------------------------------------------------------- */

static halox_status_t halox__nccl_bind(halox_comm_t *comm, halox_status_t st0)
{
    halox__nccl_t *m = halox__nccl(comm);
    halox_status_t st = st0 != HALOX_OK ? st0 : halox__gpu_usable(comm, &m->g, "bind");
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, &m->g);
    if (st == HALOX_OK && m->g.bound) /* an earlier plan's exchanges may still run */
        st = halox__nccl_drain(comm, "bind");
    return halox__gpu_bind(comm, &m->g, st, NULL, 0, NULL);
}

/* One pulse's group: what goes to `to` from sbuf, what comes from `from` into rbuf. */
static halox_status_t halox__nccl_pair(halox_comm_t *comm, const void *sbuf, int scount, int to,
                                       void *rbuf, int rcount, int from, const char *what)
{
    halox__nccl_t *m = halox__nccl(comm);
    const ncclDataType_t type = halox__nccl_type(comm->real);
    const size_t stride = (size_t)comm->stride;
    ncclResult_t r = ncclGroupStart();
    if (r == ncclSuccess && rcount > 0)
        r = ncclRecv(rbuf, (size_t)rcount * stride, type, from, m->nccl, m->g.stream);
    if (r == ncclSuccess && scount > 0)
        r = ncclSend(sbuf, (size_t)scount * stride, type, to, m->nccl, m->g.stream);
    ncclResult_t r2 = ncclGroupEnd(); /* always closes the group */
    if (r == ncclSuccess)
        r = r2;
    if (r == ncclInProgress)
        return halox__nccl_settle(comm, halox__now() + comm->timeout_s, what);
    if (r != ncclSuccess)
        return halox__nccl_error(comm, r, what);
    return HALOX_OK;
}

/* Pulse k's group, everything stream-ordered. Coordinates: the packed atoms out, the received
 * ones straight into the halo; forces back the way the coordinates came (to recv_rank, from
 * send_rank) into the staging buffer. */
static halox_status_t halox__nccl_pulse(halox_comm_t *comm, int dir, int k)
{
    const halox_pulse_t *p = &comm->plan->pulse[k];
    const halox__gpu_plan_t *dp = &halox__nccl(comm)->g.plan;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    if (dir == HALOX__GPU_COORDS)
        return halox__nccl_pair(comm, dp->d_buf + dp->buf_off[k], p->send_count, p->send_rank,
                                (char *)comm->x + (size_t)p->recv_offset * esize, p->recv_count,
                                p->recv_rank, "the coordinate exchange (ncclSend/ncclRecv)");
    return halox__nccl_pair(comm, (char *)comm->f + (size_t)p->recv_offset * esize, p->recv_count,
                            p->recv_rank, dp->d_buf + dp->buf_off[k], p->send_count, p->send_rank,
                            "the force exchange (ncclSend/ncclRecv)");
}

/* A failed kernel launch: the communicator is aborted too. */
static halox_status_t halox__nccl_fail(halox_comm_t *comm, cudaError_t e, const char *what)
{
    halox__gpu_cuda_error(comm, &halox__nccl(comm)->g, e, what, HALOX_ERR_COMM, 1);
    return halox__nccl_abort(comm, HALOX_ERR_COMM);
}

/* The pulses walked on the stream (pulse_gpu.h): each remote pulse one group, its send
 * (coordinates) or swap (forces); an event per pulse. */
static halox_status_t halox__nccl_exchange(halox_comm_t *comm, int dir)
{
    halox_status_t st = halox__gpu_bound(comm, halox__gpu(comm), halox__pulse_gpu_op(dir));
    if (st == HALOX_OK && halox__pulse_gpu_drains(comm, dir))
        st = halox__nccl_drain(comm, "before the next coordinate exchange");
    halox__pulse_gpu_cursor_t c;
    halox__pulse_gpu_start(&c, dir, HALOX__PULSE_GPU_EVENTS, NULL);
    while (st == HALOX_OK && halox__pulse_gpu_next(comm, &c, &st))
        st = halox__nccl_pulse(comm, dir, c.k);
    return c.e != cudaSuccess ? halox__nccl_fail(comm, c.e, c.what) : st;
}

HALOX__PULSE_GPU_EXCHANGES(halox__nccl_exchange)

const halox_transport_ops_t halox__nccl_ops = {
    .name = "nccl",
    .description = "GPU data, CPU-enqueued: pack kernel, ncclSend/ncclRecv per pulse, stream "
                   "ordered (one rank per GPU)",
    HALOX__GPU_OPS_SHARED,
    .capturable = 1,
    .gpu_alone = 1,
    .init = halox__nccl_init,
    .fini = halox__nccl_fini,
    .bind = halox__nccl_bind,
    .coords = halox__nccl_exchange_coords,
    .forces = halox__nccl_exchange_forces,
    .dalloc = halox__gpu_dalloc,
    .dfree = halox__gpu_dfree,
};
