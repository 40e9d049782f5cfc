/* Atom migration: home atoms that left the domain go straight to their owner (one all-to-all,
 * so atoms that crossed several domains between rebuilds are handled too), then the global
 * count is checked.
 *
 * Collectives: one allgather carries every rank's status, atom count, room and send counts
 * (the failure agreement, the P x P count matrix and the count check in one); the all-to-all
 * happens only when some atom moves, and an agreement before it only when some rank must grow
 * its arrays for the arrivals. Atoms that stay inside the domain are found by a scan of integer
 * compares and are neither wrapped nor touched. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/bits.h"
#include "core/error.h"
#include "core/fixed_atoms.h"
#include "core/migrate_store.h"
#include "core/pack.h"
#include "core/transport.h"
#include "halox/build.h"
#include "halox/endpoint.h"

/* Wrap component c of atom i into [0, len) in the atoms' own precision. */
static void halox__wrap_store(halox_atoms_t *a, int i, int c, double len)
{
    double w = halox_wrap(halox_atoms_get(a, i, c), len);
    halox_atoms_set(a, i, c, w);
    /* rounding to float can land on len itself */
    if (halox_atoms_get(a, i, c) >= len)
        halox_atoms_set(a, i, c, 0.0);
}

/* Wrap atom i as needed and find its owner (*dest_p); the full path for the atoms the fast
 * scan below does not settle. */
static halox_status_t halox__mig_atom(halox_atoms_t *a, int i, const halox_grid_t *grid,
                                      const halox_box_t *box, int me, long long step,
                                      const double lo[3], const double hi[3], int *dest_p)
{
    double x[3];
    for (int c = 0; c < 3; c++) {
        double v = halox__atom_coord(a, i, c);
        /* inside (0, len) the wrap returns v itself (v / len rounds below 1): nothing to
         * store; 0 (which may be -0), outside and non-finite take the full path */
        if (!(v > 0 && v < box->len[c])) {
            if (!isfinite(v))
                return halox__error(HALOX_ERR_COORDINATE,
                                    "step %lld, rank %d: atom id %d has a non-finite "
                                    "position: the system blew up (time step too large, "
                                    "overlapping atoms?)",
                                    step, me, a->id ? a->id[i] : -1);
            halox__wrap_store(a, i, c, box->len[c]);
            v = halox__atom_coord(a, i, c);
        }
        x[c] = v;
    }
    /* inside [lo, hi) in every dimension is exactly "owned by me" (halox_owner_coord settles
     * against the same bounds); only the others need the owner's rank */
    if (x[0] >= lo[0] && x[0] < hi[0] && x[1] >= lo[1] && x[1] < hi[1] && x[2] >= lo[2] &&
        x[2] < hi[2])
        *dest_p = me;
    else
        *dest_p = halox_owner_rank(grid, box, x);
    return HALOX_OK;
}

/* First atom from i on that is not strictly inside (0, len) and inside [lo, hi) in every
 * dimension: the atoms before it need neither a wrap nor a move. Integer compares on the bits
 * (bits.h): lo_b and span are halox__bits_ceil(lo) (of the least positive value where lo is
 * 0) and bits_ceil(hi) - lo_b per dimension. */
#define HALOX__MIG_SKIP(T, U, BITS, NAME)                                                          \
    static int NAME(const T *restrict x, size_t stride, int i, int n, const uint64_t lo_b[3],      \
                    const uint64_t span[3])                                                        \
    {                                                                                              \
        const U l0 = (U)lo_b[0], l1 = (U)lo_b[1], l2 = (U)lo_b[2];                                 \
        const U w0 = (U)span[0], w1 = (U)span[1], w2 = (U)span[2];                                 \
        for (; i < n; i++) {                                                                       \
            const T *p = x + (size_t)i * stride;                                                   \
            if (!((BITS(p) - l0 < w0) & (BITS(p + 1) - l1 < w1) & (BITS(p + 2) - l2 < w2)))        \
                break;                                                                             \
        }                                                                                          \
        return i;                                                                                  \
    }
