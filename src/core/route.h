/* Internal: which pairs of ranks exchange "direct" (one-sided stores or put-with-signal into the
 * peer's memory) and which "staged" (two-sided, through an intermediate buffer: MPI through the
 * host on the GPU, a mailbox on the threads transport). Used by the `hybrid` GPU transport and by
 * `threads`.
 *
 * A pair is direct when both ranks can reach each other's memory by loads and stores (the
 * transport says: nvshmem_ptr() on the GPU, always for threads) and neither declared it
 * unreachable (HALOX_HYBRID_UNREACHABLE). The decision is per pair, so every pulse between the
 * same two ranks takes the same route, in both directions (coordinates out, forces back), and
 * both ranks of a pair agree: each rank votes for its legs, and a leg is direct only when both
 * ends voted for it (the transport exchanges the votes; one process that shares the declaration
 * can mirror its own, halox__route_local()).
 *
 * Pure C: no MPI, no CUDA. */
#ifndef HALOX_CORE_ROUTE_H
#define HALOX_CORE_ROUTE_H

#include <stdint.h>

#include "halox/plan.h"
#include "halox/status.h"

/* Most explicit pairs in a declaration (node:N covers whole blocks of ranks). */
#define HALOX__UNREACH_MAX_PAIRS 64

/* A parsed HALOX_HYBRID_UNREACHABLE: every pair it names is unreachable. */
typedef struct halox__unreach {
    int all;       /* "all": every pair of two different ranks */
    int node_size; /* "node:N": ranks a, b with a / N != b / N (0: none) */
    int n_pairs;
    int pair[HALOX__UNREACH_MAX_PAIRS][2]; /* "A-B", unordered */
} halox__unreach_t;

/* Parse a declaration for a job of nranks ranks (nranks <= 0: ranks not checked). NULL, empty or
 * "none": nothing declared. Items, comma-separated, spaces allowed:
 *   all       every pair
 *   node:N    ranks in different blocks of N consecutive ranks (emulates nodes of N ranks)
 *   A-B       the pair of ranks A and B (a pair, not a range)
 * Errors (HALOX_ERR_INVALID_ARG) quote the text, say where it fails and give the syntax. */
halox_status_t halox__unreach_parse(const char *text, int nranks, halox__unreach_t *u);

/* The same for HALOX_HYBRID_UNREACHABLE, read through the environment table. */
halox_status_t halox__unreach_from_env(int nranks, halox__unreach_t *u);

/* Whether the pair (a, b) is declared unreachable (symmetric; never a rank with itself). */
int halox__unreach_pair(const halox__unreach_t *u, int a, int b);

/* Whether anything is declared. */
int halox__unreach_any(const halox__unreach_t *u);

/* Over the pairs of nranks ranks: whether some pair is declared (*any_p) and every pair
 * (*all_p); both 0 with fewer than 2 ranks. Exact, without visiting every pair. */
void halox__unreach_summary(const halox__unreach_t *u, int nranks, int *any_p, int *all_p);

/* The route of one leg of a pulse. */
typedef enum halox__route_kind {
    HALOX__ROUTE_SELF = 0,   /* a single rank in the dimension: a local copy */
    HALOX__ROUTE_DIRECT = 1, /* stores (or put-with-signal) into the peer, per-pulse signal */
    HALOX__ROUTE_STAGED = 2, /* two-sided through an intermediate buffer */
} halox__route_kind_t;

/* Vote bits of one pulse: this rank would take its send leg / its receive leg direct. */
enum { HALOX__VOTE_SEND = 1, HALOX__VOTE_RECV = 2 };

/* A rank's routes, per pulse of its plan. The send leg goes to send_rank (coordinates out,
 * forces back in), the receive leg comes from recv_rank (coordinates in, forces back out). */
typedef struct halox__route {
    int n_pulses;
    uint8_t send[HALOX_MAX_PULSES]; /* halox__route_kind_t */
    uint8_t recv[HALOX_MAX_PULSES];
    int n_direct; /* legs of each kind over all pulses (self pulses not counted) */
    int n_staged;
} halox__route_t;

/* This rank's votes, per pulse: reach[r] nonzero when rank r's memory is reachable by loads and
 * stores from this rank (NULL: every rank). Self pulses vote for both legs. */
void halox__route_votes(const halox_plan_t *plan, const halox__unreach_t *u, const uint8_t *reach,
                        uint8_t votes[HALOX_MAX_PULSES]);

/* The routes from this rank's votes and its peers': from_send[k] are the votes of pulse k's
 * send_rank (its receive leg is our send leg), from_recv[k] those of recv_rank. */
void halox__route_decide(const halox_plan_t *plan, const uint8_t mine[HALOX_MAX_PULSES],
                         const uint8_t from_send[HALOX_MAX_PULSES],
                         const uint8_t from_recv[HALOX_MAX_PULSES], halox__route_t *route);

/* Every rank reaches every other and shares this declaration (ranks are threads of one
 * process): the peers' votes are this rank's own, mirrored. */
void halox__route_local(const halox_plan_t *plan, const halox__unreach_t *u, halox__route_t *route);

/* "direct", "staged" or "self". */
const char *halox__route_name(int kind);

#endif
