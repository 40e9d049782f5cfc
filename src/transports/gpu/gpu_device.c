/* GPU transports, device side: the device copy of the plan, the kernels per pulse, bounded waits
 * and CUDA error messages. Needs the CUDA runtime only (no MPI). */
#define _POSIX_C_SOURCE 200809L

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "core/plan/pulse_deps.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/halo_kernels.h"

halox_status_t halox__gpu_cuda_error(halox_comm_t *comm, halox__gpu_t *g, cudaError_t e,
                                     const char *what, halox_status_t st, int fail)
{
    (void)cudaGetLastError(); /* clear the error state unless it is sticky */
    if (e == cudaErrorMemoryAllocation)
        st = HALOX_ERR_NO_MEMORY;
    halox__error(st, "%s: rank %d: %s failed at step %lld on device %d: %s (%s)",
                 g && g->name ? g->name : "gpu", comm ? comm->rank : -1, what,
                 comm ? comm->step : 0LL, g ? g->device : -1, cudaGetErrorString(e),
                 cudaGetErrorName(e));
    if (fail && g)
        halox__gpu_fail(g);
    return st;
}

void halox__gpu_fail(halox__gpu_t *g)
{
    g->failed = 1;
    snprintf(g->failure, sizeof g->failure, "%s", halox_last_error());
}

halox_status_t halox__gpu_usable(halox_comm_t *comm, halox__gpu_t *g, const char *op)
{
    if (!g)
        return halox__error(HALOX_ERR_STATE, "gpu: %s on an endpoint that was not created", op);
    if (g->failed)
        return halox__endpoint_refused(g->name, comm->rank, op, g->failure, "work");
    return HALOX_OK;
}

halox_status_t halox__gpu_bound(halox_comm_t *comm, halox__gpu_t *g, const char *op)
{
    halox_status_t st = halox__gpu_usable(comm, g, op);
    if (st == HALOX_OK && (!g->bound || !comm->plan))
        st = halox__error(HALOX_ERR_STATE,
                          "%s: rank %d: %s without a bound plan: call halox_comm_bind() after "
                          "every plan build",
                          g->name, comm->rank, op);
    if (st == HALOX_OK && g->plan.generation != comm->plan->generation)
        st = halox__error(HALOX_ERR_STATE,
                          "%s: rank %d: %s: the bound plan was rebuilt (generation %lld, bound "
                          "%lld) without a new halox_comm_bind(): bind after every plan build",
                          g->name, comm->rank, op, comm->plan->generation, g->plan.generation);
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, g);
    return st;
}

halox_status_t halox__gpu_set_device(halox_comm_t *comm, halox__gpu_t *g)
{
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != g->device)
        e = cudaSetDevice(g->device);
    if (e != cudaSuccess)
        return halox__gpu_cuda_error(comm, g, e, "cudaSetDevice", HALOX_ERR_UNAVAILABLE, 0);
    return HALOX_OK;
}

/* ---- device memory for the caller's arrays ------------------------------------------------ */

halox_status_t halox__gpu_dalloc(halox_comm_t *comm, size_t bytes, void **ptr_p)
{
    halox__gpu_t *g = halox__gpu(comm);
    halox_status_t st = halox__gpu_usable(comm, g, "device_alloc");
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, g);
    if (st == HALOX_OK) {
        cudaError_t e = cudaMalloc(ptr_p, bytes > 0 ? bytes : 16);
        if (e != cudaSuccess) {
            *ptr_p = NULL;
            (void)cudaGetLastError();
            st = halox__error(HALOX_ERR_NO_MEMORY,
                              "%s: rank %d: device_alloc of %zu bytes failed: %s", g->name,
                              comm->rank, bytes, cudaGetErrorString(e));
        }
    }
    /* collective like the NVSHMEM transports' symmetric allocation: all succeed or none */
    st = halox__agree(comm, st, "device_alloc");
    if (st != HALOX_OK && *ptr_p) {
        cudaFree(*ptr_p);
        *ptr_p = NULL;
    }
    return st;
}

halox_status_t halox__gpu_dfree(halox_comm_t *comm, void *ptr)
{
    halox__gpu_t *g = halox__gpu(comm);
    if (ptr && halox__gpu_set_device(comm, g) == HALOX_OK)
        cudaFree(ptr);
    (void)cudaGetLastError();
    return HALOX_OK;
}

/* ---- device plan ------------------------------------------------------------------------- */

void halox__gpu_plan_free(halox__gpu_plan_t *dp)
{
    if (dp->d_index)
        cudaFree(dp->d_index);
    if (dp->d_buf)
        cudaFree(dp->d_buf);
    memset(dp, 0, sizeof *dp);
}

