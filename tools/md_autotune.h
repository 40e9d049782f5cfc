/* halox-md --autotune: measure each candidate transport for a few steps at start-up, keep the
 * fastest, remember the choice in a cache file (tools/md_autotune.c). MPI launches only. */
#ifndef HALOX_TOOLS_MD_AUTOTUNE_H
#define HALOX_TOOLS_MD_AUTOTUNE_H

#include <stddef.h>

#include "halox/md.h"

/* Collective over MPI_COMM_WORLD. The candidates are the transports of the configuration's
 * engine (GPU: every GPU transport of the build; CPU: mpi); each runs `steps` steps of the same
 * system without output, in 3 interleaved rounds, judged by its median. The fastest wins unless
 * the rule's choice (cfg->transport) is within the measured noise of it (the largest spread of a
 * candidate's rounds, at least 2 %): then the rule's choice stays. The cache
 * ($HALOX_AUTOTUNE_CACHE, else ~/.cache/halox-autotune.tsv) is keyed by system size (power of two),
 * grid, ranks per node, visible GPUs, engine and --graph; a cached transport of this build is taken
 * without measuring. On success *choice is the transport (a static string) and the table and the
 * reason were printed on rank 0 when `print`. Returns 0, or 1 when no candidate ran (message in
 * why). */
int md_autotune(const halox_md_config_t *cfg, const halox_md_system_t *sys, int steps, int rank,
                int print, const char **choice, char *why, size_t why_len);

#endif
