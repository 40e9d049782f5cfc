/* The `threads` transport: ranks are threads of one process.
 *
 * It is the CPU twin of the GPU-initiated design. In a coordinate exchange the sender stores its
 * atoms straight into the receiver's coordinate array and then publishes the receiver's
 * per-pulse signal with a release store of the step number; receivers acquire-wait on their own
 * signals. Forces travel back the same way into the sender's per-pulse staging area. Signals are
 * 64-bit counters that only grow within an endpoint's life, so nothing is reset between steps.
 *
 * Visibility between threads flows only through those release/acquire pairs and through the
 * team barrier (a mutex), so the transport is clean under ThreadSanitizer.
 *
 * Write-after-read across steps (a receiver's halo overwritten while still in use) is excluded
 * by the causal chain: a sender stores coordinates of step s+1 for pulse k only after its force
 * exchange of step s, which waited for the receiver's forces of pulse k, which the receiver
 * sends only from halox_comm_forces(), after it stopped using its halo. The force staging area is
 * protected the same way by the coordinate signals of the next step.
 *
 * It is also the CPU twin of the `hybrid` GPU transport: pairs of ranks that
 * HALOX_HYBRID_UNREACHABLE declares unable to reach each other's memory (src/core/route.h) go
 * through a two-sided staged path instead. The sender stores the pulse's atoms into a mailbox
 * that the receiver owns (not into the halo or the force staging) and releases the same
 * per-pulse signal, which then means "a message is in your mailbox"; the receiver acquires it
 * and copies the atoms out into its halo (coordinates) or its force staging (forces), as an MPI
 * receive lands a message. A staged pulse's atoms are copied out before any later pulse forwards
 * them. The mailboxes are protected across steps by the same causal chain as the halo.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/route.h"
#include "core/transport.h"
#include "core/util.h"
#include "halox/comm.h"
#include "transports/registry.h"

#define HALOX__CACHE_LINE 64
#define HALOX__WHY_BYTES  768

static const char halox__threads_dim[3] = {'x', 'y', 'z'};

/* One signal per cache line: each is written by a different peer. */
typedef struct halox__threads_signal {
    _Alignas(HALOX__CACHE_LINE) _Atomic uint64_t value;
} halox__threads_signal_t;

/* What one rank shares with the others. Signals are written by peers at any time; everything
 * else is written by the owning rank only before a team barrier and read by peers only between
 * that barrier and the next one. */
typedef struct halox__threads_slot {
    halox__threads_signal_t coord_signal[HALOX_MAX_PULSES];
    halox__threads_signal_t force_signal[HALOX_MAX_PULSES];

    _Alignas(HALOX__CACHE_LINE) int in_use; /* an endpoint exists for this rank (mutex) */

    /* collectives */
    const char *c_kind; /* which collective, and its number, to catch diverging call orders */
    long long c_seq;
    int c_dst;
    const void *c_send;
    size_t c_bytes;
    const size_t *c_sbytes;
    const size_t *c_soffs;

    /* bind */
    const halox_plan_t *plan;
    void *x;
    halox_real_t real;
    int stride;
    char *stage_at[HALOX_MAX_PULSES];  /* where the receiver of pulse k stores our atoms' forces */
    halox__route_t route;              /* direct or staged, per pulse and leg */
    char *mail_x_at[HALOX_MAX_PULSES]; /* staged pulse k: the sender's coordinates for us */
    char *mail_f_at[HALOX_MAX_PULSES]; /* staged pulse k: the forces on the atoms we sent */

    /* force staging and mailbox storage, owned by the team so that they outlive endpoints */
    void *stage;
    size_t stage_bytes;
    void *mail;
    size_t mail_bytes;
} halox__threads_slot_t;

struct halox_team {
    int nranks;
    double timeout_s;
    halox__threads_slot_t *slot;

    pthread_mutex_t mutex;
    pthread_cond_t cond;
    /* barrier state (mutex) */
    int count;
    unsigned long long generation;
    unsigned long long *entered; /* per rank: barriers entered so far */
    /* ranks between the two barriers of a copying collective, reading peers' published buffers
     * (mutex): a rank that leaves its closing barrier early (timeout, abort) waits for them, so
     * no peer reads a buffer its owner has already freed */
    int readers;
    /* status agreement carried by the barrier (mutex): the lowest failing rank wins */
    int acc_bad;
    halox_status_t acc_status;
    char acc_msg[HALOX__WHY_BYTES];
    int done_bad;
    halox_status_t done_status;
    char done_msg[HALOX__WHY_BYTES];

    /* ranks inside halox_comm_coords/forces, which store into peers' arrays: an endpoint is
     * destroyed only when none is (a rank that timed out must not free what a slower peer is
     * still writing; the peer sees the abort on entry or is counted here: both seq_cst) */
    atomic_int in_exchange;
    /* abort: the flag is read without the mutex by spinning waits; the reason under it */
    atomic_int aborted;
    int abort_rank;
    char abort_why[HALOX__WHY_BYTES];
};

/* A rank's endpoint state: peers' addresses resolved once per bind. */
typedef struct halox__threads_comm {
    halox_team_t *team;
    halox__threads_slot_t *self;
    long long collectives;    /* numbers collectives in timeout messages */
    halox__unreach_t unreach; /* HALOX_HYBRID_UNREACHABLE: pairs that take the staged path */
    int bound;
    long long bound_generation;
    const halox_plan_t *bound_plan;
    char *x_dst[HALOX_MAX_PULSES]; /* receiver's x at our pulse-k range (staged: its mailbox) */
    _Atomic uint64_t *coord_signal_dst[HALOX_MAX_PULSES];
    char *f_dst[HALOX_MAX_PULSES]; /* sender's staging for pulse k (staged: its mailbox) */
    _Atomic uint64_t *force_signal_dst[HALOX_MAX_PULSES];
} halox__threads_comm_t;

