/* The device store of a plan build (core/plan_build.h) for the GPU transports: the atoms stay in
 * device memory; the home check, the selection of every pulse's atoms, the set-up messages'
 * packing and their placement run as kernels (src/transports/gpu/plan_select.h) on the endpoint's
 * stream. What crosses to the host per pulse: the selection's count and dependency mask (the
 * driver's allgather needs them), and the set-up message's bytes, staged through pinned memory
 * for the transport's host sendrecv where the transport cannot send it device to device
 * (halox__gpu_t.dsendrecv: NVSHMEM). At the end the maps and zones come back so the host plan is
 * complete (bind uploads the maps as after a host build), through pinned memory: copies to
 * pageable memory make the host wait for each. Device
 * scratch lives with the endpoint (halox__gpu_t.plan_dev) and grows, so a rebuild allocates nothing
 * once sizes settle. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/grow.h"
#include "core/pack.h"
#include "core/plan/plan_build.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/halo_kernels.h"
#include "transports/gpu/plan_select.h"

/* counters: a selection's count and mask, the home check's first bad atom, the home atoms of the
 * first pulse of each dimension and of the first pulse from the lower neighbour (full shell) */
enum { PD_COUNT = 0, PD_MASK, PD_BAD, PD_HOME, PD_DOWN = PD_HOME + 3, PD_SMALL = PD_DOWN + 3 };

struct halox__plan_dev {
    halox__gpu_store_head_t h; /* endpoint; PD_* counters and their pinned mirror */
    halox_fixed_atoms_t *atoms;
    int *d_map[HALOX_MAX_PULSES]; /* pulse k's map on the device */
    size_t map_cap[HALOX_MAX_PULSES];
    int *d_scratch; /* the selection's block counts */
    size_t scratch_cap;
    void *d_msg, *h_msg; /* the message buffer and its pinned staging, msg_cap bytes each */
    size_t msg_cap;
    void *h_end; /* pinned: the maps and zones read at the end */
    size_t end_cap;
    /* the caller's async: the read of the maps and zones left on the stream, for the plan of
     * generation pending_gen, which the next bind of it copies out of h_end */
    halox_plan_t *pending;
    long long pending_gen;
};

static halox_status_t pd_cuda(halox__plan_dev_t *pd, cudaError_t e, const char *what)
{
    return halox__gpu_check(pd->h.comm, pd->h.g, e, what);
}

static halox_status_t pd_grow(halox__plan_dev_t *pd, void **p, size_t *cap, size_t bytes,
                              const char *what)
{
    return halox__gpu_scratch(pd->h.comm, pd->h.g, p, cap, bytes, 0, what);
}

static halox_status_t pd_sync(halox__plan_dev_t *pd, const char *what)
{
    return halox__gpu_drain(pd->h.comm, pd->h.g, "the plan build", what);
}

static size_t pd_esize(const halox__plan_dev_t *pd)
{
    return halox_real_size(pd->h.comm->real) * (size_t)pd->h.comm->stride;
}

/* Select into pulse k's device map from entry `at` on: [begin, end) with the ranges' mask, by
 * the test of its direction (core's halox__plan_select: the distance to the lower bound, or to
 * the upper one for a pulse from the lower neighbour); the count lands in h_small[slot] after the
 * caller synchronises. check: the home atoms' check in the same pass (begin 0, end n_home). */
