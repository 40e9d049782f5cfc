/* The MPI-driven GPU transports: coordinates and forces live in device memory, the CPU drives
 * every pulse.
 *
 *   mpi-staged  the traditional path, for MPI libraries that move host memory only (Open MPI on
 *               the GPU machines is built without CUDA): per pulse a pack kernel, a copy to
 *               pinned host memory, a stream synchronisation, MPI, and a copy into the halo;
 *               forces the other way round into a device staging buffer and an accumulate
 *               kernel, pulses in reverse order.
 *   mpi-cuda    the same exchange with MPI on device buffers directly (CUDA-aware MPI): no
 *               host copies. Refused at creation when MPI says it is not CUDA-aware.
 *
 * Bit-identical to the reference: the kernels do what core's pack/add functions do, and the
 * force accumulations are enqueued in reverse pulse order, each pulse's map entries distinct.
 *
 * Every wait polls against one deadline per call (comm->timeout_s): MPI requests with
 * MPI_Testsome, the stream with cudaStreamQuery. After a timeout or an error the endpoint refuses
 * every later exchange (HALOX_ERR_STATE); requests that could not be completed are abandoned and
 * their host buffers never freed. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support() */
#endif
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "transports/gpu.h"
#include "transports/mpi_wait.h"
#include "transports/registry.h"

enum {
    HALOX__GMPI_TAG_COORDS = 1000, /* + pulse */
    HALOX__GMPI_TAG_FORCES = 2000, /* + pulse */
    HALOX__GMPI_NREQ = 2 * HALOX_MAX_PULSES,
};

typedef struct halox__gmpi {
    halox__gpu_t g; /* first: the shared GPU part */
    int cuda_aware; /* MPI moves device memory (mpi-cuda) */
    MPI_Comm comm;  /* our duplicate; MPI_COMM_NULL until created */
    int leaked;     /* abandoned requests may still touch the host buffers: never free them */
    MPI_Request req[HALOX__GMPI_NREQ]; /* halo: [0, n) receives, [n, 2n) sends */
    halox__mpiw_info_t info[HALOX__GMPI_NREQ];
    MPI_Status status[HALOX__GMPI_NREQ];
    int index[HALOX__GMPI_NREQ];
    /* pinned host staging (mpi-staged): send_count atoms per pulse (packed coordinates out,
     * forces in) and recv_count atoms per pulse (coordinates in, forces out) */
    char *h_send;
    size_t h_send_capacity;
    char *h_recv;
    size_t h_recv_capacity;
} halox__gmpi_t;

typedef struct halox__gmpi_op {
    const char *name; /* "coordinate exchange", "force exchange" */
    double deadline;
} halox__gmpi_op_t;

static halox__gmpi_t *halox__gmpi(halox_comm_t *comm) { return (halox__gmpi_t *)comm->impl; }

static void halox__gmpi_clear(halox__gmpi_t *m)
{
    for (int i = 0; i < HALOX__GMPI_NREQ; i++)
        m->req[i] = MPI_REQUEST_NULL;
}

/* Give up on every outstanding request after a failure (see mpi.c): receives are cancelled,
 * sends released; whatever cannot complete now may still touch its buffer. */
static void halox__gmpi_abandon(halox__gmpi_t *m)
{
    if (halox__mpiw_abandon(m->req, m->info, HALOX__GMPI_NREQ))
        m->leaked = 1;
}

static halox_status_t halox__gmpi_fail(halox_comm_t *comm, halox_status_t st)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox__gpu_fail(&m->g);
    halox__gmpi_abandon(m);
    return st;
}

/* Wait for requests [first, first + count), checking every receive's size. */
static halox_status_t halox__gmpi_wait(halox_comm_t *comm, int first, int count,
                                       const halox__gmpi_op_t *op)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__mpiw_wait(comm, m->g.name, m->req + first, m->info + first, count,
                                         m->index, m->status, op->name, op->deadline);
    return st == HALOX_OK ? HALOX_OK : halox__gmpi_fail(comm, st);
}

