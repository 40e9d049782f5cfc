/** @file
 * Ranks and the machine they run on: teams of ranks that are threads of one process (the
 * `threads` transport), what the job looks like (ranks, GPUs, which GPUs reach each other) and
 * the automatic choice of a transport from it.
 *
 * Every call here is local (no rank talks to another) and may be made from any thread, before
 * or without an endpoint, except where a team's contract below says otherwise. */
#ifndef HALOX_TOPOLOGY_H
#define HALOX_TOPOLOGY_H

#include <stddef.h>

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- teams: ranks as threads of one process ------------------------------------------------ */

/** A team of ranks that live as threads of one process (the `threads` transport): each rank's
 *  thread creates its own endpoint with halox_comm_args_t.team and .rank. */
typedef struct halox_team halox_team_t;

/** A team of `nranks` ranks in *team_p. A rank whose endpoint is created with timeout_s 0 uses
 *  the team's timeout (timeout_s as in halox_comm_args_t: 0 is HALOX_TIMEOUT_S or 60 s). After
 *  an abort or any timeout the team is failed for good: destroy the endpoints, then the team.
 *  Local; the caller owns the team. */
halox_status_t halox_team_create(int nranks, double timeout_s, halox_team_t **team_p);

/** Free a team (NULL is fine). Only after every rank destroyed its endpoint: the endpoints
 *  point into the team. */
void halox_team_destroy(halox_team_t *team);

/** Mark the team failed so that every rank's waits return HALOX_ERR_ABORTED (no hangs); `why`
 *  goes into their messages, naming `rank`. Thread safe: any rank's thread may call it at any
 *  time, also while the others wait. */
void halox_team_abort(halox_team_t *team, int rank, const char *why);

/** The work of one rank of a team (halox_team_run), run on that rank's own thread. */
typedef halox_status_t (*halox_team_fn)(int rank, halox_team_t *team, void *arg);

/** Run fn(rank, team, arg) for ranks 0..nranks-1 as threads of this process and wait for them
 *  (blocking). A rank whose fn fails aborts the team, so the others' waits end instead of
 *  hanging; a thread that cannot start aborts it too and the call returns HALOX_ERR_INTERNAL
 *  naming the rank, with *started_p (when not NULL) below nranks. status[r] (when not NULL) is
 *  rank r's result (HALOX_ERR_ABORTED for a rank never started). Otherwise returns HALOX_OK
 *  when every rank succeeded, else the first failure that was not HALOX_ERR_ABORTED (a rank
 *  stopped because another failed), else the first. The team is the caller's to destroy. */
halox_status_t halox_team_run(halox_team_t *team, int nranks, halox_team_fn fn, void *arg,
                              halox_status_t *status, int *started_p);

/* ---- the machine ----------------------------------------------------------------------------- */

/** CUDA devices this process can use: 0 in a build without CUDA, without a driver or without a
 *  visible GPU (CUDA_VISIBLE_DEVICES). */
int halox_gpu_count(void);

/** Whether every pair of the visible GPUs can access each other's memory (peer access); 1 with
 *  one GPU, 0 without GPUs. */
int halox_gpu_peer_access_all(void);

/** The CPUs the calling thread may run on, as a Linux CPU list ("0-15,32-47"), for reports of
 *  the binding (HALOX_CPU_AFFINITY=gpu binds GPU ranks near their GPU at endpoint creation).
 *  0 on success, -1 when unknown or buf is too small. */
int halox_affinity_describe(char *buf, size_t len);

/* ---- the job and the automatic choice of transport ------------------------------------------- */

/** What the automatic choice of transport looks at. */
typedef struct halox_topology {
    int ranks;           /**< ranks of the job */
    int mpi;             /**< the ranks are MPI processes (else threads of one process) */
    int gpus;            /**< distinct GPUs the ranks use (0: the data stays on the CPU) */
    int ranks_per_gpu;   /**< most ranks on one GPU */
    int load_store;      /**< every rank's GPU can load and store into every other's (one node,
                              NVLink or PCIe peer access), or there is a single GPU, and no pair
                              is declared unreachable (HALOX_HYBRID_UNREACHABLE) */
    int load_store_some; /**< not every pair, but some: ranks reach the others of their node and
                              not those of other nodes, or HALOX_HYBRID_UNREACHABLE declares
                              some pairs (not all) unreachable */
} halox_topology_t;

/** The job's topology as far as this process can tell before the ranks talk: `ranks` in all,
 *  `local_ranks` on this node (<= 0: unknown, taken as one node), data on GPUs or not; GPUs from
 *  the visible ones and their peer access, less the pairs HALOX_HYBRID_UNREACHABLE declares
 *  unreachable. With on_gpu and no GPU visible it assumes one GPU per rank (so a GPU transport
 *  is chosen, which then says what is missing). */
void halox_topology_guess(int ranks, int local_ranks, int on_gpu, halox_topology_t *t);

/** The transport halox's measurements favour on this topology (a name this build has, for
 *  halox_comm_create()), with the reason in why (may be NULL). The rule and its figures:
 *  src/transports/choose.c and docs/NVSHMEM.md. Pure: every rank gets the same answer from the same
 * inputs, so ranks that choose alone still create endpoints of one transport. */
const char *halox_transport_choose(const halox_topology_t *t, long long atoms, char *why,
                                   size_t why_len);

#ifdef __cplusplus
}
#endif
#endif
