/* The halo exchange's pulses on the host, once for the CPU transports: see pulse_host.h. */
#include <string.h>

#include "core/error.h"
#include "core/pack.h"
#include "transports/host/pulse_host.h"

halox_status_t halox__pulse_host_prepare(halox_comm_t *comm, halox__pulse_host_t *ph,
                                         const char *name)
{
    ph->bound = 0;
    ph->plan = NULL;
    memset(ph->pack_to, 0, sizeof ph->pack_to); /* no stale pulses */
    return halox__pulse_deps(comm->plan, name, &ph->deps);
}

void halox__pulse_host_commit(halox_comm_t *comm, halox__pulse_host_t *ph)
{
    ph->bound = 1;
    ph->plan = comm->plan;
    ph->generation = comm->plan->generation;
}

static halox_status_t halox__pulse_host_check(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                              const halox__pulse_leg_t *leg, const char *op)
{
    if (!ph->bound || !comm->plan || ph->plan != comm->plan)
        return halox__error(HALOX_ERR_STATE,
                            "%s: rank %d: %s without a bound plan: call halox_comm_bind() after "
                            "every plan build",
                            leg->name, comm->rank, op);
    if (ph->generation != comm->plan->generation)
        return halox__error(HALOX_ERR_STATE,
                            "%s: rank %d: %s: the bound plan was rebuilt (generation %lld, bound "
                            "%lld) without a new halox_comm_bind(): bind after every plan build",
                            leg->name, comm->rank, op, comm->plan->generation, ph->generation);
    return HALOX_OK;
}

/* Pulse k's atoms from map entry `from` on are packed: a self pulse's straight into our own
 * halo (then it has landed), a remote one's where the transport said, and sent. */
static halox_status_t halox__pulse_host_pack(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                             const halox__pulse_leg_t *leg, int k, int from, int to,
                                             uint32_t *landed)
{
    const halox_pulse_t *p = &comm->plan->pulse[k];
    const int self = halox__pulse_self(comm->plan, k);
    char *dst = self ? (char *)comm->x + halox__atom_bytes(comm->real, comm->stride, p->recv_offset)
                     : ph->pack_to[k];
    if (to > from)
        halox__pack_coords(comm->real, comm->stride,
                           dst + halox__atom_bytes(comm->real, comm->stride, from), comm->x,
                           p->send_index + from, to - from, p->dim, p->shift);
    if (to < p->send_count)
        return HALOX_OK;
    if (self) {
        *landed |= 1u << k;
        return HALOX_OK;
    }
    return leg->send(comm, k);
}

/* Pulses in order. Home atoms need no wait: every map's home atoms are packed at once, and the
 * pulses that hold nothing else go out right away; each other pulse waits only for the pulses
 * whose atoms it forwards. */
static halox_status_t halox__pulse_host_coords(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                               const halox__pulse_leg_t *leg)
{
    halox_status_t st = HALOX_OK;
    const halox_plan_t *plan = comm->plan;
    const int n = plan->n_pulses;
    uint32_t landed = 0; /* in our halo: received, or a self pulse copied */
    uint32_t out = 0;    /* packed completely (and sent) */
    for (int k = 0; k < n; k++) {
        const int h = ph->deps.home_prefix[k];
        const int all = ph->deps.needs[k] ? h : plan->pulse[k].send_count;
        if ((st = halox__pulse_host_pack(comm, ph, leg, k, 0, all, &landed)) != HALOX_OK)
            return st;
        if (all == plan->pulse[k].send_count)
            out |= 1u << k;
    }
    for (int k = 0; k < n; k++) {
        if (out & (1u << k))
            continue;
        for (int j = 0; j < k; j++) {
            if (!(ph->deps.needs[k] & (1u << j)) || (landed & (1u << j)))
                continue;
            if ((st = leg->land(comm, j)) != HALOX_OK)
                return st;
            landed |= 1u << j;
        }
        st = halox__pulse_host_pack(comm, ph, leg, k, ph->deps.home_prefix[k],
                                    plan->pulse[k].send_count, &landed);
        if (st != HALOX_OK)
            return st;
    }
    /* our own halo: every pulse delivers (possibly zero atoms) */
    for (int k = 0; k < n; k++) {
        if (landed & (1u << k))
            continue;
        if ((st = leg->land(comm, k)) != HALOX_OK)
            return st;
        landed |= 1u << k;
    }
    return HALOX_OK;
}

/* Pulses in reverse order. The forces on pulse k's received atoms go back as soon as no pulse
 * still to be added forwards atoms of k (later pulses added theirs to them first, so they are
 * complete); the returned forces are added strictly in reverse pulse order, in map order, as
 * the reference does. A self pulse adds its own halo's forces straight from f. */
static halox_status_t halox__pulse_host_forces(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                               const halox__pulse_leg_t *leg)
{
    halox_status_t st = HALOX_OK;
    const halox_plan_t *plan = comm->plan;
    const int n = plan->n_pulses;
    uint32_t given = 0;
    for (int acc = n - 1; acc >= 0; acc--) {
        /* pulses [acc + 1, n) are added in: give every range they no longer touch */
        const uint32_t pending = (1u << (acc + 1)) - 1;
        for (int k = n - 1; k >= 0; k--) {
            if ((given & (1u << k)) || (ph->deps.fwd[k] & pending))
                continue;
            if (!halox__pulse_self(plan, k) && (st = leg->give(comm, k)) != HALOX_OK)
                return st;
            given |= 1u << k;
        }
        const halox_pulse_t *p = &plan->pulse[acc];
        const void *src =
            (const char *)comm->f + halox__atom_bytes(comm->real, comm->stride, p->recv_offset);
        if (!halox__pulse_self(plan, acc) && (st = leg->take(comm, acc, &src)) != HALOX_OK)
            return st;
        halox__add_forces(comm->real, comm->stride, comm->f, p->send_index, p->send_count, src);
    }
    return HALOX_OK;
}

halox_status_t halox__pulse_host_run(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                     const halox__pulse_leg_t *leg, halox__pulse_dir_t dir)
{
    const int coords = dir == HALOX__PULSE_COORDS;
    halox_status_t st =
        halox__pulse_host_check(comm, ph, leg, coords ? "coordinate exchange" : "force exchange");
    if (st == HALOX_OK && leg->open)
        st = leg->open(comm, dir);
    if (st == HALOX_OK)
        st = coords ? halox__pulse_host_coords(comm, ph, leg)
                    : halox__pulse_host_forces(comm, ph, leg);
    if (st == HALOX_OK && leg->close)
        st = leg->close(comm, dir);
    return st;
}
