/* Internal: the halo exchange's pulses on the host, once for the CPU transports (threads, mpi).
 *
 * The driver owns what every host transport does alike: the check that the endpoint is bound to
 * the current plan, the home atoms of every map packed at once, forwarded atoms packed only once
 * the pulses that delivered them are in, self pulses (a single rank in the dimension) as local
 * copies, the force exchange in reverse pulse order (pulse k's forces go back as soon as no
 * later pulse adds to them) and the add of the returned forces in strict reverse pulse order,
 * as the reference does, so the sums are bit-identical. A transport supplies only its remote
 * leg, as the callbacks of a halox__pulse_leg_t; it never sees a self pulse. */
#ifndef HALOX_TRANSPORTS_PULSE_HOST_H
#define HALOX_TRANSPORTS_PULSE_HOST_H

#include "core/pulse_deps.h"
#include "core/transport.h"

typedef enum { HALOX__PULSE_COORDS = 0, HALOX__PULSE_FORCES = 1 } halox__pulse_dir_t;

/* The driver's part of a transport's state, filled at bind. */
typedef struct halox__pulse_host {
    int bound;
    const halox_plan_t *plan; /* bound plan and its generation: a rebuilt plan needs a new bind */
    long long generation;
    halox__pulse_deps_t deps;
    /* where pulse k's atoms are packed (the transport sets them at bind; not for self pulses):
     * the receiver's halo, its mailbox, a send buffer */
    char *pack_to[HALOX_MAX_PULSES];
} halox__pulse_host_t;

/* A transport's leg. Every callback gets the endpoint (its state is comm->impl), returns
 * HALOX_OK or an error with its message set (the driver then returns at once), and is called
 * for pulses that are not self pulses only. */
typedef struct halox__pulse_leg {
    const char *name; /* the transport, for messages */
    /* optional: once the endpoint is known bound, before the first pulse (checks that the
     * transport can go on; receives posted in advance) */
    halox_status_t (*open)(halox_comm_t *comm, halox__pulse_dir_t dir);
    /* coordinates: pulse k's atoms are all packed at pack_to[k]: send them (every pulse sends,
     * also with no atoms: its receiver waits for it) */
    halox_status_t (*send)(halox_comm_t *comm, int k);
    /* coordinates: return once pulse j's atoms are in our halo at its recv_offset (called
     * once per pulse, before any later pulse forwards them) */
    halox_status_t (*land)(halox_comm_t *comm, int j);
    /* forces: send back the forces on pulse k's received atoms, f at recv_offset (complete
     * now; that range is not written again in this exchange) */
    halox_status_t (*give)(halox_comm_t *comm, int k);
    /* forces: return once pulse k's forces, send_count atoms in map order, came back; *src:
     * where they are (read only before the next callback) */
    halox_status_t (*take)(halox_comm_t *comm, int k, const void **src);
    /* optional: after the last pulse, on success only (waits for sends) */
    halox_status_t (*close)(halox_comm_t *comm, halox__pulse_dir_t dir);
} halox__pulse_leg_t;

/* bind, first: not bound; check comm->plan's pulses and derive what each map waits for (messages
 * start with `name`). The transport then sets pack_to[] and does its own part. */
halox_status_t halox__pulse_host_prepare(halox_comm_t *comm, halox__pulse_host_t *ph,
                                         const char *name);
/* bind, last, when every part succeeded: bound to comm->plan. */
void halox__pulse_host_commit(halox_comm_t *comm, halox__pulse_host_t *ph);

/* One exchange on the bound comm->x (coordinates) or comm->f (forces), comm->step already
 * advanced by core: the bound check, the leg's open, the pulses, the leg's close. */
halox_status_t halox__pulse_host_run(halox_comm_t *comm, const halox__pulse_host_t *ph,
                                     const halox__pulse_leg_t *leg, halox__pulse_dir_t dir);

#endif
