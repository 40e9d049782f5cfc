/** @file
 * The environment variables libhalox reads, in one table: each a tuning knob or a diagnostic, with
 * its type, default and meaning (the tools print it with --help-env). */
#ifndef HALOX_ENV_H
#define HALOX_ENV_H

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One environment variable: every field a non-empty static string. */
typedef struct halox_env_var {
    const char *name;          /**< "HALOX_TIMEOUT_S" */
    const char *type;          /**< "string", "seconds", "integer", "0/1", ... */
    const char *default_value; /**< the value taken when it is unset or empty */
    const char *description;   /**< what it does and when to change it; the library's rows
                                    begin with "tuning:" or "diagnostic:" */
} halox_env_var_t;

/** The library's table; *count_p gets its length. Not collective, thread-safe: the rows are
 *  static and owned by the library. */
const halox_env_var_t *halox_env_table(int *count_p);

/** @name Readers
 *  The readers the library reads its own variables with, for any code's knobs: a value that is
 *  set but not what the variable takes is an error naming the variable and its value (a
 *  misspelt knob is never taken silently as the default). Not collective; thread-safe as
 *  getenv() is (the environment unchanged meanwhile). */
/** @{ */

/** The variable's value, or NULL when it is unset or empty. */
const char *halox_env_string(const char *name);

/** The variable as a finite number in [lo, hi] (blanks after it allowed) into *out_p; def when
 *  unset or empty. Anything else (not a number, other trailing characters, inf, NaN, out of
 *  range) returns HALOX_ERR_INVALID_ARG, with *out_p = def, and a message naming the variable, its
 *  value and the range. */
halox_status_t halox_env_number(const char *name, double lo, double hi, double def, double *out_p);

/** As halox_env_number for a whole number in [lo, hi]. */
halox_status_t halox_env_int(const char *name, int lo, int hi, int def, int *out_p);

/** A 0/1 switch into *out_p: def when unset or empty; anything but "0" and "1" returns
 *  HALOX_ERR_INVALID_ARG, with *out_p = def. */
halox_status_t halox_env_flag(const char *name, int def, int *out_p);
/** @} */

#ifdef __cplusplus
}
#endif
#endif
