/* What every halox tool prints the same way: --version's first lines and --help-env. */
#ifndef HALOX_TOOLS_TOOL_COMMON_H
#define HALOX_TOOLS_TOOL_COMMON_H

#include <stdio.h>

#include "halox/comm.h"
#include "halox/env.h"
#include "halox/features.h"

/* "<tool> <version>", the features of the build and its transports (no final newline: a tool
 * may add a line of its own). */
static inline void tool_print_version(const char *tool)
{
    printf("%s %s\nfeatures: mpi %s, cuda %s, nvshmem %s\ntransports:", tool, HALOX_VERSION_STRING,
           HALOX_FEATURE_MPI ? "yes" : "no", HALOX_FEATURE_CUDA ? "yes" : "no",
           HALOX_FEATURE_NVSHMEM ? "yes" : "no");
    for (const char *const *t = halox_transport_names(); *t; t++)
        printf(" %s", *t);
}

/* Every environment variable halox reads (the library's table). */
static inline void tool_print_env(void)
{
    int n;
    const halox_env_var_t *v = halox_env_table(&n);
    printf("%-20s %-8s %-14s %s\n", "variable", "type", "default", "meaning");
    for (int i = 0; i < n; i++)
        printf("%-20s %-8s %-14s %s\n", v[i].name, v[i].type, v[i].default_value, v[i].description);
}

#endif
