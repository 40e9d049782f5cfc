/* Internal: the per-atom field exchange (fields.c) as core's endpoint calls use it, and the row
 * helpers a GPU transport's own walk shares. */
#ifndef HALOX_CORE_FIELDS_H
#define HALOX_CORE_FIELDS_H

#include <stddef.h>

#include "halox/endpoint.h"
#include "halox/fields.h"

/* Bytes of one atom's row of f. */
size_t halox__field_row(const halox_field_t *f);
/* Bytes of `rows` rows of f in a message: rounded up to 16, so that the next field's block
 * starts aligned for any element type. */
static inline size_t halox__field_span(const halox_field_t *f, size_t rows)
{
    return (rows * halox__field_row(f) + 15) / 16 * 16;
}
/* Bytes of `rows` rows of every field of a message (the blocks one after the other). */
size_t halox__fields_span(int n, const halox_field_t *fields, size_t rows);
/* dst[i] = f's row index[i], for n rows. */
void halox__field_gather(const halox_field_t *f, void *dst, const int *index, int n);
/* f's row index[i] += src[i], elementwise in f's type, in order i = 0..n-1. */
void halox__field_add(const halox_field_t *f, const int *index, int n, const void *src);

/* HALOX_OK, or HALOX_ERR_INVALID_ARG naming `op`, the field and what to change: n in
 * [0, HALOX_MAX_FIELDS], known types, count >= 1, capacity >= the bound plan's n_total (no plan:
 * no minimum), no HALOX_TYPE_BYTE when `reverse`. Local. */
halox_status_t halox__fields_check(const halox_comm_t *comm, const char *op, int n,
                                   const halox_field_t *fields, int reverse);

/* The exchange of n checked fields over the bound plan (n = 0: nothing), counted in the
 * endpoint's statistics. Collective, with no agreement of its own. */
halox_status_t halox__fields_exchange(halox_comm_t *comm, int reverse, int n,
                                      const halox_field_t *fields);

#endif
