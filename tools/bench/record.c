/* Records: one per measured case, written as a JSON line and a CSV row. A key with a dot
 * ("time_us.median") is a field of a nested object in JSON and a column of its own in CSV.
 * Files are opened with halox_output_open() (a path that is not a regular file is refused) and
 * closed with halox_output_close(), so a failed write (a full disk) fails the run (exit 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "halox/env.h"
#include "halox/features.h"
#include "halox/file.h"
#include "tool_common.h"

void rec_init(bench_record_t *r) { r->n = 0; }

static bench_field_t *add(bench_record_t *r, const char *key, int is_string)
{
    if (r->n == BENCH_MAX_FIELDS)
        return NULL;
    bench_field_t *f = &r->field[r->n++];
    snprintf(f->key, sizeof f->key, "%s", key);
    f->is_string = is_string;
    return f;
}

void rec_str(bench_record_t *r, const char *key, const char *v)
{
    bench_field_t *f = add(r, key, 1);
    if (!f)
        return;
    size_t n = 0, cap = sizeof f->value;
    f->value[n++] = '"';
    for (const char *p = v; *p && n + 8 < cap; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\') {
            f->value[n++] = '\\';
            f->value[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(f->value + n, cap - n, "\\u%04x", c);
        } else {
            f->value[n++] = (char)c;
        }
    }
    f->value[n++] = '"';
    f->value[n] = '\0';
}

void rec_int(bench_record_t *r, const char *key, long long v)
{
    bench_field_t *f = add(r, key, 0);
    if (f)
        snprintf(f->value, sizeof f->value, "%lld", v);
}

void rec_num(bench_record_t *r, const char *key, double v)
{
    bench_field_t *f = add(r, key, 0);
    if (f)
        snprintf(f->value, sizeof f->value, isfinite(v) ? "%.9g" : "null", v);
}

void rec_bool(bench_record_t *r, const char *key, int v)
{
    bench_field_t *f = add(r, key, 0);
    if (f)
        snprintf(f->value, sizeof f->value, "%s", v ? "true" : "false");
}

void rec_null(bench_record_t *r, const char *key)
{
    bench_field_t *f = add(r, key, 0);
    if (f)
        snprintf(f->value, sizeof f->value, "null");
}

void rec_grid(bench_record_t *r, const halox_grid_t *g)
{
    bench_field_t *f = add(r, "grid", 0);
    if (f)
        snprintf(f->value, sizeof f->value, "[%d,%d,%d]", g->n[0], g->n[1], g->n[2]);
}

/* buf += " NAME=value" when NAME is set, not empty and not one left out (the commit, recorded
 * elsewhere, and the system cache, which changes no timing); 0 once buf is full (whole
 * variables only). */
static int env_append(char *buf, size_t cap, size_t *len_p, const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v || !strcmp(name, "HALOX_COMMIT") || !strcmp(name, "HALOX_SYSTEM_CACHE"))
        return 1;
    int w = snprintf(buf + *len_p, cap - *len_p, "%s%s=%s", *len_p ? " " : "", name, v);
    if (w < 0 || (size_t)w >= cap - *len_p) {
        buf[*len_p] = '\0';
        return 0;
    }
    *len_p += (size_t)w;
    return 1;
}

/* The variables of the environment that change what runs ("NAME=value ..."; "" when none):
 * halox's (every table of --help-env, in its order), then the MPS client's share of the GPU and
 * priority (ranks sharing a GPU). Two records of one command line differ by these or by
 * nothing. */
static const char *bench_meta_env(void)
{
    static const char *const extra[] = {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                                        "CUDA_MPS_CLIENT_PRIORITY"};
    static char buf[1024];
    size_t len = 0;
    int room = 1, ns;
    buf[0] = '\0';
    const tool_env_section_t *sections = tool_env_sections(&ns);
    for (int k = 0; k < ns && room; k++) {
        int nv;
        const halox_env_var_t *t = sections[k].table(&nv);
        for (int i = 0; i < nv && room; i++)
            room = env_append(buf, sizeof buf, &len, t[i].name);
    }
    for (int k = 0; k < (int)(sizeof extra / sizeof extra[0]) && room; k++)
        room = env_append(buf, sizeof buf, &len, extra[k]);
    return buf;
}

