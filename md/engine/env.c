/* The engine's environment variables (md_internal.h): one X-macro list gives the table that
 * halox-md --help-env prints after the library's (halox_md_env_table()) and the names the reads
 * below take, so that documentation and reads cannot drift. The library's own variables (the
 * transport, the device, the timeout) are read with the same functions; their table is
 * halox_env_table(). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/md_options.h"

#define MD_ENV_LIST(X)                                                                             \
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
      "refused, naming it")

static const halox_env_var_t md__env_vars[] = {
#define MD__ENV_ROW(name, type, def, desc) {name, type, def, desc},
    MD_ENV_LIST(MD__ENV_ROW)
#undef MD__ENV_ROW
};

const halox_env_var_t *halox_md_env_table(int *count_p)
{
    if (count_p)
        *count_p = (int)(sizeof md__env_vars / sizeof md__env_vars[0]);
    return md__env_vars;
}

const char *md__env_string(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The variable as a number in [lo, hi], a whole one when whole; def when unset or empty. */
static halox_status_t md__env_read(const char *name, double lo, double hi, double def, int whole,
                                   double *out)
{
    const char *v = md__env_string(name);
    *out = def;
    if (!v)
        return HALOX_OK;
    /* the whole value, blanks after it aside, as a finite number in range */
    char *end = NULL;
    errno = 0;
    const double d = strtod(v, &end);
    const int none = end == v;
    end += strspn(end, " \t\n");
    if (none || *end || errno == ERANGE || !isfinite(d) || d < lo || d > hi ||
        (whole && d != floor(d)))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "%s='%s' is not a %s from %g to %g: set it to one, or unset it for "
                               "the default (%g)",
                               name, v, whole ? "whole number" : "number", lo, hi, def);
    *out = d;
    return HALOX_OK;
}

halox_status_t md__env_number(const char *name, double lo, double hi, double def, double *out)
{
    return md__env_read(name, lo, hi, def, 0, out);
}

halox_status_t md__env_int(const char *name, int lo, int hi, int def, int *out)
{
    double d;
    const halox_status_t st = md__env_read(name, lo, hi, def, 1, &d);
    *out = (int)d;
    return st;
}

halox_status_t md__env_flag(const char *name, int def, int *out)
{
    const char *v = md__env_string(name);
    *out = v && !strcmp(v, "1") ? 1 : v && !strcmp(v, "0") ? 0 : def;
    if (v && strcmp(v, "0") && strcmp(v, "1"))
        return halox_set_error(HALOX_ERR_INVALID_ARG, "%s='%s': set it to 0 or 1, or unset it",
                               name, v);
    return HALOX_OK;
}
