/* The environment table: one X-macro list, so docs, --help-env and reads cannot drift. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"

#define HALOX_ENV_LIST(X)                                                                          \
    X("HALOX_TRANSPORT", "string", "auto",                                                         \
      "transport of halox-md and halox-check when --transport is not given: a transport of the "   \
      "build, or auto, the automatic choice (threads in one process, mpi under an MPI launcher, "  \
      "the GPU engine's own choice)")                                                              \
    X("HALOX_DEVICE", "string", "auto",                                                            \
      "halox-md engine when --device is not given: gpu, cpu, or auto (the GPU engine when a "      \
      "GPU is visible, --transport and HALOX_TRANSPORT are unset or auto, the precision is float " \
      "and the run has one rank or is started by mpirun with one process per rank)")               \
    X("HALOX_TIMEOUT_S", "seconds", "60",                                                          \
      "bound on every wait for a peer (signals, messages, barriers), from 0.001 to 1e6; a wait "   \
      "that expires stops the run with an error naming rank, pulse, peer and step; any other "     \
      "value is refused")                                                                          \
    X("HALOX_LOG_LEVEL", "integer", "1",                                                           \
      "halox-md's verbosity: 0 errors only, 1 normal (2 and 3: as 1 for now); --quiet drops only " \
      "the thermo table and the progress line")                                                    \
    X("HALOX_COMMIT", "string", "(git)",                                                           \
      "halox-bench: the commit recorded in every result (default: git rev-parse of the sources)")  \
    X("HALOX_BENCH_SPOIL_REFERENCE", "0/1", "0",                                                   \
      "halox-bench test hook: 1 spoils the reference, so a run must report WRONG (tests only)")    \
    X("HALOX_HOSTPROF", "file", "stderr",                                                          \
      "halox-hostprof (tools/hostprof, a preloaded diagnostic): its report's file, %r the MPI "    \
      "rank, %p the process id")                                                                   \
    X("HALOX_HOSTPROF_SKIP", "integer", "0",                                                       \
      "halox-hostprof: the first occurrences of each range left out of the report (set-up)")       \
    X("HALOX_CPU_AFFINITY", "gpu/off", "off",                                                      \
      "gpu: each rank of a GPU transport runs on the cores local to its GPU (sysfs "               \
      "local_cpulist, within the launcher's binding), shared among the ranks of that GPU; "        \
      "threads it starts later (NVSHMEM's proxy) inherit it; halox-md reports the binding")        \
    X("HALOX_AUTOTUNE_CACHE", "file", "~/.cache/halox-autotune.tsv",                               \
      "halox-md --autotune: the choices measured so far (size bucket, grid, ranks per node, "      \
      "GPUs, "                                                                                     \
      "engine, --graph -> transport); delete a line to measure again")                             \
    X("HALOX_HYBRID_UNREACHABLE", "pairs", "(none)",                                               \
      "pairs of ranks to treat as unable to reach each other's memory by loads and stores: "       \
      "'all', 'node:N' (blocks of N consecutive ranks, as nodes) or 'A-B,C-D' (pairs, not "        \
      "ranges); hybrid sends them through MPI and the host, threads through a mailbox copy")       \
    X("HALOX_NVSHMEM_PUT", "0/1", "0",                                                             \
      "NVSHMEM transports: 1 never stores into peers' memory, every pulse is a put-with-signal "   \
      "(the InfiniBand/RDMA path of peers without load/store access), also within one node")       \
    X("HALOX_NVSHMEM_TMA", "0/1", "0",                                                             \
      "nvshmem-pulse/fused: 1 gathers coordinates in shared memory and writes them to NVLink "     \
      "peers with bulk asynchronous copies (TMA, sm_90) instead of thread stores (halox-md "       \
      "--tma)")                                                                                    \
    X("HALOX_NVSHMEM_BLOCKS", "integer", "(from the halo size)",                                   \
      "nvshmem-pulse/fused: thread blocks per pulse (tuning; at most 2 blocks per SM shared "      \
      "among the pulses and the ranks of a GPU, so that every spinning block is resident)")        \
    X("HALOX_NVSHMEM_SIGNAL_ONLY", "0/1/2", "0",                                                   \
      "NVSHMEM transports: 1 exchanges the signals of every pulse but no atoms (the benchmarks' "  \
      "floor; coordinates and forces are then wrong); 2 launches halox's exchange kernels empty, " \
      "neither atoms nor signals (the launch floor; nvshmem-pulse, -fused, -inline)")              \
    X("HALOX_NVSHMEM_HEADROOM", "factor", "1.25",                                                  \
      "NVSHMEM transports: symmetric buffers are sized to the largest rank's need times this, "    \
      "so migration rarely forces a collective regrowth")                                          \
    X("HALOX_NVSHMEM_DIRECT_MESSAGES", "0/1/2", "2",                                               \
      "NVSHMEM transports (not hybrid): the device rebuild's messages (the plan build's set-up "   \
      "messages, the migrating atoms) go into the receivers' symmetric mailboxes when every "      \
      "rank reaches its peers by stores: 1 by copies the host waits for and agrees on, 2 by "      \
      "kernels that order them with signals between the GPUs (no host wait or agreement; up to "   \
      "32 ranks, else 1); 0 stages them through pinned memory and the host's MPI")                 \
    X("HALOX_NVSHMEM_BIND_SYNC", "0/1", "(1; 0 for stream-ordered callers)",                       \
      "NVSHMEM transports: 1 ends every bind with a wait for its uploads (the device plan, the "   \
      "pulse table); 0 leaves them ordered on the exchange stream before the next exchange "       \
      "(one host wait fewer per rebuild; kernels that read an nvshmem-inline view must then be "   \
      "ordered behind halox_comm_stream()); unset, callers that declared so "                      \
      "(halox_comm_set_stream_ordered, the GPU engine) get 0, others 1")                           \
    X("NVSHMEM_SYMMETRIC_SIZE", "bytes", "1G (NVSHMEM's)",                                         \
      "NVSHMEM's symmetric heap per PE: must hold x, f, force buffers and staging of the largest " \
      "rank (bind reports the bytes needed and fails naming them when it is too small)")

static const halox_env_var_t halox__env_vars[] = {
#define HALOX__ENV_ROW(name, type, def, desc) {name, type, def, desc},
    HALOX_ENV_LIST(HALOX__ENV_ROW)
#undef HALOX__ENV_ROW
};

const halox_env_var_t *halox_env_table(int *count_p)
{
    if (count_p)
        *count_p = (int)(sizeof halox__env_vars / sizeof halox__env_vars[0]);
    return halox__env_vars;
}

const char *halox__env_string(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The whole string as a finite number, else 0 (no trailing characters, no overflow). */
static int halox__env_parse(const char *v, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    while (end && (*end == ' ' || *end == '\t' || *end == '\n'))
        end++;
    if (!end || end == v || *end || errno == ERANGE || !isfinite(d))
        return 0;
    *out = d;
    return 1;
}

