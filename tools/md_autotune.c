/* halox-md --autotune (see md_autotune.h). Rank 0 reads and writes the cache and decides; every
 * decision is broadcast, so all ranks run the same candidates in the same order. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autotune_pick.h"
#include "halox/endpoint.h"
#include "halox/file.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "md_autotune.h"
#include "tool_env.h"
#include "tool_launch.h"

enum { KEY_LEN = 256, NAME_LEN = 64, ROUNDS = 3 };

/* The transport's static name (from halox_transport_names()), or NULL when not in this build. */
static const char *static_name(const char *name)
{
    for (const char *const *t = halox_transport_names(); *t; t++)
        if (!strcmp(*t, name))
            return *t;
    return NULL;
}

static void cache_path(char *path, size_t len)
{
    const char *p = tool_env_string("HALOX_AUTOTUNE_CACHE");
    if (p) {
        snprintf(path, len, "%s", p);
        return;
    }
    const char *home = getenv("HOME");
    snprintf(path, len, "%s/.cache/halox-autotune.tsv", home && *home ? home : "/tmp");
}

static void make_key(const halox_md_config_t *cfg, const halox_md_system_t *sys, char *key,
                     size_t len)
{
    /* ranks per node, as the launcher says (tool_launch.h: the one place that reads it) */
    char local[16] = "?";
    const int nlocal = tool_launched_local_processes();
    if (nlocal > 0)
        snprintf(local, sizeof local, "%d", nlocal);
    int bucket = sys->natoms > 0 ? (int)floor(log2((double)sys->natoms)) : 0;
    static const char *const graph[] = {"auto", "on", "off"};
    snprintf(key, len, "atoms=2^%d grid=%dx%dx%d local=%s gpus=%d device=%s graph=%s", bucket,
             cfg->grid.n[0], cfg->grid.n[1], cfg->grid.n[2], local, halox_gpu_count(),
             halox_md_config_device(cfg) == HALOX_MD_DEVICE_GPU ? "gpu" : "cpu",
             (unsigned)cfg->graph < 3 ? graph[cfg->graph] : "?");
}

/* The latest cached transport for key (rank 0), or "" */
static void cache_lookup(const char *path, const char *key, char *name)
{
    name[0] = 0;
    FILE *f = NULL; /* a FIFO or a device in its place is passed over, not waited on */
    if (halox_input_open(path, "the autotune cache", "", &f) != HALOX_OK)
        return; /* a cache only: measured anew */
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        if (!tab || (size_t)(tab - line) != strlen(key) || strncmp(line, key, strlen(key)))
            continue;
        char *end = strchr(tab + 1, '\t');
        if (end && end - tab - 1 < NAME_LEN) {
            memcpy(name, tab + 1, (size_t)(end - tab - 1));
            name[end - tab - 1] = 0;
        }
    }
    fclose(f);
}

static void cache_store(const char *path, const char *key, const char *name, double ms)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        mkdir(dir, 0755); /* one level (~/.cache); an existing folder is fine */
    }
    FILE *f = NULL; /* a FIFO or a device in its place is refused, not waited on */
    if (halox_output_open(path, "the autotune cache", 1, &f) != HALOX_OK)
        return; /* a cache only: the run goes on */
    fprintf(f, "%s\t%s\t%.6f\n", key, name, ms);
    halox_output_close(f, path, "the autotune cache");
}

/* One candidate for `steps` steps; ms/step on rank 0 (< 0: refused or failed, reason in msg). */
static double measure(const halox_md_config_t *cfg, const halox_md_system_t *sys, const char *name,
                      int steps, char *msg, size_t len)
{
    halox_md_config_t c = *cfg;
    c.transport = name;
    c.steps = steps;
    c.thermo_every = steps;
    c.json_path = c.csv_path = c.xyz_path = c.checkpoint_path = c.restart_path = NULL;
    c.overlap_probe = 0; /* the run after the choice probes, not the candidates */
    c.equilibrate = 0;   /* and equilibrates: the candidates compare from the same start */
    halox_comm_args_t args = {.real = c.real, .stride = 3, .timeout_s = c.timeout_s, .device = -1};
    halox_comm_t *comm = NULL;
    halox_md_result_t res;
    memset(&res, 0, sizeof res);
    halox_status_t st = halox_comm_create(name, &args, &comm);
    if (st == HALOX_OK)
        st = halox_md_rank_run(&c, comm, sys, NULL, &res);
    double ms = st == HALOX_OK ? res.summary.ms_per_step : -1;
    if (st != HALOX_OK)
        snprintf(msg, len, "%s", halox_last_error());
    halox_md_result_free(&res);
    halox_comm_destroy(comm);
    MPI_Bcast(&ms, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD); /* rank 0 holds the summary */
    return ms;
}

