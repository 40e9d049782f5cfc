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
#include "core/pack.h"
#include "core/transport.h"
#include "halox/comm.h"

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

/* Pack the leavers by destination (index order within one) into sbuf at soff[], and close the
 * gaps they leave: stayers keep their order. Returns the number of stayers. */
static int halox__mig_pack(halox_atoms_t *a, const int *leave, const int *to, int nleave,
                           char *sbuf, const size_t *soff, size_t *fill, size_t rec)
{
    const size_t xb = halox__atom_bytes(a->real, a->stride, 1);
    const size_t eb = a->extra_bytes;
    char *x = a->x, *e = a->extra;
    int keep = leave[0];
    for (int j = 0; j < nleave; j++) {
        int i = leave[j];
        char *o = sbuf + soff[to[j]] + fill[to[j]];
        memcpy(o, x + (size_t)i * xb, xb);
        memcpy(o + xb, &a->id[i], sizeof(int32_t));
        if (eb)
            memcpy(o + xb + sizeof(int32_t), e + (size_t)i * eb, eb);
        fill[to[j]] += rec;
        /* the run of stayers up to the next leaver moves down in one piece */
        int next = j + 1 < nleave ? leave[j + 1] : a->n_home;
        int run = next - i - 1;
        if (run > 0) {
            memmove(x + (size_t)keep * xb, x + (size_t)(i + 1) * xb, (size_t)run * xb);
            memmove(&a->id[keep], &a->id[i + 1], sizeof(int32_t) * (size_t)run);
            if (eb)
                memmove(e + (size_t)keep * eb, e + (size_t)(i + 1) * eb, (size_t)run * eb);
            keep += run;
        }
    }
    return keep;
}

/* One migration's state: who leaves, the messages of every rank, the blocks of the
 * all-to-all. */
enum { HALOX__MIG_H = 4 }; /* message head: status, atom count, capacity, receive capacity */
typedef struct halox__mig {
    int P, me, n, nleave;
    int M;          /* message length: the head, then the send count per rank */
    size_t rec;     /* bytes of one atom's record */
    int *leave;     /* leavers, then their destinations */
    long long *msg; /* ours, then everybody's (all) */
    long long *all;
    size_t *blk; /* scount, soff, sbytes, rbytes, roff, fill: P each */
    char *sbuf, *rbuf;
    long long rcap; /* atoms rbuf holds */
} halox__mig_t;

/* Check the arguments, find the leavers, and size the buffers before the counts are known: the
 * arrivals are guessed to be about as many as the departures. When every rank has room for its
 * arrivals (every rank can tell from the messages), no agreement is needed before the
 * all-to-all. */
static halox_status_t halox__mig_begin(halox__mig_t *m, halox_comm_t *comm,
                                       const halox_grid_t *grid, const halox_box_t *box,
                                       halox_atoms_t *atoms, long long step)
{
    const int P = m->P = comm->size;
    m->me = comm->rank;
    halox_status_t st = HALOX_OK;
    if (halox_grid_check(grid) != HALOX_OK || halox_box_check(box) != HALOX_OK)
        st = HALOX_ERR_INVALID_ARG;
    else if (halox_grid_size(grid) != P)
        st = halox__error(HALOX_ERR_INVALID_ARG, "migrate: grid has %d ranks, transport runs %d",
                          halox_grid_size(grid), P);
    const int n = m->n = atoms->n_home;
    m->rec =
        halox__atom_bytes(atoms->real, atoms->stride, 1) + sizeof(int32_t) + atoms->extra_bytes;
    /* room for every atom to leave; only the pages of actual leavers are ever touched */
    m->leave = malloc(sizeof(int) * 2 * (size_t)(n > 0 ? n : 1));
    m->M = P + HALOX__MIG_H;
    m->msg = calloc((size_t)m->M * (size_t)(P + 1), sizeof(long long));
    m->all = m->msg ? m->msg + m->M : NULL;
    m->blk = calloc((size_t)P * 6, sizeof(size_t));
    if (!m->leave || !m->msg || !m->blk)
        st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    if (st == HALOX_OK)
        st = halox__mig_scan(atoms, grid, box, m->me, step, m->leave, m->leave + n, &m->nleave,
                             m->msg + HALOX__MIG_H);
    m->rcap = P > 1 ? m->nleave + m->nleave / 2 + 64 : 0;
    if (st == HALOX_OK && P > 1) {
        m->sbuf = malloc(m->nleave ? (size_t)m->nleave * m->rec : 1);
        m->rbuf = malloc((size_t)m->rcap * m->rec);
        if (!m->sbuf || !m->rbuf)
            st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    }
    return st;
}

/* From everybody's messages (row r: rank r's send counts): the blocks of the all-to-all, how
 * many atoms move, and whether some rank must grow its arrays or its receive buffer. */
