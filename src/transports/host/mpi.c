/* The `mpi` transport: every rank is an MPI process and every pulse is a two-sided exchange
 * (MPI_Isend/MPI_Irecv) with the pulse's two neighbours.
 *
 * Every wait is a poll (MPI_Testsome) against one deadline per call, so a missing peer turns
 * into HALOX_ERR_TIMEOUT with a message instead of a hang; nothing here blocks inside MPI. The
 * library never initialises or finalises MPI: the caller owns MPI's life cycle. Each endpoint
 * works on its own duplicate of the caller's communicator, so its messages cannot match the
 * application's, and errors come back as codes (MPI_ERRORS_RETURN) instead of aborting.
 *
 * A timeout or an MPI error leaves requests that may still complete later (a peer that was only
 * late), so the endpoint is marked failed: every later call but destroy returns HALOX_ERR_STATE.
 * The usual reaction is MPI_Abort. The collectives (sendrecv, alltoallv, allgather) move the
 * caller's data through the endpoint's own bounce buffer, so a request that outlives a failed
 * call (a collective cannot be cancelled, a receive already half in cannot either) writes into
 * memory the endpoint then never frees or reuses, never into the caller's buffers, which the
 * caller may free as soon as the call returned. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "core/transport.h"
#include "transports/host/mpi_wait.h"
#include "transports/host/pulse_host.h"
#include "transports/registry.h"

/* Tags: one per pulse and direction, so a message can only ever match its own receive; the
 * set-up collectives get tags of their own. MPI guarantees tags up to 32767. */
enum {
    HALOX__MPI_TAG_COORDS = 1000, /* + pulse */
    HALOX__MPI_TAG_FORCES = 2000, /* + pulse */
    HALOX__MPI_TAG_BIND = 3000,   /* + pulse */
    HALOX__MPI_TAG_SENDRECV = 4000,
    HALOX__MPI_TAG_ALLTOALLV = 4001,
};

/* The operation in progress, for messages, and its deadline. */
typedef struct halox__mpi_op {
    const char *name; /* "coordinate exchange", "barrier", ... */
    double deadline;
} halox__mpi_op_t;

typedef struct halox__mpi {
    MPI_Comm comm; /* our duplicate; MPI_COMM_NULL until created */
    int failed;    /* a wait timed out or MPI failed: the endpoint is unusable */
    char failure[512];
    int leaked; /* abandoned requests may still touch buf or bounce: never free them */

    /* requests of the operation in progress (halo: [0, n) receives, [n, 2n) sends) */
    MPI_Request *req;
    halox__mpiw_info_t *info;
    MPI_Status *status;
    int *index;
    int req_capacity;

    /* per bound plan: one staging buffer per pulse, send_count atoms each; the coordinate
     * exchange packs into it and the force exchange receives into it (never both at once) */
    char *buf;
    size_t buf_capacity;
    size_t off[HALOX_MAX_PULSES];
    halox__pulse_host_t ph; /* the pulse walk's part: ph.pack_to[k] == buf + off[k] */
    halox__mpi_op_t xop;    /* the exchange in progress, for its parts of the walk */

    /* the collectives' copy of the caller's data, in and out (see the top of this file) */
    char *bounce;
    size_t bounce_capacity;
} halox__mpi_t;

static halox__mpi_t *halox__mpi(halox_comm_t *comm) { return (halox__mpi_t *)comm->impl; }

static double halox__mpi_deadline(const halox_comm_t *comm)
{
    return halox__now() + comm->timeout_s; /* validated at creation */
}

static halox_status_t halox__mpi_usable(halox_comm_t *comm, const char *op)
{
    halox__mpi_t *m = halox__mpi(comm);
    if (!m || m->comm == MPI_COMM_NULL)
        return halox__error(HALOX_ERR_STATE, "mpi: %s on an endpoint that was not created", op);
    if (m->failed)
        return halox__endpoint_refused("mpi", comm->rank, op, m->failure, "its messages");
    return HALOX_OK;
}

