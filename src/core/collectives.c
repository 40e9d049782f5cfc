/* The collectives over an endpoint (halox/collectives.h) and the library's own agreements
 * (transport.h: halox__agree, halox__agree_gather): every one counted and timed in the
 * endpoint's statistics, every reduction in rank order so that every rank gets the same bits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/transport.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"

/* Every collective of the library is counted and timed (halox_comm_stats_t): one that began at
 * `since` (halox__now()) ends here. */
static void halox__collective_done(halox_comm_t *comm, double since)
{
    comm->stats.collectives++;
    comm->stats.collective_seconds += halox__now() - since;
}

static halox_status_t halox__allgather_timed(halox_comm_t *comm, const void *send, void *recv,
                                             size_t bytes)
{
    const double t = halox__now();
    halox_status_t st = comm->ops->allgather(comm, send, recv, bytes);
    halox__collective_done(comm, t);
    return st;
}

halox_status_t halox_comm_allgather(halox_comm_t *comm, const void *send, void *recv, size_t bytes)
{
    return halox__allgather_timed(comm, send, recv, bytes);
}

halox_status_t halox_comm_barrier(halox_comm_t *comm)
{
    const double t = halox__now();
    halox_status_t st = comm->ops->barrier(comm);
    halox__collective_done(comm, t);
    return st;
}

/* The verdict of an agreement, given every rank's status (all[r * step]). */
static halox_status_t halox__agree_verdict(const halox_comm_t *comm, halox_status_t mine,
                                           const char *what, const long long *all, int step)
{
    int bad = -1;
    for (int r = 0; r < comm->size; r++)
        if (all[(size_t)r * (size_t)step] != HALOX_OK) {
            bad = r;
            break;
        }
    if (mine != HALOX_OK)
        return mine;
    if (bad >= 0)
        return halox__error(HALOX_ERR_ABORTED,
                            "%s stopped on rank %d: rank %d failed with '%s' (its own message "
                            "says why)",
                            what, comm->rank, bad,
                            halox_status_string((halox_status_t)all[(size_t)bad * (size_t)step]));
    return HALOX_OK;
}

/* Agree on failure: if any rank failed a local step, all return an error (the failing rank its
 * own), so no rank walks into a collective that others will never join. */
halox_status_t halox__agree(halox_comm_t *comm, halox_status_t mine, const char *what)
{
    long long one = 0;
    return halox__agree_gather(comm, mine, what, &one, 1, NULL);
}

halox_status_t halox__agree_gather(halox_comm_t *comm, halox_status_t mine, const char *what,
                                   long long *msg, int n, long long *all)
{
    long long own[4];
    long long *tmp = NULL;
    if (!all) {
        /* status only: a small buffer on the stack for small teams */
        if ((size_t)comm->size * (size_t)n <= sizeof own / sizeof own[0])
            all = own;
        else if (!(all = tmp = malloc(sizeof(long long) * (size_t)n * (size_t)comm->size)))
            return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    }
    msg[0] = (long long)mine;
    /* keep our own message: the allgather may not touch it, but be explicit */
    halox_status_t st = halox__allgather_timed(comm, msg, all, sizeof(long long) * (size_t)n);
    if (st == HALOX_OK)
        st = halox__agree_verdict(comm, mine, what, all, n);
    free(tmp);
    return st;
}

/* Everybody's n values of `elem` bytes, rank after rank, in a new buffer (*all_p, to free). */
static halox_status_t halox__gather_all(halox_comm_t *comm, const void *values, int n, size_t elem,
                                        void **all_p)
{
    *all_p = malloc(elem * (size_t)n * (size_t)comm->size);
    if (!*all_p)
        return halox__error(HALOX_ERR_NO_MEMORY, "allreduce: no memory");
    halox_status_t st = halox__allgather_timed(comm, values, *all_p, elem * (size_t)n);
    if (st != HALOX_OK) {
        free(*all_p);
        *all_p = NULL;
    }
    return st;
}