static void halox__mig_blocks(halox__mig_t *m, long long *moved_p, int *tight_p)
{
    const int P = m->P, M = m->M, H = HALOX__MIG_H;
    const long long *all = m->all;
    size_t *scount = m->blk, *soff = m->blk + P, *sbytes = m->blk + 2 * P;
    size_t *rbytes = m->blk + 3 * P, *roff = m->blk + 4 * P;
    long long moved = 0;
    int tight = 0;
    for (int r = 0; r < P; r++) {
        long long keep = all[(size_t)r * M + 1], nrecv = 0;
        for (int c = 0; c < P; c++) {
            keep -= all[(size_t)r * M + H + c];
            nrecv += all[(size_t)c * M + H + r];
        }
        moved += nrecv;
        long long need = keep + nrecv > 0 ? keep + nrecv : 1;
        if (need > all[(size_t)r * M + 2] || nrecv > all[(size_t)r * M + 3])
            tight = 1;
    }
    size_t stotal = 0, rtotal = 0;
    for (int r = 0; r < P; r++) {
        scount[r] = (size_t)m->msg[H + r];
        soff[r] = stotal;
        sbytes[r] = scount[r] * m->rec;
        stotal += sbytes[r];
        rbytes[r] = (size_t)all[(size_t)r * M + H + m->me] * m->rec;
        roff[r] = rtotal;
        rtotal += rbytes[r];
    }
    *moved_p = moved;
    *tight_p = tight;
}

/* Pack the leavers, grow where needed (the same decision on every rank: all of them saw every
 * message), exchange, and append the arrivals in source-rank order (deterministic for every
 * transport). */
static halox_status_t halox__mig_move(halox__mig_t *m, halox_comm_t *comm, halox_atoms_t *atoms,
                                      int tight)
{
    const int P = m->P, n = m->n;
    size_t *soff = m->blk + P, *sbytes = m->blk + 2 * P;
    size_t *rbytes = m->blk + 3 * P, *roff = m->blk + 4 * P, *fill = m->blk + 5 * P;
    size_t rtotal = 0;
    for (int r = 0; r < P; r++)
        rtotal += rbytes[r];
    const size_t rec = m->rec;
    int nrecv = (int)(rtotal / rec);
    int keep = m->nleave ? halox__mig_pack(atoms, m->leave, m->leave + n, m->nleave, m->sbuf, soff,
                                           fill, rec)
                         : n;
    atoms->n_home = keep;
    atoms->n_total = keep;
    halox_status_t st = HALOX_OK;
    if (tight) {
        if ((long long)nrecv > m->rcap) {
            free(m->rbuf);
            if (!(m->rbuf = malloc(rtotal)))
                st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
        }
        if (st == HALOX_OK)
            st = halox_atoms_reserve(atoms, keep + nrecv > 0 ? keep + nrecv : 1);
        st = halox__agree(comm, st, "migration");
    }
    if (st == HALOX_OK)
        st = comm->ops->alltoallv(comm, m->sbuf, sbytes, soff, m->rbuf, rbytes, roff);
    if (st != HALOX_OK)
        return st;
    const size_t xb = halox__atom_bytes(atoms->real, atoms->stride, 1);
    const size_t eb = atoms->extra_bytes;
    for (int j = 0; j < nrecv; j++) {
        const char *o = m->rbuf + (size_t)j * rec;
        int i = keep + j;
        memcpy((char *)atoms->x + (size_t)i * xb, o, xb);
        memcpy(&atoms->id[i], o + xb, sizeof(int32_t));
        if (eb)
            memcpy((char *)atoms->extra + (size_t)i * eb, o + xb + sizeof(int32_t), eb);
    }
    atoms->n_home = keep + nrecv;
    atoms->n_total = atoms->n_home;
    return HALOX_OK;
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

halox_status_t halox_comm_migrate(halox_comm_t *comm, const halox_grid_t *grid,
                                  const halox_box_t *box, halox_atoms_t *atoms,
                                  long long expected_total, long long step)
{
    halox__mig_t m;
    memset(&m, 0, sizeof m);
    halox_status_t st = halox__mig_begin(&m, comm, grid, box, atoms, step);
    if (!m.msg) {
        /* cannot take part in the allgather: at least do not crash (the others fail on the
         * size mismatch, or wait out their timeout) */
        st = halox__agree(comm, st, "migration");
    } else {
        m.msg[1] = m.n;
        m.msg[2] = atoms->capacity;
        m.msg[3] = m.rcap;
        st = halox__agree_gather(comm, st, "migration", m.msg, m.M, m.all);
    }
    long long moved = 0;
    int tight = 0;
    if (st == HALOX_OK && m.msg)
        halox__mig_blocks(&m, &moved, &tight);
    if (st == HALOX_OK && m.msg && moved > 0)
        st = halox__mig_move(&m, comm, atoms, tight);
    else if (st == HALOX_OK && m.msg)
        atoms->n_total = atoms->n_home;
    if (st == HALOX_OK && m.msg)
        st = halox__mig_count_check(&m, expected_total, step);
    free(m.sbuf);
    free(m.rbuf);
    free(m.leave);
    free(m.msg);
    free(m.blk);
    return st;
}
