/* GPU transports, endpoint side: creation (inner `mpi` endpoint, device, stream), bind with the
 * peers' handshake, destruction, and the set-up collectives forwarded to the inner endpoint.
 *
 * The set-up collectives (plan builds, migration, reductions) move host memory, so they are not
 * written again here: each GPU endpoint owns a CPU `mpi` endpoint on the same communicator and
 * forwards them to it, bounded waits and error messages included. */
#define _POSIX_C_SOURCE 200809L

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "transports/affinity.h"
#include "transports/gpu/gpu.h"
#include "transports/registry.h"

/* This rank's index among the ranks of its node (MPI_COMM_TYPE_SHARED), and their number. */
static halox_status_t halox__gpu_local_rank(const halox_comm_args_t *args, int *local_p,
                                            int *nlocal_p)
{
    MPI_Comm parent = args && args->mpi_comm ? *(const MPI_Comm *)args->mpi_comm : MPI_COMM_WORLD;
    MPI_Comm node = MPI_COMM_NULL;
    int rank = 0;
    MPI_Comm_rank(parent, &rank);
    int rc = MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    if (rc != MPI_SUCCESS || node == MPI_COMM_NULL)
        return halox__error(HALOX_ERR_COMM,
                            "gpu: rank %d: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed: "
                            "cannot tell which ranks share a node (pass args.device to choose "
                            "the GPU yourself)",
                            rank);
    MPI_Comm_rank(node, local_p);
    MPI_Comm_size(node, nlocal_p);
    MPI_Comm_free(&node);
    return HALOX_OK;
}

halox_status_t halox__gpu_init(halox_comm_t *comm, const halox_comm_args_t *args, halox__gpu_t *g,
                               const char *name)
{
    g->name = name;
    g->device = -1;

    /* the inner endpoint: same communicator, precision and bound on waits; it checks MPI's
     * state and reports what to do when MPI is not initialised */
    halox_comm_args_t ia = *args;
    ia.stream = NULL;
    ia.real = comm->real;
    ia.stride = comm->stride;
    ia.timeout_s = comm->timeout_s;
    halox_status_t st = halox__comm_create_ops(&halox__mpi_ops, &ia, &g->inner);
    if (st != HALOX_OK) {
        g->inner = NULL;
        return st;
    }
    comm->rank = halox_comm_rank(g->inner);
    comm->size = halox_comm_size(g->inner);

    /* collective first (every rank reaches it), local checks after, then agreement */
    int local = 0, nlocal = 1;
    st = halox__gpu_local_rank(args, &local, &nlocal);
    int ndev = 0;
    cudaError_t e = cudaSuccess;
    if (st == HALOX_OK) {
        e = cudaGetDeviceCount(&ndev);
        if (e != cudaSuccess || ndev <= 0) {
            (void)cudaGetLastError();
            st = halox__error(HALOX_ERR_UNAVAILABLE,
                              "%s: rank %d: no CUDA device is visible (cudaGetDeviceCount: %s): "
                              "the GPU transports need one GPU per rank or MPS; use a CPU "
                              "transport (mpi, threads) on this machine",
                              name, comm->rank,
                              e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        }
    }
    if (st == HALOX_OK) {
        if (args->device_set) {
            if (args->device < 0 || args->device >= ndev)
                st = halox__error(HALOX_ERR_INVALID_ARG,
                                  "%s: rank %d: args.device %d but this process sees %d CUDA "
                                  "device(s) (0..%d)",
                                  name, comm->rank, args->device, ndev, ndev - 1);
            g->device = args->device;
        } else {
            /* several ranks per GPU are allowed (MPS makes them run side by side) */
            g->device = local % ndev;
        }
    }
    if (st == HALOX_OK) {
        e = cudaSetDevice(g->device);
        if (e != cudaSuccess)
            st = halox__gpu_cuda_error(comm, g, e, "cudaSetDevice", HALOX_ERR_UNAVAILABLE, 0);
    }
    if (st == HALOX_OK) {
        /* HALOX_CPU_AFFINITY=gpu, before any thread (NVSHMEM's proxy) is started: the ranks of
         * device d are the local ranks d, d + ndev, ... (the default choice above) */
        char bus[32] = "";
        if (cudaDeviceGetPCIBusId(bus, sizeof bus - 1, g->device) != cudaSuccess)
            (void)cudaGetLastError();
        const int d = g->device, shared = !args->device_set && nlocal > d;
        st = halox__bind_near_gpu(bus, shared ? local / ndev : 0,
                                  shared ? (nlocal - 1 - d) / ndev + 1 : 1, name);
    }
    if (st == HALOX_OK) {
        if (args->stream) {
            g->stream = (cudaStream_t)args->stream;
            g->own_stream = 0;
        } else {
            /* high priority: the halo exchange is on the critical path of a step */
            int least = 0, greatest = 0;
            e = cudaDeviceGetStreamPriorityRange(&least, &greatest);
            if (e == cudaSuccess)
                e = cudaStreamCreateWithPriority(&g->stream, cudaStreamNonBlocking, greatest);
            if (e != cudaSuccess)
                st = halox__gpu_cuda_error(comm, g, e, "creating the exchange stream",
                                           HALOX_ERR_UNAVAILABLE, 0);
            else
                g->own_stream = 1;
        }
    }
    for (int d = 0; d < 2 && st == HALOX_OK; d++)
        for (int k = 0; k < HALOX_MAX_PULSES && st == HALOX_OK; k++) {
            e = cudaEventCreateWithFlags(&g->ev[d][k], cudaEventDisableTiming);
            if (e != cudaSuccess) {
                g->ev[d][k] = NULL;
                st = halox__gpu_cuda_error(comm, g, e, "cudaEventCreate", HALOX_ERR_UNAVAILABLE, 0);
            }
        }
    comm->stream = g->stream;
    return halox__agree(comm, st, "GPU endpoint creation");
}

void halox__gpu_fini(halox_comm_t *comm, halox__gpu_t *g)
{
    if (!g)
        return;
    int idle = 0;
    if (g->device >= 0 && cudaSetDevice(g->device) == cudaSuccess && g->stream) {
        if (!g->failed) {
            halox_status_t st = halox__gpu_stream_wait(comm, g, halox__now() + comm->timeout_s,
                                                       NULL, NULL, "endpoint destruction");
            idle = st == HALOX_OK;
        }
    }
    /* memory that work still in flight may touch is never freed (cudaFree would also wait for
     * that work without a bound): leaked after a failure */
    if (idle) {
        halox__gpu_plan_free(&g->plan);
        halox__gpu_plan_dev_free(g);
        halox__gpu_mig_dev_free(g);
        halox__gpu_fields_free(g);
    }
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < HALOX_MAX_PULSES; k++)
            if (g->ev[d][k]) {
                cudaEventDestroy(g->ev[d][k]);
                g->ev[d][k] = NULL;
            }
    if (g->own_stream && g->stream)
        cudaStreamDestroy(g->stream); /* returns at once; resources go when the work is done */
    g->stream = NULL;
    comm->stream = NULL;
    if (g->inner)
        halox_comm_destroy(g->inner);
    g->inner = NULL;
}

