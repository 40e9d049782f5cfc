/* The `threads` transport's set-up collectives and team, tested directly:
 * - allgather, alltoallv (with empty blocks), sendrecv (rings, self, pairs), barrier ordering;
 * - the core collectives built on them (allreduce, gatherv) give every rank the same bits;
 * - mismatched calls fail on every rank without hanging, and the team stays usable;
 * - halox_team_abort wakes waiting ranks at once; a barrier timeout names the missing rank;
 * - a rank that times out while a peer still copies from its buffer returns only after the copy
 *   (its caller may free the buffer at once: the peer must never read freed memory);
 * - the registry: names, descriptions, unknown transports, bad endpoint arguments.
 * Checks run on the main thread after the rank threads joined (the harness counter is not
 * thread-safe); rank threads count their own failures. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/transport.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "harness.h"

#define MAX_RANKS 16

typedef struct rank_ctx {
    int rank;
    int nranks;
    halox_team_t *team;
    int failures;
    halox_status_t status; /* what the scenario's final call returned */
    char message[1024];
    double seconds;
    const void *arg;
} rank_ctx_t;

typedef void (*rank_fn_t)(rank_ctx_t *ctx);

typedef struct {
    rank_ctx_t *ctx;
    rank_fn_t fn;
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    a->fn(a->ctx);
    return NULL;
}

/* Run fn on n rank threads of a fresh team; returns the summed rank failures. */
static int run_team(int n, double timeout_s, rank_fn_t fn, rank_ctx_t *ctx, const void *arg)
{
    halox_team_t *team = NULL;
    CHECK_OK(halox_team_create(n, timeout_s, &team));
    if (!team)
        return 1;
    pthread_t th[MAX_RANKS];
    thread_arg_t ta[MAX_RANKS];
    for (int r = 0; r < n; r++) {
        memset(&ctx[r], 0, sizeof ctx[r]);
        ctx[r].rank = r;
        ctx[r].nranks = n;
        ctx[r].team = team;
        ctx[r].arg = arg;
        ta[r].ctx = &ctx[r];
        ta[r].fn = fn;
        CHECK(pthread_create(&th[r], NULL, thread_main, &ta[r]) == 0);
    }
    int failures = 0;
    for (int r = 0; r < n; r++) {
        pthread_join(th[r], NULL);
        failures += ctx[r].failures;
    }
    halox_team_destroy(team);
    return failures;
}

