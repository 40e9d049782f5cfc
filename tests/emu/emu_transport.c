/* A GPU transport for the host emulation (tests/emu): the shared GPU part (halox__gpu_t) and the
 * device stores of plan builds and migrations (src/transports/gpu/plan_device.c, migrate_device.c)
 * over "device" memory that is host memory, the set-up collectives over an inner `threads`
 * endpoint (as the real GPU transports run theirs over an inner `mpi` one). No exchanges: what it
 * tests is the stores. */
#include <stdlib.h>

#include "core/error.h"
#include "emu_transport.h"
#include "transports/gpu/gpu.h"
#include "transports/registry.h"

typedef struct emu_gpu {
    halox__gpu_t g; /* first: the shared GPU part */
    halox_comm_t *inner;
} emu_gpu_t;

static halox_comm_t *emu_inner(halox_comm_t *comm) { return ((emu_gpu_t *)comm->impl)->inner; }

static halox_status_t emu_init(halox_comm_t *comm, const halox_comm_args_t *args)
{
    emu_gpu_t *m = calloc(1, sizeof *m);
    if (!m)
        return halox__error(HALOX_ERR_NO_MEMORY, "emu-gpu: no memory");
    m->g.name = "emu-gpu";
    comm->impl = m;
    halox_status_t st = halox__comm_create_ops(&halox__threads_ops, args, &m->inner);
    if (st != HALOX_OK) {
        free(m);
        comm->impl = NULL;
        return st;
    }
    comm->rank = halox_comm_rank(m->inner);
    comm->size = halox_comm_size(m->inner);
    return HALOX_OK;
}

static void emu_fini(halox_comm_t *comm)
{
    emu_gpu_t *m = comm->impl;
    if (!m)
        return;
    halox__gpu_plan_dev_free(&m->g);
    halox__gpu_mig_dev_free(&m->g);
    halox_comm_destroy(m->inner);
    free(m);
    comm->impl = NULL;
}

static halox_status_t emu_sendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                   int src, void *rbuf, size_t rbytes)
{
    halox_comm_t *in = emu_inner(comm);
    return in->ops->sendrecv(in, dst, sbuf, sbytes, src, rbuf, rbytes);
}

static halox_status_t emu_alltoallv(halox_comm_t *comm, const void *send, const size_t *sbytes,
                                    const size_t *soffs, void *recv, const size_t *rbytes,
                                    const size_t *roffs)
{
    halox_comm_t *in = emu_inner(comm);
    return in->ops->alltoallv(in, send, sbytes, soffs, recv, rbytes, roffs);
}

static halox_status_t emu_allgather(halox_comm_t *comm, const void *send, void *recv, size_t bytes)
{
    halox_comm_t *in = emu_inner(comm);
    return in->ops->allgather(in, send, recv, bytes);
}

static halox_status_t emu_barrier(halox_comm_t *comm)
{
    halox_comm_t *in = emu_inner(comm);
    return in->ops->barrier(in);
}

static const halox_transport_ops_t emu_ops = {
    .name = "emu-gpu",
    .description = "tests: the GPU transports' device stores over emulated device memory",
    .on_gpu = 1,
    .init = emu_init,
    .fini = emu_fini,
    .sendrecv = emu_sendrecv,
    .alltoallv = emu_alltoallv,
    .allgather = emu_allgather,
    .barrier = emu_barrier,
    .plan_store = halox__gpu_plan_store,
    .mig_store = halox__gpu_mig_store,
};

halox_status_t emu_gpu_create(const halox_comm_args_t *args, halox_comm_t **comm_p)
{
    return halox__comm_create_ops(&emu_ops, args, comm_p);
}
