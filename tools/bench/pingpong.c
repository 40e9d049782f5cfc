/* latency and bandwidth: two ranks and a synthetic plan of one pulse in x (rank 0 sends N atoms'
 * coordinates to rank 1, rank 1 sends their forces back), message sizes from -b to -e by -f.
 * latency: ping-pong, each iteration waited for on the host (stream synchronised on GPUs): half
 * the round trip, median over -n iterations of the slowest rank. bandwidth: -n exchanges back
 * to back, waited for once: bytes moved (coordinates out + forces back) / time. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct pp_case {
    const bench_opts_t *o;
    const char *label;
    int floor_run;
    int latency;          /* else bandwidth */
    long long sizes[256]; /* atoms per message */
    int n_sizes;
    bench_expect_t expect; /* of the current size; threads: made by rank 0, shared */
    int failed;            /* written by rank 0 */
    double link_peak;      /* bandwidth: GB/s measured at the start by this process (0: none) */
} pp_case_t;

typedef struct pp_rank {
    halox_comm_t *comm;
    halox_plan_t plan;
    bench_arrays_t arr;
    bench_timer_t *timer;
    double *dev_ms, *host_ms;
} pp_rank_t;

static size_t esize_of(const bench_opts_t *o) { return halox_real_size(o->real) * o->stride; }

/* Atom counts of the sizes -b..-e by -f (distinct, at least one atom each). */
static int make_sizes(pp_case_t *c)
{
    const bench_opts_t *o = c->o;
    const long long es = (long long)esize_of(o);
    for (long long b = o->min_bytes; b <= o->max_bytes;) {
        long long n = b / es > 0 ? b / es : 1;
        if (n > 2000000000LL)
            return bench_bad("-e %lld: messages of at most 2e9 atoms", o->max_bytes);
        if (c->n_sizes == 0 || c->sizes[c->n_sizes - 1] != n) {
            if (c->n_sizes == 256)
                return bench_bad("-b/-e/-f give more than 256 sizes: raise -f");
            c->sizes[c->n_sizes++] = n;
        }
        long long next = (long long)((double)b * o->factor);
        b = next > b ? next : b + 1;
    }
    return 0;
}

/* The reference result of both ranks for n atoms: home coordinates at random. */
static int make_expect(const bench_opts_t *o, int n, long long gen, bench_expect_t *e)
{
    halox_plan_t plans[2];
    void *x[2] = {NULL, NULL};
    int rc = 0;
    uint64_t s = o->seed ^ (uint64_t)n;
    for (int r = 0; r < 2; r++) {
        rc |= bench_pair_plan(r, n, gen, &plans[r]);
        x[r] = calloc((size_t)plans[r].n_total, esize_of(o));
        for (size_t i = 0; x[r] && i < (size_t)plans[r].n_home * o->stride; i++) {
            double v = bench_uniform(&s) * 10;
            if (o->real == HALOX_FLOAT)
                ((float *)x[r])[i] = (float)v;
            else
                ((double *)x[r])[i] = v;
        }
        rc |= x[r] ? 0 : -1;
    }
    if (rc == 0)
        rc = bench_expect_make(plans, 2, o->real, o->stride, x, o->seed, e);
    for (int r = 0; r < 2; r++) {
        halox_plan_free(&plans[r]);
        free(x[r]);
    }
    return rc;
}

/* Plan, and (unless --no-verify) one checked exchange; threads share rank 0's reference. */
static halox_status_t bind_size(const bench_rank_t *who, pp_case_t *c, pp_rank_t *h, int k,
                                int *verified)
{
    const bench_opts_t *o = c->o;
    const int n = (int)c->sizes[k], makes = !who->team || who->rank == 0;
    halox_plan_free(&h->plan);
    if (bench_pair_plan(who->rank, n, k + 1, &h->plan))
        return HALOX_ERR_NO_MEMORY;
    halox_status_t st = halox_comm_bind(h->comm, &h->plan, h->arr.x, h->arr.f);
    *verified = 0;
    if (st != HALOX_OK || !o->verify || c->floor_run)
        return st;
    if (makes && make_expect(o, n, k + 1, &c->expect))
        st = HALOX_ERR_NO_MEMORY;
    if (who->team) /* rank 0's reference is complete before rank 1 reads it */
        st = halox_comm_barrier(h->comm) == HALOX_OK ? st : HALOX_ERR_ABORTED;
    if (st == HALOX_OK)
        st = bench_verify(&h->arr, &c->expect, who->rank, bench_exchange_host, NULL, verified);
    if (who->team && st == HALOX_OK)
        st = halox_comm_barrier(h->comm);
    if (makes)
        bench_expect_free(&c->expect);
    return st;
}

