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
    X("HALOX_CPU_AFFINITY", "gpu/off", "off",                                                      \
      "gpu: each rank of a GPU transport runs on the cores local to its GPU (sysfs "               \
      "local_cpulist, within the launcher's binding), shared among the ranks of that GPU; "        \
      "threads it starts later (NVSHMEM's proxy) inherit it; halox-md reports the binding")        \
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
