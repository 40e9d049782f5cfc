/* Internal: a team, the ranks of the `threads` transport as threads of one process (the public
 * halox_team_create/destroy/abort of include/halox/topology.h).
 *
 * The team owns what its ranks share: one slot per rank (signals written by peers at any time,
 * everything else written by the owning rank only before a team barrier and read by peers only
 * between that barrier and the next one), the barrier, which also agrees on a status and guards
 * the copy phase of the copying collectives, and the abort. Visibility between threads flows
 * only through the barrier (a mutex) and the signals' release/acquire pairs, so the transport
 * is clean under ThreadSanitizer. */
#ifndef HALOX_TRANSPORTS_TEAM_H
#define HALOX_TRANSPORTS_TEAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/route.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/topology.h"

#define HALOX__CACHE_LINE 64
#define HALOX__WHY_BYTES  768

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

/* Whether the team was aborted (seq_cst: see in_exchange). */
int halox__team_aborted(const halox_team_t *team);

/* The error a rank returns when it stops because the team was aborted; `during` says where
 * ("before an exchange", "waiting for ..."). */
halox_status_t halox__team_aborted_error(halox_team_t *team, int rank, const char *during);

/* Where a barrier stands in its collective: alone, opening the copy phase (peers read each
 * other's buffers after it), or closing it (the buffers may be freed after it). */
typedef enum { HALOX__BAR_PLAIN, HALOX__BAR_OPEN, HALOX__BAR_CLOSE } halox__bar_t;

/* Team barrier bounded by timeout_s, which also agrees on a status: when any rank arrives with
 * an error (`mine`, its message still set), every rank leaves with one (the lowest failing
 * rank's own status there, ABORTED naming it elsewhere), so no rank walks on into a step that
 * others will not take. A timeout or a failed wait aborts the team. `what` and `seq` name the
 * collective in messages. Every rank that passes an opening barrier without a failure must
 * pass the closing one: a rank leaving a closing barrier early waits for the readers still
 * copying from its buffers. */
halox_status_t halox__team_barrier_as(halox_team_t *team, int rank, double timeout_s,
                                      const char *what, long long seq, halox_status_t mine,
                                      halox__bar_t kind);
halox_status_t halox__team_barrier(halox_team_t *team, int rank, double timeout_s, const char *what,
                                   long long seq, halox_status_t mine);

/* Publish which collective this rank is in (before the first barrier). */
void halox__team_publish(halox__threads_slot_t *slot, const char *kind, long long seq);

/* After the first barrier: is rank `peer` in the same collective as we are? */
halox_status_t halox__team_same(const halox_team_t *team, int rank, int peer, const char *kind,
                                long long seq);

#endif