static halox_status_t halox__mpi_reserve(halox__mpi_t *m, int n)
{
    if (n <= m->req_capacity)
        return HALOX_OK;
    int cap = m->req_capacity > 0 ? m->req_capacity : 32;
    while (cap < n)
        cap *= 2;
    /* the per-request arrays; one that cannot grow keeps its old block (freed at fini) */
    void **arrays[] = {(void **)&m->req, (void **)&m->info, (void **)&m->status,
                       (void **)&m->index};
    const size_t elem[] = {sizeof *m->req, sizeof *m->info, sizeof *m->status, sizeof *m->index};
    int grown = 1;
    for (int k = 0; k < 4; k++) {
        void *q = realloc(*arrays[k], elem[k] * (size_t)cap);
        if (q)
            *arrays[k] = q;
        else
            grown = 0;
    }
    if (!grown)
        return halox__error(HALOX_ERR_NO_MEMORY, "mpi: no memory for %d requests", cap);
    m->req_capacity = cap;
    return HALOX_OK;
}

static void halox__mpi_clear(halox__mpi_t *m, int n)
{
    for (int i = 0; i < n; i++)
        m->req[i] = MPI_REQUEST_NULL;
}

/* Give up on requests [0, n) after a failure: receives are cancelled (locally complete unless
 * the message is already half in), sends are released to finish on their own. Whatever cannot
 * be completed now may still touch its buffer, so the staging buffer is never freed after this. */
static void halox__mpi_abandon(halox__mpi_t *m, int n)
{
    if (halox__mpiw_abandon(m->req, m->info, n))
        m->leaked = 1;
}

static halox_status_t halox__mpi_fail(halox_comm_t *comm, int n, halox_status_t st)
{
    halox__mpi_t *m = halox__mpi(comm);
    m->failed = 1;
    snprintf(m->failure, sizeof m->failure, "%s", halox_last_error());
    halox__mpi_abandon(m, n);
    return st;
}

static halox_status_t halox__mpi_post_failed(halox_comm_t *comm, int n, const halox__mpi_op_t *op,
                                             const char *call, int peer, int rc)
{
    char es[MPI_MAX_ERROR_STRING];
    halox__error(HALOX_ERR_COMM, "mpi: rank %d: %s with rank %d failed in the %s at step %lld: %s",
                 comm->rank, call, peer, op->name, comm->step, halox__mpiw_errstr(rc, es));
    return halox__mpi_fail(comm, n, HALOX_ERR_COMM);
}

/* Wait for requests [first, first + count) of the n outstanding ones, checking that every
 * receive brought exactly the bytes expected. On failure all n are abandoned. */
static halox_status_t halox__mpi_wait(halox_comm_t *comm, int first, int count, int n,
                                      const halox__mpi_op_t *op)
{
    halox__mpi_t *m = halox__mpi(comm);
    halox_status_t st = halox__mpiw_wait(comm, "mpi", m->req + first, m->info + first, count,
                                         m->index, m->status, op->name, op->deadline);
    return st == HALOX_OK ? HALOX_OK : halox__mpi_fail(comm, n, st);
}

/* The bounce buffer, at least `bytes` long (NULL with the error recorded when it cannot grow).
 * Only a healthy endpoint gets here (halox__mpi_usable), so it was never leaked. */
static char *halox__mpi_bounce(halox_comm_t *comm, const char *op, size_t bytes)
{
    halox__mpi_t *m = halox__mpi(comm);
    if (bytes <= m->bounce_capacity && m->bounce)
        return m->bounce;
    size_t cap = m->bounce_capacity > 0 ? m->bounce_capacity : 256;
    while (cap < bytes)
        cap *= 2;
    char *q = realloc(m->bounce, cap);
    if (!q) {
        halox__error(HALOX_ERR_NO_MEMORY, "mpi: rank %d: %s: no memory for %zu bytes of copies",
                     comm->rank, op, cap);
        return NULL;
    }
    m->bounce = q;
    m->bounce_capacity = cap;
    return q;
}

static halox_status_t halox__mpi_check_bytes(halox_comm_t *comm, const char *op, size_t bytes)
{
    if (bytes > (size_t)INT_MAX)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "mpi: rank %d: %s of %zu bytes exceeds MPI's int count (%d): use "
                            "more ranks or smaller blocks",
                            comm->rank, op, bytes, INT_MAX);
    return HALOX_OK;
}