static halox_status_t pd_select(halox__plan_dev_t *pd, halox_plan_t *plan, int k, int at, int begin,
                                int end, int slot, int check)
{
    const halox_pulse_t *p = &plan->pulse[k];
    halox_plan_select_args_t a;
    memset(&a, 0, sizeof a);
    a.x = pd->atoms->x;
    a.real = pd->h.comm->real;
    a.stride = pd->h.comm->stride;
    a.dim = p->dim;
    a.bound = p->from_lower ? plan->hi[p->dim] : plan->lo[p->dim];
    a.down = p->from_lower;
    a.rh = plan->halo_dist;
    a.begin = begin;
    a.end = end;
    if (check) {
        for (int d = 0; d < 3; d++) {
            a.home_lo[d] = plan->lo[d];
            a.home_hi[d] = plan->hi[d];
        }
        a.first_bad = pd->h.d_small + PD_BAD;
        a.zone = pd->atoms->zone;
    }
    for (int j = 0; j < k && begin < end; j++) {
        const halox_pulse_t *q = &plan->pulse[j];
        if (p->pulse_in_dim == 0 && q->dim == p->dim)
            continue; /* pulse 0 of the second direction: not the first direction's atoms */
        int b = q->recv_offset > begin ? q->recv_offset : begin;
        int e = q->recv_offset + q->recv_count < end ? q->recv_offset + q->recv_count : end;
        if (b >= e)
            continue;
        a.range_lo[a.n_ranges] = b;
        a.range_hi[a.n_ranges] = e;
        a.range_pulse[a.n_ranges++] = j;
    }
    const int n = end > begin ? end - begin : 0;
    halox_status_t st = pd_grow(pd, (void **)&pd->d_map[k], &pd->map_cap[k],
                                sizeof(int) * ((size_t)at + (size_t)n + 1), "the device map");
    size_t sb = sizeof(int) * halox_kernel_plan_select_scratch(n);
    if (st == HALOX_OK)
        st = halox__gpu_scratch_zeroed(pd->h.comm, pd->h.g, (void **)&pd->d_scratch,
                                       &pd->scratch_cap, sb, "the selection scratch");
    if (st != HALOX_OK)
        return st;
    return pd_cuda(pd,
                   halox_kernel_plan_select(&a, pd->d_map[k] + at, pd->h.d_small + slot,
                                            (unsigned *)(pd->h.d_small + PD_MASK), pd->d_scratch,
                                            pd->h.g->stream),
                   "the selection kernels");
}

/* Index of dimension d's first pulse from the lower neighbour (full shell); -1 when none. */
static int pd_first_down(const halox_plan_t *plan, int d)
{
    for (int k = 0; k < plan->n_pulses; k++)
        if (plan->pulse[k].dim == d && plan->pulse[k].from_lower &&
            plan->pulse[k].pulse_in_dim == 0)
            return k;
    return -1;
}

static halox_status_t pd_begin(void *ctx, halox_plan_t *plan, const halox_plan_params_t *params,
                               int rank)
{
    halox__plan_dev_t *pd = ctx;
    halox_fixed_atoms_t *A = pd->atoms;
    halox_status_t st = halox__plan_geometry(plan, params, rank, pd->h.comm->real,
                                             pd->h.comm->stride, A->n_home, A->capacity);
    if (st != HALOX_OK)
        return st;
    cudaStream_t s = pd->h.g->stream;
    const int nh = A->n_home;
    if ((st = pd_cuda(pd, cudaMemsetAsync(pd->h.d_small, 0x7f, sizeof(int) * PD_SMALL, s),
                      "resetting the counters")) != HALOX_OK)
        return st;
    /* the home check (which zeroes the home zones as it goes) inside the first selection over
     * the home atoms, or on its own without one */
    int checked = 0;
    for (int d = 0; d < 3 && st == HALOX_OK; d++) {
        int k = halox__plan_first_pulse(plan, d);
        if (k >= 0) {
            st = pd_select(pd, plan, k, 0, 0, nh, PD_HOME + d, !checked);
            checked = 1;
        }
        /* the full shell's first pulse from the lower neighbour: its home atoms by the test of
         * the upper bound (core selects them in halox__plan_select) */
        k = pd_first_down(plan, d);
        if (k >= 0 && st == HALOX_OK)
            st = pd_select(pd, plan, k, 0, 0, nh, PD_DOWN + d, 0);
    }
    if (st == HALOX_OK && !checked)
        st = pd_cuda(pd,
                     halox_kernel_plan_check_home(pd->h.comm->real, pd->h.comm->stride, A->x, nh,
                                                  plan->lo, plan->hi, pd->h.d_small + PD_BAD,
                                                  A->zone, s),
                     "the home check kernel");
    if (st == HALOX_OK)
        st = pd_cuda(pd,
                     cudaMemcpyAsync(pd->h.h_small, pd->h.d_small, sizeof(int) * PD_SMALL,
                                     cudaMemcpyDeviceToHost, s),
                     "reading the counters");
    if (st == HALOX_OK)
        st = pd_sync(pd, "the home selection");
    if (st != HALOX_OK)
        return st;
    const int bad = pd->h.h_small[PD_BAD];
    if (bad >= 0 && bad < nh) {
        /* that atom's message, as the host build gives it */
        char one[32];
        int32_t id = -1;
        const size_t es = pd_esize(pd);
        if ((st = pd_cuda(
                 pd, cudaMemcpy(one, (char *)A->x + (size_t)bad * es, es, cudaMemcpyDeviceToHost),
                 "reading a home atom")) != HALOX_OK ||
            (st = pd_cuda(pd, cudaMemcpy(&id, A->id + bad, sizeof id, cudaMemcpyDeviceToHost),
                          "reading a home atom's id")) != HALOX_OK)
            return st;
        double x[3];
        for (int c = 0; c < 3; c++)
            x[c] = pd->h.comm->real == HALOX_FLOAT ? (double)((float *)one)[c] : ((double *)one)[c];
        st = halox__plan_home_check(plan, bad, id, x);
        return st != HALOX_OK ? st
                              : halox__error(HALOX_ERR_INTERNAL,
                                             "rank %d: the device home check refused atom %d (id "
                                             "%d), which the host check accepts: report this",
                                             rank, bad, id);
    }
    for (int d = 0; d < 3; d++) {
        int k = halox__plan_first_pulse(plan, d);
        if (k >= 0)
            plan->pulse[k].dep_offset = pd->h.h_small[PD_HOME + d];
        k = pd_first_down(plan, d);
        if (k >= 0)
            plan->pulse[k].dep_offset = pd->h.h_small[PD_DOWN + d];
    }
    return HALOX_OK;
}

