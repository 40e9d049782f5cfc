/* halox-bench: every halox benchmark behind one command line (like nccl-tests).
 *
 *   halox-bench halo|latency|bandwidth|md|scaling|overlap [options]
 *
 * The subcommands live in tools/bench/; this file only dispatches. Exit status: 0 measured
 * (cases that cannot run here are reported and skipped), 1 a wrong result or a run-time
 * failure, 2 bad usage or bad input. See docs/BENCH.md. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "halox/md_options.h"
#include "tool_common.h"
#include "tool_launch.h"

/* What the measurements were built with, before any table: timings compare only between builds
 * with the same flags (the records carry the same as build.*). */
static void bench_print_build(void)
{
    printf("halox-bench %s, commit %s, build %s\n", HALOX_VERSION_STRING, bench_meta_commit(),
           tool_build_line());
    fflush(stdout);
}

static void version(void)
{
    tool_print_version("halox-bench");
    printf("\n");
}

int main(int argc, char **argv)
{
    tool_ignore_file_limit_signal();
    if (argc < 2) {
        bench_usage(stderr);
        return BENCH_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "help") || tool_info_option(cmd, bench_usage, version)) {
        if (!strcmp(cmd, "help"))
            bench_usage(stdout);
        return 0;
    }
    static const char *const known[] = {"halo",    "latency", "bandwidth", "md",
                                        "overlap", "scaling", NULL};
    int ok = 0;
    for (int i = 0; known[i]; i++)
        ok |= !strcmp(cmd, known[i]);
    if (!ok)
        return bench_bad("unknown subcommand '%s' (use halo, latency, bandwidth, md, overlap, "
                         "scaling; see --help)",
                         cmd);
    if (tool_launch_check("halox-bench"))
        return BENCH_USAGE;
    static bench_opts_t o; /* large: not on the stack */
    memset(&o, 0, sizeof o);
    o.cmd = cmd;
    int rc = bench_parse(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : BENCH_USAGE;
    /* under a launcher with several processes, before MPI starts (every process exits 2 with
     * the message): nothing may run once per process */
    if (bench_launched_processes() > 1) {
        char how[160];
        tool_launch_describe(how, sizeof how);
        if (!strcmp(cmd, "scaling"))
            return bench_bad("scaling reads the JSON files of earlier runs in one process, but "
                             "halox-bench was %s: run it without mpirun",
                             how);
        if (!halox_transport_available("mpi"))
            return bench_bad("halox-bench was %s, but this build has no MPI (see --version): "
                             "start one process without mpirun (--threads P)",
                             how);
        int threads_only = o.n_transports > 0;
        for (int i = 0; i < o.n_transports; i++)
            threads_only &= bench_label_caps(o.transports[i]).threads;
        if (threads_only)
            return bench_bad("--transport threads runs its ranks in one process, but halox-bench "
                             "was %s: each process would measure its own copy. Use --transport "
                             "mpi (or leave -t out: every transport of the build but threads), "
                             "or start one process without mpirun (--threads P)",
                             how);
    }
    bench_meta_init(argc, argv, &o);
    if (!strcmp(cmd, "scaling")) {
        bench_print_build();
        return bench_cmd_scaling(&o);
    }
    int need_mpi = 0;
    for (int i = 0; i < o.n_transports; i++)
        need_mpi |= !bench_label_caps(o.transports[i]).threads;
    if (bench_mpi_start(&argc, &argv, need_mpi))
        return BENCH_USAGE;
    if (bench_world_rank() == 0)
        bench_print_build();
    if (!strcmp(cmd, "halo"))
        rc = bench_cmd_halo(&o);
    else if (!strcmp(cmd, "md"))
        rc = bench_cmd_md(&o);
    else if (!strcmp(cmd, "overlap"))
        rc = bench_cmd_overlap(&o);
    else
        rc = bench_cmd_pingpong(&o);
    bench_mpi_stop();
    return rc;
}
