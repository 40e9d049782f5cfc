/* The device store of a migration (core/migrate_store.h) for the GPU transports: the atoms stay
 * in device memory. The wrap, the owners and the leavers' list with their owners (a stable
 * compaction) are one kernel (halox_kernel_mig_leavers); the leavers' indices and owners come to
 * the host, which orders them by destination exactly as the host migration does (migrate.c) and
 * sends the slots back; the pack with the stayers' compaction (one pass: halox_kernel_mig_split)
 * and the placement of the arrivals are kernels again. The records that move go device to device
 * where the transport can (halox__gpu_t.dalltoallv: NVSHMEM), else they are staged through
 * pinned memory for the transport's host all-to-all. Scratch lives with the endpoint
 * (halox__gpu_t.mig_dev) and grows. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/migrate_store.h"
#include "core/pack.h"
#include "halox/geometry.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/migrate_kernels.h"

enum { MD_COUNT = 0, MD_BAD, MD_SMALL };

/* The scan's results in rows of one allocation on each side, so that one strided copy brings
 * the counters with the first leavers and their owners (every copy is a host call:
 * docs/MD-DESIGN.md#rebuilds-on-the-device): device rows of rp ints (the counters, the leavers'
 * indices, their owners), pinned host rows of hrp ints (the same three, then the slots). */
enum { MD_ROW_COUNT = 0, MD_ROW_INDEX, MD_ROW_TO, MD_ROWS, MD_ROW_SLOT = MD_ROWS, MD_HROWS };

struct halox__mig_dev {
    halox__gpu_store_head_t h; /* endpoint (the MD_* counters live in the scan's rows) */
    halox_fixed_atoms_t *atoms;
    size_t xb, rec;
    halox_mig_cols_t cols; /* the record's arrays (migrate_store.h's columns) */
    int nleave;
    int async; /* the caller's halox_fixed_atoms_t.async: no wait after the arrivals' unpack */
    int guess; /* leavers read with the counters (before their count is known): 0 at first,
                  then twice the last migration's */
    /* device scratch, grown: per home atom (the leavers' indices and owners, at most every home
     * atom), the compaction's, per leaver, the records */
    int *d_rows, *d_scratch, *d_slot;
    size_t rp;   /* ints per device row */
    void *d_tmp; /* the stayers' rows of every column while they move down */
    void *d_sbuf, *d_rbuf;
    size_t cap_rows, cap_scratch, cap_slot, cap_tmp, cap_sbuf, cap_rbuf;
    /* host: the pinned buffers, the leavers and their owners */
    void *h_sbuf, *h_rbuf;
    size_t hcap_sbuf, hcap_rbuf;
    int *h_rows, *h_leave, *h_to, *h_slot;
    size_t hrp; /* ints per host row */
};

static halox_status_t md_cuda(halox__mig_dev_t *m, cudaError_t e, const char *what)
{
    return halox__gpu_check(m->h.comm, m->h.g, e, what);
}

static halox_status_t md_grow(halox__mig_dev_t *m, void **p, size_t *cap, size_t bytes,
                              const char *what)
{
    return halox__gpu_scratch(m->h.comm, m->h.g, p, cap, bytes, 0, what);
}

static halox_status_t md_grow_pinned(halox__mig_dev_t *m, void **p, size_t *cap, size_t bytes,
                                     const char *what)
{
    return halox__gpu_scratch(m->h.comm, m->h.g, p, cap, bytes, 1, what);
}

static halox_status_t md_sync(halox__mig_dev_t *m, const char *what)
{
    return halox__gpu_drain(m->h.comm, m->h.g, "the migration", what);
}

static int *md_row(const halox__mig_dev_t *m, int row) { return m->d_rows + (size_t)row * m->rp; }

/* The first `count` leavers' indices and owners to the host, with the counters when `counters`
 * (pinned rows grown to hold them; before their number is known the copy may bring stale entries
 * beyond it, never read): one copy. */
static halox_status_t md_leavers(halox__mig_dev_t *m, int count, int counters, cudaStream_t s)
{
    /* pinned: the copy runs behind the host, which waits once for it */
    const size_t ints = (size_t)count + 64;
    halox_status_t st = HALOX_OK;
    if (ints > m->hrp) {
        size_t bytes = m->hrp * MD_HROWS * sizeof(int);
        st = md_grow_pinned(m, (void **)&m->h_rows, &bytes, sizeof(int) * MD_HROWS * ints,
                            "the leavers' host copy");
        m->hrp = st == HALOX_OK ? bytes / (MD_HROWS * sizeof(int)) : 0;
        if (st != HALOX_OK)
            return st;
    }
    m->h_leave = m->h_rows + (size_t)MD_ROW_INDEX * m->hrp;
    m->h_to = m->h_rows + (size_t)MD_ROW_TO * m->hrp;
    m->h_slot = m->h_rows + (size_t)MD_ROW_SLOT * m->hrp;
    const int first = counters ? MD_ROW_COUNT : MD_ROW_INDEX;
    const size_t width = sizeof(int) * (size_t)(counters && count < MD_SMALL ? MD_SMALL : count);
    const size_t rows = count > 0 ? (size_t)(MD_ROWS - first) : 1;
    return md_cuda(m,
                   cudaMemcpy2DAsync(m->h_rows + (size_t)first * m->hrp, sizeof(int) * m->hrp,
                                     md_row(m, first), sizeof(int) * m->rp, width, rows,
                                     cudaMemcpyDeviceToHost, s),
                   "reading the leavers");
}