static halox_status_t halox__gmpi_post(halox_comm_t *comm, int i, int recv, void *buf, size_t bytes,
                                       int peer, int tag, int pulse, const halox__gmpi_op_t *op)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    if (bytes > (size_t)INT_MAX) {
        halox__error(HALOX_ERR_INVALID_ARG,
                     "%s: rank %d: pulse %d message of %zu bytes exceeds MPI's int count: use "
                     "more ranks",
                     m->g.name, comm->rank, pulse, bytes);
        return halox__gmpi_fail(comm, HALOX_ERR_INVALID_ARG);
    }
    m->info[i] =
        (halox__mpiw_info_t){recv ? HALOX__MPIW_RECV : HALOX__MPIW_SEND, peer, pulse, bytes};
    int rc = recv ? MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, m->comm, &m->req[i])
                  : MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, m->comm, &m->req[i]);
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        m->req[i] = MPI_REQUEST_NULL;
        halox__error(HALOX_ERR_COMM,
                     "%s: rank %d: %s with rank %d failed in the %s at step %lld: %s", m->g.name,
                     comm->rank, recv ? "MPI_Irecv" : "MPI_Isend", peer, op->name, comm->step,
                     halox__mpiw_errstr(rc, es));
        return halox__gmpi_fail(comm, HALOX_ERR_COMM);
    }
    return HALOX_OK;
}

/* Bounded wait for the stream; pulse < 0 outside a pulse. */
static halox_status_t halox__gmpi_sync(halox_comm_t *comm, const halox__gmpi_op_t *op, int pulse)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__gpu_stream_wait(comm, &m->g, op->deadline, NULL, NULL, op->name);
    if (st == HALOX_ERR_TIMEOUT) {
        halox__error(HALOX_ERR_TIMEOUT,
                     "%s: rank %d timed out after %.3g s in the %s at step %lld (pulse %d) "
                     "waiting for its own GPU stream: the work queued on it (the caller's kernels "
                     "or this exchange's copies) did not finish; this endpoint is unusable now",
                     m->g.name, comm->rank, comm->timeout_s, op->name, comm->step, pulse);
        return halox__gmpi_fail(comm, st);
    }
    if (st != HALOX_OK)
        halox__gmpi_abandon(m);
    return st;
}

static halox_status_t halox__gmpi_cuda(halox_comm_t *comm, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return HALOX_OK;
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__gpu_cuda_error(comm, &m->g, e, what, HALOX_ERR_COMM, 1);
    halox__gmpi_abandon(m);
    return st;
}

/* ---- life cycle ------------------------------------------------------------------------- */

/* Whether this MPI moves device memory: asked at run time where the library can say. */
static int halox__gmpi_cuda_aware(const char **how_p)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    *how_p = "MPIX_Query_cuda_support()";
    return MPIX_Query_cuda_support() == 1;
#elif defined(MPIX_GPU_SUPPORT_CUDA)
    int yes = 0;
    *how_p = "MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA)";
    return MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &yes) == MPI_SUCCESS && yes;
#else
    *how_p = "this MPI's headers (no CUDA-awareness query)";
    return 0;
#endif
}

static void halox__gmpi_fini(halox_comm_t *comm);