static halox_status_t pd_select_pulse(void *ctx, halox_plan_t *plan, int k)
{
    halox__plan_dev_t *pd = ctx;
    halox_pulse_t *p = &plan->pulse[k];
    int begin, end, dep = 0;
    if (p->pulse_in_dim == 0) {
        /* home atoms (picked at the start) and everything received in earlier dimensions: for
         * the full shell's second direction not what the first one delivered in this dimension,
         * which lies after the earlier dimensions' atoms (received in pulse order) */
        begin = plan->n_home;
        end = p->from_lower ? plan->pulse[halox__plan_first_pulse(plan, p->dim)].recv_offset
                            : plan->n_total;
        dep = p->dep_offset;
    } else {
        /* forward what the previous pulse of this dimension and direction delivered */
        begin = plan->pulse[k - 1].recv_offset;
        end = begin + plan->pulse[k - 1].recv_count;
    }
    if (begin >= end) {
        /* nothing received before this pulse (the first decomposed dimension): the home part
         * is the map, no ranges, no mask; no launch and no wait */
        p->send_count = dep;
        p->dep_offset = dep;
        p->dep_mask = 0;
        return HALOX_OK;
    }
    cudaStream_t s = pd->h.g->stream;
    halox_status_t st = pd_cuda(pd, cudaMemsetAsync(pd->h.d_small + PD_MASK, 0, sizeof(int), s),
                                "resetting the mask");
    if (st == HALOX_OK && p->pulse_in_dim == 0 && dep > 0 &&
        pd->map_cap[k] < sizeof(int) * ((size_t)end + 1)) {
        /* the home part is in the map already: keep it while the map grows */
        int *old = pd->d_map[k];
        size_t oldcap = pd->map_cap[k];
        pd->d_map[k] = NULL;
        pd->map_cap[k] = 0;
        st = pd_grow(pd, (void **)&pd->d_map[k], &pd->map_cap[k], sizeof(int) * ((size_t)end + 1),
                     "the device map");
        if (st == HALOX_OK)
            st = pd_cuda(pd,
                         cudaMemcpyAsync(pd->d_map[k], old, sizeof(int) * (size_t)dep,
                                         cudaMemcpyDeviceToDevice, s),
                         "keeping the home part of a map");
        if (st == HALOX_OK)
            st = pd_sync(pd, "keeping the home part of a map");
        if (old)
            cudaFree(old);
        (void)oldcap;
    }
    if (st == HALOX_OK)
        st = pd_select(pd, plan, k, dep, begin, end, PD_COUNT, 0);
    if (st == HALOX_OK)
        st = pd_cuda(pd,
                     cudaMemcpyAsync(pd->h.h_small, pd->h.d_small, sizeof(int) * 2,
                                     cudaMemcpyDeviceToHost, s),
                     "reading the counters");
    if (st == HALOX_OK)
        st = pd_sync(pd, "the selection");
    if (st != HALOX_OK)
        return st;
    p->send_count = dep + pd->h.h_small[PD_COUNT];
    p->dep_offset = dep;
    p->dep_mask = (uint32_t)pd->h.h_small[PD_MASK];
    return HALOX_OK;
}

