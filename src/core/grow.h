/* Internal: arrays that grow by doubling (src/core/grow.c). */
#ifndef HALOX_CORE_GROW_H
#define HALOX_CORE_GROW_H

#include <stddef.h>

#include "halox/status.h"

/* Grow *p to hold at least n elements of size elem (capacity in *cap, doubled). */
halox_status_t halox__grow(void **p, int *cap, int n, size_t elem);

#endif
