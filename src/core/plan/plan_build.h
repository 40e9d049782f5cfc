/* Internal: the steps of a plan build for one rank. The serial reference (reference.c) runs them
 * for all ranks in lockstep; halox_comm_build_plan (comm.c) runs them on one rank with the
 * transport's sendrecv between steps. One implementation, so both give the same plan. */
#ifndef HALOX_CORE_PLAN_BUILD_H
#define HALOX_CORE_PLAN_BUILD_H

#include <stddef.h>

#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/gpu.h"
#include "halox/plan.h"

/* Validate, set geometry, reset pulses (all of them: no stale entries), zero the home atoms'
 * zones; nothing about the atoms but their count and precision (a device build's first step). */
halox_status_t halox__plan_geometry(halox_plan_t *plan, const halox_plan_params_t *params, int rank,
                                    halox_real_t real, int stride, int n_home, int capacity);
/* The zone bit a pulse sets on the atoms it delivers: bit dim, or 3 + dim from the lower
 * neighbour (full shell). */
static inline uint8_t halox__pulse_zone_bit(const halox_pulse_t *p)
{
    return (uint8_t)(1u << (p->from_lower ? 3 + p->dim : p->dim));
}
/* Index of dimension d's first pulse; -1 when d has none (a shift dimension). */
int halox__plan_first_pulse(const halox_plan_t *plan, int d);
/* The full check of home atom i (id, position x) that lies outside the domain by the fast test:
 * HALOX_OK only for -0 at a lower bound 0; else HALOX_ERR_COORDINATE saying what is wrong. */
halox_status_t halox__plan_home_check(const halox_plan_t *plan, int i, int id, const double x[3]);
/* halox__plan_geometry, then check home atoms and pick the home atoms of the first pulse of
 * every dimension (halox__plan_select adds the rest). */
halox_status_t halox__plan_begin(halox_plan_t *plan, const halox_plan_params_t *params, int rank,
                                 const halox_atoms_t *atoms);
/* Choose the atoms this rank sends in pulse k (after halox__plan_begin and pulses 0..k-1). */
halox_status_t halox__plan_select(halox_plan_t *plan, int k, const halox_atoms_t *atoms);
/* Make room for recv_count atoms received in pulse k (appended at n_total). */
halox_status_t halox__plan_recv(halox_plan_t *plan, int k, halox_atoms_t *atoms, int recv_count);
/* Room in arrays of fixed `capacity` for pulse k's `count` atoms after the plan's n_total:
 * HALOX_OK, or HALOX_ERR_NO_MEMORY saying what to grow (`arrays` names them) with *need set to
 * the entries wanted. */
halox_status_t halox__plan_room(const halox_plan_t *plan, int k, int count, int capacity,
                                const char *arrays, int *need);
/* Bytes of the set-up message for count atoms: coordinates, ids, zones. */
size_t halox__plan_setup_bytes(const halox_atoms_t *atoms, int count);
size_t halox__plan_setup_bytes_of(halox_real_t real, int stride, int count);
/* Pack this rank's pulse-k set-up message (shifted coordinates, ids, zones) into buf. */
void halox__plan_pack_setup(const halox_plan_t *plan, int k, const halox_atoms_t *atoms, void *buf);
/* Unpack a pulse-k set-up message into the received range, adding the pulse's zone bit. */
void halox__plan_unpack_setup(halox_plan_t *plan, int k, halox_atoms_t *atoms, const void *buf);
/* Pack and unpack in one for a pulse whose sender and receiver are this rank: the same values
 * as halox__plan_pack_setup followed by halox__plan_unpack_setup, without a message. */
void halox__plan_copy_setup(halox_plan_t *plan, int k, halox_atoms_t *atoms);
/* Finish: n_total into atoms, generation bump. */
void halox__plan_end(halox_plan_t *plan, halox_atoms_t *atoms);

/* ---- one rank's build through a transport, over a store of atoms (plan_comm.c) ------------ */

/* Where a rank's atoms live during a plan build, and the steps that touch them: host arrays
 * (plan_comm.c: the functions above) or a GPU transport's device arrays
 * (src/transports/gpu/plan_device.c: kernels). The driver, halox__plan_drive, owns everything else:
 * the counts, the agreements, the order of the messages; so both give the same plan. Each step
 * returns HALOX_OK or an error with its message. */
typedef struct halox__plan_store_ops {
    /* halox__plan_begin on these atoms (geometry, home check, first pulses' home atoms) */
    halox_status_t (*begin)(void *ctx, halox_plan_t *plan, const halox_plan_params_t *params,
                            int rank);
    /* halox__plan_select: pulse k's map and send_count, dep_offset, dep_mask on the host */
    halox_status_t (*select)(void *ctx, halox_plan_t *plan, int k);
    /* atoms more that fit after plan->n_total (a store that grows: its limit) */
    long long (*room)(void *ctx, const halox_plan_t *plan);
    /* halox__plan_recv: make room for pulse k's count atoms (a store that cannot grow fails
     * with HALOX_ERR_NO_MEMORY naming what it needs) */
    halox_status_t (*recv)(void *ctx, halox_plan_t *plan, int k, int count);
    /* a message buffer of at least `bytes` in the store's memory (contents need not survive) */
    halox_status_t (*reserve)(void *ctx, size_t bytes, void **buf_p, size_t *cap_p);
    /* halox__plan_pack_setup, halox__plan_unpack_setup, halox__plan_copy_setup */
    halox_status_t (*pack)(void *ctx, const halox_plan_t *plan, int k, void *buf);
    halox_status_t (*unpack)(void *ctx, halox_plan_t *plan, int k, const void *buf);
    halox_status_t (*copy)(void *ctx, halox_plan_t *plan, int k);
    /* send sbytes of the store's memory to dst, receive rbytes from src into it (most: the
     * largest message any rank sends in this pulse, the same on every rank) */
    halox_status_t (*sendrecv)(void *ctx, halox_comm_t *comm, int dst, const void *sbuf,
                               size_t sbytes, int src, void *rbuf, size_t rbytes, size_t most);
    /* the build succeeded on every rank: n_total out, the host plan complete (maps, zones) */
    halox_status_t (*end)(void *ctx, halox_plan_t *plan);
    /* release what the build held (always called) */
    void (*done)(void *ctx);
} halox__plan_store_ops_t;

typedef struct halox__plan_store {
    const halox__plan_store_ops_t *ops; /* its steps */
    void *ctx;
    halox_real_t real;
    int stride;
    int n_home, capacity;
    int may_fail_late; /* pack, unpack or end can fail (the driver agrees once more at the end) */
    int fixed;         /* the arrays cannot grow: when a rank lacks room for a pulse's arrivals
                          (every rank sees it in the counts), every rank stops there with
                          HALOX_ERR_NO_MEMORY, the short ones saying what they need */
} halox__plan_store_t;

/* Build rank comm->rank's plan through the transport over `store`. Collective. st0: a failure
 * before the drive (the store's opening; its ops may be NULL then), agreed in the drive's first
 * agreement instead of one of its own. */
halox_status_t halox__plan_drive(halox_comm_t *comm, const halox_plan_params_t *params,
                                 const halox__plan_store_t *store, halox_plan_t *plan,
                                 halox_status_t st0);

#endif
