/* The NVSHMEM endpoint's memory and bind (gpu_nvshmem.h): device_alloc and device_free of
 * symmetric memory (collective, through gpu_nvshmem_alloc.c: the largest rank's size everywhere,
 * refused with the size to set when the heap is full), and bind in steps: the arrays, the device
 * plan, the symmetric buffers (hybrid's routes come next, in its own bind), the pulse table, the
 * grid. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "transports/gpu/gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/nvshmem/nvshmem_halo.h"

/* ---- symmetric memory --------------------------------------------------------------------- */

halox_status_t halox__shm_dalloc(halox_comm_t *comm, size_t bytes, void **ptr_p)
{
    halox__shm_t *m = halox__shm(comm);
    *ptr_p = NULL;
    halox_status_t st = halox__gpu_usable(comm, &m->g, "device_alloc");
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, &m->g);
    if (st == HALOX_OK && m->n_alloc == HALOX__SHM_MAX_ALLOCS)
        st = halox__error(HALOX_ERR_NO_MEMORY,
                          "%s: device_alloc: more than %d live allocations: free some", m->g.name,
                          HALOX__SHM_MAX_ALLOCS);
    st = halox__agree(comm, st, "device_alloc");
    if (st != HALOX_OK)
        return st;
    void *p = NULL;
    st = halox__shm_sym_alloc(comm, bytes, &p, "device_alloc");
    if (st != HALOX_OK)
        return st;
    m->alloc[m->n_alloc].p = p;
    m->alloc[m->n_alloc].bytes = bytes;
    m->n_alloc++;
    *ptr_p = p;
    return HALOX_OK;
}

halox_status_t halox__shm_dfree(halox_comm_t *comm, void *ptr)
{
    halox__shm_t *m = halox__shm(comm);
    if (!ptr)
        return HALOX_OK;
    int i = 0;
    while (i < m->n_alloc && m->alloc[i].p != ptr)
        i++;
    if (i == m->n_alloc)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s: device_free: %p does not come from this endpoint's device_alloc",
                            m->g.name, ptr);
    m->alloc[i] = m->alloc[--m->n_alloc];
    /* nvshmem_free is collective: only when every rank is healthy (a bounded agreement), else
     * it would wait for a peer that is gone; the memory is leaked then */
    halox_status_t st = m->g.failed ? HALOX_ERR_STATE : halox__gpu_set_device(comm, &m->g);
    if (st == HALOX_OK)
        st = halox__gpu_stream_wait(comm, &m->g, halox__now() + comm->timeout_s, halox__shm_check,
                                    NULL, "device_free");
    st = halox__agree(comm, st, "device_free");
    if (st != HALOX_OK) {
        halox__shm_poison();
        return st;
    }
    halox__shm_free(ptr);
    return HALOX_OK;
}

/* The allocation index of p (from device_alloc) with at least `bytes`, or -1. */
static int halox__shm_alloc_of(const halox__shm_t *m, const void *p, size_t bytes)
{
    for (int i = 0; i < m->n_alloc; i++)
        if (m->alloc[i].p == p && m->alloc[i].bytes >= bytes)
            return i;
    return -1;
}

/* ---- bind, in steps ----------------------------------------------------------------------- */

/* The arrays: x and f symmetric, from device_alloc, the same allocations on every rank (peers
 * compute addresses in them from their own), large enough for the whole plan; the signals and
 * counters zeroed while every stream is idle (no peer signals before this bind's agreement, and
 * every signal of earlier exchanges was waited for). halox__gpu_bind waits for the stream before
 * its gather, so every rank's reset is done before any rank passes the gather.
 * which[]: the allocations' indices, checked against every rank's by the bind's gather. */
