/* scaling: strong scaling from the JSON lines of md runs (this tool's "md" records, and the
 * device suite's "halox-md" lines): per transport, engine, graph mode and size, the speedup
 * and efficiency of every rank count over the smallest one. Pure post-processing. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bench.h"
#include "halox/file.h"

#define MAX_RUNS 4096
/* A JSON-lines file of md runs is a few hundred bytes per run: MAX_RUNS of them fit in 4 MiB.
 * The whole file is read into memory, so only a regular file of a bounded size is read (a
 * device such as /dev/zero, or a file of gigabytes, is refused instead of filling the memory). */
#define MAX_FILE_BYTES (64L << 20)
/* halox-md's atom counts; rank counts of an int */
#define MAX_ATOMS 2147483647.0
#define MAX_RANKS 2147483647.0

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

/* 1: a record of an md run, kept; 0: another record (or a run without timed steps), skipped;
 * -1: an md record whose numbers no run writes (said). */
static int read_line(const char *path, long long lineno, const char *line, runs_t *rs)
{
    char bench[32];
    double atoms, ranks, ms;
    run_t run, *r = &run; /* into rs only once it is known to fit */
    if (!json_get_str(line, "bench", bench, sizeof bench) ||
        (strcmp(bench, "md") && strcmp(bench, "halox-md")))
        return 0;
    if (!json_get_str(line, "transport", r->transport, sizeof r->transport) ||
        !json_get_num(line, "atoms", &atoms) || !json_get_num(line, "ranks", &ranks) ||
        !json_get_num(line, "ms_per_step", &ms))
        return 0;
    /* converted to integers below: out of range, the conversion is undefined */
    if (!(atoms >= 1 && atoms <= MAX_ATOMS && atoms == floor(atoms)) ||
        !(ranks >= 1 && ranks <= MAX_RANKS && ranks == floor(ranks)) || !isfinite(ms)) {
        bench_bad("scaling: %s: line %lld: an md record with atoms %g, ranks %g, ms_per_step %g: "
                  "give whole atom and rank counts from 1 to %.0f and a finite time",
                  path, lineno, atoms, ranks, ms, MAX_RANKS);
        return -1;
    }
    if (!(ms > 0))
        return 0;
    if (rs->n == MAX_RUNS) {
        bench_bad("scaling: %s: line %lld: more than %d md records in the files given: give fewer",
                  path, lineno, MAX_RUNS);
        return -1;
    }
    if (!json_get_str(line, "device", r->device, sizeof r->device))
        snprintf(r->device, sizeof r->device, "-");
    if (!json_get_bool(line, "graph", &r->graph))
        r->graph = 0;
    r->atoms = (long long)atoms;
    r->ranks = (int)ranks;
    r->ms = ms;
    rs->r[rs->n] = run;
    return 1;
}

/* The whole of a regular file of at most MAX_FILE_BYTES, NUL-terminated (free it); NULL (said)
 * otherwise. */
static char *slurp(const char *path)
{
    FILE *f = NULL; /* a regular file only: a FIFO is never waited on */
    if (halox_input_open(path, "the scaling input", "give the JSON files of md runs", &f) !=
        HALOX_OK) {
        bench_bad("scaling: %s", halox_last_error());
        return NULL;
    }
    struct stat sb;
    char *text = NULL;
    if (fstat(fileno(f), &sb) != 0) {
        bench_bad("scaling: cannot read the scaling input '%s': %s", path, strerror(errno));
    } else if (sb.st_size > MAX_FILE_BYTES) {
        bench_bad("scaling: the scaling input '%s' is larger than %ld MiB: give the JSON files of "
                  "md runs",
                  path, MAX_FILE_BYTES >> 20);
    } else if (!(text = malloc((size_t)sb.st_size + 2))) {
        bench_bad("scaling: no memory to read '%s'", path);
    } else {
        /* one byte more than its size: a file that grows while it is read is refused */
        const size_t n = fread(text, 1, (size_t)sb.st_size + 1, f);
        if (ferror(f) || n > (size_t)sb.st_size) {
            bench_bad("scaling: cannot read the scaling input '%s'%s", path,
                      ferror(f) ? "" : ": it grew while it was read");
            free(text);
            text = NULL;
        } else {
            text[n] = '\0';
        }
    }
    fclose(f);
    return text;
}

static int read_file(const char *path, runs_t *rs)
{
    char *text = slurp(path);
    if (!text)
        return 1;
    long long lineno = 0;
    int rc = 0;
    for (char *line = text; line && !rc; lineno++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        const int got = read_line(path, lineno + 1, line, rs);
        if (got < 0)
            rc = 1;
        else
            rs->n += got;
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return rc;
}

/* -1, 0, 1 as a < b, ==, > (no difference that can overflow) */
#define CMP(a, b) (((a) > (b)) - ((a) < (b)))

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
        c = CMP(a->graph, b->graph);
    if (!c)
        c = CMP(a->atoms, b->atoms);
    if (!c)
        c = CMP(a->ranks, b->ranks);
    if (!c)
        c = CMP(a->ms, b->ms);
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