int md_autotune(const halox_md_config_t *cfg, const halox_md_system_t *sys, int steps, int rank,
                int print, const char **choice, char *why, size_t why_len)
{
    const int gpu = halox_md_config_device(cfg) == HALOX_MD_DEVICE_GPU;
    char key[KEY_LEN], path[1024], cached[NAME_LEN] = "";
    make_key(cfg, sys, key, sizeof key);
    cache_path(path, sizeof path);
    if (rank == 0)
        cache_lookup(path, key, cached);
    MPI_Bcast(cached, NAME_LEN, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (cached[0] && static_name(cached) && halox_transport_on_gpu(cached) == gpu) {
        *choice = static_name(cached);
        snprintf(why, why_len,
                 "autotune: %s, cached in %s for %s (delete that line to measure "
                 "again)",
                 *choice, path, key);
        if (print)
            printf("%s\n", why);
        return 0;
    }
    /* The candidates run in ROUNDS interleaved rounds (A B C, A B C, ...), so a machine that
     * drifts slows all alike; autotune_pick() judges them by their medians and keeps the rule's
     * choice (cfg->transport) when it is within the measured noise of the fastest. */
    const char *cand[32];
    int nc = 0, rule = -1;
    for (const char *const *t = halox_transport_names(); *t && nc < 32; t++) {
        /* the engine's transports: GPU ones for the GPU engine; host ones between processes
         * for the CPU engine under MPI (threads cannot span processes) */
        halox_transport_caps_t caps;
        halox_transport_caps(*t, &caps);
        if (gpu ? caps.on_gpu : !caps.on_gpu && !caps.threads) {
            if (cfg->transport && !strcmp(*t, cfg->transport))
                rule = nc;
            cand[nc++] = *t;
        }
    }
    double ms[32 * ROUNDS], med[32], spread[32], noise = 0;
    char msg[32][256];
    if (print)
        printf("autotune: %d rounds of %d steps per candidate (%s)\n", ROUNDS, steps, key);
    for (int r = 0; r < ROUNDS; r++)
        for (int i = 0; i < nc; i++) {
            if (r == 0)
                msg[i][0] = 0;
            ms[i * ROUNDS + r] = r > 0 && ms[i * ROUNDS] <= 0 /* refused once: not again */
                                     ? -1
                                     : measure(cfg, sys, cand[i], steps, msg[i], sizeof msg[i]);
        }
    int fastest = -1;
    const int pick = autotune_pick(ms, nc, ROUNDS, rule, med, spread, &noise, &fastest);
    if (print)
        for (int i = 0; i < nc; i++) {
            if (med[i] > 0)
                printf("  %-16s %8.4f ms/step (median of %d; rounds spread %4.1f %%)\n", cand[i],
                       med[i], ROUNDS, 100 * spread[i]);
            else
                printf("  %-16s not usable here: %.200s\n", cand[i], msg[i][0] ? msg[i] : "failed");
        }
    if (pick < 0) {
        snprintf(why, why_len, "autotune: no candidate transport ran");
        return 1;
    }
    const char *best = cand[pick];
    const double best_ms = med[pick];
    if (pick != fastest)
        snprintf(why, why_len,
                 "autotune: %s (the rule's choice): %.4f ms/step, within the measured noise "
                 "(%.1f %%) of the fastest, %s (%.4f); cached in %s",
                 best, best_ms, 100 * noise, cand[fastest], med[fastest], path);
    else
        snprintf(why, why_len, "autotune: %s, the fastest measured (%.4f ms/step); cached in %s",
                 best, best_ms, path);
    *choice = best;
    if (rank == 0)
        cache_store(path, key, best, best_ms);
    if (print) {
        printf("%s\n", why);
        fflush(stdout);
    }
    return 0;
}
