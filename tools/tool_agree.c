/* What the processes of one MPI job agree on (tool_agree.h). */
#define _POSIX_C_SOURCE 200809L
#include "tool_agree.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef HALOX_HAVE_MPI
#include <mpi.h>
#endif

#include "halox/env.h"
#include "tool_common.h"

/* Kinds of entries, in the order they are compared (the first difference is the one named). */
enum { K_PROGRAM = 'a', K_OPTION = 'b', K_INPUT = 'c', K_ENV = 'd' };

typedef struct entry {
    int kind;
    int seq;     /* the order it was recorded in */
    char *key;   /* "--dt", "HALOX_TRANSPORT" */
    char *value; /* what is compared */
    char *shown; /* what a message says ("--dt 0.004", "--read 'a.xyz' (120 bytes)") */
} entry_t;

/* One command line per process: the record is the process's own, kept until exit. */
static struct {
    const char *tool;
    entry_t *e;
    int n, cap;
} g_rec = {"halox", NULL, 0, 0};

static void *xalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: no memory to record the command line\n", g_rec.tool);
        exit(1);
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xalloc(n), s, n);
}

static char *xprintf(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = xalloc((size_t)(n > 0 ? n : 0) + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void add(int kind, const char *key, char *value, char *shown)
{
    if (g_rec.n == g_rec.cap) {
        int cap = g_rec.cap ? 2 * g_rec.cap : 32;
        entry_t *e = xalloc(sizeof *e * (size_t)cap);
        if (g_rec.n)
            memcpy(e, g_rec.e, sizeof *e * (size_t)g_rec.n);
        free(g_rec.e);
        g_rec.e = e;
        g_rec.cap = cap;
    }
    g_rec.e[g_rec.n] = (entry_t){kind, g_rec.n, xstrdup(key), value, shown};
    g_rec.n++;
}

void tool_agree_tool(const char *tool) { g_rec.tool = tool; }

/* A number as compared: an integer by its digits (no sign for zero, no leading zeros), another
 * finite number by the double it reads as (%.17g tells every double apart); NULL for text. */
static char *canonical_number(const char *t, size_t n)
{
    char *tok = xalloc(n + 1);
    memcpy(tok, t, n);
    tok[n] = '\0';
    const char *d = tok + (tok[0] == '+' || tok[0] == '-');
    char *out = NULL;
    if (*d && strspn(d, "0123456789") == strlen(d)) {
        while (d[0] == '0' && d[1])
            d++;
        out = xprintf("%s%s", tok[0] == '-' && strcmp(d, "0") ? "-" : "", d);
    } else if (n && !strchr(" \t\n", tok[0])) {
        char *end;
        double x = strtod(tok, &end);
        if (end != tok && !*end && isfinite(x))
            out = xprintf("%.17g", x);
    }
    free(tok);
    return out;
}

/* A value as compared: each comma-separated part that is a number by its value, so that the
 * spellings of one number agree ("0.005", "5e-3"; "6,6,6" and "06,6,6"); the rest as given. */
static char *canonical(const char *v)
{
    size_t cap = strlen(v) + 1, len = 0;
    char *out = xalloc(cap);
    for (const char *p = v;;) {
        size_t n = strcspn(p, ",");
        char *num = canonical_number(p, n);
        size_t m = num ? strlen(num) : n;
        if (len + m + 2 > cap) {
            cap = 2 * (len + m + 2);
            char *o = xalloc(cap);
            memcpy(o, out, len);
            free(out);
            out = o;
        }
        memcpy(out + len, num ? num : p, m);
        len += m;
        free(num);
        if (!p[n])
            break;
        out[len++] = ',';
        p += n + 1;
    }
    out[len] = '\0';
    return out;
}

void tool_agree_option(const char *name, const char *value)
{
    add(K_OPTION, name, value ? canonical(value) : xstrdup("(given)"),
        value ? xprintf("%s %s", name, value) : xstrdup(name));
}

void tool_agree_input(const char *name, const char *path)
{
    /* read when the ranks compare: a run of one process never reads it twice */
    add(K_INPUT, name, NULL, xstrdup(path));
}

#ifdef HALOX_HAVE_MPI

/* FNV-1a 64: a checksum to compare records and files by, not a defence against forgery. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001b3ull;
    }
    return h;
}
#define FNV_INIT 0xcbf29ce484222325ull

/* An input's entry made comparable: its value the size and checksum of the contents, its
 * shown text the option, the path and the size. */
static void digest_input(entry_t *e)
{
    const char *path = e->shown;
    /* without blocking: a FIFO is not read here (the tool refuses it by name) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    long long bytes = -1;
    if (fd < 0) {
        e->value = xprintf("cannot be opened: %s", strerror(errno));
    } else if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        e->value = xstrdup("not a regular file");
    } else {
        uint64_t h = FNV_INIT;
        static unsigned char buf[1 << 16];
        ssize_t got;
        bytes = 0;
        while ((got = read(fd, buf, sizeof buf)) > 0) {
            h = fnv1a(h, buf, (size_t)got);
            bytes += got;
        }
        e->value = got < 0 ? xprintf("cannot be read: %s", strerror(errno))
                           : xprintf("%lld bytes, FNV-1a %016llx", bytes, (unsigned long long)h);
    }
    if (fd >= 0)
        close(fd);
    e->shown = bytes >= 0 ? xprintf("%s '%s' (%lld bytes)", e->key, path, bytes)
                          : xprintf("%s '%s' (%s)", e->key, path, e->value);
    free((char *)path);
}

/* The variables that change only what a rank reports, not what it computes or how long it
 * waits: a rank may be given them alone (a profile of one rank). */
static int env_report_only(const char *name)
{
    static const char *const only[] = {"HALOX_LOG_LEVEL", "HALOX_HOSTPROF", "HALOX_HOSTPROF_SKIP",
                                       "HALOX_MD_TIMELINE", NULL};
    for (int k = 0; only[k]; k++)
        if (!strcmp(name, only[k]))
            return 1;
    return 0;
}

static int entry_order(const void *pa, const void *pb)
{
    const entry_t *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind - b->kind;
    int c = strcmp(a->key, b->key);
    /* an option given twice keeps its values in order: the record's order breaks ties */
    return c ? c : a->seq - b->seq;
}

/* The record as sent: per entry its kind, key, value and shown text, each ended by '\0', sorted
 * by kind and key, with the values of an option given several times joined in order. *sum_p:
 * the checksum of kinds, keys and values (what is compared). */
static char *serialise(size_t *len_p, uint64_t *sum_p)
{
    for (int i = 0; i < g_rec.n; i++)
        if (g_rec.e[i].kind == K_INPUT && !g_rec.e[i].value)
            digest_input(&g_rec.e[i]);
    /* the program and the environment, read now: the same on every rank of one job */
    char *program =
        xprintf("%s %s, %s, mpi %d cuda %d nvshmem %d", g_rec.tool, HALOX_VERSION_STRING,
                tool_build_line(), HALOX_FEATURE_MPI, HALOX_FEATURE_CUDA, HALOX_FEATURE_NVSHMEM);
    add(K_PROGRAM, "program", program, xstrdup(program));
    /* every table of --help-env: the library's, the engine's and the tools' own */
    int ns;
    const tool_env_section_t *sections = tool_env_sections(&ns);
    for (int k = 0; k < ns; k++) {
        int nv;
        const halox_env_var_t *vars = sections[k].table(&nv);
        for (int i = 0; i < nv; i++) {
            if (env_report_only(vars[i].name))
                continue;
            /* empty counts as unset, as every reader of these variables takes it */
            const char *v = getenv(vars[i].name);
            const int set = v && *v;
            add(K_ENV, vars[i].name, set ? xprintf("=%s", v) : xstrdup("(unset)"),
                set ? xprintf("%s=%s", vars[i].name, v) : xprintf("%s unset", vars[i].name));
        }
    }
    entry_t *sorted = xalloc(sizeof *sorted * (size_t)g_rec.n);
    memcpy(sorted, g_rec.e, sizeof *sorted * (size_t)g_rec.n);
    qsort(sorted, (size_t)g_rec.n, sizeof *sorted, entry_order);
    size_t cap = 256, len = 0;
    char *buf = xalloc(cap);
    uint64_t sum = FNV_INIT;
    for (int i = 0; i < g_rec.n;) {
        int j = i + 1;
        while (j < g_rec.n && sorted[j].kind == sorted[i].kind &&
               !strcmp(sorted[j].key, sorted[i].key))
            j++;
        size_t need = strlen(sorted[i].key) + 4;
        for (int k = i; k < j; k++)
            need += strlen(sorted[k].value) + strlen(sorted[k].shown) + 2;
        if (len + need > cap) {
            cap = 2 * (len + need);
            char *b = xalloc(cap);
            memcpy(b, buf, len);
            free(buf);
            buf = b;
        }
        char *start = buf + len;
        buf[len++] = (char)sorted[i].kind;
        len += (size_t)sprintf(buf + len, "%s", sorted[i].key) + 1;
        for (int k = i; k < j; k++)
            len += (size_t)sprintf(buf + len, "%s%s", k > i ? " " : "", sorted[k].value);
        len++;
        sum = fnv1a(sum, start, (size_t)(buf + len - start));
        for (int k = i; k < j; k++)
            len += (size_t)sprintf(buf + len, "%s%s", k > i ? " " : "", sorted[k].shown);
        len++;
        i = j;
    }
    free(sorted);
    *len_p = len;
    *sum_p = sum;
    return buf;
}

/* The entries of a serialised record, one by one: 0 at its end; *p moves past the entry. */
typedef struct {
    int kind;
    const char *key, *value, *shown;
} view_t;

static int next_entry(const char **p, const char *end, view_t *v)
{
    if (*p >= end)
        return 0;
    v->kind = (unsigned char)**p;
    v->key = *p + 1;
    v->value = v->key + strlen(v->key) + 1;
    v->shown = v->value + strlen(v->value) + 1;
    *p = v->shown + strlen(v->shown) + 1;
    return 1;
}

static int view_order(const view_t *a, const view_t *b)
{
    return a->kind != b->kind ? a->kind - b->kind : strcmp(a->key, b->key);
}

/* What a rank lacking the entry `v` was given, as a message says it. */
static const char *missing(const view_t *v, char *buf, size_t cap)
{
    snprintf(buf, cap, "no %s", v->key);
    return buf;
}

/* Rank 0: the first entry where rank r's record (theirs) differs from its own (mine). */
static void explain(const char *mine, size_t mlen, const char *theirs, size_t tlen, int r)
{
    const char *p = mine, *pe = mine + mlen, *q = theirs, *qe = theirs + tlen;
    view_t a, b;
    int ha = next_entry(&p, pe, &a), hb = next_entry(&q, qe, &b);
    char ma[256], mb[256];
    while (ha || hb) {
        int c = !ha ? 1 : !hb ? -1 : view_order(&a, &b);
        const view_t *at = c <= 0 ? &a : &b;
        if (c == 0 && !strcmp(a.value, b.value)) {
            ha = next_entry(&p, pe, &a);
            hb = next_entry(&q, qe, &b);
            continue;
        }
        const char *zero = c <= 0 ? a.shown : missing(&b, ma, sizeof ma);
        const char *them = c >= 0 ? b.shown : missing(&a, mb, sizeof mb);
        const char *verb = at->kind == K_PROGRAM ? "runs" : at->kind == K_ENV ? "has" : "was given";
        const char *must = at->kind == K_PROGRAM ? "run the same program (one build)"
                           : at->kind == K_ENV   ? "get the same halox environment variables "
                                                   "(mpirun -x VAR passes one to every rank)"
                           : at->kind == K_INPUT ? "read the same file (the same contents)"
                                                 : "get the same options";
        fprintf(stderr, "%s: rank %d %s %s but rank 0 %s: every rank must %s\n", g_rec.tool, r,
                verb, them, zero, must);
        return;
    }
    fprintf(stderr,
            "%s: rank %d was started differently from rank 0: every rank must get the "
            "same options, files and environment\n",
            g_rec.tool, r);
}

int tool_agree_inputs(void)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t len;
    uint64_t sum;
    char *rec = serialise(&len, &sum);
    unsigned long long *all = xalloc(sizeof *all * (size_t)size);
    unsigned long long mine = sum;
    MPI_Allgather(&mine, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    int differs = -1;
    for (int r = 1; r < size && differs < 0; r++)
        if (all[r] != all[0])
            differs = r;
    free(all);
    if (differs > 0) {
        /* the first rank that differs sends its record to rank 0, which names the difference */
        enum { TAG = 0x4a67 };
        unsigned long long n = len;
        if (rank == differs) {
            MPI_Send(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, TAG, MPI_COMM_WORLD);
            MPI_Send(rec, (int)len, MPI_CHAR, 0, TAG, MPI_COMM_WORLD);
        } else if (rank == 0) {
            MPI_Recv(&n, 1, MPI_UNSIGNED_LONG_LONG, differs, TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            /* one byte more, zero: another build's record cannot lead the reader past it */
            char *theirs = xalloc((size_t)n + 1);
            MPI_Recv(theirs, (int)n, MPI_CHAR, differs, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            theirs[n] = '\0';
            explain(rec, len, theirs, (size_t)n, differs);
            fflush(stderr);
            free(theirs);
        }
    }
    free(rec);
    return differs > 0 ? 2 : 0;
}

static double seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* How long a failed rank waits for the others: ranks that failed together arrive within the
 * same collective; one still computing or waiting elsewhere would keep the job for its whole
 * timeout. */
#define TOOL_AGREE_FAILED_WAIT_S 5.0

static void say(const char *line)
{
    if (line && *line) {
        fprintf(stderr, "%s\n", line);
        fflush(stderr);
    }
}

int tool_agree_outcome(int code, int follower, const char *line, double wait_s)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* the failure's wall-clock time picks the cause: a rank that timed out waiting for a failed
     * peer fails later than the peer */
    double mine[3] = {code, follower, code ? seconds(CLOCK_REALTIME) : 0};
    double *all = xalloc(sizeof *all * 3 * (size_t)size);
    MPI_Request req;
    MPI_Iallgather(mine, 3, MPI_DOUBLE, all, 3, MPI_DOUBLE, MPI_COMM_WORLD, &req);
    const double limit = code ? fmin(wait_s, TOOL_AGREE_FAILED_WAIT_S) : wait_s;
    const double end = seconds(CLOCK_MONOTONIC) + limit;
    int done = 0;
    for (;;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done || seconds(CLOCK_MONOTONIC) > end)
            break;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (!done) {
        if (code)
            say(line);
        else
            fprintf(stderr,
                    "%s: rank %d finished, but another rank did not within %g s: stopping the "
                    "job\n",
                    g_rec.tool, rank, limit);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
    }
    int cause = -1;
    for (int r = 0; r < size; r++) {
        const double *a = all + 3 * r;
        if (a[0] == 0)
            continue;
        if (cause < 0) {
            cause = r;
            continue;
        }
        const double *c = all + 3 * cause;
        /* a failure of its own before one that only followed; then the earliest */
        if ((a[1] == 0 && c[1] != 0) || (a[1] == c[1] && a[2] < c[2]))
            cause = r;
    }
    const int job = cause >= 0 ? (int)all[3 * cause] : 0;
    free(all);
    if (cause == rank)
        say(line);
    return job;
}

#endif
