/* Every environment variable halox reads, in one table (tools print it with --help-env). */
#ifndef HALOX_ENV_H
#define HALOX_ENV_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct halox_env_var {
    const char *name;
    const char *type; /**< "string", "seconds", "integer", ... */
    const char *default_value;
    const char *description;
} halox_env_var_t;

/** The table; *count_p gets its length. */
const halox_env_var_t *halox_env_table(int *count_p);

#ifdef __cplusplus
}
#endif
#endif
