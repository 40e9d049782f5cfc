/* Internal: the monotonic clock and the bound of every wait (src/core/clock.c). */
#ifndef HALOX_CORE_CLOCK_H
#define HALOX_CORE_CLOCK_H

#include "halox/status.h"

/* Monotonic clock in seconds. */
double halox__now(void);

/* The wait bound to use: `given` when not 0, else HALOX_TIMEOUT_S from the environment, else
 * 60 s. A bound that is not finite, not > 0 or above HALOX_TIMEOUT_MAX_S (in either place) is
 * an error naming it (who: the caller, for the message); *out is then 60. */
halox_status_t halox__timeout(double given, const char *who, double *out);

#endif