static halox_status_t halox__gmpi_init_kind(halox_comm_t *comm, const halox_comm_args_t *args,
                                            int cuda_aware, const char *name)
{
    halox__gmpi_t *m = calloc(1, sizeof *m);
    if (!m)
        return halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory for the endpoint", name);
    m->comm = MPI_COMM_NULL;
    m->cuda_aware = cuda_aware;
    halox__gmpi_clear(m);
    comm->impl = m;
    halox_status_t st = halox__gpu_init(comm, args, &m->g, name);
    if (st != HALOX_OK)
        goto fail;
    if (cuda_aware) {
        /* the same answer on every rank of one job: no agreement needed, but keep it collective
         * anyway (a mixed job would hang later otherwise) */
        const char *how = "";
        int yes = halox__gmpi_cuda_aware(&how);
        st = yes ? HALOX_OK
                 : halox__error(HALOX_ERR_UNAVAILABLE,
                                "%s: this MPI is not CUDA-aware (%s says no): use mpi-staged or "
                                "nccl",
                                name, how);
        st = halox__agree(comm, st, "mpi-cuda endpoint creation");
        if (st != HALOX_OK)
            goto fail;
    }
    /* our own duplicate for the halo traffic, created without blocking beyond the timeout */
    MPI_Comm parent = args->mpi_comm ? *(const MPI_Comm *)args->mpi_comm : MPI_COMM_WORLD;
    halox__gmpi_op_t op = {"endpoint creation (MPI_Comm_idup)", halox__now() + comm->timeout_s};
    m->info[0] = (halox__mpiw_info_t){HALOX__MPIW_COLLECTIVE, -1, -1, 0};
    int rc = MPI_Comm_idup(parent, &m->comm, &m->req[0]);
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        m->comm = MPI_COMM_NULL;
        st = halox__error(HALOX_ERR_COMM, "%s: MPI_Comm_idup failed: %s", name,
                          halox__mpiw_errstr(rc, es));
        goto fail;
    }
    for (int polls = 0;; polls++) {
        int done = 0;
        MPI_Test(&m->req[0], &done, MPI_STATUS_IGNORE);
        if (done)
            break;
        if (halox__now() > op.deadline) {
            st = halox__error(HALOX_ERR_TIMEOUT,
                              "%s: rank %d timed out after %.3g s duplicating the communicator: "
                              "not every rank created the endpoint",
                              name, comm->rank, comm->timeout_s);
            m->comm = MPI_COMM_NULL; /* may still complete: leaked, never freed */
            m->req[0] = MPI_REQUEST_NULL;
            goto fail;
        }
        halox__mpiw_backoff(polls);
    }
    m->req[0] = MPI_REQUEST_NULL;
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    return HALOX_OK;

fail:
    halox__gmpi_fini(comm);
    return st;
}

static halox_status_t halox__gmpi_init_staged(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__gmpi_init_kind(comm, args, 0, "mpi-staged");
}

static halox_status_t halox__gmpi_init_cuda(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__gmpi_init_kind(comm, args, 1, "mpi-cuda");
}

static void halox__gmpi_fini(halox_comm_t *comm)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    if (!m)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (m->comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&m->comm);
    halox__gpu_fini(comm, &m->g); /* bounded wait for the stream first */
    if (!m->leaked && !m->g.failed) {
        if (m->h_send)
            cudaFreeHost(m->h_send);
        if (m->h_recv)
            cudaFreeHost(m->h_recv);
    }
    free(m);
    comm->impl = NULL;
}

/* ---- halo exchange ---------------------------------------------------------------------- */

static halox_status_t halox__gmpi_pinned(halox_comm_t *comm, char **p, size_t *cap, size_t need)
{
    if (*p && need <= *cap) /* never NULL, even when empty: offsets are added to it */
        return HALOX_OK;
    halox__gmpi_t *m = halox__gmpi(comm);
    if (*p)
        cudaFreeHost(*p);
    *p = NULL;
    *cap = 0;
    size_t want = need + need / 4 + 256;
    cudaError_t e = cudaMallocHost((void **)p, want);
    if (e != cudaSuccess) {
        *p = NULL;
        return halox__gpu_cuda_error(comm, &m->g, e, "cudaMallocHost (host staging)",
                                     HALOX_ERR_NO_MEMORY, 0);
    }
    *cap = want;
    return HALOX_OK;
}

static halox_status_t halox__gmpi_bind(halox_comm_t *comm)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__gpu_bind(comm, &m->g);
    if (st != HALOX_OK)
        return st;
    m->g.bound = 0;
    if (!m->cuda_aware && !m->leaked) {
        st = halox__gmpi_pinned(comm, &m->h_send, &m->h_send_capacity, m->g.plan.send_bytes);
        if (st == HALOX_OK)
            st = halox__gmpi_pinned(comm, &m->h_recv, &m->h_recv_capacity, m->g.plan.recv_bytes);
    }
    st = halox__agree(comm, st, "bind");
    if (st == HALOX_OK)
        m->g.bound = 1;
    return st;
}

/* Coordinates, pulses in order. Receives are posted first (into the halo itself for mpi-cuda,
 * into pinned host memory for mpi-staged); each pulse waits only for the earlier pulses whose
 * atoms it forwards (and copies their atoms into the halo first), packs, and sends. */