/* Post a receive (send 0: into buf) or a send (send 1: from buf) as request i. */
static halox_status_t halox__mpi_post(halox_comm_t *comm, int send, int i, int n,
                                      const halox__mpi_op_t *op, void *buf, size_t bytes, int peer,
                                      int tag, int pulse)
{
    halox__mpi_t *m = halox__mpi(comm);
    m->info[i] =
        (halox__mpiw_info_t){send ? HALOX__MPIW_SEND : HALOX__MPIW_RECV, peer, pulse, bytes};
    int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, m->comm, &m->req[i])
                  : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, m->comm, &m->req[i]);
    if (rc != MPI_SUCCESS) {
        m->req[i] = MPI_REQUEST_NULL;
        return halox__mpi_post_failed(comm, n, op, send ? "MPI_Isend" : "MPI_Irecv", peer, rc);
    }
    return HALOX_OK;
}

static halox_status_t halox__mpi_irecv(halox_comm_t *comm, int i, int n, const halox__mpi_op_t *op,
                                       void *buf, size_t bytes, int peer, int tag, int pulse)
{
    return halox__mpi_post(comm, 0, i, n, op, buf, bytes, peer, tag, pulse);
}

/* MPI_Isend takes a const buffer since MPI 3 */
static halox_status_t halox__mpi_isend(halox_comm_t *comm, int i, int n, const halox__mpi_op_t *op,
                                       const void *buf, size_t bytes, int peer, int tag, int pulse)
{
    return halox__mpi_post(comm, 1, i, n, op, (void *)buf, bytes, peer, tag, pulse);
}

/* ---- life cycle ------------------------------------------------------------------------- */

static void halox__mpi_fini(halox_comm_t *comm);

static halox_status_t halox__mpi_init(halox_comm_t *comm, const halox_comm_args_t *args)
{
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return halox__error(HALOX_ERR_STATE,
                            "mpi: MPI is %s: call MPI_Init (or MPI_Init_thread) before "
                            "halox_comm_create(\"mpi\", ...) and MPI_Finalize only after "
                            "halox_comm_destroy(); halox never initialises or finalises MPI itself",
                            finalized ? "already finalised" : "not initialised");
    MPI_Comm parent = args && args->mpi_comm ? *(const MPI_Comm *)args->mpi_comm : MPI_COMM_WORLD;
    if (parent == MPI_COMM_NULL)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "mpi: args.mpi_comm points to MPI_COMM_NULL: pass a communicator of "
                            "the ranks that take part (or NULL for MPI_COMM_WORLD)");
    int inter = 0;
    if (MPI_Comm_test_inter(parent, &inter) == MPI_SUCCESS && inter)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "mpi: args.mpi_comm is an intercommunicator: pass an "
                            "intracommunicator (MPI_Intercomm_merge makes one)");

    halox__mpi_t *m = calloc(1, sizeof *m);
    if (!m)
        return halox__error(HALOX_ERR_NO_MEMORY, "mpi: no memory for the endpoint");
    m->comm = MPI_COMM_NULL;
    comm->impl = m;
    halox_status_t st = halox__mpi_reserve(m, 2 * HALOX_MAX_PULSES);
    if (st != HALOX_OK)
        goto fail;
    /* rank and size of the parent only for the messages until the duplicate exists */
    MPI_Comm_rank(parent, &comm->rank);
    MPI_Comm_size(parent, &comm->size);

    /* the nonblocking duplicate keeps even creation bounded by the timeout */
    halox__mpi_op_t op = {"endpoint creation (MPI_Comm_idup)", halox__now() + comm->timeout_s};
    halox__mpi_clear(m, 1);
    m->info[0] = (halox__mpiw_info_t){HALOX__MPIW_COLLECTIVE, -1, -1, 0};
    int rc = MPI_Comm_idup(parent, &m->comm, &m->req[0]);
    if (rc != MPI_SUCCESS) {
        char es[MPI_MAX_ERROR_STRING];
        m->comm = MPI_COMM_NULL;
        st = halox__error(HALOX_ERR_COMM, "mpi: MPI_Comm_idup failed: %s",
                          halox__mpiw_errstr(rc, es));
        goto fail;
    }
    st = halox__mpi_wait(comm, 0, 1, 1, &op);
    if (st != HALOX_OK) {
        /* the duplicate may yet complete behind our back; it is leaked, never freed */
        m->comm = MPI_COMM_NULL;
        goto fail;
    }
    /* errors as codes: the library reports, the caller decides whether to abort */
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &comm->rank);
    MPI_Comm_size(m->comm, &comm->size);
    return HALOX_OK;

