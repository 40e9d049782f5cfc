#define _POSIX_C_SOURCE 200809L
/* The system cache, HALOX_SYSTEM_CACHE=DIR: random placements (system_random.c) are kept in DIR
 * as raw doubles, keyed by every input of the placement, so later runs (and the other ranks of
 * a run) read the very same bits instead of spending minutes on millions of atoms. Written by
 * the atomic writer (file.h: a temporary file of its own, never a name planted in advance,
 * renamed through the folder's descriptor): concurrent writers leave one whole file.
 *
 * A file is read as strictly as any input: opened only when it is a regular file (not through a
 * link, never waiting on a FIFO), then its header must be the request's (count, density, minimum
 * distance, box, seed), its size exact, its checksum (FNV-1a 64 of the positions) right and
 * every coordinate finite and inside the box. A file of another format (another magic) is
 * ignored and replaced; one that fails a check is refused, naming the file: it was not written
 * by halox, or was damaged, and is deleted by hand. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/md_internal.h"
#include "halox/file.h"
#include "systems/system.h"

#define MD_CACHE_MAGIC "HXRAND3" /* 3: with a checksum; 2: block-by-block placement */

typedef struct md__cache_head {
    char magic[8];
    long long n;
    double density, dmin, L;
    uint64_t seed;
    uint64_t fnv; /* of the positions */
} md__cache_head_t;

int md__system_cache_path(const halox_md_config_t *cfg, char *path, size_t len)
{
    const char *dir = halox_env_string("HALOX_SYSTEM_CACHE");
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
    memcpy(h->magic, MD_CACHE_MAGIC, sizeof MD_CACHE_MAGIC);
    h->n = cfg->natoms;
    h->density = cfg->density;
    h->dmin = sys->min_distance;
    h->L = sys->box.len[0];
    h->seed = cfg->seed;
}

/* What a message about a bad cache file asks for. */
#define MD_CACHE_DELETE                                                                            \
    "delete it (HALOX_SYSTEM_CACHE keeps random placements; the next run writes it anew)"

static halox_status_t md__cache_bad(const char *path, const char *why)
{
    return halox_set_error(HALOX_ERR_IO, "the system cache file '%s' %s: " MD_CACHE_DELETE, path,
                           why);
}

/* The positions read (n3 values in x) against the header and the box. */
static halox_status_t md__cache_check(const char *path, const md__cache_head_t *h, const double *x,
                                      size_t n3)
{
    char why[256];
    if (md__fnv1a64(MD_FNV_INIT, x, n3 * sizeof(double)) != h->fnv)
        return md__cache_bad(path, "is corrupted: its checksum does not match");
    const double tol = 1e-9 * h->L;
    for (size_t i = 0; i < n3; i++)
        if (!(x[i] >= -tol && x[i] <= h->L + tol)) {
            snprintf(why, sizeof why, "holds atom %zu at coordinate %g, outside the box [0, %g]",
                     i / 3, x[i], h->L);
            return md__cache_bad(path, why);
        }
    return HALOX_OK;
}

halox_status_t md__system_cache_read(const halox_md_config_t *cfg, halox_md_system_t *sys, int *hit)
{
    *hit = 0;
    char path[4096], why[256];
    if (!md__system_cache_path(cfg, path, sizeof path))
        return HALOX_OK;
    /* none yet (or none readable): placed anew */
    FILE *f = NULL;
    halox_status_t st = halox_input_open_flags(path, "the system cache file", MD_CACHE_DELETE,
                                               HALOX_INPUT_NOFOLLOW | HALOX_INPUT_OPTIONAL, &f);
    if (st != HALOX_OK || !f)
        return st;
    md__cache_head_t want, got;
    md__cache_head(cfg, sys, &want);
    const size_t n3 = 3 * (size_t)cfg->natoms, need = sizeof got + n3 * sizeof(double);
    struct stat sb;
    const long long size = fstat(fileno(f), &sb) == 0 ? (long long)sb.st_size : -1;
    const size_t head = fread(&got, 1, sizeof got, f);
    if (head >= sizeof got.magic && memcmp(got.magic, want.magic, sizeof got.magic) != 0) {
        /* another format: replaced by this one */
    } else if (size != (long long)need || head != sizeof got) {
        snprintf(why, sizeof why, "holds %lld bytes, %zu expected for %lld atoms", size, need,
                 cfg->natoms);
        st = md__cache_bad(path, why);
    } else if (memcmp(&got, &want, offsetof(md__cache_head_t, fnv)) != 0) {
        st = md__cache_bad(path, "holds another placement than its name says (its atom count, "
                                 "density, minimum distance, box or seed differ)");
    } else if (fread(sys->x, sizeof(double), n3, f) != n3) {
        snprintf(why, sizeof why, "cannot be read: %s", strerror(errno));
        st = md__cache_bad(path, why);
    } else if ((st = md__cache_check(path, &got, sys->x, n3)) == HALOX_OK) {
        *hit = 1;
    }
    fclose(f);
    return st;
}

void md__system_cache_write(const halox_md_config_t *cfg, const halox_md_system_t *sys)
{
    char path[4096];
    if (!md__system_cache_path(cfg, path, sizeof path))
        return;
    md__cache_head_t h;
    md__cache_head(cfg, sys, &h);
    size_t n3 = 3 * (size_t)cfg->natoms;
    h.fnv = md__fnv1a64(MD_FNV_INIT, sys->x, n3 * sizeof(double));
    halox_replace_t *w = NULL;
    /* a cache only: a folder that cannot be written leaves the run going on. Links are not
     * followed, and a name taken by anything but a regular file is left as it is (the check
     * before the rename). Others read the cache as well (it holds no secret). */
    if (halox_replace_begin(path, "the system cache", HALOX_REPLACE_SHARED, &w) != HALOX_OK)
        return;
    halox_replace_write(w, &h, sizeof h);
    halox_replace_write(w, sys->x, n3 * sizeof(double));
    halox_replace_commit(w);
}
