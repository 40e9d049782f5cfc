/* scaling: strong scaling from the JSON lines of md runs (this tool's "md" records, and the
 * device suite's "halox-md" lines): per transport, engine, graph mode and size, the speedup
 * and efficiency of every rank count over the smallest one. Pure post-processing. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_RUNS 4096

typedef struct run {
    char transport[64], device[8];
    int graph, ranks;
    long long atoms;
    double ms;
} run_t;

typedef struct runs {
    run_t *r;
    int n;
} runs_t;

static int read_line(const char *line, runs_t *rs)
{
    char bench[32];
    double atoms, ranks, ms;
    run_t *r = &rs->r[rs->n];
    if (!json_get_str(line, "bench", bench, sizeof bench) ||
        (strcmp(bench, "md") && strcmp(bench, "halox-md")))
        return 0;
    if (!json_get_str(line, "transport", r->transport, sizeof r->transport) ||
        !json_get_num(line, "atoms", &atoms) || !json_get_num(line, "ranks", &ranks) ||
        !json_get_num(line, "ms_per_step", &ms) || ranks < 1 || !(ms > 0))
        return 0;
    if (!json_get_str(line, "device", r->device, sizeof r->device))
        snprintf(r->device, sizeof r->device, "-");
    if (!json_get_bool(line, "graph", &r->graph))
        r->graph = 0;
    r->atoms = (long long)atoms;
    r->ranks = (int)ranks;
    r->ms = ms;
    return 1;
}

static int read_file(const char *path, runs_t *rs)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return bench_bad("scaling: cannot read '%s'", path);
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && rs->n < MAX_RUNS)
        rs->n += read_line(line, rs);
    free(line);
    fclose(f);
    return 0;
}

static int same_series(const run_t *a, const run_t *b)
{
    return !strcmp(a->transport, b->transport) && !strcmp(a->device, b->device) &&
           a->graph == b->graph && a->atoms == b->atoms;
}

static int cmp_run(const void *pa, const void *pb)
{
    const run_t *a = pa, *b = pb;
    int c = strcmp(a->transport, b->transport);
    if (!c)
        c = strcmp(a->device, b->device);
    if (!c)
        c = a->graph - b->graph;
    if (!c)
        c = a->atoms < b->atoms ? -1 : a->atoms > b->atoms;
    if (!c)
        c = a->ranks - b->ranks;
    if (!c)
        c = a->ms < b->ms ? -1 : a->ms > b->ms;
    return c;
}

/* Median ms/step of the runs [i, j) (sorted by time within a rank count). */
static double median_ms(const run_t *r, int i, int j)
{
    int n = j - i;
    return n % 2 ? r[i + n / 2].ms : 0.5 * (r[i + n / 2 - 1].ms + r[i + n / 2].ms);
}

static int emit(const bench_opts_t *o, const run_t *r, int runs, double ms, int base_ranks,
                double base_ms)
{
    const double speedup = base_ms / ms, eff = speedup * base_ranks / r->ranks;
    printf("%-22s %-6s %-5s %10lld %5d %5d %10.4f %8.2f %9.1f\n", r->transport, r->device,
           r->graph ? "yes" : "no", r->atoms, r->ranks, runs, ms, speedup, 100.0 * eff);
    bench_record_t rec;
    rec_init(&rec);
    rec_common(&rec, o, r->transport, r->ranks, NULL);
    rec_str(&rec, "device", r->device);
    rec_bool(&rec, "graph", r->graph);
    rec_int(&rec, "atoms", r->atoms);
    rec_int(&rec, "runs", runs);
    rec_num(&rec, "ms_per_step", ms);
    rec_int(&rec, "base_ranks", base_ranks);
    rec_num(&rec, "base_ms_per_step", base_ms);
    rec_num(&rec, "speedup", speedup);
    rec_num(&rec, "efficiency", eff);
    return rec_write(&rec, o);
}

int bench_cmd_scaling(const bench_opts_t *o)
{
    runs_t rs = {calloc(MAX_RUNS, sizeof(run_t)), 0};
    if (!rs.r)
        return BENCH_FAILED;
    for (int i = 0; i < o->n_files; i++)
        if (read_file(o->files[i], &rs)) {
            free(rs.r);
            return BENCH_USAGE;
        }
    if (rs.n == 0) {
        free(rs.r);
        return bench_bad("scaling: no md records (\"bench\":\"md\" with atoms, ranks, "
                         "ms_per_step) in the %d file(s) given",
                         o->n_files);
    }
    qsort(rs.r, (size_t)rs.n, sizeof *rs.r, cmp_run);
    printf("halox-bench scaling: %d md run(s); speedup and efficiency over the fewest ranks of "
           "each series (median ms/step where a rank count has several runs)\n",
           rs.n);
    printf("%-22s %-6s %-5s %10s %5s %5s %10s %8s %9s\n", "transport", "device", "graph", "atoms",
           "ranks", "runs", "ms/step", "speedup", "effic.%");
    int rc = BENCH_OK;
    for (int s = 0; s < rs.n;) {
        int e = s;
        while (e < rs.n && same_series(&rs.r[s], &rs.r[e]))
            e++;
        const int base_ranks = rs.r[s].ranks;
        double base_ms = 0;
        for (int i = s; i < e;) {
            int j = i;
            while (j < e && rs.r[j].ranks == rs.r[i].ranks)
                j++;
            double ms = median_ms(rs.r, i, j);
            if (i == s)
                base_ms = ms;
            if (emit(o, &rs.r[i], j - i, ms, base_ranks, base_ms))
                rc = BENCH_FAILED;
            i = j;
        }
        s = e;
    }
    free(rs.r);
    return rc;
}
