/* C entry points of the plan build's kernels (src/transports/gpu/plan_select.cu): the selection of
 * the atoms a pulse sends, the home atoms' domain check, and the ids and zones that travel with the
 * set-up messages. Used by the device store of src/transports/gpu/plan_device.c.
 *
 * The selection test is core's (plan.c): (double)x - lo < rh in double for a pulse to the lower
 * neighbour, hi - (double)x <= rh for one from it (full shell), so a device build selects exactly
 * the atoms of a host build; the selected indices keep their ascending order
 * (a stable compaction in one kernel, compact.cuh), so the maps are identical too. Every launcher
 * enqueues on `stream` and returns the launch's error. */
#ifndef HALOX_KERNELS_PLAN_SELECT_H
#define HALOX_KERNELS_PLAN_SELECT_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "halox/atoms.h"
#include "halox/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which atoms to select: indices i in [begin, end) with v - bound < rh, or with down
 * bound - v <= rh (v = (double)x[i * stride + dim]; bound: the domain's lower bound, or with down
 * its upper one). Range j ([range_lo[j], range_hi[j])) is pulse range_pulse[j]'s received atoms: a
 * selected atom there sets bit range_pulse[j] of the mask (the dependency mask of the map). */
typedef struct halox_plan_select_args {
    const void *x;
    halox_real_t real;
    int stride;
    int dim;
    double bound, rh;
    int down; /* a pulse from the lower neighbour (full shell): the test of the upper bound */
    int begin, end;
    int n_ranges;
    int range_lo[HALOX_MAX_PULSES], range_hi[HALOX_MAX_PULSES], range_pulse[HALOX_MAX_PULSES];
    /* first_bad not NULL: the home check of halox_kernel_plan_check_home over [begin, end) in
     * the same pass (home_lo, home_hi, first_bad, zone as there): a launch less */
    double home_lo[3], home_hi[3];
    int *first_bad;
    uint8_t *zone;
} halox_plan_select_args_t;

/* Scratch ints the selection over n atoms needs (zero it when new: compact.cuh). */
size_t halox_kernel_plan_select_scratch(int n);

/* Write the selected indices to out[0 ..), ascending; *count (device) = how many; *mask
 * (device, not cleared here) |= the bits of the ranges that hold a selected atom. */
cudaError_t halox_kernel_plan_select(const halox_plan_select_args_t *a, int *out, int *count,
                                     unsigned *mask, int *scratch, cudaStream_t stream);

/* *first_bad (device, set by the caller above n) = the smallest i < n whose position is not
 * inside [lo, hi) in every dimension (in double; a NaN is not inside); zone[i] = 0 for i < n
 * (zone not NULL). */
cudaError_t halox_kernel_plan_check_home(halox_real_t real, int stride, const void *x, int n,
                                         const double lo[3], const double hi[3], int *first_bad,
                                         uint8_t *zone, cudaStream_t stream);

/* A set-up message of n atoms (es bytes of coordinates each, then n ids, then n zones) into
 * place: x (es bytes per atom), id, zone[i] = its zone | bit. */
cudaError_t halox_kernel_plan_place(const void *msg, int n, size_t es, uint8_t bit, void *x,
                                    int32_t *id, uint8_t *zone, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
