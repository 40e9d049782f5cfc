/* Endpoint dispatch: plan builds, exchanges, migration and collectives over the transport's
 * table of functions. Everything here is transport-neutral (no MPI, no CUDA). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/fields.h"
#include "core/pack.h"
#include "core/plan/plan_build.h"
#include "core/transport.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/gpu.h"

int halox_comm_rank(const halox_comm_t *comm) { return comm->rank; }
int halox_comm_size(const halox_comm_t *comm) { return comm->size; }
const char *halox_comm_transport(const halox_comm_t *comm) { return comm->ops->name; }
void *halox_comm_stream(const halox_comm_t *comm) { return comm->stream; }

void halox_comm_get_stats(const halox_comm_t *comm, halox_comm_stats_t *stats_p)
{
    *stats_p = comm->stats;
}

halox_status_t halox_comm_defer_failure(halox_comm_t *comm, halox_status_t st)
{
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "defer_failure: comm is NULL");
    if (st == HALOX_OK) {
        comm->deferred = HALOX_OK;
    } else if (comm->deferred == HALOX_OK) { /* the first failure is the one to report */
        comm->deferred = st;
        snprintf(comm->deferred_msg, sizeof comm->deferred_msg, "%s", halox_last_error());
    }
    return HALOX_OK;
}

halox_status_t halox__comm_take_deferred(halox_comm_t *comm)
{
    const halox_status_t st = comm->deferred;
    if (st == HALOX_OK)
        return HALOX_OK;
    comm->deferred = HALOX_OK;
    return halox__error(st, "%s", comm->deferred_msg);
}

halox_status_t halox_comm_bind(halox_comm_t *comm, const halox_plan_t *plan, void *x, void *f)
{
    halox_status_t st = halox__comm_take_deferred(comm); /* failed: only the agreement */
    if (st == HALOX_OK && (!plan || !x || !f))
        st = halox__error(HALOX_ERR_INVALID_ARG, "bind: plan, x and f are required");
    else if (st == HALOX_OK && (plan->rank != comm->rank || plan->nranks != comm->size))
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "bind: plan is for rank %d of %d but this endpoint is rank %d of %d",
                          plan->rank, plan->nranks, comm->rank, comm->size);
    if (st == HALOX_OK) {
        /* the bound fields against the new plan's atoms: comm->plan is what the check reads */
        comm->plan = plan;
        st = halox__fields_check(comm, "bind (bound forward fields)", comm->n_bound_fwd,
                                 comm->bound_fwd, 0);
        if (st == HALOX_OK)
            st = halox__fields_check(comm, "bind (bound reverse fields)", comm->n_bound_rev,
                                     comm->bound_rev, 1);
    }
    /* a failure is agreed in the transport's bind (its first collective) */
    comm->plan = st == HALOX_OK ? plan : NULL;
    comm->x = st == HALOX_OK ? x : NULL;
    comm->f = st == HALOX_OK ? f : NULL;
    comm->coords_pending = 0;
    /* the plan build just filled the halo: a force exchange may come first */
    comm->halo_fresh = 1;
    return comm->ops->bind(comm, st);
}

halox_status_t halox_comm_set_stream_ordered(halox_comm_t *comm, int ordered)
{
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "set_stream_ordered: comm is NULL");
    if (ordered != 0 && ordered != 1)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "set_stream_ordered: ordered is %d: give 1 (every kernel of yours that "
                            "reads this endpoint's device state follows halox_comm_stream()) or 0",
                            ordered);
    comm->stream_ordered = ordered;
    return HALOX_OK;
}

halox_status_t halox_comm_graph_mode(halox_comm_t *comm, int on)
{
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "graph_mode: comm is NULL");
    if (on && !comm->ops->capturable)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "transport '%s' cannot be captured in a CUDA graph: %s; use nccl (or "
                            "run without graphs)",
                            comm->ops->name,
                            comm->ops->on_gpu ? "it synchronises with the host inside every "
                                                "exchange (it stages through host memory)"
                                              : "it moves host memory");
    comm->graph_mode = on != 0;
    return HALOX_OK;
}

static void halox__count_exchange(halox_comm_t *comm, int coords)
{
    long long n = 0;
    for (int k = 0; k < comm->plan->n_pulses; k++)
        n += coords ? comm->plan->pulse[k].send_count : comm->plan->pulse[k].recv_count;
    comm->stats.bytes_sent += (long long)halox__atom_bytes(comm->real, comm->stride, n);
    if (coords)
        comm->stats.coord_exchanges++;
    else
        comm->stats.force_exchanges++;
}

halox_status_t halox_comm_graph_replayed(halox_comm_t *comm)
{
    if (!comm || !comm->plan)
        return halox__error(HALOX_ERR_STATE, "graph_replayed: no plan bound");
    comm->step++;
    comm->halo_fresh = 0;
    halox__count_exchange(comm, 1);
    halox__count_exchange(comm, 0);
    return comm->ops->poll ? comm->ops->poll(comm) : HALOX_OK;
}

halox_status_t halox_comm_inline_view(halox_comm_t *comm, halox_inline_view_t *view)
{
    if (!comm || !view)
        return halox__error(HALOX_ERR_INVALID_ARG, "inline_view: comm and view are required");
    memset(view, 0, sizeof *view);
    if (!comm->ops->inline_view)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "transport '%s' has no exchange inside the caller's kernels: use "
                            "nvshmem-inline (or the exchange calls)",
                            comm->ops->name);
    if (!comm->plan)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: inline_view: no plan bound: call halox_comm_bind() after "
                            "every plan build",
                            comm->rank);
    return comm->ops->inline_view(comm, view);
}

