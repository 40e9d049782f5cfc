/* Internal: errors with a message (halox_last_error()), src/core/status.c. */
#ifndef HALOX_CORE_ERROR_H
#define HALOX_CORE_ERROR_H

#include "halox/status.h"

#if defined(__GNUC__)
#define HALOX__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define HALOX__PRINTF(a, b)
#endif

/* Record a detailed message for halox_last_error() on this thread and return st: the library's
 * short name for halox_set_error(). */
#define halox__error halox_set_error

#endif