static halox__threads_comm_t *halox__threads_impl(const halox_comm_t *comm)
{
    return (halox__threads_comm_t *)comm->impl;
}

/* ---- team ------------------------------------------------------------------------------------ */

halox_status_t halox_team_create(int nranks, double timeout_s, halox_team_t **team_p)
{
    if (!team_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "team_create: team_p is NULL");
    *team_p = NULL;
    if (nranks < 1 || nranks > (1 << 20))
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "team_create: %d ranks: a team has 1 to %d ranks", nranks, 1 << 20);
    double bound;
    halox_status_t st = halox__timeout(timeout_s, "team_create", &bound);
    if (st != HALOX_OK)
        return st;
    halox_team_t *team = calloc(1, sizeof *team);
    if (!team)
        return halox__error(HALOX_ERR_NO_MEMORY, "team_create: no memory");
    size_t slot_bytes = sizeof(halox__threads_slot_t) * (size_t)nranks;
    team->slot = aligned_alloc(HALOX__CACHE_LINE, slot_bytes);
    team->entered = calloc((size_t)nranks, sizeof *team->entered);
    if (!team->slot || !team->entered) {
        free(team->slot);
        free(team->entered);
        free(team);
        return halox__error(HALOX_ERR_NO_MEMORY, "team_create: no memory for %d ranks", nranks);
    }
    memset(team->slot, 0, slot_bytes);
    for (int r = 0; r < nranks; r++)
        for (int k = 0; k < HALOX_MAX_PULSES; k++) {
            atomic_init(&team->slot[r].coord_signal[k].value, 0);
            atomic_init(&team->slot[r].force_signal[k].value, 0);
        }

    /* the barrier waits on the monotonic clock: wall-clock jumps must not fire timeouts */
    pthread_condattr_t attr;
    int rc = pthread_condattr_init(&attr);
    if (rc == 0) {
        rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        if (rc == 0)
            rc = pthread_cond_init(&team->cond, &attr);
        pthread_condattr_destroy(&attr);
    }
    if (rc == 0 && (rc = pthread_mutex_init(&team->mutex, NULL)) != 0)
        pthread_cond_destroy(&team->cond);
    if (rc != 0) {
        free(team->slot);
        free(team->entered);
        free(team);
        return halox__error(HALOX_ERR_INTERNAL, "team_create: pthread set-up failed: %s",
                            strerror(rc));
    }
    team->nranks = nranks;
    team->timeout_s = bound;
    team->acc_bad = -1;
    team->done_bad = -1;
    team->abort_rank = -1;
    atomic_init(&team->aborted, 0);
    atomic_init(&team->in_exchange, 0);
    *team_p = team;
    return HALOX_OK;
}

void halox_team_destroy(halox_team_t *team)
{
    if (!team)
        return;
    for (int r = 0; r < team->nranks; r++) {
        free(team->slot[r].stage);
        free(team->slot[r].mail);
    }
    pthread_cond_destroy(&team->cond);
    pthread_mutex_destroy(&team->mutex);
    free(team->slot);
    free(team->entered);
    free(team);
}

/* Caller holds the mutex. The first reason is kept: later ones are consequences. */
static void halox__team_abort_locked(halox_team_t *team, int rank, const char *why)
{
    if (atomic_load_explicit(&team->aborted, memory_order_relaxed))
        return;
    team->abort_rank = rank;
    snprintf(team->abort_why, sizeof team->abort_why, "%s", why ? why : "no reason given");
    atomic_store(&team->aborted, 1); /* seq_cst: see in_exchange */
    pthread_cond_broadcast(&team->cond);
}

void halox_team_abort(halox_team_t *team, int rank, const char *why)
{
    if (!team)
        return;
    pthread_mutex_lock(&team->mutex);
    halox__team_abort_locked(team, rank, why);
    pthread_mutex_unlock(&team->mutex);
}

static int halox__team_aborted(const halox_team_t *team)
{
    return atomic_load(&team->aborted); /* seq_cst: see in_exchange */
}

/* The error a rank returns when it stops because the team was aborted. */
static halox_status_t halox__team_aborted_error(halox_team_t *team, int rank, const char *during)
{
    char why[HALOX__WHY_BYTES];
    pthread_mutex_lock(&team->mutex);
    int by = team->abort_rank;
    snprintf(why, sizeof why, "%s", team->abort_why);
    pthread_mutex_unlock(&team->mutex);
    if (by >= 0)
        return halox__error(HALOX_ERR_ABORTED,
                            "rank %d stopped %s: the team was aborted by rank %d: %s", rank, during,
                            by, why);
    return halox__error(HALOX_ERR_ABORTED, "rank %d stopped %s: the team was aborted: %s", rank,
                        during, why);
}

/* seconds is a validated bound (0 < seconds <= HALOX_TIMEOUT_MAX_S), so the sum cannot overflow
 * time_t; the clamp only keeps a bad value from ever producing an invalid timespec. */