static halox_status_t halox__shm_bind_arrays(halox_comm_t *comm, halox_status_t st0,
                                             long long which[2])
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const halox_plan_t *plan = comm->plan;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    if (st0 != HALOX_OK) /* no plan, no arrays: agreed in the bind's gather */
        return st0;
    halox_status_t st = halox__gpu_usable(comm, g, "bind");
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, g);
    if (st == HALOX_OK && g->bound) /* the earlier plan's exchanges may still run */
        st = halox__shm_drain(comm, "bind");
    which[0] = halox__shm_alloc_of(m, comm->x, (size_t)plan->n_total * esize);
    which[1] = halox__shm_alloc_of(m, comm->f, (size_t)plan->n_total * esize);
    if (st == HALOX_OK && (which[0] < 0 || which[1] < 0))
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "%s: rank %d: bind: %s must come from halox_comm_device_alloc() on this "
                          "endpoint (symmetric memory that peers can write), with room for the "
                          "plan's %d atoms (%zu bytes)",
                          g->name, comm->rank, which[0] < 0 ? "x" : "f", plan->n_total,
                          (size_t)plan->n_total * esize);
    if (st == HALOX_OK) {
        cudaError_t e = cudaMemsetAsync(m->state, 0, sizeof *m->state, g->stream);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(m->sig, 0, sizeof(uint64_t) * 2 * HALOX_MAX_PULSES, g->stream);
        if (e != cudaSuccess)
            st = halox__gpu_cuda_error(comm, g, e, "resetting the signals", HALOX_ERR_COMM, 1);
    }
    return st;
}

/* Every rank binds the same allocations (from the bind's gather: the same verdict everywhere). */
static halox_status_t halox__shm_bind_same(halox_comm_t *comm, const long long *all, int W)
{
    const halox__shm_t *m = halox__shm(comm);
    const long long *mine = all + (size_t)comm->rank * W + (W - 2);
    for (int r = 0; r < comm->size; r++) {
        const long long *w = all + (size_t)r * W + (W - 2);
        if (w[0] != mine[0] || w[1] != mine[1])
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "%s: bind: rank %d binds device_alloc allocations #%lld/#%lld as "
                                "x/f but rank %d binds #%lld/#%lld: every rank must bind the "
                                "arrays of the same collective allocations",
                                m->g.name, r, w[0], w[1], comm->rank, mine[0], mine[1]);
    }
    return HALOX_OK;
}

/* Rank r's bytes before pulse k in its force buffer (k = n_pulses: all of them), as its device
 * plan lays them out (halox__gpu_plan_upload: send_count atoms per pulse, in order). */
static size_t halox__shm_buf_off(const halox_comm_t *comm, const long long *all, int W, int r,
                                 int k)
{
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    size_t b = 0;
    for (int j = 0; j < k; j++)
        b += (size_t)halox__bound_pulse(all, W, r, j)[0] * esize;
    return b;
}

/* The symmetric force buffers and staging: regrown collectively when any rank needs more
 * (buf_cap is the same on every rank, and every rank reads everybody's need from the bind's
 * gather, so every rank takes the same decision). */
static halox_status_t halox__shm_bind_buffers(halox_comm_t *comm, const long long *all, int W)
{
    halox__shm_t *m = halox__shm(comm);
    const int n = m->g.plan.n_pulses;
    size_t most = 0;
    for (int r = 0; r < comm->size; r++) {
        const size_t b = halox__shm_buf_off(comm, all, W, r, n);
        most = b > most ? b : most;
    }
    if (!m->fbuf || most > m->buf_cap) {
        halox__shm_free(m->stage);
        halox__shm_free(m->fbuf);
        m->stage = m->fbuf = NULL;
        m->buf_cap = 0;
        size_t cap = (size_t)((double)most * m->headroom) + 256;
        void *a = NULL, *b = NULL;
        halox_status_t st = halox__shm_sym_alloc(comm, cap, &a, "bind: force buffers");
        if (st == HALOX_OK)
            st = halox__shm_sym_alloc(comm, cap, &b, "bind: staging buffers");
        if (st != HALOX_OK)
            return st;
        m->fbuf = a;
        m->stage = b;
        m->buf_cap = cap;
    }
    return HALOX_OK;
}

/* The pulse table the kernels read: where this rank's stores land at its peers (their halo
 * offsets and force-buffer slots, from the bind's gather), peer pointers, and the pulses that
 * wait for a signal; the largest count of a pulse in *maxc_p. Uploaded on the stream (the end of
 * the bind waits for it). */
