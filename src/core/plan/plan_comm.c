/* One rank's plan build through its transport (plan_build.h): the driver over a store of atoms,
 * the host store (host arrays: plan.c's steps), halox_comm_build_plan on growing host atoms and
 * halox_comm_build_plan_fixed on the caller's fixed arrays (device memory through the GPU
 * transport's store, host memory through the host store for the CPU transports). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fixed_atoms.h"
#include "core/grow.h"
#include "core/plan/plan_build.h"
#include "core/transport.h"
#include "halox/build.h"
#include "halox/endpoint.h"

/* ---- the driver ----------------------------------------------------------------------------- */

/* halox__agree_gather of the driver's message (msg[0..M), every rank's into msg + M), where a
 * rank whose arrays cannot grow lacked room in a pulse within itself (msg[4]: the atoms it
 * needs): then every rank returns HALOX_ERR_NO_MEMORY (that rank its own message), so every rank
 * knows to grow and build again rather than stop. */
static halox_status_t halox__plan_agree_room(halox_comm_t *comm, const halox__plan_store_t *S,
                                             halox_status_t st, long long *msg, int M)
{
    st = halox__agree_gather(comm, st, "plan build", msg, M, msg + M);
    if (st != HALOX_ERR_ABORTED || !S->fixed)
        return st;
    for (int r = 0; r < comm->size; r++) {
        const long long *m = msg + (size_t)(r + 1) * (size_t)M; /* rank r's, after ours */
        if (m[0] == HALOX_ERR_NO_MEMORY && m[4] > 0)
            return halox__error(HALOX_ERR_NO_MEMORY,
                                "plan build stopped on rank %d: rank %d needs room for %lld atoms "
                                "(its halo within itself does not fit its arrays); its arrays "
                                "must grow (its message says to what): build again after",
                                comm->rank, r, m[4]);
    }
    return st;
}

/* Per pulse: one allgather of (status, send count, room) agrees on failures so far and gives the
 * receive count; the set-up message. The first pulse's agreement is also the build's first (a
 * rank that failed before the pulses takes part in it and stops). The buffer is sized before the
 * counts are known (arrivals guessed from departures); only when some rank lacks room for its
 * arrivals (every rank can tell from the messages) do all grow and agree once more. A pulse within
 * one rank (a single rank in its dimension, so on every rank alike) needs no collective: its atoms
 * are copied straight into place, and a failure there waits for the next agreement (that of a later
 * pulse, or the last one). A failure after a pulse's agreement (a store's pack or unpack) still
 * sends and receives, so that no peer waits for a message that never comes, and is agreed at the
 * end. */