static struct timespec halox__deadline(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (!(seconds > 0))
        seconds = 0;
    if (seconds > HALOX_TIMEOUT_MAX_S)
        seconds = HALOX_TIMEOUT_MAX_S;
    double whole = (double)(long long)seconds;
    ts.tv_sec += (time_t)whole;
    ts.tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* List the ranks that have not entered barrier number `want` (caller holds the mutex). */
static void halox__team_missing(const halox_team_t *team, unsigned long long want, char *buf,
                                size_t size)
{
    size_t used = 0;
    int listed = 0, more = 0;
    buf[0] = '\0';
    for (int r = 0; r < team->nranks; r++) {
        if (team->entered[r] >= want)
            continue;
        if (listed < 16 && used < size) {
            int n = snprintf(buf + used, size - used, "%s%d", listed ? ", " : "", r);
            used += n > 0 ? (size_t)n : 0;
            listed++;
        } else {
            more++;
        }
    }
    if (more && used < size)
        snprintf(buf + used, size - used, " and %d more", more);
}

/* Team barrier bounded by timeout_s, which also agrees on a status: when any rank arrives with
 * an error, every rank leaves with one (the lowest failing rank's own status there, ABORTED
 * naming it elsewhere), so no rank walks on into a step that others will not take. */
/* Where a barrier stands in its collective: alone, opening the copy phase (peers read each
 * other's buffers after it), or closing it (the buffers may be freed after it). */
typedef enum { HALOX__BAR_PLAIN, HALOX__BAR_OPEN, HALOX__BAR_CLOSE } halox__bar_t;

/* Caller holds the mutex. A rank leaving a closing barrier before the others arrived waits for
 * the readers still copying from its buffers: a copy is a bounded memmove, so this ends. */
static void halox__team_wait_readers_locked(halox_team_t *team, halox__bar_t kind)
{
    if (kind != HALOX__BAR_CLOSE)
        return;
    while (team->readers > 0)
        pthread_cond_wait(&team->cond, &team->mutex);
}

static halox_status_t halox__team_barrier_as(halox_team_t *team, int rank, double timeout_s,
                                             const char *what, long long seq, halox_status_t mine,
                                             halox__bar_t kind)
{
    char own[HALOX__WHY_BYTES];
    if (mine != HALOX_OK)
        snprintf(own, sizeof own, "%s", halox_last_error());

    pthread_mutex_lock(&team->mutex);
    if (kind == HALOX__BAR_CLOSE && --team->readers == 0)
        pthread_cond_broadcast(&team->cond);
    if (atomic_load_explicit(&team->aborted, memory_order_relaxed)) {
        halox__team_wait_readers_locked(team, kind);
        pthread_mutex_unlock(&team->mutex);
        if (mine != HALOX_OK)
            return mine; /* our own failure says more than the abort */
        char during[128];
        snprintf(during, sizeof during, "before %s (collective #%lld)", what, seq);
        return halox__team_aborted_error(team, rank, during);
    }
    unsigned long long gen = team->generation;
    team->entered[rank] = gen + 1;
    if (mine != HALOX_OK && (team->acc_bad < 0 || rank < team->acc_bad)) {
        team->acc_bad = rank;
        team->acc_status = mine;
        memcpy(team->acc_msg, own, sizeof own);
    }
    if (++team->count == team->nranks) {
        team->count = 0;
        team->done_bad = team->acc_bad;
        team->done_status = team->acc_status;
        memcpy(team->done_msg, team->acc_msg, sizeof team->done_msg);
        team->acc_bad = -1;
        team->generation++;
        if (kind == HALOX__BAR_OPEN && team->done_bad < 0) /* on a failure nobody copies */
            team->readers = team->nranks;
        pthread_cond_broadcast(&team->cond);
    } else {
        struct timespec deadline = halox__deadline(timeout_s);
        while (team->generation == gen &&
               !atomic_load_explicit(&team->aborted, memory_order_relaxed)) {
            int rc = pthread_cond_timedwait(&team->cond, &team->mutex, &deadline);
            if (rc != 0 && rc != ETIMEDOUT) {
                /* EINVAL and the like would return at once forever: a spin, not a wait */
                char msg[HALOX__WHY_BYTES];
                snprintf(msg, sizeof msg,
                         "rank %d could not wait in %s (collective #%lld): "
                         "pthread_cond_timedwait failed: %s",
                         rank, what, seq, strerror(rc));
                halox__team_abort_locked(team, rank, msg);
                halox__team_wait_readers_locked(team, kind);
                pthread_mutex_unlock(&team->mutex);
                return halox__error(HALOX_ERR_INTERNAL, "%s", msg);
            }
            if (rc == ETIMEDOUT && team->generation == gen &&
                !atomic_load_explicit(&team->aborted, memory_order_relaxed)) {
                char missing[256], msg[HALOX__WHY_BYTES];
                halox__team_missing(team, gen + 1, missing, sizeof missing);
                snprintf(msg, sizeof msg,
                         "rank %d timed out after %.1f s in %s (collective #%lld); ranks "
                         "that had not arrived: %s; they may have stopped or be too slow: "
                         "raise HALOX_TIMEOUT_S or check that every rank makes the same "
                         "collective calls in the same order",
                         rank, timeout_s, what, seq, missing);
                halox__team_abort_locked(team, rank, msg);
                halox__team_wait_readers_locked(team, kind);
                pthread_mutex_unlock(&team->mutex);
                return halox__error(HALOX_ERR_TIMEOUT, "%s", msg);
            }
        }
        if (team->generation == gen) {
            halox__team_wait_readers_locked(team, kind);
            pthread_mutex_unlock(&team->mutex);
            char during[128];
            snprintf(during, sizeof during, "in %s (collective #%lld)", what, seq);
            return halox__team_aborted_error(team, rank, during);
        }
    }
    /* the generation we took part in is complete; done_* cannot change before we arrive again */
    int bad = team->done_bad;
    halox_status_t bad_status = team->done_status;
    char bad_msg[HALOX__WHY_BYTES];
    if (bad >= 0)
        memcpy(bad_msg, team->done_msg, sizeof bad_msg);
    pthread_mutex_unlock(&team->mutex);

    if (mine != HALOX_OK)
        return mine; /* our own message is still set */
    if (bad >= 0)
        return halox__error(HALOX_ERR_ABORTED,
                            "rank %d: %s stopped because rank %d failed (%s): %s", rank, what, bad,
                            halox_status_string(bad_status), bad_msg);
    return HALOX_OK;
}

static halox_status_t halox__team_barrier(halox_team_t *team, int rank, double timeout_s,
                                          const char *what, long long seq, halox_status_t mine)
{
    return halox__team_barrier_as(team, rank, timeout_s, what, seq, mine, HALOX__BAR_PLAIN);
}

/* Publish which collective this rank is in (before the first barrier). */
static void halox__threads_publish(halox__threads_slot_t *slot, const char *kind, long long seq)
{
    slot->c_kind = kind;
    slot->c_seq = seq;
}

/* After the first barrier: is rank `peer` in the same collective as we are? */
static halox_status_t halox__threads_same(const halox_team_t *team, int rank, int peer,
                                          const char *kind, long long seq)
{
    const halox__threads_slot_t *s = &team->slot[peer];
    if (s->c_seq == seq && s->c_kind && strcmp(s->c_kind, kind) == 0)
        return HALOX_OK;
    return halox__error(HALOX_ERR_STATE,
                        "rank %d is in %s (collective #%lld) but rank %d is in %s (collective "
                        "#%lld): every rank must make the same collective calls in the same order",
                        rank, kind, seq, peer, s->c_kind ? s->c_kind : "none", s->c_seq);
}

/* ---- signal waits ---------------------------------------------------------------------------- */

/* Acquire-wait until *signal >= target, bounded by the endpoint's timeout. Spins briefly, then
 * yields, then sleeps with growing pauses: the CI machine runs many rank threads on few cores. */
static halox_status_t halox__threads_wait(halox_comm_t *comm, _Atomic uint64_t *signal,
                                          uint64_t target, const char *what, int k, int peer,
                                          const char *call)
{
    if (atomic_load_explicit(signal, memory_order_acquire) >= target)
        return HALOX_OK;
    halox_team_t *team = halox__threads_impl(comm)->team;
    double start = halox__now();
    long pause_ns = 2000;
    for (unsigned long it = 0;; it++) {
        if (atomic_load_explicit(signal, memory_order_acquire) >= target)
            return HALOX_OK;
        const halox_pulse_t *p = &comm->plan->pulse[k];
        if (halox__team_aborted(team)) {
            char during[192];
            snprintf(during, sizeof during,
                     "waiting for %s of pulse %d (dim %c) from rank %d at step %lld", what, k,
                     halox__threads_dim[p->dim], peer, comm->step);
            return halox__team_aborted_error(team, comm->rank, during);
        }
        if (it < 32)
            continue;
        if (it < 256) {
            sched_yield();
            continue;
        }
        if ((it & 7) == 0 && halox__now() - start > comm->timeout_s) {
            char msg[HALOX__WHY_BYTES];
            snprintf(msg, sizeof msg,
                     "rank %d timed out after %.1f s waiting for %s of pulse %d (dim %c) from "
                     "rank %d at step %lld; the peer may have stopped or be too slow: raise "
                     "HALOX_TIMEOUT_S or check that every rank calls %s",
                     comm->rank, comm->timeout_s, what, k, halox__threads_dim[p->dim], peer,
                     comm->step, call);
            halox_team_abort(team, comm->rank, msg);
            return halox__error(HALOX_ERR_TIMEOUT, "%s", msg);
        }
        struct timespec ts = {0, pause_ns};
        nanosleep(&ts, NULL);
        if (pause_ns < 200000)
            pause_ns *= 2;
    }
}

/* ---- endpoint -------------------------------------------------------------------------------- */

static halox_status_t halox__threads_init(halox_comm_t *comm, const halox_comm_args_t *args)
{
    halox_team_t *team = args->team;
    if (!team)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "threads transport: no team given: create one with "
                            "halox_team_create() and pass it in halox_comm_args_t.team on every "
                            "rank");
    if (args->rank < 0 || args->rank >= team->nranks) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "threads transport: rank %d is outside the team of %d ranks (0..%d)", args->rank,
                 team->nranks, team->nranks - 1);
        /* the other ranks would wait for this one in vain */
        halox_team_abort(team, args->rank, msg);
        return halox__error(HALOX_ERR_INVALID_ARG, "%s", msg);
    }
    int rank = args->rank;
    halox__threads_slot_t *slot = &team->slot[rank];

    pthread_mutex_lock(&team->mutex);
    int taken = slot->in_use;
    slot->in_use = 1;
    pthread_mutex_unlock(&team->mutex);
    if (taken) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "threads transport: rank %d already has an endpoint on this team: every thread "
                 "must use its own rank",
                 rank);
        halox_team_abort(team, rank, msg);
        return halox__error(HALOX_ERR_INVALID_ARG, "%s", msg);
    }

    halox__threads_comm_t *impl = calloc(1, sizeof *impl);
    halox_status_t st = HALOX_OK;
    if (!impl)
        st = halox__error(HALOX_ERR_NO_MEMORY, "threads transport: no memory");
    comm->rank = rank;
    comm->size = team->nranks;
    if (args->timeout_s == 0)
        comm->timeout_s = team->timeout_s; /* the team's bound unless the rank names its own */
    comm->impl = impl;
    if (impl) {
        impl->team = team;
        impl->self = slot;
        /* every thread reads the same environment, so every rank fails here alike */
        st = halox__unreach_from_env(team->nranks, &impl->unreach);
    }
    /* A new endpoint counts steps from 0 again, so its signals start from 0. No peer can write
     * them now: every exchange of an earlier endpoint completed on this rank (its waits saw
     * every peer's last store), and peers store only inside exchanges, which need this rank. */
    for (int k = 0; k < HALOX_MAX_PULSES; k++) {
        atomic_store_explicit(&slot->coord_signal[k].value, 0, memory_order_relaxed);
        atomic_store_explicit(&slot->force_signal[k].value, 0, memory_order_relaxed);
    }
    st = halox__team_barrier(team, rank, comm->timeout_s, "endpoint creation", 0, st);
    if (st != HALOX_OK) {
        free(impl);
        comm->impl = NULL;
        pthread_mutex_lock(&team->mutex);
        slot->in_use = 0;
        pthread_mutex_unlock(&team->mutex);
    }
    return st;
}

