/* halo: the halo exchange alone (coordinates + forces) on the plan of a water-density-like
 * system, per transport and size: checked bit for bit against the serial reference first, then
 * timed (the slowest rank of each repeat; median, minimum and maximum over repeats).
 *
 * Two modes. host: the host calls halox_comm_coords() and halox_comm_forces() for every exchange
 * (the launch latency of an idle GPU is inside the time unless --back-to-back K > 1). in-step:
 * the K exchanges of a repeat are captured in one CUDA graph and launched at once, as the MD
 * step's graph enqueues them (no host work between them); the check runs a captured exchange
 * too, so graphs are verified against the same reference. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench.h"

typedef struct halo_case {
    const bench_opts_t *o;
    const char *label; /* transport as given, with its +variant */
    int floor_run;     /* +floor: signals only; +null: empty launches; nothing to verify */
    long long natoms;
    int nranks;
    halox_plan_params_t params;
    const halox_atoms_t *home; /* every rank's home atoms (shared, read-only) */
    const bench_expect_t *expect;
    int failed;       /* written by rank 0 */
    double link_peak; /* GB/s, measured by this process at the start (0: unknown) */
} halo_case_t;

static double g_link_peak; /* bench_cmd_halo's measurement, for every case */

typedef struct halo_rank {
    halox_comm_t *comm;
    halox_atoms_t mine;
    halox_plan_t plan;
    bench_arrays_t arr;
    bench_timer_t *timer;
    double *dev_ms, *host_ms;
    /* in-step: the captured exchanges (one for the check, K for the timing) */
    bench_graph_t *graph[2];
    int graph_k[2];
    int failed_gpu; /* a GPU helper failed: bench_gpu_error() says why */
    /* --fields: the float fields forwarded with every coordinate exchange */
    halox_field_t field[HALOX_MAX_FIELDS];
} halo_rank_t;

static void rank_free(halo_rank_t *h)
{
    for (int i = 0; i < HALOX_MAX_FIELDS; i++) /* in the same order on every rank */
        if (h->field[i].data && h->arr.on_gpu)
            halox_comm_device_free(h->comm, h->field[i].data);
        else
            free(h->field[i].data);
    if (h->arr.comm)
        bench_arrays_free(&h->arr);
    bench_timer_destroy(h->timer);
    bench_graph_destroy(h->graph[0]);
    bench_graph_destroy(h->graph[1]);
    halox_comm_destroy(h->comm);
    halox_plan_free(&h->plan);
    halox_atoms_free(&h->mine);
    free(h->dev_ms);
    free(h->host_ms);
}

static void print_header(void)
{
    printf("%-22s %9s %-6s %6s %10s %9s %-8s %10s %10s %10s %10s %8s %s\n", "transport", "atoms",
           "grid", "pulses", "halo_atoms", "KB/step", "check", "median_us", "min_us", "max_us",
           "host_us", "GB/s", "mode");
    fflush(stdout);
}

static const char *mode_name(const bench_opts_t *o) { return o->in_step ? "in-step" : "host"; }

static void record_refused(halo_case_t *c, halox_status_t st, const char *why)
{
    printf("%-22s %9lld refused: %s\n", c->label, c->natoms, why);
    fflush(stdout);
    bench_record_t r;
    rec_init(&r);
    rec_common(&r, c->o, c->label, c->nranks, &c->params.grid);
    rec_int(&r, "atoms", c->natoms);
    rec_str(&r, "mode", mode_name(c->o));
    rec_bool(&r, "shifts", c->o->shifts);
    rec_bool(&r, "available", 0);
    rec_str(&r, "why", halox_status_string(st));
    rec_str(&r, "message", why);
    if (rec_write(&r, c->o)) /* a record that could not be written fails the run */
        c->failed = 1;
}

