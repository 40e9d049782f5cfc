/* Internal: a bound plan's pulses checked, and what each pulse's map waits for.
 *
 * Exchanges send the home atoms of a map at once and the forwarded ones only after the earlier
 * pulses that delivered them are in; the force exchange returns pulse k's forces once no later
 * pulse will add to them. Both are derived here from the maps themselves, not from the plan's
 * dependency fields: an exchange must never read a range whose receive is still in flight.
 * Pure C: no MPI, no CUDA. */
#ifndef HALOX_CORE_PULSE_DEPS_H
#define HALOX_CORE_PULSE_DEPS_H

#include <stdint.h>

#include "halox/plan.h"
#include "halox/status.h"

typedef struct halox__pulse_deps {
    int home_prefix[HALOX_MAX_PULSES]; /* leading map entries that are home atoms */
    uint32_t needs[HALOX_MAX_PULSES];  /* bit j: map k holds atoms received in pulse j */
    uint32_t fwd[HALOX_MAX_PULSES];    /* bit j: pulse j forwards atoms received in pulse k */
} halox__pulse_deps_t;

/* Check the plan's pulses (ranks in 0..nranks-1, counts >= 0, dimensions 0..2, one receive
 * range per pulse in pulse order inside the halo, maps inside 0..n_total-1 and fed only by
 * earlier pulses) and fill *deps (entries past n_pulses zero). Messages start with `name` (the
 * transport) and name the pulse and the rank. */
halox_status_t halox__pulse_deps(const halox_plan_t *plan, const char *name,
                                 halox__pulse_deps_t *deps);

/* A single rank in the pulse's dimension: this rank sends to and receives from itself. */
static inline int halox__pulse_self(const halox_plan_t *plan, int k)
{
    return plan->pulse[k].send_rank == plan->rank && plan->pulse[k].recv_rank == plan->rank;
}

#endif