static halox_status_t halox__shm_bind_rows(halox_comm_t *comm, const long long *all, int W,
                                           int *maxc_p)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    memset(m->rows, 0, sizeof m->rows);
    int maxc = 1;
    m->last_wait[0] = m->last_wait[1] = -1;
    for (int k = 0; k < n; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        halox__shm_row_t *R = &m->rows[k];
        const int sp = m->pe_of[p->send_rank], rp = m->pe_of[p->recv_rank];
        /* where this rank's stores land at its peers: their halo offsets and force-buffer
         * slots */
        const size_t peer_recv_off = (size_t)halox__bound_pulse(all, W, p->send_rank, k)[4];
        const size_t peer_buf_off = halox__shm_buf_off(comm, all, W, p->recv_rank, k);
        m->peer_recv_off[k] = peer_recv_off;
        m->peer_buf_rows[k] = peer_buf_off / esize;
        R->pulse = k;
        R->dim = p->dim;
        R->shift = p->shift;
        R->send_count = p->send_count;
        R->recv_count = p->recv_count;
        R->home_prefix = p->dep_offset;
        R->needs = p->dep_mask;
        for (int j = k + 1; j < n; j++)
            R->feeds |= (plan->pulse[j].dep_mask >> k) & 1u;
        R->send_pe = sp;
        R->recv_pe = rp;
        R->map = dp->d_index + dp->index_off[k];
        R->x_sym = (char *)comm->x + peer_recv_off * esize;
        R->x_peer = m->use_put ? NULL : halox__shm_ptr(R->x_sym, sp);
        R->stage = m->stage + dp->buf_off[k];
        R->f_src = (char *)comm->f + (size_t)p->recv_offset * esize;
        R->recv_offset = p->recv_offset;
        R->fb_sym = m->fbuf + peer_buf_off;
        R->fb_peer = m->use_put ? NULL : halox__shm_ptr(R->fb_sym, rp);
        R->fb_mine = m->fbuf + dp->buf_off[k];
        R->sig_x_peer = m->use_put ? NULL : halox__shm_ptr(m->sig + k, sp);
        R->sig_f_peer = m->use_put ? NULL : halox__shm_ptr(m->sig + HALOX_MAX_PULSES + k, rp);
        maxc = p->send_count > maxc ? p->send_count : maxc;
        maxc = p->recv_count > maxc ? p->recv_count : maxc;
        /* the pulses that wait for a signal: every exchanging pulse, except hybrid's staged
         * legs (coordinates arrive over the receive leg, forces over the send leg) */
        const int hyb = m->mode == HALOX__SHM_HYBRID;
        if (hyb ? m->route.recv[k] == HALOX__ROUTE_DIRECT : !halox__pulse_self(plan, k))
            m->last_wait[0] = k;
        if ((hyb ? m->route.send[k] == HALOX__ROUTE_DIRECT : !halox__pulse_self(plan, k)) &&
            m->last_wait[1] < 0)
            m->last_wait[1] = k; /* forces go down: the lowest pulse waits last */
    }
    *maxc_p = maxc;
    halox_status_t fst = halox__shm_rows_fields(comm);
    if (fst != HALOX_OK)
        return fst;
    cudaError_t e =
        cudaMemcpyAsync(m->d_rows, m->rows, sizeof m->rows, cudaMemcpyHostToDevice, g->stream);
    return e == cudaSuccess
               ? HALOX_OK
               : halox__gpu_cuda_error(comm, g, e, "uploading the pulse table", HALOX_ERR_COMM, 1);
}

int halox__shm_fields_in_kernel(const halox_comm_t *comm, int reverse, int n,
                                const halox_field_t *f)
{
    const halox__shm_t *m = (const halox__shm_t *)comm->impl;
    if (m->mode != HALOX__SHM_FUSED || m->use_put || m->g.no_atoms || !comm->plan)
        return 0;
    /* forward: stores into the peers' own arrays; reverse: into the endpoint's buffers, from
     * and into this rank's arrays, any device memory */
    for (int i = 0; i < n && !reverse; i++)
        if (!halox__shm_is_symmetric(f[i].data))
            return 0;
    for (int k = 0; k < m->g.plan.n_pulses; k++)
        if (!(reverse ? m->rows[k].fb_peer : m->rows[k].x_peer))
            return 0;
    return 1;
}