static halox_status_t halox__gmpi_coords(halox_comm_t *comm)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox__gpu_t *g = &m->g;
    halox_status_t st = halox__gpu_bound(comm, g, "coordinate exchange");
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *x = comm->x;
    halox__gmpi_op_t op = {"coordinate exchange", halox__now() + comm->timeout_s};

    /* earlier work on the stream (the caller's kernels reading the halo, the last force
     * exchange's copies out of the staging buffers) is done before anything is overwritten */
    st = halox__gmpi_sync(comm, &op, -1);
    if (st != HALOX_OK)
        return st;
    halox__gmpi_clear(m);
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (halox__gpu_self(comm, p))
            continue; /* a local copy, below */
        void *rb = m->cuda_aware ? (void *)(x + (size_t)p->recv_offset * esize)
                                 : (void *)(m->h_recv + dp->recv_off[k]);
        st = halox__gmpi_post(comm, k, 1, rb, (size_t)p->recv_count * esize, p->recv_rank,
                              HALOX__GMPI_TAG_COORDS + k, k, &op);
    }
    uint32_t landed = 0; /* received and (staged) copied into the halo */
    for (int k = 0; k <= n && st == HALOX_OK; k++) {
        /* k == n: land whatever is left */
        uint32_t want = k < n ? dp->needs[k] : (n ? (1u << n) - 1 : 0);
        for (int j = 0; j < (k < n ? k : n) && st == HALOX_OK; j++) {
            if (!(want & (1u << j)) || (landed & (1u << j)))
                continue;
            st = halox__gmpi_wait(comm, j, 1, &op);
            const halox_pulse_t *q = &plan->pulse[j];
            if (st == HALOX_OK && !m->cuda_aware && q->recv_count > 0)
                st = halox__gmpi_cuda(comm,
                                      cudaMemcpyAsync(x + (size_t)q->recv_offset * esize,
                                                      m->h_recv + dp->recv_off[j],
                                                      (size_t)q->recv_count * esize,
                                                      cudaMemcpyHostToDevice, g->stream),
                                      "copying received coordinates to the device");
            landed |= 1u << j;
        }
        if (k == n || st != HALOX_OK)
            break;
        const halox_pulse_t *p = &plan->pulse[k];
        const size_t bytes = (size_t)p->send_count * esize;
        if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: pack straight into our own halo */
            st = halox__gmpi_cuda(comm,
                                  halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                                  x + (size_t)p->recv_offset * esize, x, g->stream),
                                  "pack kernel (local copy)");
            landed |= 1u << k;
            continue;
        }
        if (bytes > 0) {
            st = halox__gmpi_cuda(
                comm, halox__gpu_pack(dp, plan, k, comm->real, comm->stride, NULL, x, g->stream),
                "pack kernel");
            if (st == HALOX_OK && !m->cuda_aware)
                st = halox__gmpi_cuda(comm,
                                      cudaMemcpyAsync(m->h_send + dp->buf_off[k],
                                                      dp->d_buf + dp->buf_off[k], bytes,
                                                      cudaMemcpyDeviceToHost, g->stream),
                                      "copying packed coordinates to the host");
            if (st == HALOX_OK)
                st = halox__gmpi_sync(comm, &op, k);
        }
        if (st == HALOX_OK)
            st = halox__gmpi_post(comm, n + k, 0,
                                  m->cuda_aware ? (void *)(dp->d_buf + dp->buf_off[k])
                                                : (void *)(m->h_send + dp->buf_off[k]),
                                  bytes, p->send_rank, HALOX__GMPI_TAG_COORDS + k, k, &op);
    }
    if (st == HALOX_OK)
        st = halox__gmpi_wait(comm, n, n, &op);
    return st;
}

/* Forces, pulses in reverse order: the forces on pulse k's received atoms go back once the later
 * pulses added theirs (stream order), and what comes back is added in reverse pulse order, as
 * the reference does. */
