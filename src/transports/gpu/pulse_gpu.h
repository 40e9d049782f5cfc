/* Internal: the halo exchange's pulses on the GPU stream, once for the GPU transports whose host
 * drives each pulse (nccl, mpi-staged, mpi-cuda, nvshmem-stream, hybrid; the GPU twin of
 * pulse_host.h).
 *
 * A cursor, not a table of callbacks: the transport's own exchange function walks the pulses with
 * halox__pulse_gpu_next, which does what every such transport does alike and returns at each part
 * that is the transport's own, which the transport then does by direct calls. What the walk does:
 * the pulse order (coordinates in plan order, forces in reverse, so the returned forces are added
 * in the reference's order and the sums are bit-identical), self pulses (a single rank in the
 * dimension) as a pack kernel straight into our own halo or an accumulate kernel straight from it,
 * a remote pulse's pack kernel before its send and the accumulate kernel of its returned forces
 * after its swap, the landing of host-received pulses before a later pulse forwards their atoms,
 * and each pulse's event after its work. The transport's parts never see a self pulse.
 *
 * Around the walk, each transport's exchange makes the same calls in the same order:
 * halox__gpu_bound (usable, bound to the current plan, device current), for coordinates its
 * bounded wait for the exchanges enqueued so far (not while a graph is captured: the replays'
 * waits are the caller's; the host runs at most one step ahead, and a missing peer or a kernel
 * that gave up is reported there), its own start of the call, the walk, its own end. Transports
 * whose kernels run whole pulses (nvshmem-pulse, nvshmem-fused, nvshmem-inline) make the same
 * calls around their own kernels instead of the walk. */
#ifndef HALOX_TRANSPORTS_PULSE_GPU_H
#define HALOX_TRANSPORTS_PULSE_GPU_H

#include "transports/gpu/gpu.h"

/* What the walk asks of the transport (halox__pulse_gpu_cursor_t.part), for pulse k. Each returns
 * HALOX_OK or an error with its message set; the transport then stops walking. */
typedef enum {
    /* coordinates: pulse k's atoms are packed (enqueued) into its slot: send them, and enqueue
     * what the stream must wait for before later work reads pulse k's received atoms (every
     * pulse sends, also with no atoms: its receiver waits for it) */
    HALOX__PULSE_GPU_SEND = 1,
    /* coordinates, with HALOX__PULSE_GPU_LANDS: the host lands pulse k (its atoms are in our
     * halo, or their copy there is enqueued, when it returns); once per pulse, before any later
     * pulse packs atoms it forwards, and for the rest after the last pulse */
    HALOX__PULSE_GPU_LAND,
    /* forces: send back the forces on pulse k's received atoms (f at recv_offset, complete on
     * the stream now) and get the forces on its sent atoms into its slot, ordered before the
     * accumulate kernel the walk enqueues next */
    HALOX__PULSE_GPU_SWAP
} halox__pulse_gpu_part_t;

/* The walk's options (halox__pulse_gpu_start's flags). */
enum {
    /* record each pulse's event after its work (halox__gpu_record): the transports whose host
     * does not wait for the whole exchange inside the call */
    HALOX__PULSE_GPU_EVENTS = 1,
    /* the transport lands host-received pulses (HALOX__PULSE_GPU_LAND) */
    HALOX__PULSE_GPU_LANDS = 2
};

/* One exchange's walk through the pulses: on the caller's stack, set by halox__pulse_gpu_start. */
typedef struct halox__pulse_gpu_cursor {
    halox__pulse_gpu_part_t part; /* the transport's part now (halox__pulse_gpu_next gave 1) */
    int k;                        /* its pulse */
    /* halox__pulse_gpu_next gave 0 at a launch of its own that failed (cudaSuccess: none): the
     * transport reports e, naming `what`, its own way (the message, its endpoint failed) */
    cudaError_t e;
    const char *what;
    /* the walk's own state (pulse_gpu.c) */
    int dir, flags;
    char *slots;
    int i, j, after;
    uint32_t landed;
} halox__pulse_gpu_cursor_t;

/* The start of a walk in direction dir (HALOX__GPU_COORDS, HALOX__GPU_FORCES) on the bound plan,
 * comm->x or comm->f, comm->step already advanced by core; flags: HALOX__PULSE_GPU_*. slots:
 * device memory laid out as the device plan's staging buffer (pulse k at buf_off[k]) where
 * pulse k's atoms are packed (coordinates) or its returned forces are added from (forces); NULL:
 * the device plan's own staging buffer. */
void halox__pulse_gpu_start(halox__pulse_gpu_cursor_t *c, int dir, int flags, char *slots);

/* The walk up to the transport's next part: 1 with c->part and c->k set, or 0: every pulse is
 * done, or the walk stopped at a failure of its own: a launch (c->e, c->what: the transport
 * reports it) or an event's record (*st_p, with its message; the endpoint failed). */
int halox__pulse_gpu_next(halox_comm_t *comm, halox__pulse_gpu_cursor_t *c, halox_status_t *st_p);

/* The operation an exchange in direction dir names in its messages. */
static inline const char *halox__pulse_gpu_op(int dir)
{
    return dir == HALOX__GPU_COORDS ? "coordinate exchange" : "force exchange";
}

/* The table's two exchanges of a transport whose exchange in direction dir is fn(comm, dir): the
 * static functions fn##_coords and fn##_forces. */
#define HALOX__PULSE_GPU_EXCHANGES(fn)                                                             \
    static halox_status_t fn##_coords(halox_comm_t *comm) { return fn(comm, HALOX__GPU_COORDS); }  \
    static halox_status_t fn##_forces(halox_comm_t *comm) { return fn(comm, HALOX__GPU_FORCES); }

/* Whether an exchange in direction dir first waits (bounded) for the exchanges enqueued so far:
 * coordinates, unless a graph is being captured. */
static inline int halox__pulse_gpu_drains(const halox_comm_t *comm, int dir)
{
    return dir == HALOX__GPU_COORDS && !comm->graph_mode;
}

#endif