fail:
    halox__mpi_fini(comm);
    return st;
}

static void halox__mpi_fini(halox_comm_t *comm)
{
    halox__mpi_t *m = halox__mpi(comm);
    if (!m)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* freeing a communicator with operations pending is allowed: they complete normally */
    if (m->comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&m->comm);
    if (!m->leaked) {
        free(m->buf);
        free(m->bounce);
    }
    free(m->req);
    free(m->info);
    free(m->status);
    free(m->index);
    free(m);
    comm->impl = NULL;
}

/* ---- collectives ------------------------------------------------------------------------ */

static halox_status_t halox__mpi_check_rank(halox_comm_t *comm, const char *op, int r)
{
    if (r < 0 || r >= comm->size)
        return halox__error(HALOX_ERR_INVALID_ARG, "mpi: %s: rank %d outside 0..%d", op, r,
                            comm->size - 1);
    return HALOX_OK;
}

static halox_status_t halox__mpi_sendrecv(halox_comm_t *comm, int dst, const void *sbuf,
                                          size_t sbytes, int src, void *rbuf, size_t rbytes)
{
    halox_status_t st = halox__mpi_usable(comm, "sendrecv");
    if (st == HALOX_OK)
        st = halox__mpi_check_rank(comm, "sendrecv", dst);
    if (st == HALOX_OK)
        st = halox__mpi_check_rank(comm, "sendrecv", src);
    if (st == HALOX_OK)
        st = halox__mpi_check_bytes(comm, "sendrecv", sbytes > rbytes ? sbytes : rbytes);
    if (st != HALOX_OK)
        return st;
    /* through the bounce buffer: [received | sent] */
    char *b = halox__mpi_bounce(comm, "sendrecv", rbytes + sbytes);
    if (!b)
        return HALOX_ERR_NO_MEMORY;
    if (sbytes)
        memcpy(b + rbytes, sbuf, sbytes);
    halox__mpi_op_t op = {"sendrecv", halox__mpi_deadline(comm)};
    halox__mpi_clear(halox__mpi(comm), 2);
    st = halox__mpi_irecv(comm, 0, 2, &op, b, rbytes, src, HALOX__MPI_TAG_SENDRECV, -1);
    if (st == HALOX_OK)
        st =
            halox__mpi_isend(comm, 1, 2, &op, b + rbytes, sbytes, dst, HALOX__MPI_TAG_SENDRECV, -1);
    if (st == HALOX_OK)
        st = halox__mpi_wait(comm, 0, 2, 2, &op);
    if (st == HALOX_OK && rbytes)
        memcpy(rbuf, b, rbytes);
    return st;
}

static halox_status_t halox__mpi_alltoallv(halox_comm_t *comm, const void *send,
                                           const size_t *sbytes, const size_t *soffs, void *recv,
                                           const size_t *rbytes, const size_t *roffs)
{
    halox_status_t st = halox__mpi_usable(comm, "alltoallv");
    const int P = comm->size, me = comm->rank;
    for (int r = 0; r < P && st == HALOX_OK; r++) {
        st = halox__mpi_check_bytes(comm, "alltoallv block", sbytes[r]);
        if (st == HALOX_OK)
            st = halox__mpi_check_bytes(comm, "alltoallv block", rbytes[r]);
    }
    if (st == HALOX_OK)
        st = halox__mpi_reserve(halox__mpi(comm), 2 * P);
    if (st != HALOX_OK)
        return st;
    if (sbytes[me] != rbytes[me])
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "mpi: alltoallv: rank %d sends itself %zu bytes but expects %zu", me,
                            sbytes[me], rbytes[me]);
    /* through the bounce buffer: the blocks received, in the order their receives are posted,
     * then those sent */
    size_t in = 0, out = 0;
    for (int r = 0; r < P; r++)
        if (r != me) {
            in += rbytes[r];
            out += sbytes[r];
        }
    char *b = halox__mpi_bounce(comm, "alltoallv", in + out);
    if (!b)
        return HALOX_ERR_NO_MEMORY;
    halox__mpi_op_t op = {"alltoallv", halox__mpi_deadline(comm)};
    halox__mpi_t *m = halox__mpi(comm);
    halox__mpi_clear(m, 2 * P);
    /* empty blocks are skipped on both sides: the sizes were agreed beforehand (transport.h),
     * and migration on many ranks sends to a few neighbours only */
    int n = 0;
    size_t at = 0;
    for (int i = 1; i < P && st == HALOX_OK; i++) {
        int r = (me + P - i) % P; /* spread the receives so not everyone starts at rank 0 */
        if (rbytes[r])
            st = halox__mpi_irecv(comm, n++, 2 * P, &op, b + at, rbytes[r], r,
                                  HALOX__MPI_TAG_ALLTOALLV, -1);
        at += rbytes[r];
    }
    for (int i = 1; i < P && st == HALOX_OK; i++) {
        int r = (me + i) % P;
        if (sbytes[r]) {
            memcpy(b + at, (const char *)send + soffs[r], sbytes[r]);
            st = halox__mpi_isend(comm, n++, 2 * P, &op, b + at, sbytes[r], r,
                                  HALOX__MPI_TAG_ALLTOALLV, -1);
        }
        at += sbytes[r];
    }
    if (st == HALOX_OK)
        st = halox__mpi_wait(comm, 0, n, n, &op);
    if (st != HALOX_OK)
        return st;
    at = 0;
    for (int i = 1; i < P; i++) {
        int r = (me + P - i) % P;
        if (rbytes[r])
            memcpy((char *)recv + roffs[r], b + at, rbytes[r]);
        at += rbytes[r];
    }
    if (sbytes[me])
        memcpy((char *)recv + roffs[me], (const char *)send + soffs[me], sbytes[me]);
    return HALOX_OK;
}