halox_status_t halox__gpu_plan_upload(halox__gpu_plan_t *dp, const halox_plan_t *plan,
                                      halox_real_t real, int stride, cudaStream_t stream,
                                      const char *name)
{
    /* every per-pulse entry is rewritten: nothing of an earlier, larger plan stays live */
    dp->n_pulses = 0;
    dp->generation = -1;
    memset(dp->index_off, 0, sizeof dp->index_off);
    memset(dp->buf_off, 0, sizeof dp->buf_off);
    memset(dp->recv_off, 0, sizeof dp->recv_off);
    memset(dp->needs, 0, sizeof dp->needs);
    memset(dp->home_prefix, 0, sizeof dp->home_prefix);
    dp->send_bytes = dp->recv_bytes = 0;

    /* the pulses checked, and which earlier pulses feed each map (from the maps themselves, not
     * from the plan's dependency fields: an exchange must never read a range still in flight) */
    halox__pulse_deps_t deps;
    halox_status_t st = halox__pulse_deps(plan, name, &deps);
    if (st != HALOX_OK)
        return st;
    memcpy(dp->needs, deps.needs, sizeof dp->needs);
    memcpy(dp->home_prefix, deps.home_prefix, sizeof dp->home_prefix);
    const size_t esize = halox__atom_bytes(real, stride, 1);
    size_t n_index = 0, sbytes = 0, rbytes = 0;
    int index_off[HALOX_MAX_PULSES] = {0};
    size_t buf_off[HALOX_MAX_PULSES] = {0}, recv_off[HALOX_MAX_PULSES] = {0};
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (n_index + (size_t)p->send_count > 0x7fffffff)
            return halox__error(HALOX_ERR_INVALID_ARG, "%s: bind: more than 2^31 map entries",
                                name);
        index_off[k] = (int)n_index;
        n_index += (size_t)p->send_count;
        buf_off[k] = sbytes;
        sbytes += (size_t)p->send_count * esize;
        recv_off[k] = rbytes;
        rbytes += (size_t)p->recv_count * esize;
    }

    cudaError_t e = cudaSuccess;
    /* never NULL, even for an empty plan: offsets are added to these pointers */
    if (!dp->d_index || n_index > dp->index_capacity) {
        size_t cap = n_index + n_index / 4 + 64; /* head-room: plans grow a little between builds */
        if (dp->d_index)
            cudaFree(dp->d_index);
        dp->d_index = NULL;
        dp->index_capacity = 0;
        e = cudaMalloc((void **)&dp->d_index, cap * sizeof(int));
        if (e != cudaSuccess) {
            dp->d_index = NULL;
            goto cuda_fail;
        }
        dp->index_capacity = cap;
    }
    if (!dp->d_buf || sbytes > dp->buf_capacity) {
        size_t cap = sbytes + sbytes / 4 + 256;
        if (dp->d_buf)
            cudaFree(dp->d_buf);
        dp->d_buf = NULL;
        dp->buf_capacity = 0;
        e = cudaMalloc((void **)&dp->d_buf, cap);
        if (e != cudaSuccess) {
            dp->d_buf = NULL;
            goto cuda_fail;
        }
        dp->buf_capacity = cap;
    }
    /* the maps go up pulse by pulse, straight from the plan (pageable copies are staged by the
     * runtime before cudaMemcpyAsync returns, so the plan may change afterwards) */
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (p->send_count == 0)
            continue;
        e = cudaMemcpyAsync(dp->d_index + index_off[k], p->send_index,
                            sizeof(int) * (size_t)p->send_count, cudaMemcpyHostToDevice, stream);
        if (e != cudaSuccess)
            goto cuda_fail;
    }
    memcpy(dp->index_off, index_off, sizeof index_off);
    memcpy(dp->buf_off, buf_off, sizeof buf_off);
    memcpy(dp->recv_off, recv_off, sizeof recv_off);
    dp->send_bytes = sbytes;
    dp->recv_bytes = rbytes;
    dp->n_pulses = plan->n_pulses;
    dp->generation = plan->generation;
    return HALOX_OK;

cuda_fail:
    (void)cudaGetLastError();
    memset(dp->needs, 0, sizeof dp->needs);
    memset(dp->home_prefix, 0, sizeof dp->home_prefix);
    return halox__error(e == cudaErrorMemoryAllocation ? HALOX_ERR_NO_MEMORY : HALOX_ERR_COMM,
                        "%s: bind: device plan of rank %d (%zu map entries, %zu staging bytes): "
                        "%s (%s)",
                        name, plan->rank, n_index, sbytes, cudaGetErrorString(e),
                        cudaGetErrorName(e));
}

