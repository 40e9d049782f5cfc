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
 * their host buffers never freed. The pulses are walked by pulse_gpu.c; the MPI leg itself
 * (pinned staging, requests, bounded waits) is gpu_staging.c, shared with `hybrid`. */
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
#include "transports/gpu/gpu.h"
#include "transports/gpu/gpu_staging.h"
#include "transports/gpu/pulse_gpu.h"
#include "transports/registry.h"

typedef struct halox__gmpi {
    halox__gpu_t g;  /* first: the shared GPU part */
    halox__hst_t hs; /* the communicator, requests and pinned staging (gpu_staging.h); hs.device:
                        MPI moves device memory (mpi-cuda) */
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
    m->hs.device = cuda_aware;
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

static halox_status_t halox__gmpi_bind(halox_comm_t *comm, halox_status_t st0)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__gpu_bind(comm, &m->g, st0, NULL, 0, NULL);
    if (st != HALOX_OK)
        return st;
    m->g.bound = 0;
    if (!m->hs.device)
        st = halox__hst_bind(comm, &m->hs, m->g.plan.send_bytes, m->g.plan.recv_bytes);
    st = halox__agree(comm, st, "bind");
    if (st == HALOX_OK)
        m->g.bound = 1;
    return st;
}

/* An exchange call, every message through gpu_staging.c: receives are posted when the call
 * opens (into the halo itself for mpi-cuda, into pinned host memory for mpi-staged); a pulse
 * lands (its copy into the halo enqueued) before a later pulse forwards its atoms, the rest after
 * the last pulse; forces go back once the later pulses added theirs (stream order). The host
 * waits for every message inside the call, so no events.
 *
 * The start of the call: its deadline, the receives posted. */
static halox_status_t halox__gmpi_open(halox_comm_t *comm, int dir)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox__hst_t *h = &m->hs;
    const int coords = dir == HALOX__GPU_COORDS;
    h->op = (halox__hst_op_t){halox__pulse_gpu_op(dir), halox__now() + comm->timeout_s};
    /* coordinates: earlier work on the stream (the caller's kernels reading the halo, the last
     * force exchange's copies out of the staging buffers) is done before anything is
     * overwritten; forces: the receive buffers were last used by the coordinate exchange, which
     * completed them */
    halox_status_t st = coords ? halox__hst_sync(comm, h, &h->op, -1) : HALOX_OK;
    uint32_t remote = 0; /* self pulses are the walk's local copies */
    for (int k = 0; k < m->g.plan.n_pulses; k++)
        if (!halox__pulse_self(comm->plan, k))
            remote |= 1u << k;
    if (st == HALOX_OK)
        st = halox__hst_open(comm, h, dir, remote, &h->op);
    return st;
}

/* The transport's part of pulse k in the walk (pulse_gpu.h). */
static halox_status_t halox__gmpi_part(halox_comm_t *comm, const halox__pulse_gpu_cursor_t *c)
{
    halox__hst_t *h = &halox__gmpi(comm)->hs;
    if (c->part == HALOX__PULSE_GPU_SEND)
        return halox__hst_pulse_send(comm, h, HALOX__GPU_COORDS, c->k, NULL, &h->op);
    if (c->part == HALOX__PULSE_GPU_LAND)
        return halox__hst_pulse_land(comm, h, HALOX__GPU_COORDS, c->k, NULL, &h->op);
    halox_status_t st = halox__hst_pulse_send(comm, h, HALOX__GPU_FORCES, c->k, NULL, &h->op);
    return st == HALOX_OK ? halox__hst_pulse_land(comm, h, HALOX__GPU_FORCES, c->k, NULL, &h->op)
                          : st;
}

static halox_status_t halox__gmpi_exchange(halox_comm_t *comm, int dir)
{
    halox__gmpi_t *m = halox__gmpi(comm);
    halox_status_t st = halox__gpu_bound(comm, halox__gpu(comm), halox__pulse_gpu_op(dir));
    if (!m)
        return st; /* not created: refused above */
    if (st == HALOX_OK)
        st = halox__gmpi_open(comm, dir);
    halox__pulse_gpu_cursor_t c;
    halox__pulse_gpu_start(&c, dir, HALOX__PULSE_GPU_LANDS, NULL);
    while (st == HALOX_OK && halox__pulse_gpu_next(comm, &c, &st))
        st = halox__gmpi_part(comm, &c);
    if (c.e != cudaSuccess)
        st = halox__hst_cuda(comm, &m->hs, c.e, c.what);
    /* the end: the sends (every receive was waited for) */
    return st == HALOX_OK
               ? halox__hst_wait(comm, &m->hs, HALOX__HST_SEND, m->g.plan.n_pulses, &m->hs.op)
               : st;
}

HALOX__PULSE_GPU_EXCHANGES(halox__gmpi_exchange)

/* mpi-staged and mpi-cuda: the same but for their init */
#define HALOX__GMPI_OPS(var, nm, desc, initfn)                                                     \
    const halox_transport_ops_t var = {                                                            \
        .name = nm,                                                                                \
        .description = desc,                                                                       \
        HALOX__GPU_OPS_SHARED,                                                                     \
        .init = initfn,                                                                            \
        .fini = halox__gmpi_fini,                                                                  \
        .bind = halox__gmpi_bind,                                                                  \
        .coords = halox__gmpi_exchange_coords,                                                     \
        .forces = halox__gmpi_exchange_forces,                                                     \
        .dalloc = halox__gpu_dalloc,                                                               \
        .dfree = halox__gpu_dfree,                                                                 \
    }

HALOX__GMPI_OPS(
    halox__mpi_staged_ops, "mpi-staged",
    "GPU data, CPU-driven: pack kernel, copy to pinned host memory, MPI, copy back (for "
    "MPI without CUDA support)",
    halox__gmpi_init_staged);
HALOX__GMPI_OPS(halox__mpi_cuda_ops, "mpi-cuda",
                "GPU data, CPU-driven: pack kernel, CUDA-aware MPI on device buffers (refused when "
                "MPI is not CUDA-aware)",
                halox__gmpi_init_cuda);
