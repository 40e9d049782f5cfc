/* Internal: the steps of a plan build for one rank. The serial reference (reference.c) runs them
 * for all ranks in lockstep; halox_comm_build_plan (comm.c) runs them on one rank with the
 * transport's sendrecv between steps. One implementation, so both give the same plan. */
#ifndef HALOX_CORE_PLAN_BUILD_H
#define HALOX_CORE_PLAN_BUILD_H

#include <stddef.h>

#include "halox/plan.h"

/* Validate, set geometry, reset pulses (all of them: no stale entries), check home atoms, and
 * pick the home atoms of the first pulse of every dimension (halox__plan_select adds the rest). */
halox_status_t halox__plan_begin(halox_plan_t *plan, const halox_plan_params_t *params, int rank,
                                 const halox_atoms_t *atoms);
/* Choose the atoms this rank sends in pulse k (after halox__plan_begin and pulses 0..k-1). */
halox_status_t halox__plan_select(halox_plan_t *plan, int k, const halox_atoms_t *atoms);
/* Make room for recv_count atoms received in pulse k (appended at n_total). */
halox_status_t halox__plan_recv(halox_plan_t *plan, int k, halox_atoms_t *atoms, int recv_count);
/* Bytes of the set-up message for count atoms: coordinates, ids, zones. */
size_t halox__plan_setup_bytes(const halox_atoms_t *atoms, int count);
/* Pack this rank's pulse-k set-up message (shifted coordinates, ids, zones) into buf. */
void halox__plan_pack_setup(const halox_plan_t *plan, int k, const halox_atoms_t *atoms, void *buf);
/* Unpack a pulse-k set-up message into the received range, adding the pulse's zone bit. */
void halox__plan_unpack_setup(halox_plan_t *plan, int k, halox_atoms_t *atoms, const void *buf);
/* Pack and unpack in one for a pulse whose sender and receiver are this rank: the same values
 * as halox__plan_pack_setup followed by halox__plan_unpack_setup, without a message. */
void halox__plan_copy_setup(halox_plan_t *plan, int k, halox_atoms_t *atoms);
/* Finish: n_total into atoms, generation bump. */
void halox__plan_end(halox_plan_t *plan, halox_atoms_t *atoms);

#endif
