/* The library's environment table: one X-macro list, so docs, --help-env and reads cannot drift.
 * Each row is a tuning knob or a diagnostic of libhalox; the engine and the tools keep their own
 * settings in tables of their own. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "halox/env.h"

#define HALOX_ENV_LIST(X)                                                                          \
    X("HALOX_TRANSPORT", "string", "auto",                                                         \
      "tuning: the transport when --transport is not given (halox-md, halox-check): one of "       \
      "the build's, or auto (threads in one process, mpi under an MPI launcher, the GPU "          \
      "engine's own choice); set it to run every command of a job on one transport")               \
    X("HALOX_DEVICE", "string", "auto",                                                            \
      "tuning: halox-md's engine when --device is not given: gpu, cpu, or auto (the GPU "          \
      "engine when a GPU is visible, the transport is unset or auto, the precision float and "     \
      "one process per rank); set cpu to run the CPU engine, the oracle, on a GPU machine")        \
    X("HALOX_TIMEOUT_S", "seconds", "60",                                                          \
      "tuning: bound on every wait for a peer (signals, messages, barriers), 0.001 to 1e6, "       \
      "other values refused; an expired wait fails naming rank, pulse, peer and step; raise "      \
      "it under a debugger or a slow start, lower it to see a hang sooner")                        \
    X("HALOX_CPU_AFFINITY", "gpu/off", "off",                                                      \
      "tuning: gpu runs each rank of a GPU transport on the cores local to its GPU (sysfs "        \
      "local_cpulist, within the launcher's binding), shared by that GPU's ranks and "             \
      "inherited by NVSHMEM's proxy thread; set it where the launcher does not bind ranks "        \
      "near their GPUs")                                                                           \
    X("HALOX_HYBRID_UNREACHABLE", "pairs", "(none)",                                               \
      "diagnostic: pairs of ranks taken as unable to reach each other's memory by loads and "      \
      "stores: 'all', 'node:N' (blocks of N consecutive ranks as nodes) or 'A-B,C-D' (pairs, "     \
      "not ranges); hybrid sends them through MPI, threads through a mailbox copy; set it to "     \
      "run the paths between nodes on one node")                                                   \
    X("HALOX_NVSHMEM_PUT", "0/1", "0",                                                             \
      "diagnostic: 1 makes the NVSHMEM transports never store into peers' memory: every pulse "    \
      "is a put-with-signal (the RDMA path of peers without load/store access); set it to "        \
      "test or time that path on one node")                                                        \
    X("HALOX_NVSHMEM_TMA", "0/1", "0",                                                             \
      "diagnostic: 1 makes nvshmem-pulse/fused write coordinates to NVLink peers with bulk "       \
      "asynchronous copies from shared memory (TMA, sm_90) instead of thread stores (halox-md "    \
      "--tma); slower where measured (docs/NVSHMEM.md): set it only to compare")                   \
    X("HALOX_NVSHMEM_BLOCKS", "integer", "(from the halo size)",                                   \
      "tuning: thread blocks per pulse of nvshmem-pulse/fused (default about 512 elements per "    \
      "block; at most 2 per SM shared by the pulses and the ranks of a GPU, so every spinning "    \
      "block is resident); set it to measure another grid")                                        \
    X("HALOX_NVSHMEM_SIGNAL_ONLY", "0/1/2", "0",                                                   \
      "diagnostic, results wrong: 1 exchanges every pulse's signals but no atoms (the "            \
      "benchmarks' floor); 2 launches halox's exchange kernels empty (the launch floor; "          \
      "nvshmem-pulse, -fused, -inline); set it only to measure those floors")                      \
    X("HALOX_NVSHMEM_HEADROOM", "factor", "1.25",                                                  \
      "tuning: the NVSHMEM transports' symmetric buffers hold the largest rank's need times "      \
      "this, 1 to 16, so migration rarely forces a collective regrowth; raise it when binds "      \
      "regrow them often, lower it when symmetric memory is short")                                \
    X("HALOX_NVSHMEM_DIRECT_MESSAGES", "0/1/2", "2",                                               \
      "diagnostic: how the NVSHMEM transports (not hybrid) send the device rebuild's messages "    \
      "when every rank reaches its peers by stores: 2 by kernels ordered with signals between "    \
      "the GPUs (no host wait; up to 32 ranks, else 1), 1 by copies the host waits for and "       \
      "agrees on, 0 through pinned memory and MPI; 0 and 1 are the comparisons")                   \
    X("NVSHMEM_SYMMETRIC_SIZE", "bytes", "1G (NVSHMEM's)",                                         \
      "tuning, NVSHMEM's own: the symmetric heap per PE, which must hold x, f, the force "         \
      "buffers and staging of the largest rank; raise it when a bind fails naming the bytes "      \
      "it needs")

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

const char *halox_env_string(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The whole string, blanks after it aside, as a finite number, else 0 (no other trailing
 * characters, no overflow). */
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

halox_status_t halox_env_number(const char *name, double lo, double hi, double def, double *out_p)
{
    const char *v = halox_env_string(name);
    *out_p = def;
    if (!v)
        return HALOX_OK;
    double d;
    if (!halox__env_parse(v, &d) || d < lo || d > hi)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s='%s' is not a number from %g to %g: set it to one, or unset it "
                            "for the default (%g)",
                            name, v, lo, hi, def);
    *out_p = d;
    return HALOX_OK;
}

halox_status_t halox_env_int(const char *name, int lo, int hi, int def, int *out_p)
{
    double d;
    halox_status_t st = halox_env_number(name, lo, hi, def, &d);
    if (st == HALOX_OK && d != floor(d))
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "%s='%s' is not a whole number: set it to one from %d to %d, or unset "
                          "it for the default (%d)",
                          name, halox_env_string(name), lo, hi, def);
    *out_p = st == HALOX_OK ? (int)d : def;
    return st;
}

halox_status_t halox_env_flag(const char *name, int def, int *out_p)
{
    const char *v = halox_env_string(name);
    *out_p = def;
    if (!v)
        return HALOX_OK;
    if (!strcmp(v, "0") || !strcmp(v, "1")) {
        *out_p = v[0] == '1';
        return HALOX_OK;
    }
    return halox__error(HALOX_ERR_INVALID_ARG, "%s='%s': set it to 0 or 1, or unset it", name, v);
}