cudaError_t halox__gpu_pack(const halox__gpu_plan_t *dp, const halox_plan_t *plan, int k,
                            halox_real_t real, int stride, void *dst, const void *x,
                            cudaStream_t stream)
{
    if (k < 0 || k >= dp->n_pulses)
        return cudaErrorInvalidValue;
    const halox_pulse_t *p = &plan->pulse[k];
    return halox_kernel_pack_coords(real, stride, dst ? dst : dp->d_buf + dp->buf_off[k], x,
                                    dp->d_index + dp->index_off[k], p->send_count, p->dim, p->shift,
                                    stream);
}

cudaError_t halox__gpu_add(const halox__gpu_plan_t *dp, const halox_plan_t *plan, int k,
                           halox_real_t real, int stride, void *f, const void *src,
                           cudaStream_t stream)
{
    if (k < 0 || k >= dp->n_pulses)
        return cudaErrorInvalidValue;
    const halox_pulse_t *p = &plan->pulse[k];
    return halox_kernel_add_forces(real, stride, f, dp->d_index + dp->index_off[k], p->send_count,
                                   src ? src : dp->d_buf + dp->buf_off[k], stream);
}

/* ---- bounded waits ----------------------------------------------------------------------- */

void halox__gpu_backoff(long polls)
{
    if (polls < 2000) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

static halox_status_t halox__gpu_stream_poll(halox_comm_t *comm, halox__gpu_t *g, double deadline,
                                             halox__gpu_check_fn check, void *ctx, const char *what)
{
    for (long polls = 0;; polls++) {
        cudaError_t e = cudaStreamQuery(g->stream);
        if (e == cudaSuccess)
            return HALOX_OK;
        if (e != cudaErrorNotReady)
            return halox__gpu_cuda_error(comm, g, e, what, HALOX_ERR_COMM, 1);
        if (check && polls % 64 == 0) {
            halox_status_t st = check(comm, ctx);
            if (st != HALOX_OK)
                return st;
        }
        if (halox__now() > deadline)
            return HALOX_ERR_TIMEOUT;
        halox__gpu_backoff(polls);
    }
}

halox_status_t halox__gpu_stream_wait(halox_comm_t *comm, halox__gpu_t *g, double deadline,
                                      halox__gpu_check_fn check, void *ctx, const char *what)
{
    const double t = halox__now();
    halox_status_t st = halox__gpu_stream_poll(comm, g, deadline, check, ctx, what);
    halox__gpu_waited(comm, t);
    return st;
}

void halox__gpu_waited(halox_comm_t *comm, double since)
{
    comm->stats.device_waits++;
    comm->stats.device_wait_seconds += halox__now() - since;
}

halox_status_t halox__gpu_drain(halox_comm_t *comm, halox__gpu_t *g, const char *who,
                                const char *what)
{
    /* with the transport's check, longer than its kernels' own bound, so that their record
     * (which names the peer) is what reports a timeout; and once more at the end: a kernel that
     * gave up has returned */
    const double bound = g->check ? 1.5 * comm->timeout_s + 1.0 : comm->timeout_s;
    halox_status_t st = halox__gpu_stream_wait(comm, g, halox__now() + bound, g->check, NULL, what);
    if (st == HALOX_OK && g->check)
        st = g->check(comm, NULL);
    if (st == HALOX_ERR_TIMEOUT && !g->failed)
        return halox__error(HALOX_ERR_TIMEOUT,
                            "%s: rank %d: %s waited %.3g s for %s: work queued on the endpoint's "
                            "stream before it did not complete (a peer that stopped?); raise "
                            "HALOX_TIMEOUT_S if it is only slow",
                            g->name, comm->rank, who, bound, what);
    return st;
}

/* ---- scratch memory ---------------------------------------------------------------------- */

halox_status_t halox__gpu_check(halox_comm_t *comm, halox__gpu_t *g, cudaError_t e,
                                const char *what)
{
    return e == cudaSuccess ? HALOX_OK : halox__gpu_cuda_error(comm, g, e, what, HALOX_ERR_COMM, 0);
}

halox_status_t halox__gpu_store_open(halox_comm_t *comm, const char *what, void **slot,
                                     size_t bytes, int n_small)
{
    halox__gpu_t *g = halox__gpu(comm);
    halox_status_t st = halox__gpu_usable(comm, g, what);
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, g);
    if (st != HALOX_OK || *slot)
        return st;
    halox__gpu_store_head_t *h = calloc(1, bytes);
    if (!h)
        return halox__error(HALOX_ERR_NO_MEMORY, "%s: %s: no memory", g->name, what);
    h->comm = comm;
    h->g = g;
    const size_t nb = sizeof(int) * (size_t)n_small;
    cudaError_t e = nb ? cudaMalloc((void **)&h->d_small, nb) : cudaSuccess;
    if (e == cudaSuccess && nb)
        e = cudaMallocHost((void **)&h->h_small, nb);
    if (e != cudaSuccess) {
        if (h->d_small)
            cudaFree(h->d_small);
        free(h);
        return halox__gpu_cuda_error(comm, g, e, "a device store's counters", HALOX_ERR_COMM, 0);
    }
    *slot = h;
    return HALOX_OK;
}