static halox_status_t md_scan(void *ctx, const halox_grid_t *grid, const halox_box_t *box, int me,
                              long long step, long long *scount, int *nleave_p, int *hops_p)
{
    halox__mig_dev_t *m = ctx;
    halox_fixed_atoms_t *A = m->atoms;
    cudaStream_t s = m->h.g->stream;
    const int n = A->n_home;
    const size_t nn = (size_t)(n > 0 ? n : 1);
    halox_mig_geometry_t geo;
    memset(&geo, 0, sizeof geo);
    halox_domain_bounds(grid, box, me, geo.lo, geo.hi);
    for (int d = 0; d < 3; d++) {
        geo.len[d] = box->len[d];
        geo.n[d] = grid->n[d];
    }
    geo.me = me;
    const size_t rp = nn > MD_SMALL ? nn : MD_SMALL;
    halox_status_t st = md_grow(m, (void **)&m->d_rows, &m->cap_rows, sizeof(int) * MD_ROWS * rp,
                                "the leavers' indices and owners");
    m->rp = st == HALOX_OK ? m->cap_rows / (MD_ROWS * sizeof(int)) : 0;
    if (st == HALOX_OK)
        st = halox__gpu_scratch_zeroed(m->h.comm, m->h.g, (void **)&m->d_scratch, &m->cap_scratch,
                                       sizeof(int) * halox_kernel_mig_scratch(n),
                                       "the compaction's scratch");
    if (st == HALOX_OK)
        st = md_cuda(m, cudaMemsetAsync(md_row(m, MD_ROW_COUNT) + MD_BAD, 0x7f, sizeof(int), s),
                     "resetting the counters");
    /* wrap, owners and the leavers with their owners: one launch (four before) */
    if (st == HALOX_OK)
        st = md_cuda(m,
                     halox_kernel_mig_leavers(m->h.comm->real, m->h.comm->stride, A->x, n, &geo,
                                              md_row(m, MD_ROW_COUNT) + MD_BAD,
                                              md_row(m, MD_ROW_INDEX), md_row(m, MD_ROW_TO),
                                              md_row(m, MD_ROW_COUNT) + MD_COUNT, m->d_scratch, s),
                     "the migration's scan kernel");
    /* the leavers and their owners come with the counters, as many as the last migration's
     * twice (one copy and one wait for all, where they fit) */
    const int guess = m->guess < n ? m->guess : n;
    if (st == HALOX_OK)
        st = md_leavers(m, guess, 1, s);
    if (st == HALOX_OK)
        st = md_sync(m, "the migration's scan");
    if (st != HALOX_OK)
        return st;
    const int bad = m->h_rows[MD_BAD];
    if (bad >= 0 && bad < n) {
        int32_t id = -1;
        (void)cudaMemcpy(&id, A->id + bad, sizeof id, cudaMemcpyDeviceToHost);
        return halox__error(HALOX_ERR_COORDINATE,
                            "step %lld, rank %d: atom id %d has a non-finite position: the "
                            "system blew up (time step too large, overlapping atoms?)",
                            step, me, id);
    }
    const int nl = m->nleave = m->h_rows[MD_COUNT];
    m->guess = nl < (1 << 29) ? 2 * nl + 64 : nl;
    *nleave_p = nl;
    *hops_p = 0;
    if (nl == 0)
        return HALOX_OK;
    /* more leavers than guessed: all of them now (the host orders them by destination) */
    if (nl > guess) {
        st = md_leavers(m, nl, 0, s);
        if (st == HALOX_OK)
            st = md_sync(m, "reading the leavers");
        if (st != HALOX_OK)
            return st;
    }
    for (int j = 0; j < nl; j++)
        scount[m->h_to[j]]++;
    *hops_p = halox__mig_hops(grid, me, m->h_to, nl);
    return HALOX_OK;
}