halox_status_t halox__plan_drive(halox_comm_t *comm, const halox_plan_params_t *params,
                                 const halox__plan_store_t *S, halox_plan_t *plan,
                                 halox_status_t st0)
{
    halox_status_t st = st0;
    int nranks = halox_grid_size(&params->grid);
    if (st == HALOX_OK && halox_grid_check(&params->grid) == HALOX_OK && nranks != comm->size)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "grid %dx%dx%d has %d ranks but the %s transport runs %d: start as "
                          "many ranks as the grid has",
                          params->grid.n[0], params->grid.n[1], params->grid.n[2], nranks,
                          comm->ops->name, comm->size);
    if (st == HALOX_OK && (S->real != comm->real || S->stride != comm->stride))
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "atoms use %d-byte reals with stride %d but the endpoint was created "
                          "for %d-byte reals with stride %d",
                          (int)S->real, S->stride, (int)comm->real, comm->stride);
    if (st == HALOX_OK)
        st = S->ops->begin(S->ctx, plan, params, comm->rank);
    /* per rank and pulse: status, send count, room for arrivals (atoms), receive buffer
     * (bytes), and what a rank whose arrays cannot grow lacked in a pulse within itself */
    enum { M = 5 };
    long long *cnt = calloc(M * (size_t)(comm->size + 1), sizeof(long long));
    if (!cnt) {
        /* the first agreement with a message of the same size (its gather allocates what it
         * can; without that the others wait out their timeout) */
        long long one[M] = {0};
        return halox__agree_gather(comm, halox__error(HALOX_ERR_NO_MEMORY, "plan build: no memory"),
                                   "plan build", one, M, NULL);
    }
    if (st != HALOX_OK) {
        /* failed before the first pulse (arguments, the store, a deferred failure): the first
         * agreement, which every rank reaches with the same message (the first pulse with a
         * peer's, or the one after the pulses), and nothing after it (a failure seen there ends
         * every rank) */
        st = halox__plan_agree_room(comm, S, st, cnt, M);
        free(cnt);
        return st;
    }
    int agreed = 0;   /* an agreement ran: it reported any failure before it */
    void *buf = NULL; /* send and receive halves, reused by every pulse (the store's memory) */
    size_t cap = 0;
    int pending = 0;                /* a pulse within the rank since the last agreement */
    int seen = 0;                   /* a failure every rank saw at an agreement */
    long long lacked = 0;           /* such a pulse did not fit: the atoms this rank needs */
    halox_status_t late = HALOX_OK; /* a failure after an agreement: agreed at the end */
    for (int k = 0; k < plan->n_pulses; k++) {
        halox_pulse_t *p = &plan->pulse[k];
        if (p->send_rank == comm->rank && p->recv_rank == comm->rank) {
            if (st == HALOX_OK)
                st = S->ops->select(S->ctx, plan, k);
            if (st == HALOX_OK && S->fixed && p->send_count > S->ops->room(S->ctx, plan))
                lacked = (long long)plan->n_total + p->send_count;
            if (st == HALOX_OK)
                st = S->ops->recv(S->ctx, plan, k, p->send_count); /* says what it lacks */
            if (st == HALOX_OK)
                st = S->ops->copy(S->ctx, plan, k);
            pending = 1;
            continue;
        }
        if (st == HALOX_OK)
            st = S->ops->select(S->ctx, plan, k);
        size_t sbytes =
            st == HALOX_OK ? halox__plan_setup_bytes_of(S->real, S->stride, p->send_count) : 0;
        /* the send half and a receive half guessed from it (up to 1.25 times the departures:
         * neighbours hold about as many atoms near a face as this rank does) */
        size_t want = 2 * sbytes + sbytes / 4 + 4096;
        if (st == HALOX_OK && want > cap)
            st = S->ops->reserve(S->ctx, want, &buf, &cap);
        long long room = st == HALOX_OK ? S->ops->room(S->ctx, plan) : 0;
        cnt[1] = st == HALOX_OK ? p->send_count : 0;
        cnt[2] = room;
        cnt[3] = st == HALOX_OK ? (long long)(cap - sbytes) : 0;
        cnt[4] = lacked;
        st = halox__plan_agree_room(comm, S, st, cnt, M);
        pending = 0;
        agreed = 1;
        if (st != HALOX_OK) {
            seen = 1;
            break;
        }
        const long long *all = cnt + M;
        int tight = 0, short_rank = -1;
        long long more = 0, most = 0; /* the largest count any rank sends in this pulse */
        for (int r = 0; r < comm->size; r++) {
            most = all[(size_t)r * M + 1] > most ? all[(size_t)r * M + 1] : most;
            int src = halox_grid_neighbour(&plan->params.grid, r, p->dim, p->from_lower ? -1 : +1);
            long long rc = all[(size_t)src * M + 1];
            tight |= rc > all[(size_t)r * M + 2] ||
                     (long long)halox__plan_setup_bytes_of(S->real, S->stride, (int)rc) >
                         all[(size_t)r * M + 3];
            if (short_rank < 0 && rc > all[(size_t)r * M + 2]) {
                short_rank = r;
                more = rc - all[(size_t)r * M + 2];
            }
        }
        int recv_count = (int)all[(size_t)p->recv_rank * M + 1];
        if (S->fixed && short_rank >= 0) {
            /* arrays that cannot grow: a rank without room for its arrivals stops everyone
             * here, alike on every rank (all see the same counts), without another message */
            st = (long long)recv_count > room
                     ? S->ops->recv(S->ctx, plan, k, recv_count) /* fails, saying what it needs */
                     : halox__error(HALOX_ERR_NO_MEMORY,
                                    "plan build stopped on rank %d: rank %d has room for %lld "
                                    "atoms fewer than pulse %d brings it; its arrays must grow "
                                    "(its message says to what): build again after",
                                    comm->rank, short_rank, more, k);
            break;
        }
        st = S->ops->recv(S->ctx, plan, k, recv_count);
        size_t rbytes = halox__plan_setup_bytes_of(S->real, S->stride, recv_count);
        if (tight) {
            if (st == HALOX_OK && sbytes + rbytes > cap)
                st = S->ops->reserve(S->ctx, sbytes + rbytes, &buf, &cap);
            st = halox__agree(comm, st, "plan build");
            if (st != HALOX_OK) {
                seen = 1;
                break;
            }
        }
        /* else nothing above could fail: every rank had room (checked alike everywhere) */
        void *sbuf = buf, *rbuf = (char *)buf + sbytes;
        halox_status_t pst = late == HALOX_OK ? S->ops->pack(S->ctx, plan, k, sbuf) : late;
        if (pst != HALOX_OK && late == HALOX_OK)
            late = pst;
        st = S->ops->sendrecv(S->ctx, comm, p->send_rank, sbuf, sbytes, p->recv_rank, rbuf, rbytes,
                              halox__plan_setup_bytes_of(S->real, S->stride, (int)most));
        if (st != HALOX_OK)
            break;
        if (late == HALOX_OK)
            late = S->ops->unpack(S->ctx, plan, k, rbuf);
    }
    if (st == HALOX_OK)
        st = late;
    if (st == HALOX_OK)
        st = S->ops->end(S->ctx, plan);
    /* once more after a pulse within the rank or a store whose steps can fail after an
     * agreement (device kernels), and at least once (the first agreement, which a rank that
     * failed before the pulses waits in); not after a failure every rank saw at an agreement */
    if (!seen && (pending || S->may_fail_late || !agreed)) {
        cnt[4] = lacked;
        st = halox__plan_agree_room(comm, S, st, cnt, M);
    }
    free(cnt);
    if (st != HALOX_OK)
        return st;
    plan->generation++;
    comm->plan = NULL; /* arrays may have moved: the caller binds again */
    return HALOX_OK;
}