static halox_comm_t *make_comm(rank_ctx_t *ctx, double timeout_s)
{
    halox_comm_args_t args = {.real = HALOX_DOUBLE,
                              .stride = 3,
                              .timeout_s = timeout_s,
                              .team = ctx->team,
                              .rank = ctx->rank};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    RCHECK(ctx, st == HALOX_OK, "comm_create: %s", halox_last_error());
    return comm;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* ---- the collectives on well-formed input ---------------------------------------------------- */

static void rank_collectives(rank_ctx_t *ctx)
{
    halox_comm_t *comm = make_comm(ctx, 20.0);
    if (!comm)
        return;
    const int me = ctx->rank, P = ctx->nranks;
    RCHECK(ctx, halox_comm_rank(comm) == me, "rank %d", halox_comm_rank(comm));
    RCHECK(ctx, halox_comm_size(comm) == P, "size %d", halox_comm_size(comm));
    RCHECK(ctx, strcmp(halox_comm_transport(comm), "threads") == 0, "transport %s",
           halox_comm_transport(comm));

    for (int round = 0; round < 20; round++) {
        /* allgather: three ints per rank, in rank order */
        int send[3], recv[3 * MAX_RANKS];
        for (int i = 0; i < 3; i++)
            send[i] = 1000 * round + 10 * me + i;
        halox_status_t st = halox_comm_allgather(comm, send, recv, sizeof send);
        RCHECK(ctx, st == HALOX_OK, "allgather: %s", halox_last_error());
        for (int r = 0; r < P; r++)
            for (int i = 0; i < 3; i++)
                RCHECK(ctx, recv[3 * r + i] == 1000 * round + 10 * r + i, "allgather[%d][%d]=%d", r,
                       i, recv[3 * r + i]);

        /* alltoallv: s sends (s + r + round) % 4 bytes to r (often 0), bytes 16s + r + i */
        size_t sb[MAX_RANKS], so[MAX_RANKS], rb[MAX_RANKS], ro[MAX_RANKS];
        unsigned char sbuf[4 * MAX_RANKS], rbuf[4 * MAX_RANKS + 1];
        size_t off = 0;
        for (int r = 0; r < P; r++) {
            sb[r] = (size_t)((me + r + round) % 4);
            so[r] = off;
            for (size_t i = 0; i < sb[r]; i++)
                sbuf[off + i] = (unsigned char)(16 * me + r + (int)i);
            off += sb[r];
        }
        off = 0;
        for (int s = 0; s < P; s++) {
            rb[s] = (size_t)((s + me + round) % 4);
            ro[s] = off;
            off += rb[s];
        }
        memset(rbuf, 0xee, sizeof rbuf);
        st = comm->ops->alltoallv(comm, sbuf, sb, so, rbuf, rb, ro);
        RCHECK(ctx, st == HALOX_OK, "alltoallv: %s", halox_last_error());
        for (int s = 0; s < P; s++)
            for (size_t i = 0; i < rb[s]; i++)
                RCHECK(ctx, rbuf[ro[s] + i] == (unsigned char)(16 * s + me + (int)i),
                       "alltoallv from %d byte %zu", s, i);
        RCHECK(ctx, rbuf[off] == 0xee, "alltoallv wrote past its blocks");

        /* sendrecv ring, both directions; sizes depend on the sender */
        for (int dir = -1; dir <= 1; dir += 2) {
            int dst = (me + dir + P) % P, src = (me - dir + P) % P;
            double out[MAX_RANKS + 1], in[MAX_RANKS + 1];
            int n_out = me + 1, n_in = src + 1;
            for (int i = 0; i < n_out; i++)
                out[i] = me + 0.25 * i + round;
            st = comm->ops->sendrecv(comm, dst, out, sizeof(double) * (size_t)n_out, src, in,
                                     sizeof(double) * (size_t)n_in);
            RCHECK(ctx, st == HALOX_OK, "sendrecv ring: %s", halox_last_error());
            for (int i = 0; i < n_in; i++)
                RCHECK(ctx, in[i] == src + 0.25 * i + round, "ring dir %d in[%d]=%g", dir, i,
                       in[i]);
        }
        /* sendrecv with oneself and an empty message */
        int self_out = 7 * me + round, self_in = -1;
        st =
            comm->ops->sendrecv(comm, me, &self_out, sizeof self_out, me, &self_in, sizeof self_in);
        RCHECK(ctx, st == HALOX_OK && self_in == self_out, "self sendrecv got %d: %s", self_in,
               halox_last_error());
        st = comm->ops->sendrecv(comm, (me + 1) % P, NULL, 0, (me + P - 1) % P, NULL, 0);
        RCHECK(ctx, st == HALOX_OK, "empty sendrecv: %s", halox_last_error());
    }

    /* core collectives on top: every rank gets the same bits, summed in rank order */
    double v[2] = {0.1 * (me + 1), 1.0 / (me + 3)};
    halox_status_t st = halox_comm_allreduce_sum(comm, v, 2);
    double e0 = 0, e1 = 0;
    for (int r = 0; r < P; r++) {
        e0 += 0.1 * (r + 1);
        e1 += 1.0 / (r + 3);
    }
    RCHECK(ctx, st == HALOX_OK && v[0] == e0 && v[1] == e1, "allreduce_sum %.17g %.17g: %s", v[0],
           v[1], halox_last_error());
    double m = me == P / 2 ? 99.5 : (double)me;
    st = halox_comm_allreduce_max(comm, &m, 1);
    RCHECK(ctx, st == HALOX_OK && m == 99.5, "allreduce_max %g", m);
    int64_t c = (int64_t)me * 1000003;
    st = halox_comm_allreduce_sum_i64(comm, &c, 1);
    RCHECK(ctx, st == HALOX_OK && c == (int64_t)P * (P - 1) / 2 * 1000003, "sum_i64 %lld",
           (long long)c);
    int root = P - 1;
    int mine[MAX_RANKS], all[MAX_RANKS * MAX_RANKS];
    size_t counts[MAX_RANKS];
    for (int i = 0; i <= me; i++)
        mine[i] = 100 * me + i;
    st = halox_comm_gatherv(comm, mine, sizeof(int) * (size_t)(me + 1), all, sizeof all, counts,
                            root);
    RCHECK(ctx, st == HALOX_OK, "gatherv: %s", halox_last_error());
    if (me == root) {
        int k = 0;
        for (int r = 0; r < P; r++) {
            RCHECK(ctx, counts[r] == sizeof(int) * (size_t)(r + 1), "gatherv count[%d]=%zu", r,
                   counts[r]);
            for (int i = 0; i <= r; i++, k++)
                RCHECK(ctx, all[k] == 100 * r + i, "gatherv[%d]=%d", k, all[k]);
        }
    }
    halox_comm_destroy(comm);
}

/* ---- barrier ordering: what a rank wrote before a barrier is seen by all after it ------------ */

typedef struct {
    int value[MAX_RANKS]; /* plain ints: visibility comes from the barrier alone */
} board_t;

static void rank_barrier(rank_ctx_t *ctx)
{
    halox_comm_t *comm = make_comm(ctx, 20.0);
    if (!comm)
        return;
    board_t *board = (board_t *)ctx->arg;
    for (int it = 1; it <= 300; it++) {
        board->value[ctx->rank] = it;
        halox_status_t st = halox_comm_barrier(comm);
        RCHECK(ctx, st == HALOX_OK, "barrier %d: %s", it, halox_last_error());
        for (int r = 0; r < ctx->nranks; r++)
            RCHECK(ctx, board->value[r] == it, "after barrier %d rank %d shows %d", it, r,
                   board->value[r]);
        st = halox_comm_barrier(comm);
        RCHECK(ctx, st == HALOX_OK, "barrier %d': %s", it, halox_last_error());
        if (st != HALOX_OK)
            break;
    }
    halox_comm_destroy(comm);
}

/* ---- mismatched calls fail everywhere, then the team works on ------------------------------- */

static void rank_mismatch(rank_ctx_t *ctx)
{
    halox_comm_t *comm = make_comm(ctx, 20.0);
    if (!comm)
        return;
    const int me = ctx->rank, P = ctx->nranks;
    /* rank 0 expects 4 bytes from rank 1, which sends 8 */
    double out = me, in = -1;
    size_t want = me == 0 ? 4 : sizeof in;
    halox_status_t st =
        comm->ops->sendrecv(comm, (me + P - 1) % P, &out, sizeof out, (me + 1) % P, &in, want);
    ctx->status = st;
    snprintf(ctx->message, sizeof ctx->message, "%s", halox_last_error());
    /* the same endpoint keeps working */
    int one = 1, sum[MAX_RANKS];
    st = halox_comm_allgather(comm, &one, sum, sizeof one);
    RCHECK(ctx, st == HALOX_OK, "allgather after a failed sendrecv: %s", halox_last_error());
    /* a sendrecv naming a rank outside the team fails everywhere too */
    st = comm->ops->sendrecv(comm, me == 1 ? P + 3 : (me + P - 1) % P, &out, sizeof out,
                             (me + 1) % P, &in, sizeof in);
    RCHECK(ctx, st != HALOX_OK, "sendrecv to a rank outside the team succeeded");
    st = halox_comm_barrier(comm);
    RCHECK(ctx, st == HALOX_OK, "barrier after failures: %s", halox_last_error());
    halox_comm_destroy(comm);
}

/* ---- abort and barrier timeout --------------------------------------------------------------- */

static void rank_abort(rank_ctx_t *ctx)
{
    halox_comm_t *comm = make_comm(ctx, 30.0);
    if (!comm)
        return;
    double t0 = halox__now();
    if (ctx->rank == 1) {
        sleep_s(0.2);
        halox_team_abort(ctx->team, ctx->rank, "rank 1 gave up on purpose");
        ctx->status = HALOX_ERR_ABORTED;
    } else {
        ctx->status = halox_comm_barrier(comm);
        snprintf(ctx->message, sizeof ctx->message, "%s", halox_last_error());
    }
    ctx->seconds = halox__now() - t0;
    /* everything after an abort fails at once */
    halox_status_t st = halox_comm_barrier(comm);
    RCHECK(ctx, st == HALOX_ERR_ABORTED, "barrier after abort returned %d", (int)st);
    halox_comm_destroy(comm);
}

static void rank_barrier_timeout(rank_ctx_t *ctx)
{
    halox_comm_t *comm = make_comm(ctx, 0.5);
    if (!comm)
        return;
    double t0 = halox__now();
    if (ctx->rank == 3)
        sleep_s(1.5); /* late: the others give up first */
    ctx->status = halox_comm_barrier(comm);
    ctx->seconds = halox__now() - t0;
    snprintf(ctx->message, sizeof ctx->message, "%s", halox_last_error());
    halox_comm_destroy(comm);
}

/* Rank 1 sends a large block to rank 0 and receives nothing, so it reaches the closing barrier
 * long before rank 0 has copied, and times out there. On return it scribbles over and frees its
 * send buffer at once, as a caller may: rank 0's copy must still be whole. */
#define SLOW_COPY_BYTES     ((size_t)192 << 20)
#define SLOW_COPY_TIMEOUT_S 0.01

static void rank_slow_copy(rank_ctx_t *ctx)
{
    const int me = ctx->rank;
    size_t sb[2] = {0, 0}, so[2] = {0, 0}, rb[2] = {0, 0}, ro[2] = {0, 0};
    /* filled before the endpoint exists; a plain barrier then lines the ranks up for creation */
    unsigned char *buf = malloc(SLOW_COPY_BYTES);
    RCHECK(ctx, buf != NULL, "no memory for %zu bytes", SLOW_COPY_BYTES);
    if (!buf)
        return;
    memset(buf, me == 1 ? 0x5a : 0, SLOW_COPY_BYTES);
    if (me == 1)
        sb[0] = SLOW_COPY_BYTES;
    else
        rb[1] = SLOW_COPY_BYTES;
    pthread_barrier_wait((pthread_barrier_t *)ctx->arg);
    halox_comm_t *comm = make_comm(ctx, SLOW_COPY_TIMEOUT_S);
    if (!comm) {
        ctx->status = HALOX_ERR_TIMEOUT; /* creation itself timed out: the caller retries */
        ctx->failures = 0;
        free(buf);
        return;
    }
    ctx->status =
        comm->ops->alltoallv(comm, me == 1 ? buf : NULL, sb, so, me == 0 ? buf : NULL, rb, ro);
    snprintf(ctx->message, sizeof ctx->message, "%s", halox_last_error());
    if (me == 1) {
        memset(buf, 0, SLOW_COPY_BYTES); /* the caller owns its buffer again */
    } else if (ctx->status != HALOX_OK) {
        /* a copy that started must have finished from intact data; one that did not start
         * (the opening barrier timed out) leaves zeros everywhere */
        size_t bad = 0;
        int started = buf[0] != 0;
        for (size_t i = 0; i < SLOW_COPY_BYTES; i++)
            bad += buf[i] != (started ? 0x5a : 0);
        ctx->seconds = (double)started;
        RCHECK(ctx, bad == 0, "%zu of %zu bytes copied from a buffer its owner had released", bad,
               SLOW_COPY_BYTES);
    }
    free(buf);
    halox_comm_destroy(comm);
}

/* ---- endpoint creation errors ---------------------------------------------------------------- */

static void rank_create_twice(rank_ctx_t *ctx)
{
    halox_comm_args_t args = {.team = ctx->team, .rank = 0, .timeout_s = 5.0};
    halox_comm_t *comm = NULL;
    /* both threads claim rank 0: one of them is refused, and the team is aborted */
    ctx->status = halox_comm_create("threads", &args, &comm);
    snprintf(ctx->message, sizeof ctx->message, "%s", halox_last_error());
    halox_comm_destroy(comm);
}

static void test_registry(void)
{
    const char *const *names = halox_transport_names();
    int has_threads = 0, n = 0;
    for (; names[n]; n++)
        has_threads |= strcmp(names[n], "threads") == 0;
    CHECK(n >= 1 && has_threads);
    CHECK(halox_transport_available("threads"));
    CHECK(!halox_transport_available("carrier-pigeon"));
    CHECK(!halox_transport_available(NULL));
    CHECK(halox_transport_description("threads") != NULL);
    CHECK(halox_transport_description("carrier-pigeon") == NULL);

    halox_comm_args_t args = {0};
    halox_comm_t *comm = (halox_comm_t *)&args; /* must be reset to NULL on failure */
    CHECK_STATUS(halox_comm_create("carrier-pigeon", &args, &comm), HALOX_ERR_UNKNOWN_TRANSPORT);
    CHECK(comm == NULL);
    CHECK_MSG(strstr(halox_last_error(), "carrier-pigeon") && strstr(halox_last_error(), "threads"),
              "message: %s", halox_last_error());
    CHECK_STATUS(halox_comm_create("threads", &args, &comm), HALOX_ERR_INVALID_ARG); /* team */
    CHECK_MSG(strstr(halox_last_error(), "team"), "message: %s", halox_last_error());
    CHECK_STATUS(halox_comm_create("threads", NULL, &comm), HALOX_ERR_INVALID_ARG);

    halox_team_t *team = NULL;
    CHECK_STATUS(halox_team_create(0, 1.0, &team), HALOX_ERR_INVALID_ARG);
    CHECK_OK(halox_team_create(2, 1.0, &team));
    args.team = team;
    args.rank = 2;
    CHECK_STATUS(halox_comm_create("threads", &args, &comm), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(strstr(halox_last_error(), "rank 2") && strstr(halox_last_error(), "0..1"),
              "message: %s", halox_last_error());
    args.rank = 0;
    args.stride = 5;
    CHECK_STATUS(halox_comm_create("threads", &args, &comm), HALOX_ERR_INVALID_ARG);
    halox_team_destroy(team);

    /* a one-rank team: create with defaults (float, stride 3, team's timeout) */
    CHECK_OK(halox_team_create(1, 7.5, &team));
    args = (halox_comm_args_t){.team = team, .rank = 0};
    CHECK_OK(halox_comm_create("threads", &args, &comm));
    if (comm) {
        CHECK(comm->real == HALOX_FLOAT && comm->stride == 3);
        CHECK(comm->timeout_s == 7.5);
        CHECK_OK(halox_comm_barrier(comm));
        halox_comm_destroy(comm);
        /* the rank can be used again once its endpoint is gone */
        CHECK_OK(halox_comm_create("threads", &args, &comm));
        halox_comm_destroy(comm);
    }
    halox_team_destroy(team);
    halox_comm_destroy(NULL);
    halox_team_destroy(NULL);
}

int main(void)
{
    rank_ctx_t ctx[MAX_RANKS];
    test_registry();

    static const int sizes[] = {1, 2, 3, 5, 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        CHECK_MSG(run_team(sizes[i], 20.0, rank_collectives, ctx, NULL) == 0,
                  "collectives on %d ranks", sizes[i]);
        board_t board;
        memset(&board, 0, sizeof board);
        CHECK_MSG(run_team(sizes[i], 20.0, rank_barrier, ctx, &board) == 0,
                  "barrier ordering on %d ranks", sizes[i]);
    }

    /* mismatch: rank 0 fails with its own error, the others are told that rank 0 failed */
    CHECK(run_team(4, 20.0, rank_mismatch, ctx, NULL) == 0);
    CHECK_MSG(ctx[0].status == HALOX_ERR_INVALID_ARG && strstr(ctx[0].message, "8"),
              "rank 0: %d %s", (int)ctx[0].status, ctx[0].message);
    for (int r = 1; r < 4; r++)
        CHECK_MSG(ctx[r].status == HALOX_ERR_ABORTED && strstr(ctx[r].message, "rank 0 failed"),
                  "rank %d: %d %s", r, (int)ctx[r].status, ctx[r].message);

    /* abort: waiting ranks return at once, naming who aborted and why */
    CHECK(run_team(4, 30.0, rank_abort, ctx, NULL) == 0);
    for (int r = 0; r < 4; r++) {
        if (r == 1)
            continue;
        CHECK_MSG(ctx[r].status == HALOX_ERR_ABORTED, "rank %d: %d", r, (int)ctx[r].status);
        CHECK_MSG(strstr(ctx[r].message, "aborted by rank 1") &&
                      strstr(ctx[r].message, "on purpose"),
                  "rank %d: %s", r, ctx[r].message);
        CHECK_MSG(ctx[r].seconds < 5.0, "rank %d took %.2f s to notice the abort", r,
                  ctx[r].seconds);
    }

    /* barrier timeout: exactly one rank times out (and aborts), naming rank 3; none hangs */
    CHECK(run_team(4, 0.5, rank_barrier_timeout, ctx, NULL) == 0);
    int timeouts = 0;
    for (int r = 0; r < 4; r++) {
        CHECK_MSG(ctx[r].seconds < 5.0, "rank %d took %.2f s", r, ctx[r].seconds);
        if (ctx[r].status == HALOX_ERR_TIMEOUT) {
            timeouts++;
            CHECK_MSG(r != 3 && strstr(ctx[r].message, "not arrived: 3;") &&
                          strstr(ctx[r].message, "HALOX_TIMEOUT_S"),
                      "rank %d: %s", r, ctx[r].message);
        } else {
            CHECK_MSG(ctx[r].status == HALOX_ERR_ABORTED, "rank %d: %d %s", r, (int)ctx[r].status,
                      ctx[r].message);
        }
    }
    CHECK(timeouts == 1);

    /* a timeout in the closing barrier waits for the peer's copy; the 10 ms bound may also end
     * endpoint creation or the opening barrier on a loaded machine: retry until a copy started */
    int copied = 0;
    pthread_barrier_t line_up;
    CHECK(pthread_barrier_init(&line_up, NULL, 2) == 0);
    for (int attempt = 0; attempt < 8 && !copied; attempt++) {
        CHECK(run_team(2, SLOW_COPY_TIMEOUT_S, rank_slow_copy, ctx, &line_up) == 0);
        copied = ctx[0].seconds > 0.5;
        if (copied)
            CHECK_MSG(ctx[1].status == HALOX_ERR_TIMEOUT && ctx[0].status == HALOX_ERR_ABORTED,
                      "rank 0: %d %s / rank 1: %d %s", (int)ctx[0].status, ctx[0].message,
                      (int)ctx[1].status, ctx[1].message);
    }
    pthread_barrier_destroy(&line_up);
    CHECK_MSG(copied, "rank 0 never copied in 8 attempts (the 10 ms bound always ran out first)");

    /* two threads claiming one rank */
    CHECK(run_team(2, 5.0, rank_create_twice, ctx, NULL) == 0);
    int refused = 0;
    for (int r = 0; r < 2; r++)
        refused += ctx[r].status == HALOX_ERR_INVALID_ARG &&
                   strstr(ctx[r].message, "already has an endpoint");
    CHECK_MSG(refused == 1, "%d: %s / %d: %s", (int)ctx[0].status, ctx[0].message,
              (int)ctx[1].status, ctx[1].message);

    TEST_DONE();
}