HALOX__MIG_SKIP(float, uint32_t, halox__fbits, halox__mig_skip_float)
HALOX__MIG_SKIP(double, uint64_t, halox__dbits, halox__mig_skip_double)

/* Wrap every home atom and list those this rank does not own (leave[], their owners in
 * to[], in index order); counts per destination into scount. Stops at the first non-finite
 * position. */
static halox_status_t halox__mig_scan(halox_atoms_t *a, const halox_grid_t *grid,
                                      const halox_box_t *box, int me, long long step, int *leave,
                                      int *to, int *nleave_p, long long *scount)
{
    double lo[3], hi[3];
    uint64_t lo_b[3], span[3];
    halox_domain_bounds(grid, box, me, lo, hi);
    for (int d = 0; d < 3; d++) {
        lo_b[d] = halox__bits_ceil(a->real, lo[d] > 0 ? lo[d] : DBL_TRUE_MIN);
        span[d] = halox__bits_ceil(a->real, hi[d]) - lo_b[d];
    }
    const int n = a->n_home;
    int nleave = 0;
    for (int i = 0; i < n; i++) {
        i = a->real == HALOX_FLOAT
                ? halox__mig_skip_float(a->x, (size_t)a->stride, i, n, lo_b, span)
                : halox__mig_skip_double(a->x, (size_t)a->stride, i, n, lo_b, span);
        if (i == n)
            break;
        int r = me;
        halox_status_t st = halox__mig_atom(a, i, grid, box, me, step, lo, hi, &r);
        if (st != HALOX_OK)
            return st;
        if (r == me)
            continue;
        leave[nleave] = i;
        to[nleave++] = r;
        scount[r]++;
    }
    *nleave_p = nleave;
    return HALOX_OK;
}

size_t halox__mig_cols(halox__mig_cols_t *c, size_t xb, void *x, int32_t *id, void *extra,
                       size_t extra_bytes, const halox_field_t *carry, int n_carry)
{
    size_t rec = 0;
    c->n = 0;
    char *p[3] = {x, (char *)id, extra};
    size_t b[3] = {xb, sizeof(int32_t), extra_bytes};
    for (int k = 0; k < 3; k++)
        if (b[k]) {
            c->p[c->n] = p[k];
            c->b[c->n++] = b[k];
            rec += b[k];
        }
    for (int k = 0; k < n_carry; k++) {
        c->p[c->n] = carry[k].data;
        c->b[c->n] = halox_type_size(carry[k].type) * (size_t)carry[k].count;
        rec += c->b[c->n++];
    }
    return rec;
}

/* Pack the leavers by destination (index order within one) into sbuf at soff[], and close the
 * gaps they leave: stayers keep their order. Returns the number of stayers. */
static int halox__mig_pack(const halox__mig_cols_t *c, int n_home, const int *leave, const int *to,
                           int nleave, char *sbuf, const size_t *soff, size_t *fill, size_t rec)
{
    int keep = leave[0];
    for (int j = 0; j < nleave; j++) {
        int i = leave[j];
        char *o = sbuf + soff[to[j]] + fill[to[j]];
        for (int k = 0; k < c->n; k++) {
            memcpy(o, c->p[k] + (size_t)i * c->b[k], c->b[k]);
            o += c->b[k];
        }
        fill[to[j]] += rec;
        /* the run of stayers up to the next leaver moves down in one piece */
        int next = j + 1 < nleave ? leave[j + 1] : n_home;
        int run = next - i - 1;
        if (run > 0) {
            for (int k = 0; k < c->n; k++)
                memmove(c->p[k] + (size_t)keep * c->b[k], c->p[k] + (size_t)(i + 1) * c->b[k],
                        (size_t)run * c->b[k]);
            keep += run;
        }
    }
    return keep;
}

/* ---- the host store: halox_atoms_t ------------------------------------------------------- */