static halox_status_t md_reserve(void *ctx, long long nsend, long long nrecv)
{
    halox__mig_dev_t *m = ctx;
    const size_t sb = (size_t)(nsend > 0 ? nsend : 1) * m->rec;
    const size_t rb = (size_t)(nrecv > 0 ? nrecv : 1) * m->rec;
    halox_status_t st = md_grow(m, &m->d_sbuf, &m->cap_sbuf, sb, "the migration's send buffer");
    if (st == HALOX_OK)
        st = md_grow(m, &m->d_rbuf, &m->cap_rbuf, rb, "the migration's receive buffer");
    if (st == HALOX_OK)
        st = md_grow_pinned(m, &m->h_sbuf, &m->hcap_sbuf, sb, "the pinned send buffer");
    if (st == HALOX_OK)
        st = md_grow_pinned(m, &m->h_rbuf, &m->hcap_rbuf, rb, "the pinned receive buffer");
    return st;
}

static halox_status_t md_pack(void *ctx, const size_t *soff, size_t *fill, int *keep_p)
{
    halox__mig_dev_t *m = ctx;
    halox_fixed_atoms_t *A = m->atoms;
    cudaStream_t s = m->h.g->stream;
    const int n = A->n_home, nl = m->nleave, keep = n - nl;
    *keep_p = keep;
    if (nl == 0)
        return HALOX_OK;
    /* slots by destination, index order within one: migrate.c's halox__mig_pack */
    for (int j = 0; j < nl; j++) {
        const int r = m->h_to[j];
        m->h_slot[j] = (int)((soff[r] + fill[r]) / m->rec);
        fill[r] += m->rec;
    }
    const halox_mig_cols_t *C = &m->cols;
    const size_t tmp = m->rec * (size_t)(keep > 0 ? keep : 1);
    halox_status_t st =
        md_grow(m, (void **)&m->d_slot, &m->cap_slot, sizeof(int) * (size_t)nl, "slots");
    if (st == HALOX_OK)
        st = md_grow(m, &m->d_tmp, &m->cap_tmp, tmp, "the stayers' scratch");
    if (st == HALOX_OK)
        st = md_cuda(m,
                     cudaMemcpyAsync(m->d_slot, m->h_slot, sizeof(int) * (size_t)nl,
                                     cudaMemcpyHostToDevice, s),
                     "the slots");
    /* the leavers' records into the send buffer and the stayers, in order, into the scratch in
     * one pass (a home atom finds its place among the sorted leavers by bisection), then the
     * stayers back to the front: the first three columns in one launch, each carried field in a
     * copy of its own (each a host call: docs/MD-DESIGN.md#rebuilds-on-the-device) */
    halox_mig_cols_t out = *C;
    char *t = m->d_tmp;
    for (int c = 0; c < C->n; c++) {
        out.p[c] = t;
        t += C->b[c] * (size_t)keep;
    }
    if (st == HALOX_OK)
        st = md_cuda(m,
                     halox_kernel_mig_split(C, n, md_row(m, MD_ROW_INDEX), nl, m->d_slot, m->rec,
                                            m->d_sbuf, &out, s),
                     "the migration's split kernel");
    void *to[3] = {NULL, NULL, NULL};
    const void *from[3] = {NULL, NULL, NULL};
    size_t bytes[3] = {0, 0, 0};
    for (int c = 0; c < C->n && c < 3; c++) {
        to[c] = C->p[c];
        from[c] = out.p[c];
        bytes[c] = C->b[c] * (size_t)keep;
    }
    if (st == HALOX_OK && keep > 0)
        st = md_cuda(m, halox_kernel_copy3(to, from, bytes, s), "moving the stayers");
    for (int c = 3; st == HALOX_OK && keep > 0 && c < C->n; c++)
        st = md_cuda(
            m,
            cudaMemcpyAsync(C->p[c], out.p[c], C->b[c] * (size_t)keep, cudaMemcpyDeviceToDevice, s),
            "moving the stayers' carried fields");
    if (st == HALOX_OK)
        A->n_home = A->n_total = keep;
    return st;
}

static halox_status_t md_alltoallv(void *ctx, halox_comm_t *comm, const size_t *sbytes,
                                   const size_t *soffs, const size_t *rbytes, const size_t *roffs,
                                   size_t most)
{
    halox__mig_dev_t *m = ctx;
    cudaStream_t s = m->h.g->stream;
    if (m->h.g->dalltoallv) { /* device to device, where the transport can (every rank alike) */
        int used = 0;
        halox_status_t dst = m->h.g->dalltoallv(comm, m->d_sbuf, sbytes, soffs, m->d_rbuf, rbytes,
                                                roffs, most, &used);
        if (used)
            return dst;
    }
    size_t stotal = 0, rtotal = 0;
    for (int r = 0; r < comm->size; r++) {
        if (soffs[r] + sbytes[r] > stotal)
            stotal = soffs[r] + sbytes[r];
        if (roffs[r] + rbytes[r] > rtotal)
            rtotal = roffs[r] + rbytes[r];
    }
    halox_status_t st = HALOX_OK;
    if (stotal)
        st = md_cuda(m, cudaMemcpyAsync(m->h_sbuf, m->d_sbuf, stotal, cudaMemcpyDeviceToHost, s),
                     "staging the leavers");
    if (st == HALOX_OK)
        st = md_sync(m, "staging the leavers");
    /* a failure above still takes part, so that the peers are not left waiting */
    halox_status_t mst =
        comm->ops->alltoallv(comm, m->h_sbuf, sbytes, soffs, m->h_rbuf, rbytes, roffs);
    if (st == HALOX_OK)
        st = mst;
    if (st == HALOX_OK && rtotal)
        st = md_cuda(m, cudaMemcpyAsync(m->d_rbuf, m->h_rbuf, rtotal, cudaMemcpyHostToDevice, s),
                     "placing the arrivals");
    return st;
}