/* The home atoms of this rank, the plan through the transport, arrays loaded and bound. */
static halox_status_t setup(const bench_rank_t *who, const halo_case_t *c, halo_rank_t *h,
                            double *build_s)
{
    const bench_opts_t *o = c->o;
    const size_t esize = halox_real_size(o->real) * (size_t)o->stride;
    if (bench_copy_home(&c->home[who->rank], &h->mine))
        return HALOX_ERR_NO_MEMORY;
    double t0 = bench_now();
    halox_status_t st = halox_comm_build_plan(h->comm, &c->params, &h->mine, &h->plan);
    *build_s = bench_now() - t0;
    if (st != HALOX_OK)
        return st;
    if (c->expect && h->plan.n_total != c->expect->n_total[who->rank]) {
        fprintf(stderr,
                "halox-bench: rank %d: the transport's plan has %d atoms, the "
                "reference's %d\n",
                who->rank, h->plan.n_total, c->expect->n_total[who->rank]);
        return HALOX_ERR_INTERNAL;
    }
    const size_t bytes = esize * (size_t)h->plan.n_total;
    if ((st = bench_arrays_alloc(h->comm, bytes, &h->arr)) != HALOX_OK)
        return st;
    if (h->arr.on_gpu) {
        if (bench_gpu_put(h->arr.x, h->mine.x, bytes, h->arr.stream) ||
            bench_gpu_fill(h->arr.f, 0, bytes, h->arr.stream) || bench_gpu_sync(h->arr.stream) ||
            bench_timer_create(&h->timer))
            return HALOX_ERR_INTERNAL;
    } else {
        memcpy(h->arr.x, h->mine.x, bytes);
    }
    if ((st = halox_comm_bind(h->comm, &h->plan, h->arr.x, h->arr.f)) != HALOX_OK)
        return st;
    /* --fields: float rows (zero) forwarded with every coordinate exchange */
    const size_t fbytes = sizeof(float) * (size_t)(h->plan.n_total + 1);
    for (int i = 0; i < o->fields && st == HALOX_OK; i++) {
        h->field[i] = (halox_field_t){NULL, HALOX_TYPE_FLOAT, 1, h->plan.n_total + 1};
        if (h->arr.on_gpu) {
            st = halox_comm_device_alloc(h->comm, fbytes, &h->field[i].data);
            if (st == HALOX_OK && bench_gpu_fill(h->field[i].data, 0, fbytes, h->arr.stream))
                st = HALOX_ERR_INTERNAL;
        } else if (!(h->field[i].data = calloc(1, fbytes))) {
            st = HALOX_ERR_NO_MEMORY;
        }
    }
    if (st == HALOX_OK && o->fields)
        st = halox_comm_bind_fields(h->comm, o->fields, h->field, 0, NULL);
    return st;
}

/* in-step: K coordinate + force exchanges captured in graph slot `which` on the first call
 * (the capture counts as their calls, as halox_comm_coords/forces do), replays counted with
 * halox_comm_graph_replayed; then launched on the transport's stream. */
static halox_status_t in_step_launch(halo_rank_t *h, int which, int k_exchanges)
{
    halox_status_t st = HALOX_OK;
    void *stream = h->arr.stream;
    if (!h->graph[which]) {
        if ((st = halox_comm_graph_mode(h->comm, 1)) != HALOX_OK)
            return st;
        if (bench_graph_begin(stream)) {
            h->failed_gpu = 1;
            halox_comm_graph_mode(h->comm, 0);
            return HALOX_ERR_INTERNAL;
        }
        for (int k = 0; k < k_exchanges && st == HALOX_OK; k++)
            st = bench_exchange_host(h->comm, NULL);
        int bad = bench_graph_end(stream, &h->graph[which]); /* also after a failed capture */
        halox_comm_graph_mode(h->comm, 0);
        if (st != HALOX_OK)
            return st;
        if (bad) {
            h->failed_gpu = 1;
            return HALOX_ERR_INTERNAL;
        }
        h->graph_k[which] = k_exchanges;
    } else {
        for (int k = 0; k < h->graph_k[which] && st == HALOX_OK; k++)
            st = halox_comm_graph_replayed(h->comm);
        if (st != HALOX_OK)
            return st;
    }
    if (bench_graph_launch(h->graph[which], stream)) {
        h->failed_gpu = 1;
        return HALOX_ERR_INTERNAL;
    }
    return HALOX_OK;
}

/* The check's exchange in in-step mode: one captured exchange, launched and completed. */
static halox_status_t in_step_check(halox_comm_t *comm, void *ctx)
{
    halo_rank_t *h = ctx;
    (void)comm;
    halox_status_t st = in_step_launch(h, 0, 1);
    if (st == HALOX_OK && bench_gpu_sync(h->arr.stream)) {
        h->failed_gpu = 1;
        st = HALOX_ERR_INTERNAL;
    }
    return st;
}

/* -w untimed then -r timed repeats, each a barrier then coordinates + forces (--back-to-back K:
 * K of them enqueued one after the other, time / K: the launch latency and the ranks' skew after
 * the barrier are paid once, as in an MD run where the host runs ahead); the slowest rank of
 * each repeat. */