/* The reverse fields' buffers, as large as the force buffers in rows of each field's bytes:
 * regrown collectively (fbuf's size and the bound fields are the same on every rank, so every
 * rank takes the same decisions). */
static halox_status_t halox__shm_rev_buffers(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    for (int i = 0; i < comm->n_bound_rev; i++) {
        const halox_field_t *f = &comm->bound_rev[i];
        const size_t need = m->buf_cap / esize * halox_type_size(f->type) * (size_t)f->count;
        if (m->frbuf[i] && m->fr_cap[i] >= need)
            continue;
        halox__shm_free(m->frbuf[i]);
        m->frbuf[i] = NULL;
        m->fr_cap[i] = 0;
        void *p = NULL;
        halox_status_t st = halox__shm_sym_alloc(comm, need, &p, "bind: reverse field buffers");
        if (st != HALOX_OK)
            return st;
        m->frbuf[i] = p;
        m->fr_cap[i] = need;
    }
    return HALOX_OK;
}

/* A bound field whose pulse-k peer this rank cannot store into (a later plan's peer). */
static halox_status_t halox__shm_field_unreachable(halox_comm_t *comm, const char *dir, int i,
                                                   int k, int pe)
{
    return halox__error(HALOX_ERR_UNAVAILABLE,
                        "%s: rank %d: bound %s field %d: pulse %d's peer (PE %d) cannot take "
                        "stores: bind the fields again (they then go through the host)",
                        halox__shm(comm)->g.name, comm->rank, dir, i, k, pe);
}

halox_status_t halox__shm_rows_fields(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    const int on = comm->fwd_in_kernel && m->mode == HALOX__SHM_FUSED;
    const int rev = comm->rev_in_kernel && m->mode == HALOX__SHM_FUSED;
    if (rev) { /* collective: before any rank can leave below */
        halox_status_t st = halox__shm_rev_buffers(comm);
        if (st != HALOX_OK)
            return st;
    }
    for (int k = 0; k < HALOX_MAX_PULSES; k++) {
        halox__shm_row_t *R = &m->rows[k];
        memset(R->fd_peer, 0, sizeof R->fd_peer);
        memset(R->fr_peer, 0, sizeof R->fr_peer);
        memset(R->fr_mine, 0, sizeof R->fr_mine);
        for (int i = 0; rev && k < m->g.plan.n_pulses && i < comm->n_bound_rev; i++) {
            const halox_field_t *f = &comm->bound_rev[i];
            const size_t row = halox_type_size(f->type) * (size_t)f->count;
            const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
            R->fr_mine[i] = m->frbuf[i] + m->g.plan.buf_off[k] / esize * row;
            R->fr_peer[i] = halox__shm_ptr(m->frbuf[i] + m->peer_buf_rows[k] * row, R->recv_pe);
            if (!R->fr_peer[i] || !R->fb_peer)
                return halox__shm_field_unreachable(comm, "reverse", i, k, R->recv_pe);
        }
        if (!on || k >= m->g.plan.n_pulses)
            continue;
        for (int i = 0; i < comm->n_bound_fwd; i++) {
            const halox_field_t *f = &comm->bound_fwd[i];
            const size_t row = halox_type_size(f->type) * (size_t)f->count;
            R->fd_peer[i] = halox__shm_ptr((char *)f->data + m->peer_recv_off[k] * row, R->send_pe);
            if (!R->fd_peer[i] || !R->x_peer)
                return halox__shm_field_unreachable(comm, "forward", i, k, R->send_pe);
        }
    }
    return HALOX_OK;
}

halox_status_t halox__shm_fields_bound(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    if (!m->g.bound || !comm->plan)
        return HALOX_OK; /* the next bind lays the rows out */
    halox_status_t st = halox__shm_rows_fields(comm);
    if (st != HALOX_OK)
        return st;
    cudaError_t e =
        cudaMemcpyAsync(m->d_rows, m->rows, sizeof m->rows, cudaMemcpyHostToDevice, m->g.stream);
    return e == cudaSuccess ? HALOX_OK
                            : halox__gpu_cuda_error(comm, &m->g, e, "uploading the pulse table",
                                                    HALOX_ERR_COMM, 1);
}