/* A nonblocking collective in request 0: begin (after the checks) before posting it, which gives
 * the bounded wait's op; end with its MPI_I* call's return code (a failed post is reported, else
 * the bounded wait). */
static halox__mpi_op_t halox__mpi_collective_begin(halox_comm_t *comm, const char *what)
{
    halox__mpi_t *m = halox__mpi(comm);
    halox__mpi_clear(m, 1);
    m->info[0] = (halox__mpiw_info_t){HALOX__MPIW_COLLECTIVE, -1, -1, 0};
    return (halox__mpi_op_t){what, halox__mpi_deadline(comm)};
}

static halox_status_t halox__mpi_collective_end(halox_comm_t *comm, halox__mpi_op_t *op,
                                                const char *call, int rc)
{
    if (rc != MPI_SUCCESS)
        return halox__mpi_post_failed(comm, 0, op, call, -1, rc);
    return halox__mpi_wait(comm, 0, 1, 1, op);
}

static halox_status_t halox__mpi_allgather(halox_comm_t *comm, const void *send, void *recv,
                                           size_t bytes)
{
    halox_status_t st = halox__mpi_usable(comm, "allgather");
    if (st == HALOX_OK)
        st = halox__mpi_check_bytes(comm, "allgather", bytes * (size_t)comm->size);
    if (st != HALOX_OK)
        return st;
    halox__mpi_t *m = halox__mpi(comm);
    /* through the bounce buffer, our own block copied into place (MPI_IN_PLACE) */
    const size_t all = bytes * (size_t)comm->size;
    char *b = halox__mpi_bounce(comm, "allgather", all);
    if (!b)
        return HALOX_ERR_NO_MEMORY;
    if (bytes)
        memcpy(b + (size_t)comm->rank * bytes, send, bytes);
    halox__mpi_op_t op = halox__mpi_collective_begin(comm, "allgather");
    int rc = MPI_Iallgather(MPI_IN_PLACE, (int)bytes, MPI_BYTE, b, (int)bytes, MPI_BYTE, m->comm,
                            &m->req[0]);
    st = halox__mpi_collective_end(comm, &op, "MPI_Iallgather", rc);
    if (st == HALOX_OK && all)
        memcpy(recv, b, all);
    return st;
}

static halox_status_t halox__mpi_barrier(halox_comm_t *comm)
{
    halox_status_t st = halox__mpi_usable(comm, "barrier");
    if (st != HALOX_OK)
        return st;
    halox__mpi_t *m = halox__mpi(comm);
    halox__mpi_op_t op = halox__mpi_collective_begin(comm, "barrier");
    return halox__mpi_collective_end(comm, &op, "MPI_Ibarrier", MPI_Ibarrier(m->comm, &m->req[0]));
}

/* ---- halo exchange ---------------------------------------------------------------------- */