typedef enum { HALOX__SUM, HALOX__MAX, HALOX__SUM_I64 } halox__reduce_t;

/* Every rank's n values gathered, then reduced in rank order, so every rank gets the same bits. */
static halox_status_t halox__allreduce(halox_comm_t *comm, void *values, int n, halox__reduce_t op)
{
    if (n <= 0)
        return HALOX_OK;
    void *all;
    size_t elem = op == HALOX__SUM_I64 ? sizeof(int64_t) : sizeof(double);
    halox_status_t st = halox__gather_all(comm, values, n, elem, &all);
    if (st != HALOX_OK)
        return st;
    for (int i = 0; i < n; i++) {
        double *d = values;
        const double *da = all;
        double s = 0;
        uint64_t u = 0; /* unsigned: wrap-around is defined (used for hash sums) */
        for (int r = 0; r < comm->size; r++) {
            size_t at = (size_t)r * n + i;
            if (op == HALOX__SUM)
                s += da[at];
            else if (op == HALOX__MAX)
                d[i] = da[at] > d[i] ? da[at] : d[i];
            else
                u += (uint64_t)((const int64_t *)all)[at];
        }
        if (op == HALOX__SUM)
            d[i] = s;
        else if (op == HALOX__SUM_I64)
            ((int64_t *)values)[i] = (int64_t)u;
    }
    free(all);
    return HALOX_OK;
}

halox_status_t halox_comm_allreduce_sum(halox_comm_t *comm, double *values, int n)
{
    return halox__allreduce(comm, values, n, HALOX__SUM);
}

halox_status_t halox_comm_allreduce_max(halox_comm_t *comm, double *values, int n)
{
    return halox__allreduce(comm, values, n, HALOX__MAX);
}

halox_status_t halox_comm_allreduce_sum_i64(halox_comm_t *comm, int64_t *values, int n)
{
    return halox__allreduce(comm, values, n, HALOX__SUM_I64);
}

halox_status_t halox_comm_gatherv(halox_comm_t *comm, const void *send, size_t bytes, void *recv,
                                  size_t recv_capacity, size_t *counts_p, int root)
{
    int P = comm->size;
    if (root < 0 || root >= P)
        return halox__error(HALOX_ERR_INVALID_ARG, "gatherv: root %d outside 0..%d", root, P - 1);
    size_t *all = malloc(sizeof(size_t) * 4 * (size_t)P);
    if (!all)
        return halox__error(HALOX_ERR_NO_MEMORY, "gatherv: no memory");
    size_t *sb = all + P, *so = all + 2 * P, *rb = all + 3 * P;
    halox_status_t st = halox__allgather_timed(comm, &bytes, all, sizeof(size_t));
    size_t total = 0;
    for (int r = 0; r < P; r++)
        total += all[r];
    if (st == HALOX_OK && comm->rank == root && total > recv_capacity)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "gatherv: root needs %zu bytes but the buffer holds %zu", total,
                          recv_capacity);
    st = halox__agree(comm, st, "gatherv");
    if (st == HALOX_OK) {
        size_t *ro = malloc(sizeof(size_t) * (size_t)P);
        if (!ro) {
            free(all);
            return halox__error(HALOX_ERR_NO_MEMORY, "gatherv: no memory");
        }
        size_t off = 0;
        for (int r = 0; r < P; r++) {
            sb[r] = r == root ? bytes : 0;
            so[r] = 0;
            rb[r] = comm->rank == root ? all[r] : 0;
            ro[r] = off;
            off += rb[r];
        }
        st = comm->ops->alltoallv(comm, send, sb, so, recv, rb, ro);
        free(ro);
        if (st == HALOX_OK && counts_p && comm->rank == root)
            memcpy(counts_p, all, sizeof(size_t) * (size_t)P);
    }
    free(all);
    return st;
}
