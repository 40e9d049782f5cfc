/* The MPI launcher a tool was started by, known before MPI_Init from the variables launchers
 * set in every process (mpirun/mpiexec of Open MPI, MPICH, Intel MPI, MVAPICH2; srun with PMI
 * or PMIx). The tools read it to decide, before MPI starts, whether their ranks run as
 * processes: a transport whose ranks are threads must not run one copy per process. */
#ifndef HALOX_TOOLS_TOOL_LAUNCH_H
#define HALOX_TOOLS_TOOL_LAUNCH_H

#include <stdio.h>
#include <stdlib.h>

/* The most processes a launcher's count may say, more than any machine runs: a larger count
 * (or one that is no count) is refused by tool_launch_check() before grids or per-rank arrays
 * are sized by it. */
#define TOOL_LAUNCH_MAX_PROCESSES 16777216

/* A launcher's count: from 1 to TOOL_LAUNCH_MAX_PROCESSES, else 0 (not a count, or beyond). */
static inline int tool_launch_count(const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);
    return end == v || *end || n < 1 || n > TOOL_LAUNCH_MAX_PROCESSES ? 0 : (int)n;
}

/* The first of the variables that is set, and its count (0 when none is set or it is no count
 * within the bound). */
static inline int tool_launch_var(const char *const *vars, const char **name_p)
{
    for (int k = 0; vars[k]; k++) {
        const char *v = getenv(vars[k]);
        if (v && *v) {
            if (name_p)
                *name_p = vars[k];
            return tool_launch_count(v);
        }
    }
    return 0;
}

/* Processes of the MPI job this process was started in (0: not started by an MPI launcher).
 * *var_p, when given, gets the variable that said so (NULL if none). Slurm's SLURM_NTASKS is
 * not read: a batch script has it too, without being one of the job's tasks. */
static inline int tool_launched_processes_var(const char **var_p)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE",
                                       "MV2_COMM_WORLD_SIZE", NULL};
    if (var_p)
        *var_p = NULL;
    return tool_launch_var(vars, var_p);
}

static inline int tool_launched_processes(void) { return tool_launched_processes_var(NULL); }

/* 0 when the launcher's process count is unset or a count within the bound; else prints
 * "TOOL: VAR='...': ..." on stderr and returns 2. Tools call it first, before anything reads the
 * count. */
static inline int tool_launch_check(const char *tool)
{
    const char *var = NULL;
    if (tool_launched_processes_var(&var) > 0 || !var)
        return 0;
    fprintf(stderr,
            "%s: %s='%s' is not a process count from 1 to %d: an MPI launcher sets it in every "
            "process it starts; unset it when none started this process\n",
            tool, var, getenv(var), TOOL_LAUNCH_MAX_PROCESSES);
    return 2;
}

/* Processes of the job on this node as the launcher says (0: unknown). */
static inline int tool_launched_local_processes(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS",
                                       "MV2_COMM_WORLD_LOCAL_SIZE",  "PMI_LOCAL_SIZE",
                                       "SLURM_NTASKS_PER_NODE",      NULL};
    return tool_launch_var(vars, NULL);
}

/* "started by an MPI launcher with P processes (VAR=P)", for messages. */
static inline void tool_launch_describe(char *buf, size_t cap)
{
    const char *var = NULL;
    int p = tool_launched_processes_var(&var);
    if (var)
        snprintf(buf, cap, "started by an MPI launcher with %d process%s (%s=%d)", p,
                 p == 1 ? "" : "es", var, p);
    else
        snprintf(buf, cap, "not started by an MPI launcher");
}

#endif