typedef struct halox__mig_host {
    halox_atoms_t *atoms;
    halox_fixed_atoms_t *out; /* fixed: the caller's arrays (halox_comm_migrate_fixed) */
    int *leave;               /* leavers, then their destinations */
    int nleave;
    char *sbuf, *rbuf;
    long long scap, rcap; /* records the buffers hold */
    size_t rec;
    halox__mig_cols_t cols; /* the record's arrays (set again after the arrays grew) */
} halox__mig_host_t;

static void halox__mh_cols(halox__mig_host_t *h)
{
    halox_atoms_t *a = h->atoms;
    h->rec = halox__mig_cols(&h->cols, halox__atom_bytes(a->real, a->stride, 1), a->x, a->id,
                             a->extra, a->extra_bytes, h->out ? h->out->carry : NULL,
                             h->out ? h->out->n_carry : 0);
}

int halox__mig_hops(const halox_grid_t *grid, int me, const int *to, int n)
{
    int c[3], hops = 0;
    halox_grid_coords(grid, me, c);
    for (int j = 0; j < n; j++) {
        int t[3];
        halox_grid_coords(grid, to[j], t);
        for (int d = 0; d < 3; d++) {
            int dist = abs(t[d] - c[d]);
            if (grid->n[d] - dist < dist)
                dist = grid->n[d] - dist;
            hops = dist > hops ? dist : hops;
        }
    }
    return hops;
}

static halox_status_t halox__mh_scan(void *ctx, const halox_grid_t *grid, const halox_box_t *box,
                                     int me, long long step, long long *scount, int *nleave_p,
                                     int *hops_p)
{
    halox__mig_host_t *h = ctx;
    const int n = h->atoms->n_home;
    /* room for every atom to leave; only the pages of actual leavers are ever touched */
    h->leave = malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
    if (!h->leave)
        return halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    halox_status_t st =
        halox__mig_scan(h->atoms, grid, box, me, step, h->leave, h->leave + n, &h->nleave, scount);
    *nleave_p = h->nleave;
    /* only the caller's arrays report it (halox_comm_migrate_fixed) */
    *hops_p = h->out ? halox__mig_hops(grid, me, h->leave + n, h->nleave) : 0;
    return st;
}

static halox_status_t halox__mh_buf(char **buf, long long *cap, long long want, size_t rec)
{
    if (want <= *cap && *buf)
        return HALOX_OK;
    free(*buf);
    *buf = malloc(want > 0 ? (size_t)want * rec : 1);
    *cap = *buf ? want : 0;
    return *buf ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
}

static halox_status_t halox__mh_reserve(void *ctx, long long nsend, long long nrecv)
{
    halox__mig_host_t *h = ctx;
    halox_status_t st = halox__mh_buf(&h->sbuf, &h->scap, nsend, h->rec);
    return st == HALOX_OK ? halox__mh_buf(&h->rbuf, &h->rcap, nrecv, h->rec) : st;
}

static halox_status_t halox__mh_pack(void *ctx, const size_t *soff, size_t *fill, int *keep_p)
{
    halox__mig_host_t *h = ctx;
    const int n = h->atoms->n_home;
    *keep_p = h->nleave ? halox__mig_pack(&h->cols, n, h->leave, h->leave + n, h->nleave, h->sbuf,
                                          soff, fill, h->rec)
                        : n;
    h->atoms->n_home = h->atoms->n_total = *keep_p;
    if (h->out)
        h->out->n_home = h->out->n_total = *keep_p;
    return HALOX_OK;
}

static halox_status_t halox__mh_alltoallv(void *ctx, halox_comm_t *comm, const size_t *sbytes,
                                          const size_t *soffs, const size_t *rbytes,
                                          const size_t *roffs, size_t most)
{
    halox__mig_host_t *h = ctx;
    (void)most;
    return comm->ops->alltoallv(comm, h->sbuf, sbytes, soffs, h->rbuf, rbytes, roffs);
}

