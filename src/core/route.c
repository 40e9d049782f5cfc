/* Routes of the halo's legs: direct (one-sided into the peer) or staged (two-sided through an
 * intermediate buffer), per pair of ranks. See route.h. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/route.h"
#include "halox/env.h"

#define HALOX__UNREACH_SYNTAX                                                                      \
    "expected 'all', 'none', 'node:N' (ranks in different blocks of N consecutive ranks) or "      \
    "rank pairs 'A-B' (the pair of ranks A and B, not a range), comma-separated, e.g. "            \
    "'0-1,2-3'"

static const char *halox__skip_space(const char *s)
{
    while (*s && isspace((unsigned char)*s))
        s++;
    return s;
}

/* A non-negative decimal integer at *s (no sign); advances *s. 0 on success. */
static int halox__read_rank(const char **s, long *v)
{
    const char *p = halox__skip_space(*s);
    if (!isdigit((unsigned char)*p))
        return -1;
    char *end = NULL;
    errno = 0;
    long x = strtol(p, &end, 10);
    if (errno || x > (1L << 30))
        return -1;
    *v = x;
    *s = halox__skip_space(end);
    return 0;
}

/* The item at s (up to the next comma or the end) did not parse. */
static halox_status_t halox__unreach_bad(const char *text, const char *at, const char *what)
{
    size_t len = strcspn(at, ",");
    if (len == 0)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "HALOX_HYBRID_UNREACHABLE='%s': %s: " HALOX__UNREACH_SYNTAX, text,
                            what);
    return halox__error(HALOX_ERR_INVALID_ARG,
                        "HALOX_HYBRID_UNREACHABLE='%s': %s at '%.*s': " HALOX__UNREACH_SYNTAX, text,
                        what, (int)len, at);
}

static halox_status_t halox__unreach_rank_check(const char *text, long r, int nranks)
{
    if (nranks > 0 && r >= nranks)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "HALOX_HYBRID_UNREACHABLE='%s' names rank %ld, but the job has %d "
                            "ranks (0..%d): name ranks of this job",
                            text, r, nranks, nranks - 1);
    return HALOX_OK;
}

halox_status_t halox__unreach_parse(const char *text, int nranks, halox__unreach_t *u)
{
    memset(u, 0, sizeof *u);
    if (!text)
        return HALOX_OK;
    const char *s = halox__skip_space(text);
    if (!*s)
        return HALOX_OK;
    for (;;) {
        const char *item = s;
        size_t len = strcspn(s, ", \t");
        if (*s == ',')
            return halox__unreach_bad(text, s, "an empty item between two commas");
        halox_status_t st = HALOX_OK;
        if ((len == 3 && strncmp(s, "all", 3) == 0) || (len == 4 && strncmp(s, "none", 4) == 0)) {
            u->all |= s[0] == 'a';
            s = halox__skip_space(s + len);
        } else if (strncmp(s, "node:", 5) == 0) {
            s += 5;
            long n = 0;
            if (halox__read_rank(&s, &n) != 0 || n < 1)
                return halox__unreach_bad(text, item, "node:N needs a block size N >= 1");
            u->node_size = (int)n;
        } else {
            long a = 0, b = 0;
            if (halox__read_rank(&s, &a) != 0)
                return halox__unreach_bad(text, item, "not a rank");
            if (*s != '-')
                return halox__unreach_bad(text, item, "a rank alone (pairs are 'A-B')");
            s++;
            if (halox__read_rank(&s, &b) != 0)
                return halox__unreach_bad(text, item, "the second rank of the pair is missing");
            if (a == b)
                return halox__unreach_bad(text, item, "a pair needs two different ranks");
            if ((st = halox__unreach_rank_check(text, a, nranks)) != HALOX_OK ||
                (st = halox__unreach_rank_check(text, b, nranks)) != HALOX_OK)
                return st;
            if (u->n_pairs == HALOX__UNREACH_MAX_PAIRS)
                return halox__error(HALOX_ERR_INVALID_ARG,
                                    "HALOX_HYBRID_UNREACHABLE='%s': more than %d pairs: declare "
                                    "blocks of ranks with node:N instead",
                                    text, HALOX__UNREACH_MAX_PAIRS);
            u->pair[u->n_pairs][0] = (int)a;
            u->pair[u->n_pairs][1] = (int)b;
            u->n_pairs++;
        }
        if (!*s)
            return HALOX_OK;
        if (*s != ',')
            return halox__unreach_bad(text, item, "unexpected text after the item");
        s = halox__skip_space(s + 1);
        if (!*s)
            return halox__unreach_bad(text, s, "an empty item after the last comma");
    }
}

halox_status_t halox__unreach_from_env(int nranks, halox__unreach_t *u)
{
    return halox__unreach_parse(halox_env_string("HALOX_HYBRID_UNREACHABLE"), nranks, u);
}

