/* The environment variables libhalox reads, in one table: each a tuning knob or a diagnostic, with
 * its type, default and meaning (the tools print it with --help-env). */
#ifndef HALOX_ENV_H
#define HALOX_ENV_H

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

#ifdef __cplusplus
}
#endif
#endif