static halox_status_t halox__mh_grow(void *ctx, int atoms)
{
    halox__mig_host_t *h = ctx;
    halox_status_t st = halox_atoms_reserve(h->atoms, atoms > 0 ? atoms : 1);
    halox__mh_cols(h); /* the arrays may have moved */
    return st;
}

static halox_status_t halox__mh_append(void *ctx, int keep, int nrecv)
{
    halox__mig_host_t *h = ctx;
    halox_atoms_t *atoms = h->atoms;
    const halox__mig_cols_t *c = &h->cols;
    for (int j = 0; j < nrecv; j++) {
        const char *o = h->rbuf + (size_t)j * h->rec;
        const size_t i = (size_t)(keep + j);
        for (int k = 0; k < c->n; k++) {
            memcpy(c->p[k] + i * c->b[k], o, c->b[k]);
            o += c->b[k];
        }
    }
    atoms->n_home = keep + nrecv;
    atoms->n_total = atoms->n_home;
    if (h->out)
        h->out->n_home = h->out->n_total = atoms->n_home;
    return HALOX_OK;
}

static void halox__mh_still(void *ctx)
{
    halox__mig_host_t *h = ctx;
    h->atoms->n_total = h->atoms->n_home;
    if (h->out)
        h->out->n_total = h->out->n_home;
}

static void halox__mh_need(void *ctx, long long atoms)
{
    halox__mig_host_t *h = ctx;
    if (h->out)
        h->out->need = atoms < HALOX_ATOMS_MAX ? (int)atoms : HALOX_ATOMS_MAX;
}

static void halox__mh_done(void *ctx)
{
    halox__mig_host_t *h = ctx;
    free(h->leave);
    free(h->sbuf);
    free(h->rbuf);
}

static const halox__mig_store_ops_t halox__mh_ops = {
    .scan = halox__mh_scan,
    .reserve = halox__mh_reserve,
    .pack = halox__mh_pack,
    .alltoallv = halox__mh_alltoallv,
    .grow = halox__mh_grow,
    .append = halox__mh_append,
    .still = halox__mh_still,
    .need = halox__mh_need,
    .done = halox__mh_done,
};

static halox__mig_store_t halox__mig_host_store(halox__mig_host_t *h, int fixed)
{
    halox__mh_cols(h);
    halox__mig_store_t s = {.ops = &halox__mh_ops,
                            .ctx = h,
                            .fixed = fixed,
                            .n = h->atoms->n_home,
                            .capacity = h->atoms->capacity,
                            .rec = h->rec};
    return s;
}

/* ---- the driver ----------------------------------------------------------------------------- */

/* One migration's state: the messages of every rank, the blocks of the all-to-all. */
enum {
    HALOX__MIG_H = 5
}; /* message head: status, atom count, capacity, receive capacity,
      bytes of a record */
typedef struct halox__mig {
    int P, me, n, nleave, hops;
    int M;          /* message length: the head, then the send count per rank */
    long long *msg; /* ours, then everybody's (all) */
    long long *all;
    size_t *blk;    /* scount, soff, sbytes, rbytes, roff, fill: P each */
    long long rcap; /* records the receive buffer holds */
    size_t most;    /* the largest block of the all-to-all, any rank's */
} halox__mig_t;

/* Check the arguments, find the leavers, and size the buffers before the counts are known: the
 * arrivals are guessed to be about as many as the departures. When every rank has room for its
 * arrivals (every rank can tell from the messages), no agreement is needed before the
 * all-to-all. */
