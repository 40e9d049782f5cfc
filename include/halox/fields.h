/** @file
 * Per-atom fields beside the coordinates: any number of the caller's arrays exchanged over the
 * bound plan, of any element type and any number of elements per atom.
 *
 *  - Forward: every halo atom's row gets its owner's row (copied as bytes, no periodic shift):
 *    an atom type, a charge, a many-body density computed on home atoms, a struct of N bytes.
 *  - Reverse: every halo atom's row is added into its owner's row, pulses in reverse order with
 *    the same forwarding chain as the forces (halox_comm_forces): a per-atom partial sum
 *    computed on halo atoms (a density of a half list, a virial per atom). Integer types add as
 *    integers; HALOX_TYPE_BYTE has no sum and is refused.
 *
 * A field's rows follow the plan's local order: [0, n_home) home atoms, [n_home, n_total) halo
 * atoms, as the coordinates. The arrays are the caller's, at a capacity it chose; the library
 * never allocates, grows or moves them, and checks the capacity against the bound plan's
 * n_total at every exchange.
 *
 * Two ways to exchange them, on the plan of the last halox_comm_bind():
 *  - on their own: halox_comm_forward() / halox_comm_reverse() (for a value that exists only
 *    between two force phases, such as a many-body density);
 *  - with the coordinates and forces: halox_comm_bind_fields() names the fields that every
 *    halox_comm_coords() then forwards and every halox_comm_forces() reverses.
 *
 * Where the memory is: host memory on the CPU transports, device memory on the GPU transports
 * (halox_transport_caps_t.on_gpu), as for the bound coordinates; plain device memory will do
 * (cudaMalloc: no symmetric memory needed). The GPU transports gather and land the rows with
 * kernels on halox_comm_stream() and pass them pulse by pulse through pinned host memory and
 * the set-up messages: the host waits for the stream inside the call, so a field exchange is
 * not captured in a CUDA graph (HALOX_ERR_UNAVAILABLE in graph mode). The exception is
 * nvshmem-fused with fields bound by halox_comm_bind_fields(): forward fields that live in
 * symmetric memory (halox_comm_device_alloc) ride inside the coordinate kernel, stored with the
 * atoms under the same signals, and reverse fields (any device memory) inside the force kernel,
 * returned with the forces and summed into their owners as the forces are (no host step,
 * capturable; halox_comm_stats_t.fields_in_kernel counts those exchanges). Bound forward
 * fields' halo rows then follow the coordinates' rule: valid until the force exchange, and
 * never written by the caller (a peer may store the next exchange's rows there as soon as this
 * rank's force exchange is done). Every call here is collective
 * over the endpoint's ranks and follows endpoint.h's contract. The exchanges are bit for bit
 * halox_reference_forward() and halox_reference_reverse(). */
#ifndef HALOX_FIELDS_H
#define HALOX_FIELDS_H

#include <stddef.h>

#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Element type of a field: its size and how a reverse exchange adds it. */
typedef enum halox_type {
    HALOX_TYPE_FLOAT = 1, /**< float, added as float */
    HALOX_TYPE_DOUBLE,    /**< double, added as double */
    HALOX_TYPE_INT32,     /**< int32_t, added as integers (wrapping as unsigned) */
    HALOX_TYPE_INT64,     /**< int64_t, added as integers (wrapping as unsigned) */
    HALOX_TYPE_BYTE,      /**< opaque bytes (a struct of `count` bytes): forward only */
} halox_type_t;

/** Size in bytes of one element of the given type; 0 for an unknown type. */
size_t halox_type_size(halox_type_t type);

/** Most fields in one call (and bound with halox_comm_bind_fields, per direction). */
#define HALOX_MAX_FIELDS 16

/** One per-atom array of the caller's. */
typedef struct halox_field {
    void *data;        /**< capacity rows of count elements of type: home atoms, then halo */
    halox_type_t type; /**< element type */
    int count;         /**< elements per atom, >= 1 (3 for a vector, N for N bytes) */
    int capacity;      /**< rows data holds room for: at least the bound plan's n_total */
} halox_field_t;

/** Forward exchange of `n` fields (collective; blocking on the CPU transports, ordered on
 *  halox_comm_stream() on the GPU transports): the halo rows of each get their owners' home
 *  rows, pulse by pulse. Needs a bound plan (halox_comm_bind); may come at any point between
 *  exchanges, with or without a coordinate exchange pending. Every rank passes the same number
 *  of fields with the same types and counts (checked: a mismatch fails the call on every rank,
 *  naming the first difference). Reads the home rows, writes the halo rows. */
halox_status_t halox_comm_forward(halox_comm_t *comm, int n, const halox_field_t *fields);

/** Reverse exchange of `n` fields (collective; as halox_comm_forward): each halo row is added
 *  into its owner's row, pulses in reverse order (forwarded halo rows first collect the rows
 *  sent back to them, as forces do). On completion the home rows hold every contribution; the
 *  halo rows are scratch. HALOX_TYPE_BYTE fields are refused (HALOX_ERR_INVALID_ARG). */
halox_status_t halox_comm_reverse(halox_comm_t *comm, int n, const halox_field_t *fields);

/** Name the fields that travel with the coordinates and forces from now on (collective,
 *  blocking): every later halox_comm_coords() also forwards `forward[0, n_forward)` and every
 *  halox_comm_forces() also reverses `reverse[0, n_reverse)`, within the same call (the same
 *  completion: on return, or ordered on the stream). The descriptors are copied; the arrays
 *  must stay where they are, at a capacity of at least the bound plan's n_total at every
 *  exchange (checked: a short field fails the exchange naming it; grow it and bind the fields
 *  again). They stay bound across halox_comm_bind(); n_forward = n_reverse = 0 unbinds them.
 *  The shapes are agreed here, once, so the exchanges need no agreement of their own. */
halox_status_t halox_comm_bind_fields(halox_comm_t *comm, int n_forward,
                                      const halox_field_t *forward, int n_reverse,
                                      const halox_field_t *reverse);

/** Reference forward exchange over all ranks in one process: field[r] is rank r's array of one
 *  field (the same type and count on every rank); writes every rank's halo rows from the owners'
 *  home rows, pulse by pulse. Transports reproduce it bit for bit. */
void halox_reference_forward(const halox_plan_t *plans, int nranks, const halox_field_t *field);

/** Reference reverse exchange over all ranks: pulses in reverse order, each sender adds the
 *  rows its receiver holds for the atoms it sent (HALOX_TYPE_BYTE: nothing is done). */
void halox_reference_reverse(const halox_plan_t *plans, int nranks, const halox_field_t *field);

#ifdef __cplusplus
}
#endif
#endif