static void halox__threads_fini(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    if (!impl)
        return;
    halox_team_t *team = impl->team;
    /* peers still inside an exchange may store into our arrays; they are bounded (they see the
     * abort, or their own timeout) */
    while (atomic_load(&team->in_exchange) > 0)
        sched_yield();
    pthread_mutex_lock(&team->mutex);
    impl->self->in_use = 0;
    pthread_mutex_unlock(&team->mutex);
    free(impl);
    comm->impl = NULL;
}

/* ---- collectives: publish, barrier, copy, barrier -------------------------------------------- */

static halox_status_t halox__threads_sendrecv(halox_comm_t *comm, int dst, const void *sbuf,
                                              size_t sbytes, int src, void *rbuf, size_t rbytes)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    long long seq = ++impl->collectives;
    halox_status_t st = HALOX_OK;
    if (dst < 0 || dst >= comm->size || src < 0 || src >= comm->size)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "rank %d: sendrecv to rank %d from rank %d: ranks are 0..%d", comm->rank,
                          dst, src, comm->size - 1);
    halox__threads_publish(impl->self, "sendrecv", seq);
    impl->self->c_dst = dst;
    impl->self->c_send = sbuf;
    impl->self->c_bytes = sbytes;
    st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "sendrecv", seq, st,
                                HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    const halox__threads_slot_t *from = &team->slot[src];
    st = halox__threads_same(team, comm->rank, src, "sendrecv", seq);
    if (st == HALOX_OK && from->c_dst != comm->rank)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "rank %d: sendrecv expects data from rank %d, but rank %d sends to rank "
                          "%d: every rank must name matching partners",
                          comm->rank, src, src, from->c_dst);
    else if (st == HALOX_OK && from->c_bytes != rbytes)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "rank %d: sendrecv expects %zu bytes from rank %d, but it sends %zu",
                          comm->rank, rbytes, src, from->c_bytes);
    else if (st == HALOX_OK && rbytes)
        memmove(rbuf, from->c_send, rbytes);
    /* the second barrier keeps every send buffer alive until its receiver has copied it */
    return halox__team_barrier_as(team, comm->rank, comm->timeout_s, "sendrecv (copy)", seq, st,
                                  HALOX__BAR_CLOSE);
}

