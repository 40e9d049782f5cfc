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
                                              const char *name, const char *op)
{
    if (!ph->bound || !comm->plan || ph->plan != comm->plan)
        return halox__error(HALOX_ERR_STATE,
                            "%s: rank %d: %s without a bound plan: call halox_comm_bind() after "
                            "every plan build",
                            name, comm->rank, op);
    if (ph->generation != comm->plan->generation)
        return halox__error(HALOX_ERR_STATE,
                            "%s: rank %d: %s: the bound plan was rebuilt (generation %lld, bound "
                            "%lld) without a new halox_comm_bind(): bind after every plan build",
                            name, comm->rank, op, comm->plan->generation, ph->generation);
    return HALOX_OK;
}

halox_status_t halox__pulse_host_begin(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                       const char *name, halox__pulse_dir_t dir,
                                       halox__pulse_host_cursor_t *c)
{
    *c = (halox__pulse_host_cursor_t){.dir = dir};
    return halox__pulse_host_check(
        comm, ph, name, dir == HALOX__PULSE_COORDS ? "coordinate exchange" : "force exchange");
}

/* The transport's part `part` of pulse k. */
static int halox__pulse_host_part(halox__pulse_host_cursor_t *c, halox__pulse_part_t part, int k)
{
    c->part = part;
    c->k = k;
    return 1;
}

/* Pulse k's atoms from map entry `from` on are packed: a self pulse's straight into our own
 * halo (then it has landed), a remote one's where the transport said; 1 when it is complete and
 * remote (the transport sends it). */
static int halox__pulse_host_pack(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                  halox__pulse_host_cursor_t *c, int k, int from, int to)
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
        return 0;
    if (self) {
        c->landed |= 1u << k;
        return 0;
    }
    return halox__pulse_host_part(c, HALOX__PULSE_SEND, k);
}

/* Coordinates, pulses in order, in three phases (c->phase; c->i the pulse, c->j how far its
 * landings went). Home atoms need no wait: every map's home atoms are packed at once, and the
 * pulses that hold nothing else go out right away; each other pulse then waits only for the
 * pulses whose atoms it forwards; last, every pulse not landed yet lands. */
static int halox__pulse_host_coords(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                    halox__pulse_host_cursor_t *c)
{
    const halox_plan_t *plan = comm->plan;
    const int n = plan->n_pulses;
    if (c->phase == 0) {
        while (c->i < n) {
            const int k = c->i++;
            const int h = ph->deps.home_prefix[k];
            const int all = ph->deps.needs[k] ? h : plan->pulse[k].send_count;
            if (all == plan->pulse[k].send_count)
                c->out |= 1u << k; /* packed completely (and sent) */
            if (halox__pulse_host_pack(comm, ph, c, k, 0, all))
                return 1;
        }
        c->phase = 1;
        c->i = c->j = 0;
    }
    if (c->phase == 1) {
        for (; c->i < n; c->i++, c->j = 0) {
            const int k = c->i;
            if (c->out & (1u << k))
                continue;
            while (c->j < k) {
                const int j = c->j++;
                if (!(ph->deps.needs[k] & (1u << j)) || (c->landed & (1u << j)))
                    continue;
                c->landed |= 1u << j;
                return halox__pulse_host_part(c, HALOX__PULSE_LAND, j);
            }
            c->out |= 1u << k;
            if (halox__pulse_host_pack(comm, ph, c, k, ph->deps.home_prefix[k],
                                       plan->pulse[k].send_count))
                return 1;
        }
        c->phase = 2;
        c->i = 0;
    }
    /* our own halo: every pulse delivers (possibly zero atoms) */
    while (c->i < n) {
        const int k = c->i++;
        if (c->landed & (1u << k))
            continue;
        c->landed |= 1u << k;
        return halox__pulse_host_part(c, HALOX__PULSE_LAND, k);
    }
    return 0;
}

/* Forces, pulses in reverse order (c->i: the pulse whose returned forces are added next, c->j
 * how far the gives before it went). The forces on pulse k's received atoms go back as soon as
 * no pulse still to be added forwards atoms of k (later pulses added theirs to them first, so
 * they are complete); the returned forces are added strictly in reverse pulse order, in map
 * order, as the reference does. A self pulse adds its own halo's forces straight from f. */
static int halox__pulse_host_forces(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                    halox__pulse_host_cursor_t *c)
{
    const halox_plan_t *plan = comm->plan;
    const int n = plan->n_pulses;
    if (c->phase == 0) { /* the first call */
        c->phase = 1;
        c->i = c->j = n - 1;
    }
    for (; c->i >= 0; c->i--, c->j = n - 1) {
        const int acc = c->i;
        const halox_pulse_t *p = &plan->pulse[acc];
        if (!c->after) {
            /* pulses [acc + 1, n) are added in: give every range they no longer touch */
            const uint32_t pending = (1u << (acc + 1)) - 1;
            while (c->j >= 0) {
                const int k = c->j--;
                if ((c->given & (1u << k)) || (ph->deps.fwd[k] & pending))
                    continue;
                c->given |= 1u << k;
                if (!halox__pulse_self(plan, k))
                    return halox__pulse_host_part(c, HALOX__PULSE_GIVE, k);
            }
            c->src =
                (const char *)comm->f + halox__atom_bytes(comm->real, comm->stride, p->recv_offset);
            if (!halox__pulse_self(plan, acc)) {
                c->after = 1;
                return halox__pulse_host_part(c, HALOX__PULSE_TAKE, acc);
            }
        }
        c->after = 0;
        halox__add_forces(comm->real, comm->stride, comm->f, p->send_index, p->send_count, c->src);
    }
    return 0;
}

int halox__pulse_host_next(halox_comm_t *comm, const halox__pulse_host_t *ph,
                           halox__pulse_host_cursor_t *c)
{
    return c->dir == HALOX__PULSE_COORDS ? halox__pulse_host_coords(comm, ph, c)
                                         : halox__pulse_host_forces(comm, ph, c);
}
