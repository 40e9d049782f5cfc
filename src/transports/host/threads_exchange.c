/* The `threads` transport's bind and its halo exchange (see threads.c for the design, threads.h
 * for the split). The pulses are walked by pulse_host.c; the parts below store straight
 * into the peer (or its mailbox, for a staged pair) and releases the pulse's signal, and waits
 * with acquire loads on its own signals, copying a staged message out of its mailbox. */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "transports/host/threads.h"

static const char halox__threads_dim[3] = {'x', 'y', 'z'};

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

/* Grow team-owned storage (*p, *bytes) to at least `need` bytes; 0 when out of memory. */
static int halox__threads_reserve(void **p, size_t *bytes, size_t need)
{
    if (need <= *bytes)
        return 1;
    void *q = realloc(*p, need);
    if (!q)
        return 0;
    *p = q;
    *bytes = need;
    return 1;
}

/* Our storage, owned by the team: the force staging (the receivers of our atoms store their
 * forces there, send_count atoms per pulse), and for the staged legs of our routes
 * (HALOX_HYBRID_UNREACHABLE) the mailboxes: recv_count atoms per staged receive leg (coordinates
 * in), send_count atoms per staged send leg (forces back). */
static halox_status_t halox__threads_storage(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox__threads_slot_t *slot = impl->self;
    const halox_plan_t *plan = comm->plan;
    const halox__route_t *rt = &slot->route;
    halox__route_local(plan, &impl->unreach, &slot->route);
    memset(slot->mail_x_at, 0, sizeof slot->mail_x_at); /* no stale pulses */
    memset(slot->mail_f_at, 0, sizeof slot->mail_f_at);
    long long stage = 0, mail = 1; /* mail never empty: every staged leg gets an address */
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        stage += p->send_count;
        mail += (rt->recv[k] == HALOX__ROUTE_STAGED ? p->recv_count : 0) +
                (rt->send[k] == HALOX__ROUTE_STAGED ? p->send_count : 0);
    }
    size_t need = halox__atom_bytes(comm->real, comm->stride, stage);
    if (!halox__threads_reserve(&slot->stage, &slot->stage_bytes, need))
        return halox__error(HALOX_ERR_NO_MEMORY,
                            "rank %d: no memory for %zu bytes of force staging", comm->rank, need);
    need = halox__atom_bytes(comm->real, comm->stride, mail);
    if (rt->n_staged > 0 && !halox__threads_reserve(&slot->mail, &slot->mail_bytes, need))
        return halox__error(HALOX_ERR_NO_MEMORY,
                            "rank %d: no memory for %zu bytes of mailboxes (pairs in "
                            "HALOX_HYBRID_UNREACHABLE)",
                            comm->rank, need);
    size_t at = 0, mat = 0;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (slot->stage)
            slot->stage_at[k] = (char *)slot->stage + at;
        at += halox__atom_bytes(comm->real, comm->stride, p->send_count);
        if (rt->n_staged > 0 && rt->recv[k] == HALOX__ROUTE_STAGED) {
            slot->mail_x_at[k] = (char *)slot->mail + mat;
            mat += halox__atom_bytes(comm->real, comm->stride, p->recv_count);
        }
        if (rt->n_staged > 0 && rt->send[k] == HALOX__ROUTE_STAGED) {
            slot->mail_f_at[k] = (char *)slot->mail + mat;
            mat += halox__atom_bytes(comm->real, comm->stride, p->send_count);
        }
    }
    return HALOX_OK;
}

/* Our pulse k against pulse k of a peer's plan pp: our send leg must be its receive leg, or
 * (receiving) our receive leg its send leg, with the same count and dimension. */
static halox_status_t halox__threads_mirror(const halox_comm_t *comm, int k, const halox_plan_t *pp,
                                            int receiving)
{
    const halox_pulse_t *p = &comm->plan->pulse[k], *q = &pp->pulse[k];
    const int count = receiving ? p->recv_count : p->send_count;
    const int peer = receiving ? p->recv_rank : p->send_rank;
    const int their_rank = receiving ? q->send_rank : q->recv_rank;
    const int their_count = receiving ? q->send_count : q->recv_count;
    if (pp->n_pulses == comm->plan->n_pulses && their_rank == comm->rank && their_count == count &&
        q->dim == p->dim)
        return HALOX_OK;
    return halox__error(HALOX_ERR_INVALID_ARG,
                        "rank %d: pulse %d %s %d atoms %s rank %d, whose plan (%d pulses) %s %d "
                        "atoms %s rank %d there: bind plans from the same build on every rank",
                        comm->rank, k, receiving ? "receives" : "sends", count,
                        receiving ? "from" : "to", peer, pp->n_pulses,
                        receiving ? "sends" : "receives", their_count, receiving ? "to" : "from",
                        their_rank);
}