static long long pd_room(void *ctx, const halox_plan_t *plan)
{
    const halox__plan_dev_t *pd = ctx;
    return (long long)pd->atoms->capacity - plan->n_total;
}

static halox_status_t pd_recv(void *ctx, halox_plan_t *plan, int k, int count)
{
    halox__plan_dev_t *pd = ctx;
    if (count < 0)
        return halox__error(HALOX_ERR_COMM, "rank %d: negative receive count %d in pulse %d",
                            plan->rank, count, k);
    halox_status_t rst =
        halox__plan_room(plan, k, count, pd->atoms->capacity, "device arrays", &pd->atoms->need);
    if (rst != HALOX_OK)
        return rst;
    halox_pulse_t *p = &plan->pulse[k];
    p->recv_count = count;
    p->recv_offset = plan->n_total; /* appended in pulse order */
    plan->n_total += count;
    return HALOX_OK;
}

static halox_status_t pd_reserve(void *ctx, size_t bytes, void **buf_p, size_t *cap_p)
{
    halox__plan_dev_t *pd = ctx;
    halox_status_t st = HALOX_OK;
    if (bytes > pd->msg_cap || !pd->d_msg) {
        /* the two the same size: a message's halves sit at the same offsets in both */
        size_t dcap = 0, hcap = 0;
        if (pd->d_msg)
            cudaFree(pd->d_msg);
        pd->d_msg = NULL;
        st = pd_grow(pd, &pd->d_msg, &dcap, bytes, "the set-up message buffer");
        if (st == HALOX_OK)
            st = halox__gpu_scratch(pd->h.comm, pd->h.g, &pd->h_msg, &hcap, bytes, 1,
                                    "the pinned set-up buffer");
        pd->msg_cap = st == HALOX_OK ? (dcap < hcap ? dcap : hcap) : 0;
    }
    *buf_p = pd->d_msg;
    *cap_p = pd->msg_cap;
    return st;
}

/* the message: coordinates, ids, zones, as the host build packs it */
static halox_status_t pd_meta(halox__plan_dev_t *pd, const halox_plan_t *plan, int k, char *coords,
                              int32_t *ids, uint8_t *zones, uint8_t bit)
{
    const halox_pulse_t *p = &plan->pulse[k];
    return pd_cuda(pd,
                   halox_kernel_pack_setup(pd->h.comm->real, pd->h.comm->stride, coords,
                                           pd->atoms->x, pd->atoms->id, pd->atoms->zone,
                                           pd->d_map[k], p->send_count, p->dim, p->shift, bit, ids,
                                           zones, pd->h.g->stream),
                   "the set-up pack kernel");
}

static halox_status_t pd_pack(void *ctx, const halox_plan_t *plan, int k, void *buf)
{
    halox__plan_dev_t *pd = ctx;
    const int n = plan->pulse[k].send_count;
    char *b = buf;
    const size_t cb = halox__atom_bytes(pd->h.comm->real, pd->h.comm->stride, n);
    return pd_meta(pd, plan, k, b, (int32_t *)(void *)(b + cb),
                   (uint8_t *)(b + cb + (size_t)n * sizeof(int32_t)), 0);
}

static halox_status_t pd_unpack(void *ctx, halox_plan_t *plan, int k, const void *buf)
{
    halox__plan_dev_t *pd = ctx;
    const halox_pulse_t *p = &plan->pulse[k];
    const int n = p->recv_count, off = p->recv_offset;
    if (n == 0)
        return HALOX_OK;
    const size_t at = halox__atom_bytes(pd->h.comm->real, pd->h.comm->stride, off);
    return pd_cuda(pd,
                   halox_kernel_plan_place(buf, n, pd_esize(pd), halox__pulse_zone_bit(p),
                                           (char *)pd->atoms->x + at, pd->atoms->id + off,
                                           pd->atoms->zone + off, pd->h.g->stream),
                   "placing the set-up message");
}