/* One coordinate + force exchange; dev/host milliseconds (dev = host on CPU transports). */
static halox_status_t exchange(pp_rank_t *h, int iters, double *dev_ms, double *host_ms)
{
    halox_status_t st = HALOX_OK;
    double t0 = bench_now();
    if (h->arr.on_gpu && bench_timer_start(h->timer, h->arr.stream))
        return HALOX_ERR_INTERNAL;
    for (int i = 0; i < iters && st == HALOX_OK; i++) {
        st = halox_comm_coords(h->comm);
        if (st == HALOX_OK)
            st = halox_comm_forces(h->comm);
    }
    if (st == HALOX_OK && h->arr.on_gpu && bench_timer_stop(h->timer, h->arr.stream, dev_ms))
        st = HALOX_ERR_INTERNAL;
    *host_ms = (bench_now() - t0) * 1e3;
    if (!h->arr.on_gpu)
        *dev_ms = *host_ms;
    return st;
}

static void report(const bench_rank_t *who, pp_case_t *c, pp_rank_t *h, int k, int verified)
{
    const bench_opts_t *o = c->o;
    const int iters = c->latency ? o->iters : 1;
    if (halox_comm_allreduce_max(h->comm, h->dev_ms, iters) != HALOX_OK ||
        halox_comm_allreduce_max(h->comm, h->host_ms, iters) != HALOX_OK || who->rank != 0)
        return;
    const long long n = c->sizes[k], bytes = n * (long long)esize_of(o);
    const char *check = c->floor_run ? "floor"
                        : !o->verify ? "skipped"
                        : verified   ? "verified"
                                     : "WRONG";
    bench_record_t r;
    rec_init(&r);
    halox_grid_t g = {{2, 1, 1}};
    rec_common(&r, o, c->label, 2, &g);
    rec_int(&r, "bytes", bytes);
    rec_int(&r, "atoms", n);
    rec_str(&r, "real", o->real == HALOX_FLOAT ? "float" : "double");
    rec_int(&r, "stride", o->stride);
    rec_int(&r, "iters", o->iters);
    rec_int(&r, "warmup", o->warmup);
    rec_bool(&r, "verified", verified && !c->floor_run);
    rec_bool(&r, "floor", c->floor_run);
    if (c->latency) {
        bench_stats_t d = bench_summarise(h->dev_ms, iters);
        bench_stats_t t = bench_summarise(h->host_ms, iters);
        printf("%-22s %12lld %10lld %-8s %12.2f %12.2f %12.2f %12.2f\n", c->label, bytes, n, check,
               d.median * 500, d.min * 500, d.max * 500, t.median * 500);
        rec_num(&r, "latency_us.median", d.median * 500);
        rec_num(&r, "latency_us.min", d.min * 500);
        rec_num(&r, "latency_us.max", d.max * 500);
        rec_num(&r, "host_latency_us.median", t.median * 500);
        rec_str(&r, "timing", "half the round trip (coordinates out, forces back), slowest rank");
    } else {
        const double per = h->dev_ms[0] / o->iters, moved = 2.0 * (double)bytes;
        const double gbps = per > 0 ? moved / (per * 1e-3) / 1e9 : 0;
        char bw[24] = "-"; /* a floor moves no bytes: no bandwidth */
        if (!c->floor_run)
            snprintf(bw, sizeof bw, "%.3f", gbps);
        printf("%-22s %12lld %10lld %-8s %12.2f %12s\n", c->label, bytes, n, check, per * 1e3, bw);
        rec_num(&r, "time_us", per * 1e3);
        rec_int(&r, "bytes_per_exchange", (long long)moved);
        if (!c->floor_run)
            rec_num(&r, "bandwidth_GBps", gbps);
        if (c->link_peak > 0 && !c->floor_run) {
            rec_num(&r, "link_peak_GBps", c->link_peak);
            rec_num(&r, "link_use", gbps / c->link_peak);
        }
        rec_str(&r, "timing",
                "exchanges back to back, (coordinates + forces) bytes / time, "
                "slowest rank");
    }
    fflush(stdout);
    if (rec_write(&r, o) || (o->verify && !c->floor_run && !verified))
        c->failed = 1;
}