static halox_status_t time_repeats(const bench_opts_t *o, halo_rank_t *h)
{
    h->dev_ms = calloc((size_t)o->repeats, sizeof(double));
    h->host_ms = calloc((size_t)o->repeats, sizeof(double));
    if (!h->dev_ms || !h->host_ms)
        return HALOX_ERR_NO_MEMORY;
    halox_status_t st = HALOX_OK;
    for (int it = -o->warmup; it < o->repeats && st == HALOX_OK; it++) {
        st = halox_comm_barrier(h->comm);
        double t0 = bench_now(), v[2] = {0, 0};
        if (st == HALOX_OK && h->arr.on_gpu && bench_timer_start(h->timer, h->arr.stream))
            st = HALOX_ERR_INTERNAL;
        if (o->in_step && st == HALOX_OK)
            st = in_step_launch(h, 1, o->back_to_back);
        for (int k = 0; !o->in_step && k < o->back_to_back && st == HALOX_OK; k++)
            st = bench_exchange_host(h->comm, NULL);
        if (st == HALOX_OK && h->arr.on_gpu && bench_timer_stop(h->timer, h->arr.stream, &v[0]))
            st = HALOX_ERR_INTERNAL;
        v[1] = (bench_now() - t0) * 1e3;
        v[0] /= o->back_to_back;
        v[1] /= o->back_to_back;
        if (!h->arr.on_gpu)
            v[0] = v[1];
        if (st == HALOX_OK && it >= 0 && (st = halox_comm_allreduce_max(h->comm, v, 2)) == 0) {
            h->dev_ms[it] = v[0];
            h->host_ms[it] = v[1];
        }
    }
    return st;
}

static void report(const bench_rank_t *who, halo_case_t *c, halo_rank_t *h, int verified,
                   double build_s)
{
    const bench_opts_t *o = c->o;
    /* busiest rank: halo atoms, coordinate bytes sent; bytes per step = coordinates + forces */
    double mx[2] = {(double)(h->plan.n_total - h->plan.n_home),
                    (double)halox_plan_send_bytes(&h->plan, o->real, o->stride)};
    double sum = 2 * mx[1];
    if (halox_comm_allreduce_max(h->comm, mx, 2) != HALOX_OK ||
        halox_comm_allreduce_sum(h->comm, &sum, 1) != HALOX_OK || who->rank != 0)
        return;
    int pulses = h->plan.n_pulses;
    bench_stats_t g = bench_summarise(h->dev_ms, o->repeats);
    bench_stats_t t = bench_summarise(h->host_ms, o->repeats);
    /* the fields' rows travel with the coordinates: 4 bytes per field and atom sent */
    const double field_bytes =
        mx[1] / ((double)halox_real_size(o->real) * o->stride) * 4.0 * o->fields;
    double step_bytes = 2 * mx[1] + field_bytes,
           gbps = g.median > 0 ? step_bytes / (g.median * 1e-3) / 1e9 : 0;
    const char *check = c->floor_run ? "floor"
                        : !o->verify ? "skipped"
                        : verified   ? "verified"
                                     : "WRONG";
    const halox_grid_t *gr = &c->params.grid;
    char grid[32];
    snprintf(grid, sizeof grid, "%dx%dx%d", gr->n[0], gr->n[1], gr->n[2]);
    char bw[16] = "-"; /* a floor moves no bytes: no bandwidth */
    if (!c->floor_run)
        snprintf(bw, sizeof bw, "%.2f", gbps);
    printf("%-22s %9lld %-6s %6d %10.0f %9.1f %-8s %10.1f %10.1f %10.1f %10.1f %8s %s\n", c->label,
           c->natoms, grid, pulses, mx[0], step_bytes / 1024.0, check, g.median * 1e3, g.min * 1e3,
           g.max * 1e3, t.median * 1e3, bw, mode_name(o));
    fflush(stdout);
    bench_record_t r;
    rec_init(&r);
    rec_common(&r, o, c->label, c->nranks, gr);
    rec_int(&r, "atoms", c->natoms);
    rec_str(&r, "mode", mode_name(o));
    rec_bool(&r, "shifts", o->shifts);
    rec_bool(&r, "full_shell", o->full_shell);
    rec_int(&r, "fields", o->fields);
    rec_bool(&r, "available", 1);
    rec_str(&r, "real", o->real == HALOX_FLOAT ? "float" : "double");
    rec_int(&r, "stride", o->stride);
    rec_int(&r, "pulses", pulses);
    rec_int(&r, "max_halo_atoms", (long long)mx[0]);
    rec_int(&r, "max_send_bytes", (long long)mx[1]);
    rec_int(&r, "bytes_per_step", (long long)step_bytes);
    rec_int(&r, "field_bytes_per_step", (long long)field_bytes);
    rec_int(&r, "total_bytes_per_step", (long long)sum);
    rec_bool(&r, "verified", verified && !c->floor_run);
    rec_bool(&r, "floor", c->floor_run);
    rec_int(&r, "repeats", o->repeats);
    rec_int(&r, "back_to_back", o->back_to_back);
    rec_int(&r, "warmup", o->warmup);
    rec_num(&r, "time_us.median", g.median * 1e3);
    rec_num(&r, "time_us.min", g.min * 1e3);
    rec_num(&r, "time_us.max", g.max * 1e3);
    rec_num(&r, "host_us.median", t.median * 1e3);
    rec_num(&r, "host_us.min", t.min * 1e3);
    rec_num(&r, "host_us.max", t.max * 1e3);
    if (!c->floor_run)
        rec_num(&r, "bandwidth_GBps", gbps);
    if (c->link_peak > 0 && !c->floor_run) { /* use of the link measured in this run */
        rec_num(&r, "link_peak_GBps", c->link_peak);
        rec_num(&r, "link_use", gbps / c->link_peak);
    }
    rec_num(&r, "plan_build_s", build_s);
    rec_str(&r, "timing",
            o->in_step      ? "cuda events around one graph launch of back_to_back captured "
                              "coords+forces, divided by back_to_back, slowest rank"
            : h->arr.on_gpu ? "cuda events around coords+forces, slowest rank"
                            : "host clock around coords+forces, slowest rank");
    if (rec_write(&r, o))
        c->failed = 1;
    if (o->verify && !verified && !c->floor_run)
        c->failed = 1;
}

