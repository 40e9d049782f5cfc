/* Internal: the halo exchange's pulses on the GPU stream, once for the GPU transports (the GPU
 * twin of pulse_host.h).
 *
 * The driver owns what every GPU transport does alike: the check that the endpoint is usable and
 * bound to the current plan (halox__gpu_bound), the bounded wait for the previous step's
 * exchanges before the coordinates (not while a graph is captured), the pulse order (coordinates
 * in plan order, forces in reverse, so the returned forces are added in the reference's order and
 * the sums are bit-identical), self pulses (a single rank in the dimension) as a pack kernel
 * straight into our own halo or an accumulate kernel straight from it, a remote pulse's pack
 * kernel before its leg and the accumulate kernel of its returned forces after it, the landing of
 * host-received pulses before a later pulse forwards their atoms, and each pulse's event after
 * its work. A transport supplies only its remote leg, as the callbacks of a
 * halox__pulse_gpu_leg_t that its init sets as g->leg; send, land and swap never see a self
 * pulse. Transports whose kernels run whole pulses (nvshmem-pulse, nvshmem-fused) supply `pulses`
 * instead of the loop. Every callback gets the endpoint (its state is comm->impl, starting with
 * its halox__gpu_t; what one exchange call needs lives there too) and returns HALOX_OK or an
 * error with its message set (the driver then stops at once). */
#ifndef HALOX_TRANSPORTS_PULSE_GPU_H
#define HALOX_TRANSPORTS_PULSE_GPU_H

#include "transports/gpu/gpu.h"

struct halox__pulse_gpu_leg {
    /* record pulse k's event (halox__gpu_record) after its work: the transports whose host does
     * not wait for the whole exchange inside the call */
    int events;
    /* optional: coordinates, after the bound check: wait (bounded) for the exchanges enqueued so
     * far; never while a graph is captured */
    halox_status_t (*drain)(halox_comm_t *comm, const char *why);
    /* optional: before the first pulse (the call's state, epochs, receives posted) */
    halox_status_t (*open)(halox_comm_t *comm, int dir);
    /* optional: the transport runs every pulse itself, with its own kernels (and records their
     * events), instead of the driver's loop: none of the callbacks below is called */
    halox_status_t (*pulses)(halox_comm_t *comm, int dir);
    /* optional: device memory where pulse k's atoms are packed (coordinates) or its returned
     * forces are added from (forces); NULL, or no callback: the device plan's staging buffer */
    void *(*slot)(halox_comm_t *comm, int dir, int k);
    /* coordinates: pulse k's atoms are packed (enqueued): send them, and enqueue what the stream
     * must wait for before later work reads pulse k's received atoms (every pulse sends, also
     * with no atoms: its receiver waits for it) */
    halox_status_t (*send)(halox_comm_t *comm, int k);
    /* optional: coordinates: the host lands pulse j (its atoms are in our halo, or their copy
     * there is enqueued, when it returns); called once per pulse, before any later pulse packs
     * atoms it forwards, and for the rest after the last pulse */
    halox_status_t (*land)(halox_comm_t *comm, int j);
    /* forces: send back the forces on pulse k's received atoms (f at recv_offset, complete on the
     * stream now) and get the forces on its sent atoms into the slot, ordered before the
     * accumulate kernel enqueued next */
    halox_status_t (*swap)(halox_comm_t *comm, int k);
    /* a kernel launch of the driver failed: write the message (naming `what`) and fail the
     * endpoint the transport's way; returns the status */
    halox_status_t (*fail)(halox_comm_t *comm, cudaError_t e, const char *what);
    /* optional: the end of every call, also after a failure (st: the result so far, also of the
     * bound check); returns the call's result */
    halox_status_t (*close)(halox_comm_t *comm, int dir, halox_status_t st);
};

/* The exchanges of a GPU transport's table (comm->x coordinates, comm->f forces), comm->step
 * already advanced by core: the bound check, the leg's drain and open, the pulses, the leg's
 * close. */
halox_status_t halox__pulse_gpu_coords(halox_comm_t *comm);
halox_status_t halox__pulse_gpu_forces(halox_comm_t *comm);

#endif