static halox_status_t halox__threads_alltoallv(halox_comm_t *comm, const void *send,
                                               const size_t *sbytes, const size_t *soffs,
                                               void *recv, const size_t *rbytes,
                                               const size_t *roffs)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    long long seq = ++impl->collectives;
    halox__threads_publish(impl->self, "alltoallv", seq);
    impl->self->c_send = send;
    impl->self->c_sbytes = sbytes;
    impl->self->c_soffs = soffs;
    halox_status_t st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "alltoallv", seq,
                                               HALOX_OK, HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++) {
        const halox__threads_slot_t *from = &team->slot[r];
        if ((st = halox__threads_same(team, comm->rank, r, "alltoallv", seq)) != HALOX_OK)
            break;
        size_t n = from->c_sbytes[comm->rank];
        if (n != rbytes[r])
            st = halox__error(HALOX_ERR_INVALID_ARG,
                              "rank %d: alltoallv expects %zu bytes from rank %d, but it sends "
                              "%zu",
                              comm->rank, rbytes[r], r, n);
        else if (n)
            memmove((char *)recv + roffs[r], (const char *)from->c_send + from->c_soffs[comm->rank],
                    n);
    }
    return halox__team_barrier_as(team, comm->rank, comm->timeout_s, "alltoallv (copy)", seq, st,
                                  HALOX__BAR_CLOSE);
}