int halox__unreach_pair(const halox__unreach_t *u, int a, int b)
{
    if (!u || a == b)
        return 0;
    if (u->all)
        return 1;
    if (u->node_size > 0 && a / u->node_size != b / u->node_size)
        return 1;
    for (int i = 0; i < u->n_pairs; i++)
        if ((u->pair[i][0] == a && u->pair[i][1] == b) ||
            (u->pair[i][0] == b && u->pair[i][1] == a))
            return 1;
    return 0;
}

int halox__unreach_any(const halox__unreach_t *u)
{
    return u && (u->all || u->node_size > 0 || u->n_pairs > 0);
}

void halox__unreach_summary(const halox__unreach_t *u, int nranks, int *any_p, int *all_p)
{
    *any_p = *all_p = 0;
    if (!u || nranks < 2)
        return;
    if (u->all || u->node_size == 1) {
        *any_p = *all_p = 1;
        return;
    }
    /* pairs inside a block of node_size ranks (every pair without node:N) are declared only by
     * the explicit pairs: all are declared when the distinct explicit pairs inside blocks are
     * as many as there are such pairs */
    const long long b = u->node_size > 0 && u->node_size < nranks ? u->node_size : nranks;
    const long long full = nranks / b, rest = nranks % b;
    const long long inside = full * b * (b - 1) / 2 + rest * (rest - 1) / 2;
    long long declared = 0;
    for (int i = 0; i < u->n_pairs; i++) {
        const int a = u->pair[i][0], c = u->pair[i][1];
        int seen = a >= nranks || c >= nranks || a / b != c / b; /* outside, or across blocks */
        for (int j = 0; j < i && !seen; j++)                     /* named before */
            seen = (u->pair[j][0] == a && u->pair[j][1] == c) ||
                   (u->pair[j][0] == c && u->pair[j][1] == a);
        declared += !seen;
    }
    *any_p = b < nranks || declared > 0;
    *all_p = declared == inside;
}

/* Whether a pulse is a local copy (a single rank in its dimension). */
static int halox__pulse_self(const halox_plan_t *plan, const halox_pulse_t *p)
{
    return p->send_rank == plan->rank && p->recv_rank == plan->rank;
}

void halox__route_votes(const halox_plan_t *plan, const halox__unreach_t *u, const uint8_t *reach,
                        uint8_t votes[HALOX_MAX_PULSES])
{
    memset(votes, 0, HALOX_MAX_PULSES);
    for (int k = 0; k < plan->n_pulses && k < HALOX_MAX_PULSES; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        const int s = p->send_rank, r = p->recv_rank;
        if (!halox__unreach_pair(u, plan->rank, s) && (!reach || reach[s]))
            votes[k] |= HALOX__VOTE_SEND;
        if (!halox__unreach_pair(u, plan->rank, r) && (!reach || reach[r]))
            votes[k] |= HALOX__VOTE_RECV;
    }
}

void halox__route_decide(const halox_plan_t *plan, const uint8_t mine[HALOX_MAX_PULSES],
                         const uint8_t from_send[HALOX_MAX_PULSES],
                         const uint8_t from_recv[HALOX_MAX_PULSES], halox__route_t *route)
{
    memset(route, 0, sizeof *route);
    route->n_pulses = plan->n_pulses;
    for (int k = 0; k < plan->n_pulses && k < HALOX_MAX_PULSES; k++) {
        if (halox__pulse_self(plan, &plan->pulse[k])) {
            route->send[k] = route->recv[k] = HALOX__ROUTE_SELF;
            continue;
        }
        /* our send leg is the send_rank's receive leg, and the other way round */
        const int s = (mine[k] & HALOX__VOTE_SEND) && (from_send[k] & HALOX__VOTE_RECV);
        const int r = (mine[k] & HALOX__VOTE_RECV) && (from_recv[k] & HALOX__VOTE_SEND);
        route->send[k] = s ? HALOX__ROUTE_DIRECT : HALOX__ROUTE_STAGED;
        route->recv[k] = r ? HALOX__ROUTE_DIRECT : HALOX__ROUTE_STAGED;
        route->n_direct += s + r;
        route->n_staged += !s + !r;
    }
}

void halox__route_local(const halox_plan_t *plan, const halox__unreach_t *u, halox__route_t *route)
{
    uint8_t mine[HALOX_MAX_PULSES], from_send[HALOX_MAX_PULSES], from_recv[HALOX_MAX_PULSES];
    halox__route_votes(plan, u, NULL, mine);
    for (int k = 0; k < HALOX_MAX_PULSES; k++) {
        /* the declaration is symmetric and shared: the send_rank votes for its receive leg
         * (from us) exactly as we vote for our send leg (to it) */
        from_send[k] = (mine[k] & HALOX__VOTE_SEND) ? HALOX__VOTE_RECV : 0;
        from_recv[k] = (mine[k] & HALOX__VOTE_RECV) ? HALOX__VOTE_SEND : 0;
    }
    halox__route_decide(plan, mine, from_send, from_recv, route);
}

const char *halox__route_name(int kind)
{
    return kind == HALOX__ROUTE_DIRECT ? "direct" : kind == HALOX__ROUTE_STAGED ? "staged" : "self";
}