/* ---- the host store: plan.c's steps on halox_atoms_t ---------------------------------------- */

typedef struct halox__host_store {
    halox_atoms_t *atoms;
    int fixed;                /* the caller's arrays: no growth, zones copied out at the end */
    halox_fixed_atoms_t *out; /* fixed: the caller's view */
    void *buf;
} halox__host_store_t;

static halox_status_t halox__hs_begin(void *ctx, halox_plan_t *plan,
                                      const halox_plan_params_t *params, int rank)
{
    return halox__plan_begin(plan, params, rank, ((halox__host_store_t *)ctx)->atoms);
}

static halox_status_t halox__hs_select(void *ctx, halox_plan_t *plan, int k)
{
    return halox__plan_select(plan, k, ((halox__host_store_t *)ctx)->atoms);
}

static long long halox__hs_room(void *ctx, const halox_plan_t *plan)
{
    const halox_atoms_t *a = ((halox__host_store_t *)ctx)->atoms;
    int lim = a->capacity < plan->zone_capacity ? a->capacity : plan->zone_capacity;
    if (((halox__host_store_t *)ctx)->fixed)
        lim = a->capacity;
    return (long long)(lim < HALOX_ATOMS_MAX ? lim : HALOX_ATOMS_MAX) - plan->n_total;
}

static halox_status_t halox__hs_recv(void *ctx, halox_plan_t *plan, int k, int count)
{
    halox__host_store_t *h = ctx;
    halox_status_t st =
        h->fixed && count >= 0
            ? halox__plan_room(plan, k, count, h->atoms->capacity, "arrays", &h->out->need)
            : HALOX_OK;
    return st == HALOX_OK ? halox__plan_recv(plan, k, h->atoms, count) : st;
}

static halox_status_t halox__hs_reserve(void *ctx, size_t bytes, void **buf_p, size_t *cap_p)
{
    halox__host_store_t *h = ctx;
    free(h->buf);
    h->buf = malloc(bytes);
    *buf_p = h->buf;
    *cap_p = h->buf ? bytes : 0;
    return h->buf ? HALOX_OK
                  : halox__error(HALOX_ERR_NO_MEMORY, "plan build: no memory for %zu bytes", bytes);
}

static halox_status_t halox__hs_pack(void *ctx, const halox_plan_t *plan, int k, void *buf)
{
    halox__plan_pack_setup(plan, k, ((halox__host_store_t *)ctx)->atoms, buf);
    return HALOX_OK;
}

