/* Internal: typed reads of the variables listed in env.c's table. */
#ifndef HALOX_CORE_ENV_H
#define HALOX_CORE_ENV_H

#include "halox/env.h"

/* The variable's value, or NULL when unset or empty. Only names in the table may be read. */
const char *halox__env_string(const char *name);
/* The variable as a number; 0 when unset or not a number. */
double halox__env_double(const char *name);

#endif