halox_status_t halox__gpu_bind(halox_comm_t *comm, halox__gpu_t *g, halox_status_t st0,
                               const long long *extra, int n_extra, long long **all_p)
{
    if (all_p)
        *all_p = NULL;
    /* an unusable endpoint, or a caller's failure, still takes part in the gather below: the
     * others must not wait */
    halox_status_t st = st0 != HALOX_OK ? st0 : halox__gpu_usable(comm, g, "bind");
    const halox_plan_t *plan = comm->plan;
    if (st == HALOX_OK && (n_extra < 0 || n_extra > HALOX__BOUND_EXTRA_MAX))
        st = halox__error(HALOX_ERR_INVALID_ARG, "%s: bind: %d extra words (at most %d)", g->name,
                          n_extra, HALOX__BOUND_EXTRA_MAX);
    if (st == HALOX_OK) {
        g->bound = 0;
        st = halox__gpu_set_device(comm, g);
    }
    if (st == HALOX_OK) {
        /* buffers may be reallocated: nothing earlier may still use them */
        st = halox__gpu_stream_wait(comm, g, halox__now() + comm->timeout_s, NULL, NULL, "bind");
        if (st == HALOX_ERR_TIMEOUT) {
            halox__error(HALOX_ERR_TIMEOUT,
                         "%s: rank %d: bind waited %.3g s for the work already on the exchange "
                         "stream (step %lld) and it did not finish: a peer is missing from an "
                         "exchange, or a kernel of the caller hangs; this endpoint is unusable now",
                         g->name, comm->rank, comm->timeout_s, comm->step);
            halox__gpu_fail(g);
        }
    }
    /* a plan built with atoms->async gets its maps and zones now: the wait above covered their
     * read (a bind that failed before it drops them) */
    if (plan)
        halox__gpu_plan_dev_settle(g, plan, st == HALOX_OK);
    if (st == HALOX_OK) {
        memset(g->ev_live, 0, sizeof g->ev_live);
        st = halox__gpu_plan_upload(&g->plan, plan, comm->real, comm->stride, g->stream, g->name);
    }
    /* every rank's plan must come from the same build: the same pulse count everywhere, and in
     * every pulse each receiver's count and sender are its sender's. One gather carries them
     * with the status and the transport's words, and every rank checks every rank from it: the
     * same verdict everywhere without another message. */
    const int W = HALOX__BOUND_WORDS(n_extra);
    long long msg[HALOX__BOUND_WORDS(HALOX__BOUND_EXTRA_MAX)];
    memset(msg, 0, sizeof msg);
    const int n = plan ? plan->n_pulses : 0; /* none after a failure before the bind */
    msg[1] = n;
    for (int k = 0; k < n && k < HALOX_MAX_PULSES; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        long long *q = msg + HALOX__BOUND_HEAD + HALOX__BOUND_PULSE * k;
        q[0] = p->send_count;
        q[1] = p->recv_count;
        q[2] = p->send_rank;
        q[3] = p->recv_rank;
        q[4] = p->recv_offset;
    }
    for (int i = 0; i < n_extra; i++)
        msg[W - n_extra + i] = extra[i];
    long long *all = malloc(sizeof(long long) * (size_t)W * (size_t)comm->size);
    if (!all && st == HALOX_OK)
        st = halox__error(HALOX_ERR_NO_MEMORY, "%s: bind: no memory", g->name);
    /* without memory for everybody's messages, the agreement's own buffer: this rank's failure
     * is the verdict */
    st = halox__agree_gather(comm, st, "bind", msg, W, all);
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        if (all[(size_t)r * W + 1] != n)
            st = halox__error(HALOX_ERR_STATE,
                              "%s: bind: rank %d's plan has %lld pulses but rank %d's has %d: "
                              "the plans come from different builds; rebuild on every rank, then "
                              "bind on every rank",
                              g->name, r, all[(size_t)r * W + 1], comm->rank, n);
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        for (int k = 0; k < n && st == HALOX_OK; k++) {
            const long long *q = halox__bound_pulse(all, W, r, k);
            const long long from = q[3];
            const long long *o =
                from >= 0 && from < comm->size ? halox__bound_pulse(all, W, (int)from, k) : NULL;
            if (!o || o[2] != r || o[0] != q[1])
                st =
                    halox__error(HALOX_ERR_STATE,
                                 "%s: bind: in pulse %d rank %lld sends %lld atoms to rank "
                                 "%lld, but rank %d's plan expects %lld from rank %lld: the "
                                 "plans come from different builds; rebuild on every rank, then "
                                 "bind on every rank",
                                 g->name, k, from, o ? o[0] : -1LL, o ? o[2] : -1LL, r, q[1], from);
        }
    if (st == HALOX_OK) {
        g->bound = 1;
        if (all_p) {
            *all_p = all;
            all = NULL;
        }
    }
    free(all);
    return st;
}