halox_status_t halox__gpu_scratch(halox_comm_t *comm, halox__gpu_t *g, void **p, size_t *cap,
                                  size_t bytes, int pinned, const char *what)
{
    if (bytes <= *cap && *p)
        return HALOX_OK;
    if (*p)
        (void)(pinned ? cudaFreeHost(*p) : cudaFree(*p));
    *p = NULL;
    *cap = 0;
    /* head-room: rebuilds grow a little each time. Pinned memory gets twice the need and at least
     * 64 KiB: freeing and allocating it again costs the host more than the rest of a rebuild's
     * calls (docs/MD-DESIGN.md#rebuilds-on-the-device), and these buffers are small. */
    const size_t least = (size_t)64 << 10;
    const size_t want = pinned ? (2 * bytes > least ? 2 * bytes : least) : bytes + bytes / 4 + 256;
    cudaError_t e = pinned ? cudaMallocHost(p, want) : cudaMalloc(p, want);
    if (e != cudaSuccess) {
        *p = NULL;
        return halox__gpu_check(comm, g, e, what);
    }
    *cap = want;
    return HALOX_OK;
}

halox_status_t halox__gpu_scratch_zeroed(halox_comm_t *comm, halox__gpu_t *g, void **p, size_t *cap,
                                         size_t bytes, const char *what)
{
    if (bytes <= *cap && *p)
        return HALOX_OK;
    halox_status_t st = halox__gpu_scratch(comm, g, p, cap, bytes, 0, what);
    return st != HALOX_OK
               ? st
               : halox__gpu_check(comm, g, cudaMemsetAsync(*p, 0, *cap, g->stream), what);
}

halox_status_t halox__gpu_events_wait(halox_comm_t *comm, halox__gpu_t *g, int dir, double deadline,
                                      halox__gpu_check_fn check, void *ctx, int *pulse_p)
{
    const int n = HALOX_MAX_PULSES;
    long polls = 0;
    for (int i = 0; i < n; i++) {
        /* coordinates complete in pulse order, forces in reverse */
        int k = dir == HALOX__GPU_COORDS ? i : n - 1 - i;
        if (!g->ev_live[dir][k])
            continue;
        for (;; polls++) {
            cudaError_t e = cudaEventQuery(g->ev[dir][k]);
            if (e == cudaSuccess)
                break;
            if (e != cudaErrorNotReady)
                return halox__gpu_cuda_error(comm, g, e, "waiting for an exchange (cudaEventQuery)",
                                             HALOX_ERR_COMM, 1);
            if (check && polls % 64 == 0) {
                halox_status_t st = check(comm, ctx);
                if (st != HALOX_OK) {
                    if (pulse_p)
                        *pulse_p = k;
                    return st;
                }
            }
            if (halox__now() > deadline) {
                if (pulse_p)
                    *pulse_p = k;
                return HALOX_ERR_TIMEOUT;
            }
            halox__gpu_backoff(polls);
        }
        g->ev_live[dir][k] = 0;
    }
    return HALOX_OK;
}

halox_status_t halox__gpu_record(halox_comm_t *comm, halox__gpu_t *g, int dir, int k)
{
    if (comm->graph_mode) /* inside a capture: the replays' completion is the caller's to wait */
        return HALOX_OK;
    cudaError_t e = cudaEventRecord(g->ev[dir][k], g->stream);
    if (e != cudaSuccess)
        return halox__gpu_cuda_error(comm, g, e, "cudaEventRecord", HALOX_ERR_COMM, 1);
    const halox_pulse_t *p = &comm->plan->pulse[k];
    g->ev_live[dir][k] = 1;
    g->ev_step[dir] = comm->step;
    g->ev_from[dir][k] = dir == HALOX__GPU_COORDS ? p->recv_rank : p->send_rank;
    g->ev_to[dir][k] = dir == HALOX__GPU_COORDS ? p->send_rank : p->recv_rank;
    g->ev_dim[dir][k] = p->dim;
    return HALOX_OK;
}