static halox_status_t halox__mig_begin(halox__mig_t *m, halox_comm_t *comm,
                                       const halox_grid_t *grid, const halox_box_t *box,
                                       const halox__mig_store_t *S, long long step,
                                       halox_status_t st)
{
    const int P = m->P = comm->size;
    m->me = comm->rank;
    /* after a failure before the drive (st), only the agreement */
    if (st == HALOX_OK && (halox_grid_check(grid) != HALOX_OK || halox_box_check(box) != HALOX_OK))
        st = HALOX_ERR_INVALID_ARG;
    else if (st == HALOX_OK && halox_grid_size(grid) != P)
        st = halox__error(HALOX_ERR_INVALID_ARG, "migrate: grid has %d ranks, transport runs %d",
                          halox_grid_size(grid), P);
    m->n = S->n;
    m->M = P + HALOX__MIG_H;
    m->msg = calloc((size_t)m->M * (size_t)(P + 1), sizeof(long long));
    m->all = m->msg ? m->msg + m->M : NULL;
    m->blk = calloc((size_t)P * 6, sizeof(size_t));
    if (!m->msg || !m->blk)
        st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    if (st == HALOX_OK)
        st = S->ops->scan(S->ctx, grid, box, m->me, step, m->msg + HALOX__MIG_H, &m->nleave,
                          &m->hops);
    m->rcap = P > 1 ? m->nleave + m->nleave / 2 + 64 : 0;
    if (st == HALOX_OK && P > 1)
        st = S->ops->reserve(S->ctx, m->nleave, m->rcap);
    return st;
}

/* From everybody's messages (row r: rank r's send counts): the blocks of the all-to-all, how
 * many atoms move, whether some rank must grow its arrays or its receive buffer, and the first
 * rank whose arrays are too small for its arrivals (*short_p, -1: none; *need_p its need). */
static void halox__mig_blocks(halox__mig_t *m, long long *moved_p, int *tight_p, int *short_p,
                              long long *need_p, size_t rec)
{
    const int P = m->P, M = m->M, H = HALOX__MIG_H;
    const long long *all = m->all;
    size_t *scount = m->blk, *soff = m->blk + P, *sbytes = m->blk + 2 * P;
    size_t *rbytes = m->blk + 3 * P, *roff = m->blk + 4 * P;
    long long moved = 0;
    int tight = 0;
    *short_p = -1;
    *need_p = 0;
    m->most = 0;
    for (int r = 0; r < P; r++) {
        long long keep = all[(size_t)r * M + 1], nrecv = 0;
        for (int c = 0; c < P; c++) {
            const long long out = all[(size_t)r * M + H + c]; /* rank r's block for rank c */
            keep -= out;
            nrecv += all[(size_t)c * M + H + r];
            m->most = (size_t)out * rec > m->most ? (size_t)out * rec : m->most;
        }
        moved += nrecv;
        long long need = keep + nrecv > 0 ? keep + nrecv : 1;
        if (need > all[(size_t)r * M + 2] && *short_p < 0) {
            *short_p = r;
            *need_p = need;
        }
        if (need > all[(size_t)r * M + 2] || nrecv > all[(size_t)r * M + 3])
            tight = 1;
    }
    size_t stotal = 0, rtotal = 0;
    for (int r = 0; r < P; r++) {
        scount[r] = (size_t)m->msg[H + r];
        soff[r] = stotal;
        sbytes[r] = scount[r] * rec;
        stotal += sbytes[r];
        rbytes[r] = (size_t)all[(size_t)r * M + H + m->me] * rec;
        roff[r] = rtotal;
        rtotal += rbytes[r];
    }
    *moved_p = moved;
    *tight_p = tight;
}

/* Pack the leavers, grow where needed (the same decision on every rank: all of them saw every
 * message), exchange, and append the arrivals in source-rank order (deterministic for every
 * transport). */
