/* The library's environment table: one X-macro list, so docs, --help-env and reads cannot drift.
 * Each row is a tuning knob or a diagnostic of libhalox; the engine and the tools keep their own
 * settings in tables of their own. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/env.h"
#include "core/error.h"

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
    X("HALOX_MD_INNER_BUFFER", "length", "5 % of the cut-off",                                     \
      "GPU engine: buffer of the inner pair lists pruned on the GPU from the outer ones (cut-off " \
      "+ skin); 0 turns pruning off; values not below --skin do too")                              \
    X("HALOX_MD_DEVICE_REBUILD", "0/1", "1",                                                       \
      "GPU engine: 1 keeps every rebuild after the first on the device (migration and plan "       \
      "build by halox_comm_migrate_device / halox_comm_build_plan_device on the device arrays, "   \
      "no positions through the host); 0 brings them through the host (the CPU engine's "          \
      "migration and plan build)")                                                                 \
    X("HALOX_MD_MIGRATE_ASYNC", "0/1", "1",                                                        \
      "GPU engine, rebuilds on the device: 1 lets the migration return with the arrivals' "        \
      "placement enqueued (halox_device_atoms_t.async), the plan build behind it waiting for it; " \
      "0 waits for it in the migration")                                                           \
    X("HALOX_MD_SORT", "0/1", "1",                                                                 \
      "GPU engine: 1 lays each rank's home atoms out in the last build's cluster order at every "  \
      "rebuild on the device, and by cell at a rebuild through the host (as the CPU engine "       \
      "does), so the per-atom kernels read in runs; 0 keeps the order the atoms came in")          \
    X("HALOX_MD_INLINE", "0/1", "1",                                                               \
      "GPU engine on nvshmem-inline: 1 exchanges inside the step's kernels (the kick stores the "  \
      "halo into the peers, the halo gather and the last kick wait in-kernel) when the plan "      \
      "allows it (no forwarded atoms); 0 calls the transport's own exchange kernels instead")      \
    X("HALOX_MD_PAIR_MASKS", "0/1/2", "0",                                                         \
      "GPU engine: how the pair kernels mask atom pairs on the pruned lists: 0 tests every pair "  \
      "in the kernel (same atom, self pair's half, zone rule), 1 by the masks the prune computed " \
      "(also dropping pairs beyond the inner radius), 2 as 1 and skipping i atoms no lane of a "   \
      "warp pairs with (1 and 2 measured slower on an H200: docs/MD.md)")                          \
    X("HALOX_MD_SEARCH_BISECT", "0/1", "1",                                                        \
      "GPU engine: 1 makes the pair-list search bisect each column for the clusters within reach " \
      "of the row in z (a column holds the box height in clusters), 0 reads whole columns")        \
    X("HALOX_MD_LOCAL_OVERLAP", "0/1/2", "1",                                                      \
      "GPU engine: 1 computes the local forces on a low-priority stream of their own, "            \
      "overlapping the halo exchange (when there is one); 2 the same, started once the halo's "    \
      "positions arrived and enqueued behind the non-local forces (ranks sharing a GPU); 0 after " \
      "the halo forces left, on the exchange's stream")                                            \
    X("HALOX_MD_ROW_CHUNK", "0-4096", "64",                                                        \
      "GPU engine: the entries of a non-local pair-list row one warp takes (a multiple of 32, "    \
      "rounded up): each build lists the rows' non-empty chunks, so a long row is shared by "      \
      "several warps and no warp goes to an empty row; 0 one warp per row, every row")             \
    X("HALOX_MD_GRAPH_UPDATE", "0/1", "1",                                                         \
      "GPU engine, --graph: 1 moves the step's graph executable to the capture after a rebuild "   \
      "(cudaGraphExecUpdate) where the captured exchange allows it, 0 instantiates every capture") \
    X("HALOX_MD_GRAPH_SPAN", "-1-4", "0.05",                                                       \
      "GPU engine, --graph: the head-room of the step kernels' grids over the counts of the "      \
      "build they were captured after (sizes read on the device), so that the step's graph is "    \
      "kept across rebuilds whose counts fit (one rank, nvshmem-inline); -1 captures after every " \
      "rebuild with the counts as values")                                                         \
    X("HALOX_MD_TIMELINE", "prefix", "(none)",                                                     \
      "GPU engine, a diagnosis: each rank writes PREFIX.rankR.tsv, the GPU clock's stamps of its " \
      "step kernels (start, end, in-kernel wait) over the third list's life, or the last one; "    \
      "scripts/timeline.py lines the ranks up into a step's latency budget")                       \
    X("HALOX_SYSTEM_CACHE", "directory", "(none)",                                                 \
      "halox-md: keep random placements there (raw doubles keyed by atoms, density and seed) "     \
      "and read them back bit for bit: millions of atoms start in seconds instead of minutes; a "  \
      "file that fails its checks (size, header, checksum, a coordinate outside the box) is "      \
      "refused, naming it")                                                                        \
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