static halox_status_t halo_rank(const bench_rank_t *who, void *arg)
{
    halo_case_t *c = arg;
    const bench_opts_t *o = c->o;
    halo_rank_t h;
    memset(&h, 0, sizeof h);
    halox_plan_init(&h.plan);
    halox_status_t st = bench_comm_create(who, c->label, o->real, o->stride, o->timeout_s, &h.comm);
    if (st == HALOX_ERR_UNAVAILABLE || st == HALOX_ERR_UNKNOWN_TRANSPORT) {
        if (who->rank == 0)
            record_refused(c, st, halox_last_error()); /* refused on every rank alike */
        return HALOX_OK;
    }
    double build_s = 0;
    int verified = 0;
    if (st == HALOX_OK)
        st = setup(who, c, &h, &build_s);
    if (st == HALOX_OK && c->expect)
        st = bench_verify(&h.arr, c->expect, who->rank,
                          o->in_step ? in_step_check : bench_exchange_host, &h, &verified);
    if (st == HALOX_OK)
        st = time_repeats(o, &h);
    if (st == HALOX_OK)
        report(who, c, &h, verified, build_s);
    if (st != HALOX_OK) {
        char what[1200];
        snprintf(what, sizeof what, "%s: %s%s%s", c->label, halox_last_error(),
                 h.arr.on_gpu || h.failed_gpu ? " " : "",
                 h.arr.on_gpu || h.failed_gpu ? bench_gpu_error() : "");
        bench_rank_fail(who, what);
    }
    rank_free(&h);
    return st;
}

/* Every rank's home atoms and, when verifying, the reference result; once per size and grid. */
static int prepare(halo_case_t *c, halox_atoms_t *home, bench_expect_t *e)
{
    const bench_opts_t *o = c->o;
    halox_plan_t *plans = calloc((size_t)c->nranks, sizeof *plans);
    halox_atoms_t *ref = calloc((size_t)c->nranks, sizeof *ref);
    void **x = calloc((size_t)c->nranks, sizeof *x);
    int rc = plans && ref && x ? 0 : -1;
    if (rc == 0)
        rc = bench_make_system(&c->params, o->real, o->stride, c->natoms, o->seed, home);
    for (int r = 0; rc == 0 && r < c->nranks; r++) {
        halox_plan_init(&plans[r]);
        rc = bench_copy_home(&home[r], &ref[r]);
    }
    if (rc == 0 && o->verify) {
        rc = halox_reference_build(&c->params, ref, plans) == HALOX_OK ? 0 : -1;
        for (int r = 0; rc == 0 && r < c->nranks; r++)
            x[r] = ref[r].x;
        if (rc == 0)
            rc = bench_expect_make(plans, c->nranks, o->real, o->stride, x, o->seed, e);
    }
    for (int r = 0; plans && ref && r < c->nranks; r++) {
        halox_plan_free(&plans[r]);
        halox_atoms_free(&ref[r]);
    }
    free(plans);
    free(ref);
    free(x);
    return rc;
}