static halox_status_t halox__mig_move(halox__mig_t *m, halox_comm_t *comm,
                                      const halox__mig_store_t *S, int tight)
{
    const int P = m->P;
    size_t *soff = m->blk + P, *sbytes = m->blk + 2 * P;
    size_t *rbytes = m->blk + 3 * P, *roff = m->blk + 4 * P, *fill = m->blk + 5 * P;
    size_t rtotal = 0;
    for (int r = 0; r < P; r++)
        rtotal += rbytes[r];
    int nrecv = (int)(rtotal / S->rec);
    int keep = m->n;
    halox_status_t st = S->ops->pack(S->ctx, soff, fill, &keep);
    if (tight) {
        if (st == HALOX_OK && (long long)nrecv > m->rcap)
            st = S->ops->reserve(S->ctx, m->nleave, nrecv);
        if (st == HALOX_OK && !S->fixed)
            st = S->ops->grow(S->ctx, keep + nrecv);
        st = halox__agree(comm, st, "migration");
    }
    if (st == HALOX_OK)
        st = S->ops->alltoallv(S->ctx, comm, sbytes, soff, rbytes, roff, m->most);
    if (st == HALOX_OK)
        st = S->ops->append(S->ctx, keep, nrecv);
    return st;
}

/* The global count must not change; name the ranks if it does (every rank knows every rank's
 * count before, and after from the matrix: nobody needs to ask again). */
static halox_status_t halox__mig_count_check(const halox__mig_t *m, long long expected_total,
                                             long long step)
{
    const int P = m->P, M = m->M, H = HALOX__MIG_H;
    const long long *all = m->all;
    long long before = 0, after = 0;
    long long *cnt = malloc(sizeof(long long) * 2 * (size_t)P);
    if (!cnt)
        return halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    for (int r = 0; r < P; r++) {
        long long b = all[(size_t)r * M + 1], a = b;
        for (int c = 0; c < P; c++) {
            a -= all[(size_t)r * M + H + c];
            a += all[(size_t)c * M + H + r];
        }
        cnt[2 * r] = b;
        cnt[2 * r + 1] = a;
        before += b;
        after += a;
    }
    halox_status_t st = HALOX_OK;
    if (after != expected_total || before != expected_total) {
        char list[512];
        size_t len = 0;
        list[0] = '\0';
        for (int r = 0; r < P && len < sizeof list - 64; r++)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%d: %lld->%lld",
                                    r ? ", " : "", r, cnt[2 * r], cnt[2 * r + 1]);
        st = halox__error(HALOX_ERR_ATOM_COUNT,
                          "step %lld: the system should hold %lld atoms but holds %lld "
                          "before migration and %lld after (per rank, before->after: %s); "
                          "atoms were lost or duplicated: report this with the command line",
                          step, expected_total, before, after, list);
    }
    free(cnt);
    return st;
}