/* Blocks per row of the kernels' grids. */
static void halox__shm_bind_blocks(halox_comm_t *comm, int maxc)
{
    halox__shm_t *m = halox__shm(comm);
    const int n = m->g.plan.n_pulses;
    /* blocks per row: about 2 elements per thread (more blocks per row shorten the exchange at
     * every size: docs/NVSHMEM.md#the-fused-kernels), bounded so that every block of a launch is
     * resident at once (spinning blocks must never wait for blocks that cannot start) */
    const int rows = m->mode == HALOX__SHM_FUSED ? (n > 0 ? n : 1) : 1;
    int cap = halox__shm_max_blocks(m->pes_per_gpu) / rows;
    cap = cap > 0 ? cap : 1;
    int bpr = (int)(((long long)maxc * comm->stride + 511) / 512);
    const int want = m->blocks_wanted; /* tuning: a fixed count */
    if (want > 0)
        bpr = want;
    m->blocks_per_row = bpr < 1 ? 1 : bpr > cap ? cap : bpr;
}

halox_status_t halox__shm_bind_head(halox_comm_t *comm, halox_status_t st0, long long **all_p)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    long long which[2] = {-1, -1};
    halox_status_t st = halox__shm_bind_arrays(comm, st0, which);
    /* device plan (maps, offsets), agreement, counts checked with the peers: a failure there is
     * every rank's */
    m->bind_agreed = 0;
    *all_p = NULL;
    if ((st = halox__gpu_bind(comm, g, st, which, 2, all_p)) != HALOX_OK) {
        m->bind_agreed = 1;
        return st;
    }
    const int W = HALOX__BOUND_WORDS(2);
    g->bound = 0;
    st = halox__shm_bind_same(comm, *all_p, W);
    if (st == HALOX_OK)
        st = halox__shm_bind_buffers(comm, *all_p, W);
    /* the library does not print: callers read it from halox_comm_get_stats() */
    comm->stats.device_bytes = (long long)halox__shm_in_use();
    return st;
}

halox_status_t halox__shm_bind_table(halox_comm_t *comm, halox_status_t st, long long *all)
{
    halox__shm_t *m = halox__shm(comm);
    if (m->bind_agreed)
        return st; /* the gather failed: nothing to lay out */
    int maxc = 1;
    if (st == HALOX_OK)
        st = halox__shm_bind_rows(comm, all, HALOX__BOUND_WORDS(2), &maxc);
    free(all);
    halox__shm_bind_blocks(comm, maxc);
    return st;
}

halox_status_t halox__shm_bind_begin(halox_comm_t *comm, halox_status_t st0)
{
    long long *all = NULL;
    halox_status_t st = halox__shm_bind_head(comm, st0, &all);
    return halox__shm_bind_table(comm, st, all);
}

halox_status_t halox__shm_bind_end(halox_comm_t *comm, halox_status_t st)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    /* The signals' reset was done before the gather (halox__gpu_bind's wait). What was enqueued
     * since (the device plan, the pulse table, nvshmem-inline's view) only this rank's kernels
     * read, ordered behind it on the stream, and no peer writes it: for a caller that declared
     * its kernels ordered behind the stream (halox_comm_set_stream_ordered) it stays there (a
     * failed upload then fails the next call instead of this bind); any other waits for it. */
    if (st == HALOX_OK && !comm->stream_ordered) {
        const double t = halox__now();
        cudaError_t e = cudaStreamSynchronize(g->stream);
        halox__gpu_waited(comm, t);
        if (e != cudaSuccess)
            st = halox__gpu_cuda_error(comm, g, e, "bind", HALOX_ERR_COMM, 1);
    }
    if (!(st != HALOX_OK && m->bind_agreed))
        st = halox__agree(comm, st, "bind");
    m->h_epoch[0] = m->h_epoch[1] = 0;
    g->bound = st == HALOX_OK;
    return st;
}

halox_status_t halox__shm_bind(halox_comm_t *comm, halox_status_t st0)
{
    return halox__shm_bind_end(comm, halox__shm_bind_begin(comm, st0));
}