static halox_status_t halox__gmpi_forces(halox_comm_t *comm)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox__gpu_t *g = &m->g;
    halox_status_t st = halox__gpu_bound(comm, g, "force exchange");
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *f = comm->f;
    halox__gmpi_op_t op = {"force exchange", halox__now() + comm->timeout_s};

    /* the receive buffers were last used by the coordinate exchange, which completed them */
    halox__gmpi_clear(m);
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (halox__gpu_self(comm, p))
            continue; /* added locally, below */
        void *rb = m->cuda_aware ? (void *)(dp->d_buf + dp->buf_off[k])
                                 : (void *)(m->h_send + dp->buf_off[k]);
        st = halox__gmpi_post(comm, k, 1, rb, (size_t)p->send_count * esize, p->send_rank,
                              HALOX__GMPI_TAG_FORCES + k, k, &op);
    }
    for (int k = n - 1; k >= 0 && st == HALOX_OK; k--) {
        const halox_pulse_t *p = &plan->pulse[k];
        const size_t rbytes = (size_t)p->recv_count * esize;
        char *fk = f + (size_t)p->recv_offset * esize;
        if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: add our own halo's forces straight from f */
            st = halox__gmpi_cuda(
                comm, halox__gpu_add(dp, plan, k, comm->real, comm->stride, f, fk, g->stream),
                "force accumulation kernel (local)");
            continue;
        }
        if (rbytes > 0) {
            if (!m->cuda_aware)
                st = halox__gmpi_cuda(comm,
                                      cudaMemcpyAsync(m->h_recv + dp->recv_off[k], fk, rbytes,
                                                      cudaMemcpyDeviceToHost, g->stream),
                                      "copying halo forces to the host");
            if (st == HALOX_OK)
                st = halox__gmpi_sync(comm, &op, k);
        }
        if (st == HALOX_OK)
            st = halox__gmpi_post(
                comm, n + k, 0, m->cuda_aware ? (void *)fk : (void *)(m->h_recv + dp->recv_off[k]),
                rbytes, p->recv_rank, HALOX__GMPI_TAG_FORCES + k, k, &op);
        if (st == HALOX_OK)
            st = halox__gmpi_wait(comm, k, 1, &op);
        const size_t sbytes = (size_t)p->send_count * esize;
        if (st == HALOX_OK && sbytes > 0) {
            if (!m->cuda_aware)
                st = halox__gmpi_cuda(comm,
                                      cudaMemcpyAsync(dp->d_buf + dp->buf_off[k],
                                                      m->h_send + dp->buf_off[k], sbytes,
                                                      cudaMemcpyHostToDevice, g->stream),
                                      "copying returned forces to the device");
            if (st == HALOX_OK)
                st = halox__gmpi_cuda(
                    comm, halox__gpu_add(dp, plan, k, comm->real, comm->stride, f, NULL, g->stream),
                    "force accumulation kernel");
        }
    }
    if (st == HALOX_OK)
        st = halox__gmpi_wait(comm, n, n, &op);
    return st;
}

const halox_transport_ops_t halox__mpi_staged_ops = {
    .name = "mpi-staged",
    .description = "GPU data, CPU-driven: pack kernel, copy to pinned host memory, MPI, copy "
                   "back (for MPI without CUDA support)",
    .on_gpu = 1,
    .init = halox__gmpi_init_staged,
    .fini = halox__gmpi_fini,
    .sendrecv = halox__gpu_sendrecv,
    .alltoallv = halox__gpu_alltoallv,
    .allgather = halox__gpu_allgather,
    .barrier = halox__gpu_barrier,
    .bind = halox__gmpi_bind,
    .coords = halox__gmpi_coords,
    .forces = halox__gmpi_forces,
    .dalloc = halox__gpu_dalloc,
    .dfree = halox__gpu_dfree,
};

const halox_transport_ops_t halox__mpi_cuda_ops = {
    .name = "mpi-cuda",
    .description = "GPU data, CPU-driven: pack kernel, CUDA-aware MPI on device buffers (refused "
                   "when MPI is not CUDA-aware)",
    .on_gpu = 1,
    .init = halox__gmpi_init_cuda,
    .fini = halox__gmpi_fini,
    .sendrecv = halox__gpu_sendrecv,
    .alltoallv = halox__gpu_alltoallv,
    .allgather = halox__gpu_allgather,
    .barrier = halox__gpu_barrier,
    .bind = halox__gmpi_bind,
    .coords = halox__gmpi_coords,
    .forces = halox__gmpi_forces,
    .dalloc = halox__gpu_dalloc,
    .dfree = halox__gpu_dfree,
};