static int run_case(const bench_opts_t *o, const char *label, long long natoms)
{
    halo_case_t c = {.o = o, .label = label, .natoms = natoms, .link_peak = g_link_peak};
    c.floor_run = bench_label_floor(label);
    if (!bench_transport_ranks(o, label, &c.nranks))
        return BENCH_OK;
    halox_grid_t grid;
    if (o->grid_set)
        grid = o->grid;
    else
        bench_make_grid(c.nranks, &grid);
    if (halox_grid_size(&grid) != c.nranks)
        return bench_bad("--grid %dx%dx%d has %d ranks but %s runs %d", grid.n[0], grid.n[1],
                         grid.n[2], halox_grid_size(&grid), label, c.nranks);
    bench_water_params(natoms, &grid, &c.params);
    c.params.periodic_shifts = o->shifts;
    c.params.full_shell = o->full_shell;
    if (halox_plan_check(&c.params, NULL) != HALOX_OK)
        return bench_bad("%lld atoms on grid %dx%dx%d: no valid plan: %s", natoms, grid.n[0],
                         grid.n[1], grid.n[2], halox_last_error());
    if (o->in_step && o->fields && bench_label_caps(label).on_gpu &&
        !bench_label_caps(label).fields_in_kernel) {
        if (bench_world_rank() == 0)
            record_refused(&c, HALOX_ERR_UNAVAILABLE,
                           "--fields with --mode in-step: this transport stages fields through "
                           "the host, which a CUDA graph cannot capture (nvshmem-fused carries "
                           "them in its kernel): use --mode host");
        return c.failed ? BENCH_FAILED : BENCH_OK;
    }
    if (o->in_step && !bench_label_caps(label).capturable) {
        char why[256];
        snprintf(why, sizeof why,
                 "--mode in-step captures the exchanges in a CUDA graph, and %s cannot be "
                 "captured (%s): use a capturable GPU transport (nccl, nvshmem-*) or --mode host",
                 label,
                 bench_label_caps(label).on_gpu ? "it waits on the host inside every exchange"
                                                : "it runs on the host");
        if (bench_world_rank() == 0)
            record_refused(&c, HALOX_ERR_UNAVAILABLE, why);
        return c.failed ? BENCH_FAILED : BENCH_OK;
    }
    halox_atoms_t *home = calloc((size_t)c.nranks, sizeof *home);
    bench_expect_t e;
    memset(&e, 0, sizeof e);
    int rc = home && prepare(&c, home, &e) == 0 ? BENCH_OK : BENCH_FAILED;
    if (rc != BENCH_OK)
        fprintf(stderr, "halox-bench: no memory for %lld atoms: %s\n", natoms, halox_last_error());
    c.home = home;
    c.expect = o->verify && !c.floor_run && rc == BENCH_OK ? &e : NULL;
    if (rc == BENCH_OK) {
        bench_variant_env(label, 1);
        halox_status_t st = bench_ranks_run(label, c.nranks, o->timeout_s, halo_rank, &c);
        bench_variant_env(label, 0);
        rc = st != HALOX_OK || c.failed ? BENCH_FAILED : BENCH_OK;
    }
    for (int r = 0; home && r < c.nranks; r++)
        halox_atoms_free(&home[r]);
    free(home);
    bench_expect_free(&e);
    return rc;
}

int bench_cmd_halo(const bench_opts_t *o)
{
    if (bench_world_rank() == 0) {
        printf("halox-bench halo: %d process(es), %d GPU(s) visible, density 0.8, cut-off 5.0 + "
               "buffer 0.5, %s shell, %d field(s) with the coordinates, periodic images by %s, %s "
               "stride %d, %d repeats after %d warm-up, %s\n",
               bench_world_size(), bench_gpu_count(), o->full_shell ? "full" : "half", o->fields,
               o->shifts ? "shifts" : "copies", o->real == HALOX_FLOAT ? "float" : "double",
               o->stride, o->repeats, o->warmup,
               o->verify ? "verified against the reference first" : "not verified");
        char what[160];
        g_link_peak = bench_link_peak(what, sizeof what);
        printf("link peak: %.1f GB/s (%s); records carry link_use = GB/s over it\n", g_link_peak,
               what);
        print_header();
    }
    int rc = BENCH_OK;
    for (int i = 0; i < o->n_atoms; i++)
        for (int t = 0; t < o->n_transports; t++) {
            int r = run_case(o, o->transports[t], o->atoms[i]);
            if (r == BENCH_USAGE)
                return r;
            if (r != BENCH_OK)
                rc = r;
        }
    return rc;
}