halox_status_t halox__env_number(const char *name, double lo, double hi, double def, double *out)
{
    const char *v = halox__env_string(name);
    *out = def;
    if (!v)
        return HALOX_OK;
    double d;
    if (!halox__env_parse(v, &d) || d < lo || d > hi)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s='%s' is not a number from %g to %g: set it to one, or unset it "
                            "for the default (%g)",
                            name, v, lo, hi, def);
    *out = d;
    return HALOX_OK;
}

halox_status_t halox__env_int(const char *name, int lo, int hi, int def, int *out)
{
    double d;
    halox_status_t st = halox__env_number(name, lo, hi, def, &d);
    if (st == HALOX_OK && d != floor(d))
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "%s='%s' is not a whole number: set it to one from %d to %d, or unset "
                          "it for the default (%d)",
                          name, halox__env_string(name), lo, hi, def);
    *out = st == HALOX_OK ? (int)d : def;
    return st;
}

halox_status_t halox__env_flag(const char *name, int *out)
{
    return halox__env_flag_or(name, 0, out);
}

halox_status_t halox__env_flag_or(const char *name, int dflt, int *out)
{
    const char *v = halox__env_string(name);
    *out = dflt;
    if (!v)
        return HALOX_OK;
    if (!strcmp(v, "0") || !strcmp(v, "1")) {
        *out = v[0] == '1';
        return HALOX_OK;
    }
    return halox__error(HALOX_ERR_INVALID_ARG, "%s='%s': set it to 0 or 1, or unset it", name, v);
}