/* Check that the peers' plans mirror ours and cache where our stores go (our own pulses were
 * checked by halox__pulse_host_prepare, every rank's before the first barrier). */
static halox_status_t halox__threads_resolve(halox_comm_t *comm)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    const halox_plan_t *plan = comm->plan;
    const int me = comm->rank;
    const size_t ab = halox__atom_bytes(comm->real, comm->stride, 1);
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        /* receiver of our atoms */
        const halox__threads_slot_t *to = &team->slot[p->send_rank];
        const halox_plan_t *tp = to->plan;
        if (to->real != comm->real || to->stride != comm->stride)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "rank %d uses %d-byte reals with stride %d but rank %d uses "
                                "%d-byte reals with stride %d: every rank must use the same",
                                me, (int)comm->real, comm->stride, p->send_rank, (int)to->real,
                                to->stride);
        halox_status_t st = halox__threads_mirror(comm, k, tp, 0);
        if (st != HALOX_OK)
            return st;
        const halox__route_t *rt = &impl->self->route;
        if (to->route.recv[k] != rt->send[k])
            return halox__threads_route_error(comm, k, p->send_rank, rt->send[k],
                                              to->route.recv[k]);
        impl->ph.pack_to[k] = rt->send[k] == HALOX__ROUTE_STAGED
                                  ? to->mail_x_at[k]
                                  : (char *)to->x + (size_t)tp->pulse[k].recv_offset * ab;
        impl->coord_signal_dst[k] = &team->slot[p->send_rank].coord_signal[k].value;

        /* sender of the atoms we receive: our forces on them go to its staging */
        const halox__threads_slot_t *from = &team->slot[p->recv_rank];
        const halox_plan_t *fp = from->plan;
        if ((st = halox__threads_mirror(comm, k, fp, 1)) != HALOX_OK)
            return st;
        if (from->route.send[k] != rt->recv[k])
            return halox__threads_route_error(comm, k, p->recv_rank, rt->recv[k],
                                              from->route.send[k]);
        impl->f_dst[k] =
            rt->recv[k] == HALOX__ROUTE_STAGED ? from->mail_f_at[k] : from->stage_at[k];
        impl->force_signal_dst[k] = &team->slot[p->recv_rank].force_signal[k].value;
    }
    return HALOX_OK;
}

halox_status_t halox__threads_bind(halox_comm_t *comm, halox_status_t st0)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox_team_t *team = impl->team;
    halox__threads_slot_t *slot = impl->self;
    /* the arguments' verdict first (no plan after a failure there) */
    halox_status_t st = halox__agree(comm, st0, "bind");
    if (st != HALOX_OK)
        return st;
    long long seq = ++impl->collectives;
    /* our own pulses first: nothing below may index past them */
    st = halox__pulse_host_prepare(comm, &impl->ph, "threads");
    memset(slot->stage_at, 0, sizeof slot->stage_at); /* no stale pulses */
    if (st == HALOX_OK)
        st = halox__threads_storage(comm);
    halox__team_publish(slot, "bind", seq);
    slot->plan = comm->plan;
    slot->x = comm->x;
    slot->real = comm->real;
    slot->stride = comm->stride;

    st =
        halox__team_barrier_as(team, comm->rank, comm->timeout_s, "bind", seq, st, HALOX__BAR_OPEN);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        st = halox__team_same(team, comm->rank, r, "bind", seq);
    if (st == HALOX_OK)
        st = halox__threads_resolve(comm);
    /* nobody leaves before everyone has read the published pointers; all fail together */
    st = halox__team_barrier_as(team, comm->rank, comm->timeout_s, "bind (check)", seq, st,
                                HALOX__BAR_CLOSE);
    if (st != HALOX_OK)
        return st;
    halox__pulse_host_commit(comm, &impl->ph);
    return HALOX_OK;
}

/* ---- the exchange: its parts of the walk (pulse_host.h) -----------------------------------------
 */