static halox_status_t pd_copy(void *ctx, halox_plan_t *plan, int k)
{
    halox__plan_dev_t *pd = ctx;
    const halox_pulse_t *p = &plan->pulse[k];
    const int off = p->recv_offset;
    /* the sources lie below recv_offset: no overlap with the range written */
    return pd_meta(pd, plan, k,
                   (char *)pd->atoms->x +
                       halox__atom_bytes(pd->h.comm->real, pd->h.comm->stride, off),
                   pd->atoms->id + off, pd->atoms->zone + off, halox__pulse_zone_bit(p));
}

static halox_status_t pd_sendrecv(void *ctx, halox_comm_t *comm, int dst, const void *sbuf,
                                  size_t sbytes, int src, void *rbuf, size_t rbytes, size_t most)
{
    halox__plan_dev_t *pd = ctx;
    cudaStream_t s = pd->h.g->stream;
    if (pd->h.g->dsendrecv) { /* device to device, where the transport can (every rank alike) */
        int used = 0;
        halox_status_t dst_st =
            pd->h.g->dsendrecv(comm, dst, sbuf, sbytes, src, rbuf, rbytes, most, &used);
        if (used)
            return dst_st;
    }
    /* the buffer's two halves, in the same places of the pinned staging */
    char *hs = (char *)pd->h_msg + ((const char *)sbuf - (const char *)pd->d_msg);
    char *hr = (char *)pd->h_msg + ((char *)rbuf - (char *)pd->d_msg);
    halox_status_t st = HALOX_OK;
    if (sbytes)
        st = pd_cuda(pd, cudaMemcpyAsync(hs, sbuf, sbytes, cudaMemcpyDeviceToHost, s),
                     "staging a set-up message");
    if (st == HALOX_OK)
        st = pd_sync(pd, "staging a set-up message");
    /* a failure above still takes part, so that the peers are not left waiting */
    halox_status_t mst = comm->ops->sendrecv(comm, dst, hs, sbytes, src, hr, rbytes);
    if (st == HALOX_OK)
        st = mst;
    if (st == HALOX_OK && rbytes)
        st = pd_cuda(pd, cudaMemcpyAsync(rbuf, hr, rbytes, cudaMemcpyHostToDevice, s),
                     "placing a set-up message");
    return st;
}

/* the maps and zones of h_end into the plan's host arrays (pd_end read them there) */
static void pd_settle(const halox__plan_dev_t *pd, halox_plan_t *plan)
{
    const char *h = pd->h_end;
    size_t at = 0;
    for (int k = 0; k < plan->n_pulses; k++) {
        const size_t b = sizeof(int) * (size_t)plan->pulse[k].send_count;
        if (b > 0)
            memcpy(plan->pulse[k].send_index, h + at, b);
        at += b;
    }
    if (plan->n_total > 0)
        memcpy(plan->zone, h + at, (size_t)plan->n_total);
}