static halox_status_t md_append(void *ctx, int keep, int nrecv)
{
    halox__mig_dev_t *m = ctx;
    halox_fixed_atoms_t *A = m->atoms;
    halox_mig_cols_t dst = m->cols;
    for (int c = 0; c < dst.n; c++)
        dst.p[c] = (char *)dst.p[c] + dst.b[c] * (size_t)keep;
    halox_status_t st =
        md_cuda(m, halox_kernel_mig_unpack(m->d_rbuf, m->rec, nrecv, &dst, m->h.g->stream),
                "the arrivals' unpack kernel");
    /* async: what the caller orders behind it on the stream (the plan build, which waits for
     * its own first kernels) finds the atoms in place, without a wait of its own here */
    if (st == HALOX_OK && !m->async)
        st = md_sync(m, "placing the arrivals");
    if (st == HALOX_OK)
        A->n_home = A->n_total = keep + nrecv;
    return st;
}

static void md_still(void *ctx)
{
    halox__mig_dev_t *m = ctx;
    m->atoms->n_total = m->atoms->n_home;
}

static void md_need(void *ctx, long long atoms)
{
    halox__mig_dev_t *m = ctx;
    m->atoms->need = atoms < HALOX_ATOMS_MAX ? (int)atoms : HALOX_ATOMS_MAX;
}

static void md_done(void *ctx) { ((halox__mig_dev_t *)ctx)->atoms = NULL; }

void halox__gpu_mig_dev_free(halox__gpu_t *g)
{
    halox__mig_dev_t *m = g->mig_dev;
    if (!m)
        return;
    void *dev[] = {m->d_rows, m->d_scratch, m->d_slot, m->d_tmp, m->d_sbuf, m->d_rbuf};
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++)
        if (dev[k])
            cudaFree(dev[k]);
    void *pinned[] = {m->h_rows, m->h_sbuf, m->h_rbuf};
    for (size_t k = 0; k < sizeof pinned / sizeof pinned[0]; k++)
        if (pinned[k])
            cudaFreeHost(pinned[k]);
    free(m);
    g->mig_dev = NULL;
}

/* fixed arrays: no grow */
static const halox__mig_store_ops_t md_ops = {
    .scan = md_scan,
    .reserve = md_reserve,
    .pack = md_pack,
    .alltoallv = md_alltoallv,
    .append = md_append,
    .still = md_still,
    .need = md_need,
    .done = md_done,
};

halox_status_t halox__gpu_mig_store(halox_comm_t *comm, halox_fixed_atoms_t *atoms,
                                    halox__mig_store_t *store)
{
    halox__gpu_t *g = halox__gpu(comm);
    memset(store, 0, sizeof *store);
    /* the counters live in the scan's rows (md_leavers): none in the head */
    halox_status_t st =
        halox__gpu_store_open(comm, "migrate_fixed", (void **)&g->mig_dev, sizeof *g->mig_dev, 0);
    if (st != HALOX_OK)
        return st;
    halox__mig_dev_t *m = g->mig_dev;
    m->atoms = atoms;
    m->nleave = 0;
    m->async = atoms->async;
    m->xb = halox__atom_bytes(comm->real, comm->stride, 1);
    halox__mig_cols_t cols;
    m->rec = halox__mig_cols(&cols, m->xb, atoms->x, atoms->id, atoms->extra, atoms->extra_bytes,
                             atoms->carry, atoms->n_carry);
    m->cols.n = cols.n;
    for (int c = 0; c < cols.n; c++) {
        m->cols.p[c] = cols.p[c];
        m->cols.b[c] = cols.b[c];
    }
    *store = (halox__mig_store_t){.ops = &md_ops,
                                  .ctx = m,
                                  .fixed = 1,
                                  .n = atoms->n_home,
                                  .capacity = atoms->capacity,
                                  .rec = m->rec};
    return HALOX_OK;
}
