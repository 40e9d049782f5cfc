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
 *
 * This file holds the endpoint and the set-up collectives; the team and its barrier are in
 * team.c, bind and the exchange's parts in threads_exchange.c (see threads.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "transports/host/threads.h"
#include "transports/registry.h"

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
    halox__team_publish(impl->self, "sendrecv", seq);
    impl->self->c_dst = dst;
    impl->self->c_send = sbuf;
    impl->self->c_bytes = sbytes;
    st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "sendrecv", seq, st,
                                HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    const halox__threads_slot_t *from = &team->slot[src];
    st = halox__team_same(team, comm->rank, src, "sendrecv", seq);
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
    halox__team_publish(impl->self, "alltoallv", seq);
    impl->self->c_send = send;
    impl->self->c_sbytes = sbytes;
    impl->self->c_soffs = soffs;
    halox_status_t st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "alltoallv", seq,
                                               HALOX_OK, HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++) {
        const halox__threads_slot_t *from = &team->slot[r];
        if ((st = halox__team_same(team, comm->rank, r, "alltoallv", seq)) != HALOX_OK)
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
    halox__team_publish(impl->self, "allgather", seq);
    impl->self->c_send = send;
    impl->self->c_bytes = bytes;
    halox_status_t st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "allgather", seq,
                                               HALOX_OK, HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++) {
        const halox__threads_slot_t *from = &team->slot[r];
        if ((st = halox__team_same(team, comm->rank, r, "allgather", seq)) != HALOX_OK)
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
    halox__team_publish(impl->self, "barrier", seq);
    return halox__team_barrier(impl->team, comm->rank, comm->timeout_s, "barrier", seq, HALOX_OK);
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