static halox_status_t halox__threads_allgather(halox_comm_t *comm, const void *send, void *recv,
                                               size_t bytes)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    long long seq = ++impl->collectives;
    halox__threads_publish(impl->self, "allgather", seq);
    impl->self->c_send = send;
    impl->self->c_bytes = bytes;
    halox_status_t st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "allgather", seq,
                                               HALOX_OK, HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++) {
        const halox__threads_slot_t *from = &team->slot[r];
        if ((st = halox__threads_same(team, comm->rank, r, "allgather", seq)) != HALOX_OK)
            break;
        if (from->c_bytes != bytes)
            st = halox__error(HALOX_ERR_INVALID_ARG,
                              "rank %d: allgather of %zu bytes, but rank %d gives %zu", comm->rank,
                              bytes, r, from->c_bytes);
        else if (bytes)
            memmove((char *)recv + (size_t)r * bytes, from->c_send, bytes);
    }
    return halox__team_barrier_as(team, comm->rank, comm->timeout_s, "allgather (copy)", seq, st,
                                  HALOX__BAR_CLOSE);
}

static halox_status_t halox__threads_barrier(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    long long seq = ++impl->collectives;
    halox__threads_publish(impl->self, "barrier", seq);
    return halox__team_barrier(impl->team, comm->rank, comm->timeout_s, "barrier", seq, HALOX_OK);
}

/* ---- bind: publish arrays, resolve peers' addresses ------------------------------------------ */

/* Both ends of a leg must take the same route (they do when every rank reads the same
 * HALOX_HYBRID_UNREACHABLE: one process, one environment). */
static halox_status_t halox__threads_route_error(halox_comm_t *comm, int k, int peer, int mine,
                                                 int theirs)
{
    return halox__error(HALOX_ERR_STATE,
                        "rank %d: pulse %d with rank %d is %s here but %s there: every rank must "
                        "route a pair alike (the same HALOX_HYBRID_UNREACHABLE)",
                        comm->rank, k, peer, halox__route_name(mine), halox__route_name(theirs));
}

/* Our routes (HALOX_HYBRID_UNREACHABLE), and the mailboxes of our staged legs: recv_count atoms
 * per staged receive leg (coordinates in), send_count atoms per staged send leg (forces back). */
static halox_status_t halox__threads_mailboxes(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox__threads_slot_t *slot = impl->self;
    const halox_plan_t *plan = comm->plan;
    halox__route_local(plan, &impl->unreach, &slot->route);
    memset(slot->mail_x_at, 0, sizeof slot->mail_x_at); /* no stale pulses */
    memset(slot->mail_f_at, 0, sizeof slot->mail_f_at);
    if (slot->route.n_staged == 0 || plan->n_pulses > HALOX_MAX_PULSES) /* resolve refuses it */
        return HALOX_OK;
    long long atoms = 1; /* never empty: every staged leg gets an address, also with no atoms */
    for (int k = 0; k < plan->n_pulses; k++) {
        if (slot->route.recv[k] == HALOX__ROUTE_STAGED)
            atoms += plan->pulse[k].recv_count;
        if (slot->route.send[k] == HALOX__ROUTE_STAGED)
            atoms += plan->pulse[k].send_count;
    }
    size_t need = halox__atom_bytes(comm->real, comm->stride, atoms);
    if (need > slot->mail_bytes) {
        void *q = realloc(slot->mail, need);
        if (!q)
            return halox__error(HALOX_ERR_NO_MEMORY,
                                "rank %d: no memory for %zu bytes of mailboxes (pairs in "
                                "HALOX_HYBRID_UNREACHABLE)",
                                comm->rank, need);
        slot->mail = q;
        slot->mail_bytes = need;
    }
    char *at = slot->mail;
    for (int k = 0; k < plan->n_pulses; k++) {
        if (slot->route.recv[k] == HALOX__ROUTE_STAGED) {
            slot->mail_x_at[k] = at;
            at += halox__atom_bytes(comm->real, comm->stride, plan->pulse[k].recv_count);
        }
        if (slot->route.send[k] == HALOX__ROUTE_STAGED) {
            slot->mail_f_at[k] = at;
            at += halox__atom_bytes(comm->real, comm->stride, plan->pulse[k].send_count);
        }
    }
    return HALOX_OK;
}

