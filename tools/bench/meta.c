/* What every record says about where and how it was measured: CPU, cores, GPUs, commit, date,
 * command line. Gathered once, before MPI starts (git runs in a child process, which some MPI
 * libraries dislike after MPI_Init). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "tool_env.h"

#ifndef HALOX_BENCH_SOURCE_DIR
#define HALOX_BENCH_SOURCE_DIR ""
#endif
#ifndef HALOX_BENCH_BUILD_COMMIT
#define HALOX_BENCH_BUILD_COMMIT "unknown"
#endif

static char g_commit[64] = "unknown", g_date[32], g_cpu[128] = "unknown";
static int g_cores;

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\r'))
        s[--n] = '\0';
}

/* HALOX_COMMIT, else git in the source tree now, else the commit the build was configured at */
static void find_commit(void)
{
    const char *env = tool_env_string("HALOX_COMMIT");
    if (env) {
        snprintf(g_commit, sizeof g_commit, "%s", env);
        return;
    }
    snprintf(g_commit, sizeof g_commit, "%s", HALOX_BENCH_BUILD_COMMIT);
    if (!*HALOX_BENCH_SOURCE_DIR || strchr(HALOX_BENCH_SOURCE_DIR, '\''))
        return;
    char cmd[1200], line[64] = "";
    snprintf(cmd, sizeof cmd, "git -C '%s' rev-parse --short HEAD 2>/dev/null",
             HALOX_BENCH_SOURCE_DIR);
    FILE *p = popen(cmd, "r");
    if (!p)
        return;
    if (fgets(line, sizeof line, p)) {
        trim(line);
        if (*line)
            snprintf(g_commit, sizeof g_commit, "%s", line);
    }
    pclose(p);
}

static void find_cpu(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    g_cores = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "processor", 9))
            g_cores++;
        const char *colon = strchr(line, ':');
        if (colon && !strncmp(line, "model name", 10) && !strcmp(g_cpu, "unknown")) {
            snprintf(g_cpu, sizeof g_cpu, "%s", colon + 1 + (colon[1] == ' '));
            trim(g_cpu);
        }
    }
    if (f)
        fclose(f);
}

void bench_meta_init(int argc, char **argv, bench_opts_t *o)
{
    find_commit();
    find_cpu();
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(g_date, sizeof g_date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    o->cmdline[0] = '\0';
    for (int i = 1; i < argc; i++) {
        size_t n = strlen(o->cmdline);
        snprintf(o->cmdline + n, sizeof o->cmdline - n, "%s%s", i > 1 ? " " : "", argv[i]);
    }
}

const char *bench_meta_commit(void) { return g_commit; }
const char *bench_meta_date(void) { return g_date; }
const char *bench_meta_cpu(void) { return g_cpu; }
int bench_meta_cores(void) { return g_cores; }
