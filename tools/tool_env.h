/* The tools' own environment variables: settings of halox-md, halox-bench and halox-hostprof,
 * not of the library. One X-macro list gives the table that --help-env prints after the
 * library's and the engine's and the names tool_env_string() may read, so that documentation and
 * reads cannot drift. Header-only, with the rows of halox_env_var_t (halox/env.h): the preloaded
 * halox-hostprof, which links nothing of halox, reads it too. */
#ifndef HALOX_TOOLS_TOOL_ENV_H
#define HALOX_TOOLS_TOOL_ENV_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/env.h"

#define TOOL_ENV_LIST(X)                                                                           \
    X("HALOX_LOG_LEVEL", "integer", "1",                                                           \
      "halox-md's verbosity: 0 errors only, 1 normal (2 and 3: as 1 for now); --quiet drops only " \
      "the thermo table and the progress line")                                                    \
    X("HALOX_AUTOTUNE_CACHE", "file", "~/.cache/halox-autotune.tsv",                               \
      "halox-md --autotune: the choices measured so far (size bucket, grid, ranks per node, "      \
      "GPUs, engine, --graph -> transport); delete a line to measure again")                       \
    X("HALOX_COMMIT", "string", "(git)",                                                           \
      "halox-bench: the commit recorded in every result (default: git rev-parse of the sources)")  \
    X("HALOX_BENCH_SPOIL_REFERENCE", "0/1", "0",                                                   \
      "halox-bench test hook: 1 spoils the reference, so a run must report WRONG (tests only)")    \
    X("HALOX_HOSTPROF", "file", "stderr",                                                          \
      "halox-hostprof (tools/hostprof, a preloaded diagnostic): its report's file, %r the MPI "    \
      "rank, %p the process id")                                                                   \
    X("HALOX_HOSTPROF_SKIP", "integer", "0",                                                       \
      "halox-hostprof: the first occurrences of each range left out of the report (set-up)")

/* The table; *count_p gets its length. */
static inline const halox_env_var_t *tool_env_table(int *count_p)
{
    static const halox_env_var_t rows[] = {
#define TOOL_ENV_ROW(name, type, def, desc) {name, type, def, desc},
        TOOL_ENV_LIST(TOOL_ENV_ROW)
#undef TOOL_ENV_ROW
    };
    if (count_p)
        *count_p = (int)(sizeof rows / sizeof rows[0]);
    return rows;
}

/* The variable's value, or NULL when unset or empty. Only names in the table may be read: any
 * other is a mistake of the tool's code, which stops the process naming it. */
static inline const char *tool_env_string(const char *name)
{
    int n;
    const halox_env_var_t *t = tool_env_table(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) {
            const char *v = getenv(name);
            return v && *v ? v : NULL;
        }
    fprintf(stderr, "tool_env_string: %s is not in the tools' table (tools/tool_env.h)\n", name);
    abort();
}

#endif