/* Check that the peers' plans mirror ours and cache where our stores go. */
static halox_status_t halox__threads_resolve(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    const halox_plan_t *plan = comm->plan;
    const int me = comm->rank;
    const size_t ab = halox__atom_bytes(comm->real, comm->stride, 1);
    if (plan->n_pulses < 0 || plan->n_pulses > HALOX_MAX_PULSES)
        return halox__error(HALOX_ERR_INVALID_ARG, "rank %d: plan has %d pulses (at most %d)", me,
                            plan->n_pulses, HALOX_MAX_PULSES);
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (p->send_rank < 0 || p->send_rank >= comm->size || p->recv_rank < 0 ||
            p->recv_rank >= comm->size)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: pulse %d names ranks %d and %d outside 0..%d", me, k,
                                p->send_rank, p->recv_rank, comm->size - 1);
        if (p->dep_offset < 0 || p->dep_offset > p->send_count || p->dep_mask >> k)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: pulse %d has dependency offset %d of %d atoms and "
                                "mask 0x%x: the plan is corrupt",
                                me, k, p->dep_offset, p->send_count, (unsigned)p->dep_mask);
        /* receiver of our atoms */
        const halox__threads_slot_t *to = &team->slot[p->send_rank];
        const halox_plan_t *tp = to->plan;
        if (to->real != comm->real || to->stride != comm->stride)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d uses %d-byte reals with stride %d but rank %d uses "
                                "%d-byte reals with stride %d: every rank must use the same",
                                me, (int)comm->real, comm->stride, p->send_rank, (int)to->real,
                                to->stride);
        if (tp->n_pulses != plan->n_pulses || tp->pulse[k].recv_rank != me ||
            tp->pulse[k].recv_count != p->send_count || tp->pulse[k].dim != p->dim)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: pulse %d sends %d atoms to rank %d, whose plan "
                                "(%d pulses) receives %d atoms from rank %d there: bind plans "
                                "from the same build on every rank",
                                me, k, p->send_count, p->send_rank, tp->n_pulses,
                                tp->pulse[k].recv_count, tp->pulse[k].recv_rank);
        const halox__route_t *rt = &impl->self->route;
        if (to->route.recv[k] != rt->send[k])
            return halox__threads_route_error(comm, k, p->send_rank, rt->send[k],
                                              to->route.recv[k]);
        impl->x_dst[k] = rt->send[k] == HALOX__ROUTE_STAGED
                             ? to->mail_x_at[k]
                             : (char *)to->x + (size_t)tp->pulse[k].recv_offset * ab;
        impl->coord_signal_dst[k] = &team->slot[p->send_rank].coord_signal[k].value;

        /* sender of the atoms we receive: our forces on them go to its staging */
        const halox__threads_slot_t *from = &team->slot[p->recv_rank];
        const halox_plan_t *fp = from->plan;
        if (fp->n_pulses != plan->n_pulses || fp->pulse[k].send_rank != me ||
            fp->pulse[k].send_count != p->recv_count)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d: pulse %d receives %d atoms from rank %d, whose plan "
                                "(%d pulses) sends %d atoms to rank %d there: bind plans from "
                                "the same build on every rank",
                                me, k, p->recv_count, p->recv_rank, fp->n_pulses,
                                fp->pulse[k].send_count, fp->pulse[k].send_rank);
        if (from->route.send[k] != rt->recv[k])
            return halox__threads_route_error(comm, k, p->recv_rank, rt->recv[k],
                                              from->route.send[k]);
        impl->f_dst[k] =
            rt->recv[k] == HALOX__ROUTE_STAGED ? from->mail_f_at[k] : from->stage_at[k];
        impl->force_signal_dst[k] = &team->slot[p->recv_rank].force_signal[k].value;
    }
    return HALOX_OK;
}

static halox_status_t halox__threads_bind(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    halox__threads_slot_t *slot = impl->self;
    const halox_plan_t *plan = comm->plan;
    long long seq = ++impl->collectives;
    impl->bound = 0;

    /* grow our staging area: the receivers of our atoms store their forces here */
    halox_status_t st = HALOX_OK;
    long long atoms = 0;
    for (int k = 0; k < plan->n_pulses; k++)
        atoms += plan->pulse[k].send_count;
    size_t need = halox__atom_bytes(comm->real, comm->stride, atoms);
    if (need > slot->stage_bytes) {
        void *q = realloc(slot->stage, need);
        if (!q) {
            st =
                halox__error(HALOX_ERR_NO_MEMORY,
                             "rank %d: no memory for %zu bytes of force staging", comm->rank, need);
        } else {
            slot->stage = q;
            slot->stage_bytes = need;
        }
    }
    memset(slot->stage_at, 0, sizeof slot->stage_at); /* no stale pulses */
    if (st == HALOX_OK && slot->stage) {
        size_t off = 0;
        for (int k = 0; k < plan->n_pulses; k++) {
            slot->stage_at[k] = (char *)slot->stage + off;
            off += halox__atom_bytes(comm->real, comm->stride, plan->pulse[k].send_count);
        }
    }
    if (st == HALOX_OK)
        st = halox__threads_mailboxes(comm);
    halox__threads_publish(slot, "bind", seq);
    slot->plan = plan;
    slot->x = comm->x;
    slot->real = comm->real;
    slot->stride = comm->stride;

    st =
        halox__team_barrier_as(team, comm->rank, comm->timeout_s, "bind", seq, st, HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        st = halox__threads_same(team, comm->rank, r, "bind", seq);
    if (st == HALOX_OK)
        st = halox__threads_resolve(comm);
    /* nobody leaves before everyone has read the published pointers; all fail together */
    st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "bind (check)", seq, st,
                                HALOX__BAR_CLOSE);
    if (st != HALOX_OK)
        return st;
    impl->bound = 1;
    impl->bound_plan = plan;
    impl->bound_generation = plan->generation;
    return HALOX_OK;
}

static halox_status_t halox__threads_check_bound(halox_comm_t *comm, const char *call)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    if (!impl->bound || impl->bound_plan != comm->plan ||
        impl->bound_generation != comm->plan->generation)
        return halox__error(HALOX_ERR_STATE,
                            "rank %d: %s on a plan that changed since halox_comm_bind(): bind "
                            "again after every plan build",
                            comm->rank, call);
    if (halox__team_aborted(impl->team))
        return halox__team_aborted_error(impl->team, comm->rank, "before an exchange");
    return HALOX_OK;
}

/* ---- exchanges ------------------------------------------------------------------------------- */

/* Pulse j's atoms are in our halo: its signal arrived, and for a staged pulse the message is
 * copied out of our mailbox (once; `landed` keeps count), before any later pulse forwards it. */
static halox_status_t halox__threads_land(halox_comm_t *comm, int j, uint64_t step,
                                          uint32_t *landed)
{
    if (*landed & (1u << j))
        return HALOX_OK;
    halox__threads_slot_t *self = halox__threads_impl(comm)->self;
    const halox_pulse_t *p = &comm->plan->pulse[j];
    halox_status_t st = halox__threads_wait(comm, &self->coord_signal[j].value, step, "coordinates",
                                            j, p->recv_rank, "halox_comm_coords");
    if (st != HALOX_OK)
        return st;
    if (self->route.recv[j] == HALOX__ROUTE_STAGED && p->recv_count > 0)
        memcpy((char *)comm->x + halox__atom_bytes(comm->real, comm->stride, p->recv_offset),
               self->mail_x_at[j], halox__atom_bytes(comm->real, comm->stride, p->recv_count));
    *landed |= 1u << j;
    return HALOX_OK;
}

