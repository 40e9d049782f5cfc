/* A team: the ranks of the `threads` transport as threads of one process (see team.h). Its
 * creation and destruction, the barrier with its status agreement, copy-phase guard and
 * bounded waits, and the abort. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "transports/team.h"

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

int halox__team_aborted(const halox_team_t *team)
{
    return atomic_load(&team->aborted); /* seq_cst: see in_exchange */
}

halox_status_t halox__team_aborted_error(halox_team_t *team, int rank, const char *during)
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

/* Caller holds the mutex. A rank leaving a closing barrier before the others arrived waits for
 * the readers still copying from its buffers: a copy is a bounded memmove, so this ends. */
static void halox__team_wait_readers_locked(halox_team_t *team, halox__bar_t kind)
{
    if (kind != HALOX__BAR_CLOSE)
        return;
    while (team->readers > 0)
        pthread_cond_wait(&team->cond, &team->mutex);
}

halox_status_t halox__team_barrier_as(halox_team_t *team, int rank, double timeout_s,
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

halox_status_t halox__team_barrier(halox_team_t *team, int rank, double timeout_s, const char *what,
                                   long long seq, halox_status_t mine)
{
    return halox__team_barrier_as(team, rank, timeout_s, what, seq, mine, HALOX__BAR_PLAIN);
}

/* The collective a rank is in, published and compared: diverging call orders fail instead of
 * pairing unrelated buffers. */
void halox__team_publish(halox__threads_slot_t *slot, const char *kind, long long seq)
{
    slot->c_kind = kind;
    slot->c_seq = seq;
}

halox_status_t halox__team_same(const halox_team_t *team, int rank, int peer, const char *kind,
                                long long seq)
{
    const halox__threads_slot_t *s = &team->slot[peer];
    if (s->c_seq == seq && s->c_kind && strcmp(s->c_kind, kind) == 0)
        return HALOX_OK;
    return halox__error(HALOX_ERR_STATE,
                        "rank %d is in %s (collective #%lld) but rank %d is in %s (collective "
                        "#%lld): every rank must make the same collective calls in the same order",
                        rank, kind, seq, peer, s->c_kind ? s->c_kind : "none", s->c_seq);
}