static halox_status_t measure(const bench_rank_t *who, pp_case_t *c, pp_rank_t *h, int k)
{
    const bench_opts_t *o = c->o;
    int verified = 0;
    halox_status_t st = bind_size(who, c, h, k, &verified);
    double d, t;
    for (int i = 0; i < o->warmup && st == HALOX_OK; i++)
        st = exchange(h, 1, &d, &t);
    if (st == HALOX_OK)
        st = halox_comm_barrier(h->comm);
    if (c->latency)
        for (int i = 0; i < o->iters && st == HALOX_OK; i++)
            st = exchange(h, 1, &h->dev_ms[i], &h->host_ms[i]);
    else if (st == HALOX_OK)
        st = exchange(h, o->iters, &h->dev_ms[0], &h->host_ms[0]);
    if (st == HALOX_OK)
        report(who, c, h, k, verified);
    return st;
}

static halox_status_t pp_rank(const bench_rank_t *who, void *arg)
{
    pp_case_t *c = arg;
    const bench_opts_t *o = c->o;
    pp_rank_t h;
    memset(&h, 0, sizeof h);
    halox_status_t st = bench_comm_create(who, c->label, o->real, o->stride, o->timeout_s, &h.comm);
    if (st == HALOX_ERR_UNAVAILABLE || st == HALOX_ERR_UNKNOWN_TRANSPORT) {
        if (who->rank == 0)
            printf("%-22s refused: %s\n", c->label, halox_last_error());
        return HALOX_OK;
    }
    const long long most = c->sizes[c->n_sizes - 1];
    h.dev_ms = calloc((size_t)o->iters, sizeof(double));
    h.host_ms = calloc((size_t)o->iters, sizeof(double));
    if (st == HALOX_OK && (!h.dev_ms || !h.host_ms))
        st = HALOX_ERR_NO_MEMORY;
    if (st == HALOX_OK)
        st = bench_arrays_alloc(h.comm, esize_of(o) * (size_t)(most + 1), &h.arr);
    if (st == HALOX_OK && h.arr.on_gpu && bench_timer_create(&h.timer))
        st = HALOX_ERR_INTERNAL;
    for (int k = 0; k < c->n_sizes && st == HALOX_OK; k++)
        st = measure(who, c, &h, k);
    if (st != HALOX_OK) {
        char what[1200];
        snprintf(what, sizeof what, "%s: %s", c->label, halox_last_error());
        bench_rank_fail(who, what);
    }
    if (h.arr.comm)
        bench_arrays_free(&h.arr);
    bench_timer_destroy(h.timer);
    halox_comm_destroy(h.comm);
    halox_plan_free(&h.plan);
    free(h.dev_ms);
    free(h.host_ms);
    return st;
}

int bench_cmd_pingpong(const bench_opts_t *o)
{
    static pp_case_t c; /* large: not on the stack */
    const int latency = !strcmp(o->cmd, "latency"), root = bench_world_rank() == 0;
    if (o->threads && o->threads != 2)
        return bench_bad("%s runs on 2 ranks: --threads 2 (or leave it out)", o->cmd);
    if (root) {
        printf("halox-bench %s: 2 ranks (grid 2x1x1, one pulse), %s stride %d, %d iterations "
               "after %d warm-up, %s\n",
               o->cmd, o->real == HALOX_FLOAT ? "float" : "double", o->stride, o->iters, o->warmup,
               o->verify ? "each size verified first" : "not verified");
        if (latency)
            printf("%-22s %12s %10s %-8s %12s %12s %12s %12s\n", "transport", "bytes", "atoms",
                   "check", "median_us", "min_us", "max_us", "host_us");
        else
            printf("%-22s %12s %10s %-8s %12s %12s\n", "transport", "bytes", "atoms", "check",
                   "time_us", "GB/s");
    }
    double peak = 0;
    if (root && !latency) {
        char what[160];
        peak = bench_link_peak(what, sizeof what);
        printf("link peak: %.1f GB/s (%s); records carry link_use = GB/s over it\n", peak, what);
    }
    int rc = BENCH_OK;
    for (int t = 0; t < o->n_transports; t++) {
        memset(&c, 0, sizeof c);
        c.o = o;
        c.link_peak = peak;
        c.label = o->transports[t];
        c.latency = latency;
        c.floor_run = bench_label_floor(c.label);
        if (make_sizes(&c))
            return BENCH_USAGE;
        int nranks = 0;
        if (!bench_transport_ranks(o, c.label, &nranks))
            continue;
        if (!bench_label_caps(c.label).threads && nranks != 2)
            return bench_bad("%s runs on 2 ranks, not %d: mpirun -np 2 halox-bench %s ...", o->cmd,
                             nranks, o->cmd);
        bench_variant_env(c.label, 1);
        halox_status_t st = bench_ranks_run(c.label, 2, o->timeout_s, pp_rank, &c);
        bench_variant_env(c.label, 0);
        if (st != HALOX_OK || c.failed)
            rc = BENCH_FAILED;
    }
    return rc;
}
