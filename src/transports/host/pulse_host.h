/* Internal: the halo exchange's pulses on the host, once for the CPU transports (threads, mpi).
 *
 * A cursor, not a table of callbacks: the transport's own exchange function walks the pulses with
 * halox__pulse_host_next, which does what every host transport does alike and returns at each
 * part that is the transport's own (send, land, give, take), which the transport then does by
 * direct calls. What the walk does: the home atoms of every map packed at once, forwarded atoms
 * packed only once the pulses that delivered them are in, self pulses (a single rank in the
 * dimension) as local copies, the force exchange in reverse pulse order (pulse k's forces go back
 * as soon as no later pulse adds to them) and the add of the returned forces in strict reverse
 * pulse order, as the reference does, so the sums are bit-identical. The transport's parts never
 * see a self pulse. */
#ifndef HALOX_TRANSPORTS_PULSE_HOST_H
#define HALOX_TRANSPORTS_PULSE_HOST_H

#include "core/plan/pulse_deps.h"
#include "core/transport.h"

typedef enum { HALOX__PULSE_COORDS = 0, HALOX__PULSE_FORCES = 1 } halox__pulse_dir_t;

/* The walk's part of a transport's state, filled at bind. */
typedef struct halox__pulse_host {
    int bound;
    const halox_plan_t *plan; /* bound plan and its generation: a rebuilt plan needs a new bind */
    long long generation;
    halox__pulse_deps_t deps;
    /* where pulse k's atoms are packed (the transport sets them at bind; not for self pulses):
     * the receiver's halo, its mailbox, a send buffer */
    char *pack_to[HALOX_MAX_PULSES];
} halox__pulse_host_t;

/* What the walk asks of the transport (halox__pulse_host_cursor_t.part), for pulse k. Each
 * returns HALOX_OK or an error with its message set; the transport then stops walking. */
typedef enum {
    /* coordinates: pulse k's atoms are all packed at pack_to[k]: send them (every pulse sends,
     * also with no atoms: its receiver waits for it) */
    HALOX__PULSE_SEND = 1,
    /* coordinates: return once pulse k's atoms are in our halo at its recv_offset (once per
     * pulse, before any later pulse forwards them) */
    HALOX__PULSE_LAND,
    /* forces: send back the forces on pulse k's received atoms, f at recv_offset (complete now;
     * that range is not written again in this exchange) */
    HALOX__PULSE_GIVE,
    /* forces: return once pulse k's forces, send_count atoms in map order, came back, with
     * cursor.src set to where they are (read by the next halox__pulse_host_next) */
    HALOX__PULSE_TAKE
} halox__pulse_part_t;

/* One exchange's walk through the pulses: on the caller's stack, set by halox__pulse_host_begin. */
typedef struct halox__pulse_host_cursor {
    halox__pulse_part_t part; /* the transport's part now (halox__pulse_host_next gave 1) */
    int k;                    /* its pulse */
    const void *src;          /* HALOX__PULSE_TAKE: set by the transport */
    /* the walk's own state (pulse_host.c) */
    halox__pulse_dir_t dir;
    int phase, i, j, after;
    uint32_t landed, out, given;
} halox__pulse_host_cursor_t;

/* bind, first: not bound; check comm->plan's pulses and derive what each map waits for (messages
 * start with `name`). The transport then sets pack_to[] and does its own part. */
halox_status_t halox__pulse_host_prepare(halox_comm_t *comm, halox__pulse_host_t *ph,
                                         const char *name);
/* bind, last, when every part succeeded: bound to comm->plan. */
void halox__pulse_host_commit(halox_comm_t *comm, halox__pulse_host_t *ph);

/* The start of an exchange on the bound comm->x (coordinates) or comm->f (forces), comm->step
 * already advanced by core: the check that the endpoint is bound to the current plan (messages
 * start with `name`), and the walk set at the first pulse. The transport then does its own start
 * of the call (checks, receives posted), walks, and ends the call its own way. */
halox_status_t halox__pulse_host_begin(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                       const char *name, halox__pulse_dir_t dir,
                                       halox__pulse_host_cursor_t *c);
/* The walk up to the transport's next part: 1 with c->part and c->k set, 0 when every pulse is
 * done. */
int halox__pulse_host_next(halox_comm_t *comm, const halox__pulse_host_t *ph,
                           halox__pulse_host_cursor_t *c);

#endif
