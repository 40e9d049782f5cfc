/* The reference: plan builds and exchanges for all ranks in one process, serially.
 * Transports are tested against it bit for bit. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pack.h"
#include "core/plan/plan_build.h"
#include "halox/plan.h"

halox_status_t halox_reference_build(const halox_plan_params_t *params, halox_atoms_t *atoms,
                                     halox_plan_t *plans)
{
    if (!params || !atoms || !plans)
        return halox__error(HALOX_ERR_INVALID_ARG, "reference build: NULL argument");
    halox_status_t st = halox_plan_check(params, NULL);
    if (st != HALOX_OK)
        return st;
    int nranks = halox_grid_size(&params->grid);
    for (int r = 0; r < nranks; r++)
        if ((st = halox__plan_begin(&plans[r], params, r, &atoms[r])) != HALOX_OK)
            return st;
    void **buf = calloc((size_t)nranks, sizeof *buf);
    if (!buf)
        return halox__error(HALOX_ERR_NO_MEMORY, "reference build: no memory");
    int npulses = plans[0].n_pulses;
    for (int k = 0; k < npulses && st == HALOX_OK; k++) {
        for (int r = 0; r < nranks && st == HALOX_OK; r++)
            st = halox__plan_select(&plans[r], k, &atoms[r]);
        /* pack every sender before any receiver appends (a rank may send to itself) */
        for (int r = 0; r < nranks && st == HALOX_OK; r++) {
            size_t bytes = halox__plan_setup_bytes(&atoms[r], plans[r].pulse[k].send_count);
            free(buf[r]);
            buf[r] = malloc(bytes ? bytes : 1);
            if (!buf[r])
                st = halox__error(HALOX_ERR_NO_MEMORY, "reference build: no memory");
            else
                halox__plan_pack_setup(&plans[r], k, &atoms[r], buf[r]);
        }
        for (int r = 0; r < nranks && st == HALOX_OK; r++) {
            int src = plans[r].pulse[k].recv_rank;
            st = halox__plan_recv(&plans[r], k, &atoms[r], plans[src].pulse[k].send_count);
            if (st == HALOX_OK)
                halox__plan_unpack_setup(&plans[r], k, &atoms[r], buf[src]);
        }
    }
    for (int r = 0; r < nranks; r++)
        free(buf[r]);
    free(buf);
    if (st != HALOX_OK)
        return st;
    for (int r = 0; r < nranks; r++)
        halox__plan_end(&plans[r], &atoms[r]);
    return HALOX_OK;
}

void halox_reference_coords(const halox_plan_t *plans, int nranks, halox_real_t real, int stride,
                            void *const *x)
{
    size_t rs = halox_real_size(real) * (size_t)stride;
    for (int k = 0; k < plans[0].n_pulses; k++) {
        /* pulse order: forwarded atoms were delivered by earlier pulses already; a receiver's
         * range for pulse k is never read by the senders of pulse k, so writing in place is
         * safe */
        for (int r = 0; r < nranks; r++) {
            const halox_pulse_t *p = &plans[r].pulse[k];
            const halox_pulse_t *q = &plans[p->send_rank].pulse[k];
            halox__pack_coords(real, stride, (char *)x[p->send_rank] + (size_t)q->recv_offset * rs,
                               x[r], p->send_index, p->send_count, p->dim, p->shift);
        }
    }
}

void halox_reference_forces(const halox_plan_t *plans, int nranks, halox_real_t real, int stride,
                            void *const *f)
{
    size_t rs = halox_real_size(real) * (size_t)stride;
    for (int k = plans[0].n_pulses - 1; k >= 0; k--) {
        /* senders add the forces their receiver computed on the atoms they sent; a rank's
         * receive range for pulse k is complete here because later pulses were done first */
        for (int r = 0; r < nranks; r++) {
            const halox_pulse_t *p = &plans[r].pulse[k];
            const halox_pulse_t *q = &plans[p->send_rank].pulse[k];
            halox__add_forces(real, stride, f[r], p->send_index, p->send_count,
                              (const char *)f[p->send_rank] + (size_t)q->recv_offset * rs);
        }
    }
}