halox_status_t halox_comm_inline_enqueued(halox_comm_t *comm, int coords)
{
    if (!comm || !comm->plan || !comm->ops->inline_enqueued)
        return halox__error(HALOX_ERR_STATE, "inline_enqueued: %s",
                            !comm || !comm->plan ? "no plan bound"
                                                 : "the transport has no in-kernel exchange");
    if (comm->coords_pending)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: inline_enqueued: a coordinate exchange (halox_comm_coords) "
                            "awaits its force exchange (step %lld): finish it first",
                            comm->rank, comm->step);
    if (!coords && !comm->halo_fresh)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: inline_enqueued: forces without coordinates are only "
                            "possible straight after a bind (step %lld)",
                            comm->rank, comm->step);
    /* as halox_comm_coords and halox_comm_forces would count it: one step */
    comm->step++;
    comm->halo_fresh = 0;
    if (coords)
        halox__count_exchange(comm, 1);
    halox__count_exchange(comm, 0);
    return comm->ops->inline_enqueued(comm, coords);
}

halox_status_t halox_comm_device_alloc(halox_comm_t *comm, size_t bytes, void **ptr_p)
{
    if (!comm || !ptr_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "device_alloc: comm and ptr_p are required");
    *ptr_p = NULL;
    if (!comm->ops->dalloc)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "device_alloc: transport '%s' moves host memory: bind host arrays "
                            "(malloc) instead",
                            comm->ops->name);
    return comm->ops->dalloc(comm, bytes, ptr_p);
}

halox_status_t halox_comm_device_free(halox_comm_t *comm, void *ptr)
{
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "device_free: comm is NULL");
    if (!comm->ops->dfree)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "device_free: transport '%s' has no device memory", comm->ops->name);
    return comm->ops->dfree(comm, ptr);
}

halox_status_t halox_comm_coords(halox_comm_t *comm)
{
    if (!comm->plan)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: no plan bound: call halox_comm_bind() after every plan "
                            "build",
                            comm->rank);
    if (comm->coords_pending)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: coordinate exchange called twice without a force exchange "
                            "in between (step %lld): call halox_comm_forces() every step",
                            comm->rank, comm->step);
    double t0 = halox__now();
    comm->step++;
    comm->halo_fresh = 0;
    halox_status_t st = comm->ops->coords(comm);
    comm->stats.coord_seconds += halox__now() - t0;
    if (st == HALOX_OK)
        st = halox__fields_exchange(comm, 0, comm->n_bound_fwd, comm->bound_fwd);
    if (st != HALOX_OK)
        return st;
    comm->coords_pending = 1;
    halox__count_exchange(comm, 1);
    return HALOX_OK;
}

halox_status_t halox_comm_forces(halox_comm_t *comm)
{
    if (!comm->plan || (!comm->coords_pending && !comm->halo_fresh))
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: force exchange without a coordinate exchange before it "
                            "(step %lld): call halox_comm_coords() first",
                            comm->rank, comm->step);
    double t0 = halox__now();
    /* straight after a bind the halo is the plan build's: this exchange is a step of its own,
     * so its signals must carry a new step value (every rank does the same, collectively) */
    if (!comm->coords_pending)
        comm->step++;
    comm->halo_fresh = 0;
    halox_status_t st = comm->ops->forces(comm);
    comm->stats.force_seconds += halox__now() - t0;
    if (st == HALOX_OK)
        st = halox__fields_exchange(comm, 1, comm->n_bound_rev, comm->bound_rev);
    if (st != HALOX_OK)
        return st;
    comm->coords_pending = 0;
    halox__count_exchange(comm, 0);
    return HALOX_OK;
}

/* An endpoint of the transport `ops` (halox_comm_create() finds it by name; a transport that
 * needs another one inside, as the GPU transports need mpi for set-up, passes its table). */
halox_status_t halox__comm_create_ops(const halox_transport_ops_t *ops,
                                      const halox_comm_args_t *args, halox_comm_t **comm_p)
{
    *comm_p = NULL;
    halox_real_t real = args->real ? args->real : HALOX_FLOAT;
    int stride = args->stride ? args->stride : 3;
    if (halox_real_size(real) == 0)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "comm_create: unknown precision %d: use HALOX_FLOAT or HALOX_DOUBLE",
                            (int)real);
    if (stride != 3 && stride != 4)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "comm_create: stride %d: coordinates have 3 or 4 reals per atom",
                            stride);
    halox_comm_t *comm = calloc(1, sizeof *comm);
    if (!comm)
        return halox__error(HALOX_ERR_NO_MEMORY, "comm_create: no memory");
    comm->ops = ops;
    comm->real = real;
    comm->stride = stride;
    halox_status_t st = halox__timeout(args->timeout_s, "comm_create", &comm->timeout_s);
    if (st != HALOX_OK) {
        free(comm);
        return st;
    }
    st = ops->init(comm, args);
    if (st != HALOX_OK) {
        free(comm);
        return st;
    }
    *comm_p = comm;
    return HALOX_OK;
}

void halox_comm_destroy(halox_comm_t *comm)
{
    if (!comm)
        return;
    comm->ops->fini(comm);
    free(comm->field_buf);
    free(comm);
}

halox_status_t halox__endpoint_refused(const char *name, int rank, const char *op,
                                       const char *failure, const char *pending)
{
    return halox__error(HALOX_ERR_STATE,
                        "%s: rank %d: %s refused: an earlier operation on this endpoint failed "
                        "(%s); %s may still be in flight, so the endpoint cannot be used again: "
                        "destroy it and end the job (MPI_Abort)",
                        name, rank, op, failure, pending);
}
