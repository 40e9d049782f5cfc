#define _POSIX_C_SOURCE 200809L
/* The system cache, HALOX_SYSTEM_CACHE=DIR: random placements (system_random.c) are kept in DIR
 * as raw doubles, keyed by every input of the placement, so later runs (and the other ranks of
 * a run) read the very same bits instead of spending minutes on millions of atoms. Written to a
 * temporary name, then renamed: concurrent writers leave one whole file. A file that does not
 * match is ignored. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/env.h"
#include "core/file.h"
#include "md/system.h"

typedef struct md__cache_head {
    char magic[8];
    long long n;
    double density, dmin, L;
    uint64_t seed;
} md__cache_head_t;

static int md__cache_path(const halox_md_config_t *cfg, char *path, size_t len)
{
    const char *dir = halox__env_string("HALOX_SYSTEM_CACHE");
    if (!dir)
        return 0;
    int k = snprintf(path, len, "%s/halox-random-%lld-%a-%llu.bin", dir, cfg->natoms, cfg->density,
                     (unsigned long long)cfg->seed);
    return k > 0 && (size_t)k < len;
}

static void md__cache_head(const halox_md_config_t *cfg, const halox_md_system_t *sys,
                           md__cache_head_t *h)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, "HXRAND2", 8); /* 2: block-by-block placement */
    h->n = cfg->natoms;
    h->density = cfg->density;
    h->dmin = sys->min_distance;
    h->L = sys->box.len[0];
    h->seed = cfg->seed;
}

/* 1: positions read from the cache. */
int md__system_cache_read(const halox_md_config_t *cfg, halox_md_system_t *sys)
{
    char path[4096];
    if (!md__cache_path(cfg, path, sizeof path))
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    md__cache_head_t want, got;
    md__cache_head(cfg, sys, &want);
    size_t n3 = 3 * (size_t)cfg->natoms;
    int ok = fread(&got, sizeof got, 1, f) == 1 && memcmp(&got, &want, sizeof got) == 0 &&
             fread(sys->x, sizeof(double), n3, f) == n3;
    fclose(f);
    return ok;
}

void md__system_cache_write(const halox_md_config_t *cfg, const halox_md_system_t *sys)
{
    char path[4096], tmp[4200];
    if (!md__cache_path(cfg, path, sizeof path))
        return;
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return; /* a cache only: the run goes on */
    md__cache_head_t h;
    md__cache_head(cfg, sys, &h);
    size_t n3 = 3 * (size_t)cfg->natoms;
    int ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(sys->x, sizeof(double), n3, f) == n3;
    ok = fclose(f) == 0 && ok;
    /* never renamed over a device, FIFO or folder that took the cache's name */
    if (!ok || halox__rename_check(path, "the system cache") != HALOX_OK || rename(tmp, path) != 0)
        remove(tmp);
}