halox_status_t halox__migrate_drive(halox_comm_t *comm, const halox_grid_t *grid,
                                    const halox_box_t *box, const halox__mig_store_t *S,
                                    long long expected_total, long long step, int *moved_p,
                                    int *hops_p, halox_status_t st0)
{
    halox__mig_t m;
    memset(&m, 0, sizeof m);
    halox_status_t st = halox__mig_begin(&m, comm, grid, box, S, step, st0);
    if (!m.msg) {
        /* cannot take part in the allgather: at least do not crash (the others fail on the
         * size mismatch, or wait out their timeout) */
        st = halox__agree(comm, st, "migration");
    } else {
        m.msg[1] = m.n;
        m.msg[2] = S->capacity;
        m.msg[3] = m.rcap;
        m.msg[4] = (long long)S->rec;
        st = halox__agree_gather(comm, st, "migration", m.msg, m.M, m.all);
        for (int r = 1; st == HALOX_OK && r < m.P; r++)
            if (m.all[(size_t)r * m.M + 4] != m.all[4])
                st =
                    halox__error(HALOX_ERR_INVALID_ARG,
                                 "migration at step %lld: rank %d: ranks 0 and %d carry records of "
                                 "%lld and %lld bytes per atom: every rank passes the same "
                                 "extra_bytes and carried fields (types and counts)",
                                 step, m.me, r, m.all[4], m.all[(size_t)r * m.M + 4]);
    }
    long long moved = 0, need = 0;
    int tight = 0, short_rank = -1;
    if (st == HALOX_OK && m.msg)
        halox__mig_blocks(&m, &moved, &tight, &short_rank, &need, S->rec);
    if (st == HALOX_OK && m.msg && moved > 0 && S->fixed && short_rank >= 0) {
        /* arrays that cannot grow: every rank stops before any atom moves (all saw the counts),
         * each short one saying what it needs */
        long long mine = m.n;
        const long long *all = m.all;
        for (int c = 0; c < m.P; c++)
            mine += all[(size_t)c * m.M + HALOX__MIG_H + m.me] - m.msg[HALOX__MIG_H + c];
        if (mine > S->capacity) {
            S->ops->need(S->ctx, mine);
            st = halox__error(HALOX_ERR_NO_MEMORY,
                              "migration at step %lld: rank %d receives atoms for %lld home atoms "
                              "but its arrays hold %lld: grow x, id (and the extra data) to at "
                              "least %lld entries, with head-room, and migrate again",
                              step, m.me, mine, S->capacity, mine);
        } else {
            st = halox__error(HALOX_ERR_NO_MEMORY,
                              "migration at step %lld stopped on rank %d: rank %d needs room for "
                              "%lld home atoms; its arrays must grow (its message says to what): "
                              "migrate again after",
                              step, m.me, short_rank, need);
        }
    } else if (st == HALOX_OK && m.msg && moved > 0) {
        st = halox__mig_move(&m, comm, S, tight);
    } else if (st == HALOX_OK && m.msg) {
        S->ops->still(S->ctx);
    }
    if (st == HALOX_OK && m.msg)
        st = halox__mig_count_check(&m, expected_total, step);
    if (moved_p)
        *moved_p = m.nleave;
    if (hops_p)
        *hops_p = m.hops;
    free(m.msg);
    free(m.blk);
    return st;
}

halox_status_t halox_comm_migrate(halox_comm_t *comm, const halox_grid_t *grid,
                                  const halox_box_t *box, halox_atoms_t *atoms,
                                  long long expected_total, long long step)
{
    halox__mig_host_t h = {.atoms = atoms};
    halox__mig_store_t s = halox__mig_host_store(&h, 0);
    /* a deferred failure: only the drive's first agreement */
    halox_status_t st = halox__migrate_drive(comm, grid, box, &s, expected_total, step, NULL, NULL,
                                             halox__comm_take_deferred(comm));
    s.ops->done(s.ctx);
    return st;
}

halox_status_t halox_comm_migrate_fixed(halox_comm_t *comm, const halox_grid_t *grid,
                                        const halox_box_t *box, halox_fixed_atoms_t *atoms,
                                        long long expected_total, long long step)
{
    if (!comm || !grid || !box || !atoms)
        return halox__error(HALOX_ERR_INVALID_ARG, "migrate_fixed: NULL argument");
    atoms->need = atoms->moved = atoms->max_hops = 0;
    halox_status_t st = halox__comm_take_deferred(comm); /* failed: only the first agreement */
    if (st == HALOX_OK)
        st = halox__fixed_atoms_check(atoms, comm->rank, "migrate_fixed", 0);
    halox__mig_store_t s;
    memset(&s, 0, sizeof s);
    halox_atoms_t view; /* CPU transports: the caller's host arrays, as atoms that cannot grow */
    halox__mig_host_t h = {.atoms = &view, .out = atoms};
    if (st == HALOX_OK && comm->ops->mig_store) {
        st = comm->ops->mig_store(comm, atoms, &s);
    } else if (st == HALOX_OK) {
        halox__fixed_atoms_view(&view, comm->real, comm->stride, atoms);
        s = halox__mig_host_store(&h, 1);
    }
    /* bad atoms or a store that failed to open: agreed in the drive's first agreement */
    st = halox__migrate_drive(comm, grid, box, &s, expected_total, step, &atoms->moved,
                              &atoms->max_hops, st);
    if (s.ops)
        s.ops->done(s.ctx);
    return st;
}
