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
 * their host buffers never freed. The MPI leg itself (pinned staging, requests, bounded waits)
 * is src/transports/gpu_staging.c, shared with `hybrid`. */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h> /* Open MPI: MPIX_CUDA_AWARE_SUPPORT, MPIX_Query_cuda_support() */
#endif
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "transports/gpu.h"
#include "transports/gpu_staging.h"
#include "transports/registry.h"

typedef struct halox__gmpi {
    halox__gpu_t g;  /* first: the shared GPU part */
    int cuda_aware;  /* MPI moves device memory (mpi-cuda) */
    halox__hst_t hs; /* the communicator, requests and pinned staging (gpu_staging.h) */
} halox__gmpi_t;

static halox__gmpi_t *halox__gmpi(halox_comm_t *comm) { return (halox__gmpi_t *)comm->impl; }

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
    m->hs.comm = MPI_COMM_NULL;
    m->cuda_aware = cuda_aware;
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
    st = halox__hst_init(comm, args, &m->hs);
    if (st != HALOX_OK)
        goto fail;
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
    halox__gpu_fini(comm, &m->g); /* bounded wait for the stream first */
    halox__hst_fini(&m->hs, m->g.failed);
    free(m);
    comm->impl = NULL;
}

/* ---- halo exchange ---------------------------------------------------------------------- */

static halox_status_t halox__gmpi_bind(halox_comm_t *comm)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__gpu_bind(comm, &m->g);
    if (st != HALOX_OK)
        return st;
    m->g.bound = 0;
    if (!m->cuda_aware)
        st = halox__hst_bind(comm, &m->hs, m->g.plan.send_bytes, m->g.plan.recv_bytes);
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
    halox__hst_t *h = &m->hs;
    halox_status_t st = halox__gpu_bound(comm, g, "coordinate exchange");
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *x = comm->x;
    const int staged = !m->cuda_aware;
    halox__hst_op_t op = {"coordinate exchange", halox__now() + comm->timeout_s};

    /* earlier work on the stream (the caller's kernels reading the halo, the last force
     * exchange's copies out of the staging buffers) is done before anything is overwritten */
    st = halox__hst_sync(comm, h, &op, -1);
    if (st != HALOX_OK)
        return st;
    halox__hst_clear(h);
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (halox__gpu_self(comm, p))
            continue; /* a local copy, below */
        void *rb = staged ? (void *)(h->h_recv + dp->recv_off[k])
                          : (void *)(x + (size_t)p->recv_offset * esize);
        st = halox__hst_post(comm, h, HALOX__HST_RECV + k, 1, rb, (size_t)p->recv_count * esize,
                             p->recv_rank, HALOX__HST_TAG_COORDS + k, k, &op);
    }
    uint32_t landed = 0; /* received and (staged) copied into the halo */
    for (int k = 0; k <= n && st == HALOX_OK; k++) {
        /* k == n: land whatever is left */
        uint32_t want = k < n ? dp->needs[k] : (n ? (1u << n) - 1 : 0);
        for (int j = 0; j < (k < n ? k : n) && st == HALOX_OK; j++) {
            if (!(want & (1u << j)) || (landed & (1u << j)))
                continue;
            const halox_pulse_t *q = &plan->pulse[j];
            st = halox__hst_land(comm, h, j, x + (size_t)q->recv_offset * esize,
                                 staged ? h->h_recv + dp->recv_off[j] : NULL,
                                 (size_t)q->recv_count * esize, &op,
                                 "copying received coordinates to the device");
            landed |= 1u << j;
        }
        if (k == n || st != HALOX_OK)
            break;
        const halox_pulse_t *p = &plan->pulse[k];
        const size_t bytes = (size_t)p->send_count * esize;
        if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: pack straight into our own halo */
            st = halox__hst_cuda(comm, h,
                                 halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                                 x + (size_t)p->recv_offset * esize, x, g->stream),
                                 "pack kernel (local copy)");
            landed |= 1u << k;
            continue;
        }
        if (bytes > 0)
            st = halox__hst_cuda(
                comm, h, halox__gpu_pack(dp, plan, k, comm->real, comm->stride, NULL, x, g->stream),
                "pack kernel");
        if (st == HALOX_OK)
            st = halox__hst_send(comm, h, k, dp->d_buf + dp->buf_off[k],
                                 staged ? h->h_send + dp->buf_off[k] : NULL, bytes, p->send_rank,
                                 HALOX__HST_TAG_COORDS + k, &op);
    }
    if (st == HALOX_OK)
        st = halox__hst_wait(comm, h, HALOX__HST_SEND, n, &op);
    return st;
}

/* Forces, pulses in reverse order: the forces on pulse k's received atoms go back once the later
 * pulses added theirs (stream order), and what comes back is added in reverse pulse order, as
 * the reference does. */
static halox_status_t halox__gmpi_forces(halox_comm_t *comm)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox__gpu_t *g = &m->g;
    halox__hst_t *h = &m->hs;
    halox_status_t st = halox__gpu_bound(comm, g, "force exchange");
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    char *f = comm->f;
    const int staged = !m->cuda_aware;
    halox__hst_op_t op = {"force exchange", halox__now() + comm->timeout_s};

    /* the receive buffers were last used by the coordinate exchange, which completed them */
    halox__hst_clear(h);
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (halox__gpu_self(comm, p))
            continue; /* added locally, below */
        void *rb =
            staged ? (void *)(h->h_send + dp->buf_off[k]) : (void *)(dp->d_buf + dp->buf_off[k]);
        st = halox__hst_post(comm, h, HALOX__HST_RECV + k, 1, rb, (size_t)p->send_count * esize,
                             p->send_rank, HALOX__HST_TAG_FORCES + k, k, &op);
    }
    for (int k = n - 1; k >= 0 && st == HALOX_OK; k--) {
        const halox_pulse_t *p = &plan->pulse[k];
        char *fk = f + (size_t)p->recv_offset * esize;
        if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: add our own halo's forces straight from f */
            st = halox__hst_cuda(
                comm, h, halox__gpu_add(dp, plan, k, comm->real, comm->stride, f, fk, g->stream),
                "force accumulation kernel (local)");
            continue;
        }
        st = halox__hst_send(comm, h, k, fk, staged ? h->h_recv + dp->recv_off[k] : NULL,
                             (size_t)p->recv_count * esize, p->recv_rank, HALOX__HST_TAG_FORCES + k,
                             &op);
        const size_t sbytes = (size_t)p->send_count * esize;
        if (st == HALOX_OK)
            st = halox__hst_land(comm, h, k, dp->d_buf + dp->buf_off[k],
                                 staged ? h->h_send + dp->buf_off[k] : NULL, sbytes, &op,
                                 "copying returned forces to the device");
        if (st == HALOX_OK && sbytes > 0)
            st = halox__hst_cuda(
                comm, h, halox__gpu_add(dp, plan, k, comm->real, comm->stride, f, NULL, g->stream),
                "force accumulation kernel");
    }
    if (st == HALOX_OK)
        st = halox__hst_wait(comm, h, HALOX__HST_SEND, n, &op);
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