halox_status_t halox__gpu_who(halox_comm_t *comm, const char *name, const char *what,
                              halox__gpu_who_t **all_p)
{
    halox__gpu_t *g = halox__gpu(comm);
    halox__gpu_who_t me;
    memset(&me, 0, sizeof me);
    gethostname(me.host, sizeof me.host - 1);
    cudaError_t e = cudaDeviceGetPCIBusId(me.bus, sizeof me.bus - 1, g->device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(me.bus, sizeof me.bus, "device-%d", g->device);
    }
    halox__gpu_who_t *all = calloc((size_t)comm->size, sizeof *all);
    halox_status_t st = all ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", name);
    st = halox__agree(comm, st, what);
    if (st == HALOX_OK)
        st = halox__gpu_allgather(comm, &me, all, sizeof me);
    if (st != HALOX_OK) {
        free(all);
        all = NULL;
    }
    *all_p = all;
    return st;
}

/* ---- set-up collectives: the inner `mpi` endpoint ---------------------------------------- */

halox_status_t halox__gpu_sendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                   int src, void *rbuf, size_t rbytes)
{
    halox_comm_t *in = halox__gpu(comm)->inner;
    return in->ops->sendrecv(in, dst, sbuf, sbytes, src, rbuf, rbytes);
}

halox_status_t halox__gpu_alltoallv(halox_comm_t *comm, const void *send, const size_t *sbytes,
                                    const size_t *soffs, void *recv, const size_t *rbytes,
                                    const size_t *roffs)
{
    halox_comm_t *in = halox__gpu(comm)->inner;
    return in->ops->alltoallv(in, send, sbytes, soffs, recv, rbytes, roffs);
}

halox_status_t halox__gpu_allgather(halox_comm_t *comm, const void *send, void *recv, size_t bytes)
{
    halox_comm_t *in = halox__gpu(comm)->inner;
    return in->ops->allgather(in, send, recv, bytes);
}

halox_status_t halox__gpu_barrier(halox_comm_t *comm)
{
    halox_comm_t *in = halox__gpu(comm)->inner;
    return in->ops->barrier(in);
}