static halox_status_t halox__mpi_bind(halox_comm_t *comm, halox_status_t st0)
{
    /* no collective of its own: the arguments' verdict first */
    halox_status_t st = halox__agree(comm, st0, "bind");
    if (st == HALOX_OK)
        st = halox__mpi_usable(comm, "bind");
    if (st != HALOX_OK)
        return st;
    halox__mpi_t *m = halox__mpi(comm);
    const halox_plan_t *plan = comm->plan;
    if ((st = halox__pulse_host_prepare(comm, &m->ph, "mpi")) != HALOX_OK)
        return st;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    size_t total = 0;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        m->off[k] = total;
        total += halox__atom_bytes(comm->real, comm->stride, p->send_count);
        st = halox__mpi_check_bytes(
            comm, "pulse message",
            esize * (size_t)(p->send_count > p->recv_count ? p->send_count : p->recv_count));
        if (st != HALOX_OK)
            return st;
    }
    if (total > m->buf_capacity) {
        free(m->buf);
        m->buf = malloc(total);
        m->buf_capacity = m->buf ? total : 0;
        if (!m->buf)
            return halox__error(HALOX_ERR_NO_MEMORY,
                                "mpi: bind: no memory for %zu bytes of "
                                "staging buffers",
                                total);
    }
    for (int k = 0; k < plan->n_pulses; k++)
        m->ph.pack_to[k] = m->buf + m->off[k];

    /* Handshake: each sender tells its receiver how many atoms it will send, so plans from
     * different builds fail here with a clear message rather than mid-exchange. */
    const int n = plan->n_pulses;
    int32_t mine[HALOX_MAX_PULSES][2], theirs[HALOX_MAX_PULSES][2];
    halox__mpi_op_t op = {"bind", halox__mpi_deadline(comm)};
    halox__mpi_clear(m, 2 * n);
    for (int k = 0; k < n && st == HALOX_OK; k++)
        st = halox__mpi_irecv(comm, k, 2 * n, &op, theirs[k], sizeof theirs[k],
                              plan->pulse[k].recv_rank, HALOX__MPI_TAG_BIND + k, k);
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        mine[k][0] = n;
        mine[k][1] = plan->pulse[k].send_count;
        st = halox__mpi_isend(comm, n + k, 2 * n, &op, mine[k], sizeof mine[k],
                              plan->pulse[k].send_rank, HALOX__MPI_TAG_BIND + k, k);
    }
    if (st == HALOX_OK)
        st = halox__mpi_wait(comm, 0, 2 * n, 2 * n, &op);
    if (st != HALOX_OK)
        return st;
    for (int k = 0; k < n; k++)
        if (theirs[k][0] != n || theirs[k][1] != plan->pulse[k].recv_count)
            return halox__error(HALOX_ERR_STATE,
                                "mpi: bind: rank %d's plan has %d pulses and sends %d atoms in "
                                "pulse %d, but rank %d's plan has %d pulses and expects %d atoms: "
                                "the plans come from different builds; rebuild on every rank, "
                                "then bind on every rank",
                                plan->pulse[k].recv_rank, (int)theirs[k][0], (int)theirs[k][1], k,
                                comm->rank, n, plan->pulse[k].recv_count);
    halox__pulse_host_commit(comm, &m->ph);
    return HALOX_OK;
}

/* An exchange: request k receives pulse k (coordinates into the halo, forces into the staging
 * buffer), request n + k sends it. All receives are posted when the exchange opens; each lands in
 * its own range, read by nobody until it completes. The pulses are walked by pulse_host.c. */
static halox_status_t halox__mpi_open(halox_comm_t *comm, halox__pulse_dir_t dir)
{
    halox__mpi_t *m = halox__mpi(comm);
    const halox_plan_t *plan = comm->plan;
    const int n = plan->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    const int coords = dir == HALOX__PULSE_COORDS;
    m->xop = (halox__mpi_op_t){coords ? "coordinate exchange" : "force exchange",
                               halox__mpi_deadline(comm)};
    halox__mpi_clear(m, 2 * n);
    halox_status_t st = HALOX_OK;
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (halox__pulse_self(plan, k))
            continue; /* the walk's local copy */
        if (coords)
            st = halox__mpi_irecv(
                comm, k, 2 * n, &m->xop, (char *)comm->x + (size_t)p->recv_offset * esize,
                (size_t)p->recv_count * esize, p->recv_rank, HALOX__MPI_TAG_COORDS + k, k);
        else
            st = halox__mpi_irecv(comm, k, 2 * n, &m->xop, m->buf + m->off[k],
                                  (size_t)p->send_count * esize, p->send_rank,
                                  HALOX__MPI_TAG_FORCES + k, k);
    }
    return st;
}

