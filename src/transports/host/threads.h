/* Internal: the `threads` transport's endpoint, shared by its two files:
 *   threads.c           the endpoint (creation on a team, destruction) and the set-up
 *                       collectives (publish, barrier, copy, barrier); the table of functions
 *   threads_exchange.c  bind (arrays published, peers' addresses resolved) and the halo
 *                       exchange (direct stores or mailboxes, per-pulse signals)
 * The team and its barrier are in team.c, the walk through the pulses in pulse_host.c. */
#ifndef HALOX_TRANSPORTS_THREADS_H
#define HALOX_TRANSPORTS_THREADS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/route.h"
#include "core/transport.h"
#include "transports/host/pulse_host.h"
#include "transports/team.h"

/* A rank's endpoint state: peers' addresses resolved once per bind. */
typedef struct halox__threads_comm {
    halox_team_t *team;
    halox__threads_slot_t *self;
    long long collectives;    /* numbers collectives in timeout messages */
    halox__unreach_t unreach; /* HALOX_HYBRID_UNREACHABLE: pairs that take the staged path */
    halox__pulse_host_t ph;   /* the pulse walk's part; ph.pack_to[k]: where pulse k's atoms
                                 go (the receiver's x at our pulse-k range, or its mailbox) */
    _Atomic uint64_t *coord_signal_dst[HALOX_MAX_PULSES];
    char *f_dst[HALOX_MAX_PULSES]; /* sender's staging for pulse k (staged: its mailbox) */
    _Atomic uint64_t *force_signal_dst[HALOX_MAX_PULSES];
} halox__threads_comm_t;

static inline halox__threads_comm_t *halox__threads_impl(const halox_comm_t *comm)
{
    return (halox__threads_comm_t *)comm->impl;
}

/* threads_exchange.c: the table's bind, coords and forces. */
halox_status_t halox__threads_bind(halox_comm_t *comm, halox_status_t st0);
halox_status_t halox__threads_coords(halox_comm_t *comm);
halox_status_t halox__threads_forces(halox_comm_t *comm);

#endif