static halox_status_t pd_end(void *ctx, halox_plan_t *plan)
{
    halox__plan_dev_t *pd = ctx;
    cudaStream_t s = pd->h.g->stream;
    halox_status_t st = halox__grow((void **)&plan->zone, &plan->zone_capacity,
                                    plan->n_total > 0 ? plan->n_total : 1, 1);
    /* the maps one after another, then the zones */
    size_t bytes = (size_t)(plan->n_total > 0 ? plan->n_total : 0), at = 0;
    for (int k = 0; k < plan->n_pulses; k++)
        bytes += sizeof(int) * (size_t)plan->pulse[k].send_count;
    if (st == HALOX_OK)
        st = halox__gpu_scratch(pd->h.comm, pd->h.g, &pd->h_end, &pd->end_cap, bytes, 1,
                                "the plan's pinned read");
    char *h = pd->h_end;
    for (int k = 0; k < plan->n_pulses && st == HALOX_OK; k++) {
        halox_pulse_t *p = &plan->pulse[k];
        const size_t b = sizeof(int) * (size_t)p->send_count;
        st = halox__grow((void **)&p->send_index, &plan->send_capacity[k], p->send_count + 1,
                         sizeof(int));
        if (st == HALOX_OK && b > 0)
            st = pd_cuda(pd, cudaMemcpyAsync(h + at, pd->d_map[k], b, cudaMemcpyDeviceToHost, s),
                         "reading a map");
        at += b;
    }
    if (st == HALOX_OK && plan->n_total > 0)
        st = pd_cuda(pd,
                     cudaMemcpyAsync(h + at, pd->atoms->zone, (size_t)plan->n_total,
                                     cudaMemcpyDeviceToHost, s),
                     "reading the zones");
    if (st == HALOX_OK && pd->atoms->async) {
        /* the next bind waits for the stream, then copies them out (halox__gpu_plan_dev_settle):
         * the host goes on while the last kernels run, so the engine's lists start sooner
         * (docs/MD-DESIGN.md#rebuilds-on-the-device) */
        pd->pending = plan;
        pd->pending_gen = plan->generation + 1; /* what the drive makes it once agreed */
    } else {
        if (st == HALOX_OK)
            st = pd_sync(pd, "reading the plan");
        if (st == HALOX_OK)
            pd_settle(pd, plan);
    }
    if (st == HALOX_OK)
        pd->atoms->n_total = plan->n_total;
    return st;
}

void halox__gpu_plan_dev_settle(halox__gpu_t *g, const halox_plan_t *plan, int ok)
{
    halox__plan_dev_t *pd = g->plan_dev;
    if (!pd || !pd->pending)
        return;
    /* the plan the last build left pending, unchanged since (a host build of it or a failed
     * agreement leaves another generation), after a wait for the stream (ok) */
    if (ok && plan == pd->pending && plan->generation == pd->pending_gen)
        pd_settle(pd, pd->pending);
    pd->pending = NULL;
}

static void pd_done(void *ctx)
{
    halox__plan_dev_t *pd = ctx;
    pd->atoms = NULL;
}

void halox__gpu_plan_dev_free(halox__gpu_t *g)
{
    halox__plan_dev_t *pd = g->plan_dev;
    if (!pd)
        return;
    for (int k = 0; k < HALOX_MAX_PULSES; k++)
        if (pd->d_map[k])
            cudaFree(pd->d_map[k]);
    if (pd->d_scratch)
        cudaFree(pd->d_scratch);
    if (pd->h.d_small)
        cudaFree(pd->h.d_small);
    if (pd->h.h_small)
        cudaFreeHost(pd->h.h_small);
    if (pd->d_msg)
        cudaFree(pd->d_msg);
    if (pd->h_msg)
        cudaFreeHost(pd->h_msg);
    if (pd->h_end)
        cudaFreeHost(pd->h_end);
    free(pd);
    g->plan_dev = NULL;
}

static const halox__plan_store_ops_t pd_ops = {
    .begin = pd_begin,
    .select = pd_select_pulse,
    .room = pd_room,
    .recv = pd_recv,
    .reserve = pd_reserve,
    .pack = pd_pack,
    .unpack = pd_unpack,
    .copy = pd_copy,
    .sendrecv = pd_sendrecv,
    .end = pd_end,
    .done = pd_done,
};

halox_status_t halox__gpu_plan_store(halox_comm_t *comm, halox_fixed_atoms_t *atoms,
                                     halox__plan_store_t *store)
{
    halox__gpu_t *g = halox__gpu(comm);
    memset(store, 0, sizeof *store);
    halox_status_t st = halox__gpu_store_open(comm, "build_plan_fixed", (void **)&g->plan_dev,
                                              sizeof *g->plan_dev, PD_SMALL);
    if (st != HALOX_OK)
        return st;
    halox__plan_dev_t *pd = g->plan_dev;
    pd->atoms = atoms;
    pd->pending = NULL; /* an earlier build's read, never bound: this build replaces the plan */
    *store = (halox__plan_store_t){.ops = &pd_ops,
                                   .ctx = pd,
                                   .real = comm->real,
                                   .stride = comm->stride,
                                   .n_home = atoms->n_home,
                                   .capacity = atoms->capacity,
                                   .may_fail_late = 1,
                                   .fixed = 1};
    return HALOX_OK;
}
