/* What every halox tool prints the same way: --version's first lines and --help-env. */
#ifndef HALOX_TOOLS_TOOL_COMMON_H
#define HALOX_TOOLS_TOOL_COMMON_H

#include <stdio.h>
#include <string.h>

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

/* Every environment variable halox reads (the library's table), in columns as wide as their
 * longest entry, so that long names keep the table aligned. */
static inline void tool_print_env(void)
{
    int n;
    const halox_env_var_t *v = halox_env_table(&n);
    int w[3] = {(int)strlen("variable"), (int)strlen("type"), (int)strlen("default")};
    for (int i = 0; i < n; i++) {
        const char *col[3] = {v[i].name, v[i].type, v[i].default_value};
        for (int c = 0; c < 3; c++)
            if ((int)strlen(col[c]) > w[c])
                w[c] = (int)strlen(col[c]);
    }
    printf("%-*s  %-*s  %-*s  %s\n", w[0], "variable", w[1], "type", w[2], "default", "meaning");
    for (int i = 0; i < n; i++)
        printf("%-*s  %-*s  %-*s  %s\n", w[0], v[i].name, w[1], v[i].type, w[2], v[i].default_value,
               v[i].description);
}

#endif
