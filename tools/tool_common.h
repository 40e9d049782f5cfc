/* What every halox tool prints the same way: --version's first lines and --help-env. */
#ifndef HALOX_TOOLS_TOOL_COMMON_H
#define HALOX_TOOLS_TOOL_COMMON_H

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/env.h"
#include "halox/features.h"
#include "halox/topology.h"
#include "halox/transport.h"

/* How the build was compiled, one line for banners and --version: "RelWithDebInfo (C: -O2 -g
 * -DNDEBUG)", with the CUDA flags in a CUDA build and a warning when the C code is not
 * optimised (its timings do not compare with those of an optimised build). */
static inline const char *tool_build_line(void)
{
    static char line[768];
    snprintf(line, sizeof line, "%s (C: %s%s%s)%s", HALOX_BUILD_TYPE,
             *HALOX_BUILD_C_FLAGS ? HALOX_BUILD_C_FLAGS : "no flags",
             HALOX_FEATURE_CUDA ? "; CUDA: " : "",
             HALOX_FEATURE_CUDA ? (*HALOX_BUILD_CUDA_FLAGS ? HALOX_BUILD_CUDA_FLAGS : "no flags")
                                : "",
             HALOX_BUILD_OPTIMISED ? "" : " - not an optimised build: its timings do not compare");
    return line;
}

/* "<tool> <version>", the features of the build, how it was compiled and its transports (no
 * final newline: a tool may add a line of its own). */
static inline void tool_print_version(const char *tool)
{
    printf("%s %s\nfeatures: mpi %s, cuda %s, nvshmem %s\nbuild: %s\ntransports:", tool,
           HALOX_VERSION_STRING, HALOX_FEATURE_MPI ? "yes" : "no",
           HALOX_FEATURE_CUDA ? "yes" : "no", HALOX_FEATURE_NVSHMEM ? "yes" : "no",
           tool_build_line());
    for (const char *const *t = halox_transport_names(); *t; t++)
        printf(" %s", *t);
}

/* One table of environment variables (name, type, default, meaning) in columns w. */
static inline void tool_print_env_rows(const halox_env_var_t *v, int n, const int w[3])
{
    for (int i = 0; i < n; i++)
        printf("%-*s  %-*s  %-*s  %s\n", w[0], v[i].name, w[1], v[i].type, w[2], v[i].default_value,
               v[i].description);
}

/* Every environment variable the tool reads: the library's table, then, for a tool that runs
 * the engine, the engine's (engine_table: halox_md_env_table, else NULL) under a line of its
 * own, in columns as wide as their longest entry, so that long names keep the table aligned. */
static inline void tool_print_env(const halox_env_var_t *(*engine_table)(int *))
{
    int n[2] = {0, 0};
    const halox_env_var_t *v[2] = {halox_env_table(&n[0]),
                                   engine_table ? engine_table(&n[1]) : NULL};
    int w[3] = {(int)strlen("variable"), (int)strlen("type"), (int)strlen("default")};
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < n[t]; i++) {
            const char *col[3] = {v[t][i].name, v[t][i].type, v[t][i].default_value};
            for (int c = 0; c < 3; c++)
                if ((int)strlen(col[c]) > w[c])
                    w[c] = (int)strlen(col[c]);
        }
    printf("%-*s  %-*s  %-*s  %s\n", w[0], "variable", w[1], "type", w[2], "default", "meaning");
    tool_print_env_rows(v[0], n[0], w);
    if (n[1] > 0) {
        printf("\nthe engine's (libhalox_md):\n");
        tool_print_env_rows(v[1], n[1], w);
    }
}

/* The options every tool answers and then exits 0: --help (-h), --version, --help-env (with the
 * engine's table when engine_table is not NULL). 1 after printing, 0 for any other argument. */
static inline int tool_info_option(const char *a, void (*usage)(FILE *), void (*version)(void),
                                   const halox_env_var_t *(*engine_table)(int *))
{
    if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        usage(stdout);
    else if (!strcmp(a, "--version"))
        version();
    else if (!strcmp(a, "--help-env"))
        tool_print_env(engine_table);
    else
        return 0;
    return 1;
}

/* Past the file size limit (ulimit -f) a write then fails with EFBIG, which the writers report
 * with the file's name and exit 1, instead of SIGXFSZ ending the tool without a word and a
 * temporary file left behind. First thing in main: the ranks a launcher starts do it too. */
static inline void tool_ignore_file_limit_signal(void) { signal(SIGXFSZ, SIG_IGN); }

#endif
