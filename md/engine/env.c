/* The engine's environment variables: one X-macro list gives the table that halox-md --help-env
 * prints after the library's (halox_md_env_table()); the engine reads them, and the library's own
 * (the transport, the device, the timeout), with the library's readers (halox/env.h), and the
 * test env_tables checks that every name read is in one of the tables. */
#include "halox/env.h"
#include "halox/md_options.h"

#define MD_ENV_LIST(X)                                                                             \
    X("HALOX_MD_INNER_BUFFER", "length", "5 % of the cut-off",                                     \
      "tuning: GPU engine: buffer of the inner pair lists pruned on the GPU from the outer ones "  \
      "(cut-off + skin); 0 turns pruning off; values not below --skin do too; a cost trade, not "  \
      "an accuracy setting (prunes every few steps against longer inner rows): set it to "         \
      "measure that trade on another GPU, density or cut-off")                                     \
    X("HALOX_MD_DEVICE_REBUILD", "0/1", "1",                                                       \
      "diagnostic: GPU engine: 1 keeps every rebuild after the first on the device (migration "    \
      "and plan build by halox_comm_migrate_fixed / halox_comm_build_plan_fixed on the device "    \
      "arrays, no positions through the host); 0 brings them through the host (the CPU "           \
      "engine's migration and plan build); set 0 to tell a fault of the device rebuild from one "  \
      "elsewhere, or to compare the two")                                                          \
    X("HALOX_MD_INLINE", "0/1", "1",                                                               \
      "diagnostic: GPU engine on nvshmem-inline: 1 exchanges inside the step's kernels (the kick " \
      "stores the halo into the peers, the halo gather and the last kick wait in-kernel) when "    \
      "the plan allows it (no forwarded atoms); 0 calls the transport's own exchange kernels "     \
      "instead; set 0 to tell a fault of the in-kernel exchange from the transport's, or to "      \
      "compare the two")                                                                           \
    X("HALOX_MD_ROW_CHUNK", "0-4096", "64",                                                        \
      "tuning: GPU engine: the entries of a non-local pair-list row one warp takes (a multiple "   \
      "of 32, rounded up): each build lists the rows' non-empty chunks, so a long row is shared "  \
      "by several warps and no warp goes to an empty row; 0 one warp per row, every row; set it "  \
      "to measure another split where the non-local rows are longer or shorter (the halo's "       \
      "depth, the density)")                                                                       \
    X("HALOX_MD_GRAPH_SPAN", "-1-4", "0.05",                                                       \
      "tuning: GPU engine, --graph: the head-room of the step kernels' grids over the counts of "  \
      "the build they were captured after (sizes read on the device), so that the step's graph "   \
      "is kept across rebuilds whose counts fit (one rank, nvshmem-inline); -1 captures after "    \
      "every rebuild with the counts as values; raise it when the summary's graph_kept stays "     \
      "well below the rebuilds (counts drifting past the head-room)")                              \
    X("HALOX_MD_TIMELINE", "prefix", "(none)",                                                     \
      "diagnostic: GPU engine: each rank writes PREFIX.rankR.tsv, the GPU clock's stamps of its "  \
      "step kernels (start, end, in-kernel wait) over the third list's life, or the last one; "    \
      "scripts/plot/timeline.py lines the ranks up into a step's latency budget; set it to see "   \
      "where a step's time goes")                                                                  \
    X("HALOX_SYSTEM_CACHE", "directory", "(none)",                                                 \
      "tuning: halox-md: keep random placements there (raw doubles keyed by atoms, density and "   \
      "seed) and read them back bit for bit: millions of atoms start in seconds instead of "       \
      "minutes; a file that fails its checks (size, header, checksum, a coordinate outside the "   \
      "box) is refused, naming it; set it where runs start the same large random system again")

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
