/* The caller's fixed-capacity arrays of halox_comm_build_plan_fixed and halox_comm_migrate_fixed
 * (fixed_atoms.h). */
#include <string.h>

#include "core/error.h"
#include "core/fixed_atoms.h"

halox_status_t halox__fixed_atoms_check(const halox_fixed_atoms_t *a, int rank, const char *op,
                                        int zone)
{
    if (!a->x || !a->id || (zone && !a->zone) || (a->extra_bytes && !a->extra) || a->capacity < 1)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s: rank %d: x and id%s (and extra, with extra_bytes) are required, "
                            "with a capacity of at least 1 (capacity %d)",
                            op, rank, zone ? ", zone" : "", a->capacity);
    if (a->async != 0 && a->async != 1)
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: rank %d: async %d: give 0 or 1", op, rank,
                            a->async);
    if (a->n_carry < 0 || a->n_carry > HALOX_MAX_FIELDS || (a->n_carry > 0 && !a->carry))
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s: rank %d: %d carried fields%s: give 0 to %d in an array", op, rank,
                            a->n_carry, a->n_carry > 0 && !a->carry ? " but carry is NULL" : "",
                            HALOX_MAX_FIELDS);
    for (int i = 0; i < a->n_carry; i++) {
        const halox_field_t *f = &a->carry[i];
        if (halox_type_size(f->type) == 0 || f->count < 1 || !f->data)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "%s: rank %d: carried field %d: type %d, %d elements per atom, "
                                "data %s: give a HALOX_TYPE_ type, a count of at least 1 and "
                                "the array",
                                op, rank, i, (int)f->type, f->count, f->data ? "set" : "NULL");
        if (f->capacity < a->capacity)
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "%s: rank %d: carried field %d holds %d rows but the atoms' "
                                "capacity is %d: give it at least as many",
                                op, rank, i, f->capacity, a->capacity);
    }
    if (a->n_home < 0 || a->n_home > a->capacity)
        return halox__error(HALOX_ERR_INVALID_ARG, "%s: rank %d: %d home atoms but capacity %d", op,
                            rank, a->n_home, a->capacity);
    return HALOX_OK;
}

void halox__fixed_atoms_view(halox_atoms_t *view, halox_real_t real, int stride,
                             const halox_fixed_atoms_t *a)
{
    memset(view, 0, sizeof *view);
    view->real = real;
    view->stride = stride;
    view->x = a->x;
    view->id = a->id;
    view->extra = a->extra;
    view->extra_bytes = a->extra_bytes;
    view->n_home = view->n_total = a->n_home;
    view->capacity = a->capacity;
}
