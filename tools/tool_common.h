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
#include "halox/md_options.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "tool_env.h"

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

/* One table of environment variables under its title in --help-env. */
typedef struct tool_env_section {
    const char *title;
    const halox_env_var_t *(*table)(int *count_p);
} tool_env_section_t;

/* Every table of environment variables the tools know, in --help-env's order: what --help-env
 * prints, what the ranks of a job agree on (tool_agree.c) and what benchmark records keep
 * (bench/record.c) all come from this list. */
static inline const tool_env_section_t *tool_env_sections(int *count_p)
{
    static const tool_env_section_t sections[] = {
        {"the library's (libhalox)", halox_env_table},
        {"the engine's (libhalox_md)", halox_md_env_table},
        {"the tools' (halox-md, halox-check, halox-bench, halox-hostprof)", tool_env_table},
    };
    *count_p = (int)(sizeof sections / sizeof sections[0]);
    return sections;
}

/* Every environment variable halox reads, table by table under their titles, in columns as wide
 * as their longest entry in any table, so that long names keep the columns aligned. */
static inline void tool_print_env(void)
{
    int ns;
    const tool_env_section_t *s = tool_env_sections(&ns);
    int w[3] = {(int)strlen("variable"), (int)strlen("type"), (int)strlen("default")};
    for (int k = 0; k < ns; k++) {
        int n;
        const halox_env_var_t *v = s[k].table(&n);
        for (int i = 0; i < n; i++) {
            const char *col[3] = {v[i].name, v[i].type, v[i].default_value};
            for (int c = 0; c < 3; c++)
                if ((int)strlen(col[c]) > w[c])
                    w[c] = (int)strlen(col[c]);
        }
    }
    printf("%-*s  %-*s  %-*s  %s\n", w[0], "variable", w[1], "type", w[2], "default", "meaning");
    for (int k = 0; k < ns; k++) {
        int n;
        const halox_env_var_t *v = s[k].table(&n);
        printf("%s%s:\n", k ? "\n" : "", s[k].title);
        for (int i = 0; i < n; i++)
            printf("%-*s  %-*s  %-*s  %s\n", w[0], v[i].name, w[1], v[i].type, w[2],
                   v[i].default_value, v[i].description);
    }
}

/* The options every tool answers and then exits 0: --help (-h), --version, --help-env. 1 after
 * printing, 0 for any other argument. */
static inline int tool_info_option(const char *a, void (*usage)(FILE *), void (*version)(void))
{
    if (!strcmp(a, "--help") || !strcmp(a, "-h"))
        usage(stdout);
    else if (!strcmp(a, "--version"))
        version();
    else if (!strcmp(a, "--help-env"))
        tool_print_env();
    else
        return 0;
    return 1;
}

/* Past the file size limit (ulimit -f) a write then fails with EFBIG, which the writers report
 * with the file's name and exit 1, instead of SIGXFSZ ending the tool without a word and a
 * temporary file left behind. First thing in main: the ranks a launcher starts do it too. */
static inline void tool_ignore_file_limit_signal(void) { signal(SIGXFSZ, SIG_IGN); }

#endif