void rec_common(bench_record_t *r, const bench_opts_t *o, const char *transport, int ranks,
                const halox_grid_t *grid)
{
    static char gpus[256];
    static int n_gpus = -1, driver, runtime;
    if (n_gpus < 0) /* once: records are written by one thread */
        bench_gpu_describe(gpus, sizeof gpus, &n_gpus, &driver, &runtime);
    rec_str(r, "bench", o->cmd);
    rec_str(r, "transport", transport);
    rec_int(r, "ranks", ranks);
    if (grid)
        rec_grid(r, grid);
    rec_str(r, "hardware.cpu", bench_meta_cpu());
    rec_int(r, "hardware.cores", bench_meta_cores());
    rec_int(r, "hardware.gpu_count", n_gpus);
    rec_str(r, "hardware.gpus", gpus);
    rec_int(r, "hardware.cuda_driver", driver);
    rec_int(r, "hardware.cuda_runtime", runtime);
    rec_str(r, "commit", bench_meta_commit());
    /* how the tool and libhalox were compiled (features.h): timings compare only within one */
    rec_str(r, "build.type", HALOX_BUILD_TYPE);
    rec_str(r, "build.c_flags", HALOX_BUILD_C_FLAGS);
    rec_str(r, "build.cuda_flags", HALOX_BUILD_CUDA_FLAGS);
    rec_bool(r, "build.optimised", HALOX_BUILD_OPTIMISED);
    rec_str(r, "options", o->cmdline);
    rec_str(r, "env", bench_meta_env());
    rec_str(r, "date", bench_meta_date());
}

/* Length of the nested-object prefix of a key ("time_us" of "time_us.median"), 0 if none. */
static size_t prefix_len(const char *key)
{
    const char *dot = strchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

static void write_json(FILE *out, const bench_record_t *r)
{
    fputc('{', out);
    const char *open = NULL; /* key of the open nested object */
    size_t open_len = 0;
    for (int i = 0; i < r->n; i++) {
        const bench_field_t *f = &r->field[i];
        size_t pl = prefix_len(f->key);
        int same = open && pl == open_len && !strncmp(f->key, open, pl);
        if (open && !same) {
            fputc('}', out);
            open = NULL;
        }
        if (i)
            fputc(',', out);
        if (pl && !same) {
            fprintf(out, "\"%.*s\":{", (int)pl, f->key);
            open = f->key;
            open_len = pl;
        }
        fprintf(out, "\"%s\":%s", pl ? f->key + pl + 1 : f->key, f->value);
    }
    if (open)
        fputc('}', out);
    fputs("}\n", out);
}

/* A CSV cell: strings without their JSON quotes; quoted when they hold a comma or a quote. */
static void write_cell(FILE *out, const bench_field_t *f)
{
    const char *v = f->value;
    size_t n = strlen(v);
    if (f->is_string && n >= 2) {
        v++;
        n -= 2;
    }
    int quote = memchr(v, ',', n) || memchr(v, '"', n);
    if (quote)
        fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '"')
            fputc('"', out);
        fputc(v[i], out);
    }
    if (quote)
        fputc('"', out);
}

static void write_csv(FILE *out, const bench_record_t *r)
{
    /* opened for appending: the position is the end only after a seek */
    if (fseek(out, 0, SEEK_END) == 0 && ftell(out) == 0) {
        for (int i = 0; i < r->n; i++)
            fprintf(out, "%s%s", i ? "," : "", r->field[i].key);
        fputc('\n', out);
    }
    for (int i = 0; i < r->n; i++) {
        if (i)
            fputc(',', out);
        write_cell(out, &r->field[i]);
    }
    fputc('\n', out);
}

int rec_write(const bench_record_t *r, const bench_opts_t *o)
{
    const char *paths[2] = {o->json_path, o->csv_path};
    const char *what[2] = {"the --json file", "the --csv file"};
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        if (!paths[k])
            continue;
        FILE *f = NULL;
        halox_status_t st = halox_output_open(paths[k], what[k], 1, &f);
        if (st == HALOX_OK) {
            if (k == 0)
                write_json(f, r);
            else
                write_csv(f, r);
            st = halox_output_close(f, paths[k], what[k]);
        }
        if (st != HALOX_OK) {
            fprintf(stderr, "halox-bench: %s\n", halox_last_error());
            rc = -1;
        }
    }
    return rc;
}
