/* Internal: typed reads of the variables listed in env.c's table. */
#ifndef HALOX_CORE_ENV_H
#define HALOX_CORE_ENV_H

#include "halox/env.h"
#include "halox/status.h"

/* The variable's value, or NULL when unset or empty. Only names in the table may be read. */
const char *halox__env_string(const char *name);
/* The variable as a number in [lo, hi]; def when unset or empty. Anything else (not a number,
 * trailing characters, inf, NaN, out of range) is an error naming the variable and its value:
 * a misspelt knob must never be taken silently as the default. */
halox_status_t halox__env_number(const char *name, double lo, double hi, double def, double *out);
/* The same for whole numbers. */
halox_status_t halox__env_int(const char *name, int lo, int hi, int def, int *out);
/* A 0/1 switch: unset or empty is 0; anything but "0" and "1" is an error. */
halox_status_t halox__env_flag(const char *name, int *out);
/* As halox__env_flag, with *out = dflt when the variable is unset or empty. */
halox_status_t halox__env_flag_or(const char *name, int dflt, int *out);

#endif