static halox_status_t halox__threads_coords_in(halox_comm_t *comm)
{
    halox_status_t st = halox__threads_check_bound(comm, "halox_comm_coords");
    if (st != HALOX_OK)
        return st;
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    const halox_plan_t *plan = comm->plan;
    const halox_real_t real = comm->real;
    const int stride = comm->stride;
    const uint64_t step = (uint64_t)comm->step;

    uint32_t landed = 0;
    /* Phase 1: home atoms need no wait; store them into every receiver (or its mailbox) at
     * once. */
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        halox__pack_coords(real, stride, impl->x_dst[k], comm->x, p->send_index, p->dep_offset,
                           p->dim, p->shift);
    }
    /* Phase 2, in pulse order: forwarded atoms once the pulses that delivered them are in. */
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        for (int j = 0; j < k; j++) {
            if (!(p->dep_mask & (1u << j)))
                continue;
            if ((st = halox__threads_land(comm, j, step, &landed)) != HALOX_OK)
                return st;
        }
        int rest = p->send_count - p->dep_offset;
        if (rest > 0)
            halox__pack_coords(real, stride,
                               impl->x_dst[k] + halox__atom_bytes(real, stride, p->dep_offset),
                               comm->x, p->send_index + p->dep_offset, rest, p->dim, p->shift);
        /* every pulse signals, also when empty: later pulses and the receiver wait for it */
        atomic_store_explicit(impl->coord_signal_dst[k], step, memory_order_release);
    }
    /* Our own halo: every pulse delivers (possibly zero atoms). */
    for (int k = 0; k < plan->n_pulses; k++)
        if ((st = halox__threads_land(comm, k, step, &landed)) != HALOX_OK)
            return st;
    return HALOX_OK;
}

static halox_status_t halox__threads_forces_in(halox_comm_t *comm)
{
    halox_status_t st = halox__threads_check_bound(comm, "halox_comm_forces");
    if (st != HALOX_OK)
        return st;
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox__threads_slot_t *self = impl->self;
    const halox_plan_t *plan = comm->plan;
    const halox_real_t real = comm->real;
    const int stride = comm->stride;
    const uint64_t step = (uint64_t)comm->step;

    /* Reverse order: when pulse k is handled, the later pulses that forwarded atoms received in
     * k have already added their contributions to them, so their forces are complete. */
    for (int k = plan->n_pulses - 1; k >= 0; k--) {
        const halox_pulse_t *p = &plan->pulse[k];
        /* receiver role: our forces on the atoms we received go back to their sender */
        if (p->recv_count > 0)
            memcpy(impl->f_dst[k],
                   (const char *)comm->f + halox__atom_bytes(real, stride, p->recv_offset),
                   halox__atom_bytes(real, stride, p->recv_count));
        atomic_store_explicit(impl->force_signal_dst[k], step, memory_order_release);

        /* sender role: add what our receiver sent back, in map order like the reference (a
         * staged leg's message is copied out of our mailbox into the staging first) */
        st = halox__threads_wait(comm, &self->force_signal[k].value, step, "forces", k,
                                 p->send_rank, "halox_comm_forces");
        if (st != HALOX_OK)
            return st;
        if (self->route.send[k] == HALOX__ROUTE_STAGED && p->send_count > 0)
            memcpy(self->stage_at[k], self->mail_f_at[k],
                   halox__atom_bytes(real, stride, p->send_count));
        halox__add_forces(real, stride, comm->f, p->send_index, p->send_count, self->stage_at[k]);
    }
    return HALOX_OK;
}

/* The exchanges counted in team->in_exchange (entered before the abort check, seq_cst). */
static halox_status_t halox__threads_coords(halox_comm_t *comm)
{
    halox_team_t *team = halox__threads_impl(comm)->team;
    atomic_fetch_add(&team->in_exchange, 1);
    halox_status_t st = halox__threads_coords_in(comm);
    atomic_fetch_sub(&team->in_exchange, 1);
    return st;
}

static halox_status_t halox__threads_forces(halox_comm_t *comm)
{
    halox_team_t *team = halox__threads_impl(comm)->team;
    atomic_fetch_add(&team->in_exchange, 1);
    halox_status_t st = halox__threads_forces_in(comm);
    atomic_fetch_sub(&team->in_exchange, 1);
    return st;
}

const halox_transport_ops_t halox__threads_ops = {
    .name = "threads",
    .threads = 1,
    .description = "ranks are threads of one process; direct stores into peers' arrays and "
                   "release/acquire per-pulse signals (the CPU twin of GPU-initiated exchange); "
                   "pairs in HALOX_HYBRID_UNREACHABLE go through a mailbox copy (as hybrid)",
    .init = halox__threads_init,
    .fini = halox__threads_fini,
    .sendrecv = halox__threads_sendrecv,
    .alltoallv = halox__threads_alltoallv,
    .allgather = halox__threads_allgather,
    .barrier = halox__threads_barrier,
    .bind = halox__threads_bind,
    .coords = halox__threads_coords,
    .forces = halox__threads_forces,
};