static halox_status_t halox__hs_unpack(void *ctx, halox_plan_t *plan, int k, const void *buf)
{
    halox__plan_unpack_setup(plan, k, ((halox__host_store_t *)ctx)->atoms, buf);
    return HALOX_OK;
}

static halox_status_t halox__hs_copy(void *ctx, halox_plan_t *plan, int k)
{
    halox__plan_copy_setup(plan, k, ((halox__host_store_t *)ctx)->atoms);
    return HALOX_OK;
}

static halox_status_t halox__hs_sendrecv(void *ctx, halox_comm_t *comm, int dst, const void *sbuf,
                                         size_t sbytes, int src, void *rbuf, size_t rbytes,
                                         size_t most)
{
    (void)ctx;
    (void)most;
    return comm->ops->sendrecv(comm, dst, sbuf, sbytes, src, rbuf, rbytes);
}

static halox_status_t halox__hs_end(void *ctx, halox_plan_t *plan)
{
    halox__host_store_t *h = ctx;
    h->atoms->n_total = plan->n_total;
    if (h->fixed) {
        memcpy(h->out->zone, plan->zone, (size_t)plan->n_total);
        h->out->n_total = plan->n_total;
    }
    return HALOX_OK;
}

static void halox__hs_done(void *ctx) { free(((halox__host_store_t *)ctx)->buf); }

static const halox__plan_store_ops_t halox__hs_ops = {
    .begin = halox__hs_begin,
    .select = halox__hs_select,
    .room = halox__hs_room,
    .recv = halox__hs_recv,
    .reserve = halox__hs_reserve,
    .pack = halox__hs_pack,
    .unpack = halox__hs_unpack,
    .copy = halox__hs_copy,
    .sendrecv = halox__hs_sendrecv,
    .end = halox__hs_end,
    .done = halox__hs_done,
};

static halox__plan_store_t halox__host_store(halox__host_store_t *h)
{
    halox__plan_store_t s = {.ops = &halox__hs_ops,
                             .ctx = h,
                             .real = h->atoms->real,
                             .stride = h->atoms->stride,
                             .n_home = h->atoms->n_home,
                             .capacity = h->atoms->capacity,
                             .fixed = h->fixed};
    return s;
}

/* ---- the entry points ----------------------------------------------------------------------- */

halox_status_t halox_comm_build_plan(halox_comm_t *comm, const halox_plan_params_t *params,
                                     halox_atoms_t *atoms, halox_plan_t *plan)
{
    if (!comm || !params || !atoms || !plan)
        return halox__error(HALOX_ERR_INVALID_ARG, "build_plan: NULL argument");
    halox__host_store_t h = {.atoms = atoms};
    halox__plan_store_t s = halox__host_store(&h);
    /* a deferred failure: only the drive's first agreement */
    halox_status_t st = halox__plan_drive(comm, params, &s, plan, halox__comm_take_deferred(comm));
    s.ops->done(s.ctx);
    return st;
}

halox_status_t halox_comm_build_plan_fixed(halox_comm_t *comm, const halox_plan_params_t *params,
                                           halox_fixed_atoms_t *atoms, halox_plan_t *plan)
{
    if (!comm || !params || !atoms || !plan)
        return halox__error(HALOX_ERR_INVALID_ARG, "build_plan_fixed: NULL argument");
    atoms->need = 0;
    atoms->n_total = 0;
    halox_status_t st = halox__comm_take_deferred(comm); /* failed: only the first agreement */
    if (st == HALOX_OK)
        st = halox__fixed_atoms_check(atoms, comm->rank, "build_plan_fixed", 1);
    halox__plan_store_t s;
    memset(&s, 0, sizeof s);
    halox_atoms_t view; /* CPU transports: the caller's host arrays, as atoms that cannot grow */
    halox__host_store_t h = {.atoms = &view, .fixed = 1, .out = atoms};
    if (st == HALOX_OK && comm->ops->plan_store) {
        st = comm->ops->plan_store(comm, atoms, &s);
    } else if (st == HALOX_OK) {
        halox__fixed_atoms_view(&view, comm->real, comm->stride, atoms);
        s = halox__host_store(&h);
    }
    /* bad atoms or a store that failed to open: agreed in the drive's first agreement */
    st = halox__plan_drive(comm, params, &s, plan, st);
    if (s.ops)
        s.ops->done(s.ctx);
    return st;
}