static halox_status_t halox__mpi_send(halox_comm_t *comm, int k)
{
    halox__mpi_t *m = halox__mpi(comm);
    const halox_pulse_t *p = &comm->plan->pulse[k];
    return halox__mpi_isend(comm, comm->plan->n_pulses + k, 2 * comm->plan->n_pulses, &m->xop,
                            m->ph.pack_to[k],
                            halox__atom_bytes(comm->real, comm->stride, p->send_count),
                            p->send_rank, HALOX__MPI_TAG_COORDS + k, k);
}

static halox_status_t halox__mpi_land(halox_comm_t *comm, int j)
{
    return halox__mpi_wait(comm, j, 1, 2 * comm->plan->n_pulses, &halox__mpi(comm)->xop);
}

/* Straight from f: nothing writes that range afterwards. */
static halox_status_t halox__mpi_give(halox_comm_t *comm, int k)
{
    halox__mpi_t *m = halox__mpi(comm);
    const halox_pulse_t *p = &comm->plan->pulse[k];
    return halox__mpi_isend(comm, comm->plan->n_pulses + k, 2 * comm->plan->n_pulses, &m->xop,
                            (const char *)comm->f +
                                halox__atom_bytes(comm->real, comm->stride, p->recv_offset),
                            halox__atom_bytes(comm->real, comm->stride, p->recv_count),
                            p->recv_rank, HALOX__MPI_TAG_FORCES + k, k);
}

static halox_status_t halox__mpi_take(halox_comm_t *comm, int k, const void **src)
{
    halox__mpi_t *m = halox__mpi(comm);
    *src = m->buf + m->off[k];
    return halox__mpi_wait(comm, k, 1, 2 * comm->plan->n_pulses, &m->xop);
}

/* The sends: the walk waited for every receive. */
static halox_status_t halox__mpi_close(halox_comm_t *comm)
{
    const int n = comm->plan->n_pulses;
    return halox__mpi_wait(comm, n, n, 2 * n, &halox__mpi(comm)->xop);
}

static halox_status_t halox__mpi_exchange(halox_comm_t *comm, halox__pulse_dir_t dir)
{
    halox__pulse_host_cursor_t c;
    halox_status_t st = halox__mpi_usable(comm, dir == HALOX__PULSE_COORDS ? "coordinate exchange"
                                                                           : "force exchange");
    if (st == HALOX_OK)
        st = halox__pulse_host_begin(comm, &halox__mpi(comm)->ph, "mpi", dir, &c);
    if (st == HALOX_OK)
        st = halox__mpi_open(comm, dir);
    while (st == HALOX_OK && halox__pulse_host_next(comm, &halox__mpi(comm)->ph, &c))
        st = c.part == HALOX__PULSE_SEND   ? halox__mpi_send(comm, c.k)
             : c.part == HALOX__PULSE_LAND ? halox__mpi_land(comm, c.k)
             : c.part == HALOX__PULSE_GIVE ? halox__mpi_give(comm, c.k)
                                           : halox__mpi_take(comm, c.k, &c.src);
    return st == HALOX_OK ? halox__mpi_close(comm) : st;
}

static halox_status_t halox__mpi_coords(halox_comm_t *comm)
{
    return halox__mpi_exchange(comm, HALOX__PULSE_COORDS);
}

static halox_status_t halox__mpi_forces(halox_comm_t *comm)
{
    return halox__mpi_exchange(comm, HALOX__PULSE_FORCES);
}

const halox_transport_ops_t halox__mpi_ops = {
    .name = "mpi",
    .description = "ranks are MPI processes; two-sided exchange per pulse",
    .init = halox__mpi_init,
    .fini = halox__mpi_fini,
    .sendrecv = halox__mpi_sendrecv,
    .alltoallv = halox__mpi_alltoallv,
    .allgather = halox__mpi_allgather,
    .barrier = halox__mpi_barrier,
    .bind = halox__mpi_bind,
    .coords = halox__mpi_coords,
    .forces = halox__mpi_forces,
};
