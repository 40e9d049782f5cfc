/* A bound plan's pulses checked, and what each map waits for: see pulse_deps.h. */
#include <string.h>

#include "core/error.h"
#include "core/plan/pulse_deps.h"

/* Counts, ranks, dimensions and received ranges of every pulse. */
static halox_status_t halox__pulse_check(const halox_plan_t *plan, const char *name)
{
    if (plan->n_pulses < 0 || plan->n_pulses > HALOX_MAX_PULSES)
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: bind: plan has %d pulses (at most %d)",
                            name, plan->n_pulses, HALOX_MAX_PULSES);
    int end = plan->n_home;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        if (p->send_rank < 0 || p->send_rank >= plan->nranks || p->recv_rank < 0 ||
            p->recv_rank >= plan->nranks)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "%s: bind: pulse %d of rank %d names ranks %d and %d outside "
                                "0..%d",
                                name, k, plan->rank, p->send_rank, p->recv_rank, plan->nranks - 1);
        if (p->send_count < 0 || p->recv_count < 0 || p->dim < 0 || p->dim > 2 ||
            (p->send_count > 0 && !p->send_index))
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "%s: bind: pulse %d of rank %d has negative counts, dimension %d "
                                "or no map",
                                name, k, plan->rank, p->dim);
        /* one contiguous range per pulse, in pulse order, inside the halo: checked on every
         * bind rather than assumed */
        if (p->recv_offset < end || p->recv_offset + p->recv_count > plan->n_total)
            return halox__error(HALOX_ERR_INTERNAL,
                                "%s: bind: pulse %d of rank %d receives [%d, %d), which overlaps "
                                "an earlier pulse's range or leaves the halo [%d, %d): the plan "
                                "is corrupt",
                                name, k, plan->rank, p->recv_offset, p->recv_offset + p->recv_count,
                                plan->n_home, plan->n_total);
        end = p->recv_offset + p->recv_count;
    }
    return HALOX_OK;
}

halox_status_t halox__pulse_deps(const halox_plan_t *plan, const char *name,
                                 halox__pulse_deps_t *deps)
{
    memset(deps, 0, sizeof *deps);
    halox_status_t st = halox__pulse_check(plan, name);
    if (st != HALOX_OK)
        return st;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        int h = 0;
        while (h < p->send_count && p->send_index[h] >= 0 && p->send_index[h] < plan->n_home)
            h++;
        deps->home_prefix[k] = h;
        /* the first h are home atoms, checked above: one pass over a map, not two (a bind's
         * host time matters: docs/MD-DESIGN.md#rebuilds-on-the-device) */
        for (int i = h; i < p->send_count; i++) {
            int a = p->send_index[i];
            if (a < 0 || a >= plan->n_total)
                return halox__error(HALOX_ERR_INVALID_ARG,
                                    "%s: bind: pulse %d of rank %d sends local atom %d, outside "
                                    "0..%d: the plan is corrupt",
                                    name, k, plan->rank, a, plan->n_total - 1);
            if (a < plan->n_home)
                continue; /* also a home atom after halo atoms: it needs nothing */
            int j = 0;
            while (j < k && !(a >= plan->pulse[j].recv_offset &&
                              a < plan->pulse[j].recv_offset + plan->pulse[j].recv_count))
                j++;
            if (j == k)
                return halox__error(HALOX_ERR_INTERNAL,
                                    "%s: rank %d: pulse %d sends local atom %d, which no earlier "
                                    "pulse received (n_home %d, n_total %d): the plan is corrupt",
                                    name, plan->rank, k, a, plan->n_home, plan->n_total);
            deps->needs[k] |= 1u << j;
        }
    }
    for (int k = 0; k < plan->n_pulses; k++)
        for (int j = k + 1; j < plan->n_pulses; j++)
            if (deps->needs[j] & (1u << k))
                deps->fwd[k] |= 1u << j;
    return HALOX_OK;
}