/* The start of an exchange: the team is not aborted. */
static halox_status_t halox__threads_open(halox_comm_t *comm)
{
    halox_team_t *team = halox__threads_impl(comm)->team;
    if (halox__team_aborted(team))
        return halox__team_aborted_error(team, comm->rank, "before an exchange");
    return HALOX_OK;
}

/* Pulse k's atoms are in the receiver's halo (or its mailbox): tell it. */
static halox_status_t halox__threads_send(halox_comm_t *comm, int k)
{
    atomic_store_explicit(halox__threads_impl(comm)->coord_signal_dst[k], (uint64_t)comm->step,
                          memory_order_release);
    return HALOX_OK;
}

/* Pulse j's atoms are in our halo: its signal arrived, and for a staged pulse the message is
 * copied out of our mailbox, before any later pulse forwards it (the walk lands it once). */
static halox_status_t halox__threads_land(halox_comm_t *comm, int j)
{
    halox__threads_slot_t *self = halox__threads_impl(comm)->self;
    const halox_pulse_t *p = &comm->plan->pulse[j];
    halox_status_t st =
        halox__threads_wait(comm, &self->coord_signal[j].value, (uint64_t)comm->step, "coordinates",
                            j, p->recv_rank, "halox_comm_coords");
    if (st != HALOX_OK)
        return st;
    if (self->route.recv[j] == HALOX__ROUTE_STAGED && p->recv_count > 0)
        memcpy((char *)comm->x + halox__atom_bytes(comm->real, comm->stride, p->recv_offset),
               self->mail_x_at[j], halox__atom_bytes(comm->real, comm->stride, p->recv_count));
    return HALOX_OK;
}

/* Receiver role: our forces on the atoms we received in pulse k go back to their sender. */
static halox_status_t halox__threads_give(halox_comm_t *comm, int k)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    const halox_pulse_t *p = &comm->plan->pulse[k];
    if (p->recv_count > 0)
        memcpy(impl->f_dst[k],
               (const char *)comm->f + halox__atom_bytes(comm->real, comm->stride, p->recv_offset),
               halox__atom_bytes(comm->real, comm->stride, p->recv_count));
    atomic_store_explicit(impl->force_signal_dst[k], (uint64_t)comm->step, memory_order_release);
    return HALOX_OK;
}

/* Sender role: what our receiver of pulse k sent back is in our staging (a staged leg's message
 * is copied out of our mailbox into it first). */
static halox_status_t halox__threads_take(halox_comm_t *comm, int k, const void **src)
{
    halox__threads_slot_t *self = halox__threads_impl(comm)->self;
    const halox_pulse_t *p = &comm->plan->pulse[k];
    halox_status_t st =
        halox__threads_wait(comm, &self->force_signal[k].value, (uint64_t)comm->step, "forces", k,
                            p->send_rank, "halox_comm_forces");
    if (st != HALOX_OK)
        return st;
    if (self->route.send[k] == HALOX__ROUTE_STAGED && p->send_count > 0)
        memcpy(self->stage_at[k], self->mail_f_at[k],
               halox__atom_bytes(comm->real, comm->stride, p->send_count));
    *src = self->stage_at[k];
    return HALOX_OK;
}

/* The exchanges are counted in team->in_exchange (entered before the abort check, seq_cst). */
static halox_status_t halox__threads_exchange(halox_comm_t *comm, halox__pulse_dir_t dir)
{
    halox__threads_comm_t *impl = halox__threads_impl(comm);
    halox__pulse_host_cursor_t c;
    atomic_fetch_add(&impl->team->in_exchange, 1);
    halox_status_t st = halox__pulse_host_begin(comm, &impl->ph, "threads", dir, &c);
    if (st == HALOX_OK)
        st = halox__threads_open(comm);
    while (st == HALOX_OK && halox__pulse_host_next(comm, &impl->ph, &c))
        st = c.part == HALOX__PULSE_SEND   ? halox__threads_send(comm, c.k)
             : c.part == HALOX__PULSE_LAND ? halox__threads_land(comm, c.k)
             : c.part == HALOX__PULSE_GIVE ? halox__threads_give(comm, c.k)
                                           : halox__threads_take(comm, c.k, &c.src);
    atomic_fetch_sub(&impl->team->in_exchange, 1);
    return st;
}

halox_status_t halox__threads_coords(halox_comm_t *comm)
{
    return halox__threads_exchange(comm, HALOX__PULSE_COORDS);
}

halox_status_t halox__threads_forces(halox_comm_t *comm)
{
    return halox__threads_exchange(comm, HALOX__PULSE_FORCES);
}
