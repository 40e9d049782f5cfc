#define _POSIX_C_SOURCE 200809L
/* Initial systems: fcc lattice, random non-overlapping placement, XYZ file. Each is built whole,
 * in id order, identically on every process, so the start does not depend on the decomposition. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env.h"
#include "core/file.h"
#include "core/util.h"
#include "md/md_internal.h"
#include "md/rng.h"

static halox_status_t md__system_alloc(halox_md_system_t *sys, long long n)
{
    sys->natoms = n;
    sys->x = malloc(sizeof(double) * 3 * (size_t)(n > 0 ? n : 1));
    sys->v = calloc(3 * (size_t)(n > 0 ? n : 1), sizeof(double));
    if (!sys->x || !sys->v)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for a system of %lld atoms", n);
    return HALOX_OK;
}

/* fcc: lattice constant (4 / rho)^(1/3), basis (0,0,0) (.5,.5,0) (.5,0,.5) (0,.5,.5), as LAMMPS'
 * `lattice fcc RHO` in reduced units. */
static halox_status_t md__fcc(const halox_md_config_t *cfg, halox_md_system_t *sys)
{
    static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    double a = cbrt(4.0 / cfg->density);
    long long n = 4LL * cfg->cells[0] * cfg->cells[1] * cfg->cells[2];
    halox_status_t st = md__system_alloc(sys, n);
    if (st != HALOX_OK)
        return st;
    for (int d = 0; d < 3; d++)
        sys->box.len[d] = a * cfg->cells[d];
    long long k = 0;
    for (int iz = 0; iz < cfg->cells[2]; iz++)
        for (int iy = 0; iy < cfg->cells[1]; iy++)
            for (int ix = 0; ix < cfg->cells[0]; ix++)
                for (int b = 0; b < 4; b++, k++) {
                    sys->x[3 * k + 0] = (ix + basis[b][0]) * a;
                    sys->x[3 * k + 1] = (iy + basis[b][1]) * a;
                    sys->x[3 * k + 2] = (iz + basis[b][2]) * a;
                }
    return HALOX_OK;
}

/* Random sequential addition: uniform trial positions, rejected when closer than dmin to an atom
 * already placed (periodic). dmin keeps the packing fraction of spheres of diameter dmin at 0.3,
 * well below the jamming limit of random sequential addition (0.38), capped at 1 sigma (where
 * the LJ energy is zero); the start is then free of overlaps but not equilibrated.
 * Large boxes are filled block by block (B^3 blocks of about 32^3 cells, each given its share of
 * the atoms, trials uniform inside the block, checked against every atom placed so far): the
 * cells a trial reads then stay in cache, instead of a random cache miss per neighbour in a box
 * of gigabytes (1M atoms took 26 s, 23M would take hours). Up to 32 cells per edge (about 150k
 * atoms) B = 1: the plain algorithm. */
/* HALOX_SYSTEM_CACHE=DIR: random placements are kept in DIR as raw doubles, keyed by every
 * input of the placement, so later runs (and the other ranks of a run) read the very same bits
 * instead of spending minutes on millions of atoms. Written to a temporary name, then renamed:
 * concurrent writers leave one whole file. A file that does not match is ignored. */
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
static int md__cache_read(const halox_md_config_t *cfg, halox_md_system_t *sys)
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

static void md__cache_write(const halox_md_config_t *cfg, const halox_md_system_t *sys)
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

static halox_status_t md__random(const halox_md_config_t *cfg, halox_md_system_t *sys)
{
    long long n = cfg->natoms;
    double L = cbrt((double)n / cfg->density);
    double dmin = fmin(1.0, cbrt(0.3 * 6.0 / (MD_PI * cfg->density)));
    halox_status_t st = md__system_alloc(sys, n);
    if (st != HALOX_OK)
        return st;
    for (int d = 0; d < 3; d++)
        sys->box.len[d] = L;
    sys->min_distance = dmin;
    if (md__cache_read(cfg, sys))
        return HALOX_OK;
    /* clamped before the conversion: L / dmin of a huge box is beyond an int */
    const double mf = floor(L / dmin);
    int m = !(mf >= 1) ? 1 : mf > 1024 ? 1024 : (int)mf;
    long long ncell = (long long)m * m * m;
    int *head = malloc(sizeof(int) * (size_t)ncell);
    int *next = malloc(sizeof(int) * (size_t)n);
    if (!head || !next) {
        free(head);
        free(next);
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for %lld cells", ncell);
    }
    for (long long c = 0; c < ncell; c++)
        head[c] = -1;
    md_rng_t r = md_rng_stream(cfg->seed, MD_RNG_PLACEMENT, 0);
    double cw = L / m, d2min = dmin * dmin;
    long long attempts = 0, max_attempts = 1000 * n + 100000;
    /* neighbour cells to scan: -1..1, or all when fewer than 3 cells per edge */
    int lo = m >= 3 ? -1 : 0, hi = m >= 3 ? 1 : m - 1;
    /* the neighbour cells, nearest first: most rejections come from the trial's own cell */
    int off[27][3], n_off = 0;
    for (int ring = 0; ring <= 3; ring++)
        for (int kz = lo; kz <= hi; kz++)
            for (int ky = lo; ky <= hi; ky++)
                for (int kx = lo; kx <= hi; kx++)
                    if ((m >= 3 ? abs(kx) + abs(ky) + abs(kz) : 0) == ring ||
                        (m < 3 && ring == 0)) {
                        off[n_off][0] = kx;
                        off[n_off][1] = ky;
                        off[n_off][2] = kz;
                        n_off++;
                    }
    const int B = m / 32 > 1 ? m / 32 : 1;
    const long long nblocks = (long long)B * B * B;
    const double bw = L / B;
    long long i = 0;
    for (long long blk = 0; blk < nblocks; blk++) {
        const int bc[3] = {(int)(blk % B), (int)(blk / B % B), (int)(blk / ((long long)B * B))};
        /* this block's share: n (blk + 1) / nblocks - n blk / nblocks (n blk < 2^63: B <= 32) */
        const long long end = n * (blk + 1) / nblocks;
        for (; i < end; i++) {
            double p[3];
            int c[3];
            for (;;) {
                if (++attempts > max_attempts) {
                    free(head);
                    free(next);
                    return halox__error(
                        HALOX_ERR_INVALID_ARG,
                        "could not place %lld random atoms at density %g without "
                        "overlaps (minimum distance %.3g): placed %lld; use a lower "
                        "density or --lattice fcc",
                        n, cfg->density, dmin, i);
                }
                for (int d = 0; d < 3; d++) {
                    p[d] = B > 1 ? (bc[d] + md_rng_uniform(&r)) * bw : md_rng_uniform(&r) * L;
                    if (p[d] >= L)
                        p[d] = 0;
                    c[d] = (int)(p[d] / cw);
                    if (c[d] >= m)
                        c[d] = m - 1;
                }
                /* the neighbour cells' wrapped coordinates, once per trial */
                int wc[3][3];
                for (int d = 0; d < 3; d++)
                    for (int k = lo; k <= hi; k++)
                        wc[d][k - lo] = m >= 3 ? (c[d] + k + m) % m : k;
                /* the trial's distance to the faces of its cell (less a margin for rounding):
                 * a neighbour cell farther than dmin holds no atom that can reject it */
                double gap[3][2];
                for (int d = 0; d < 3; d++) {
                    gap[d][0] = fmax(0, p[d] - c[d] * cw - 1e-9 * L);
                    gap[d][1] = fmax(0, (c[d] + 1) * cw - p[d] - 1e-9 * L);
                }
                int ok = 1;
                for (int o = 0; o < n_off && ok; o++) {
                    const int *k = off[o];
                    if (m >= 3) {
                        double g2 = 0;
                        for (int d = 0; d < 3; d++)
                            if (k[d])
                                g2 += gap[d][k[d] > 0] * gap[d][k[d] > 0];
                        if (g2 >= d2min)
                            continue;
                    }
                    int cx = wc[0][k[0] - lo], cy = wc[1][k[1] - lo], cz = wc[2][k[2] - lo];
                    for (int j = head[cx + m * (cy + m * cz)]; j >= 0 && ok; j = next[j]) {
                        double r2 = 0;
                        for (int d = 0; d < 3; d++) {
                            double dd = p[d] - sys->x[3 * (long long)j + d];
                            /* the minimum image only where it can change dd (|dd / L| < 0.25
                             * rounds to 0): the same bits as always applying it */
                            if (fabs(dd) >= 0.25 * L)
                                dd -= L * nearbyint(dd / L);
                            r2 += dd * dd;
                        }
                        if (r2 < d2min)
                            ok = 0;
                    }
                }
                if (ok)
                    break;
            }
            for (int d = 0; d < 3; d++)
                sys->x[3 * i + d] = p[d];
            int cell = c[0] + m * (c[1] + m * c[2]);
            next[i] = head[cell];
            head[cell] = (int)i;
        }
    }
    free(head);
    free(next);
    md__cache_write(cfg, sys);
    return HALOX_OK;
}

/* Parse the 9 numbers of Lattice="..." from an extended-XYZ comment line. 1: found and
 * orthorhombic; 0: absent; -1: present but unusable (message set). */
static int md__parse_lattice(const char *line, const char *path, double box[3])
{
    const char *p = strstr(line, "Lattice=\"");
    if (!p)
        p = strstr(line, "lattice=\"");
    if (!p)
        return 0;
    p += 9;
    double m[9];
    for (int k = 0; k < 9; k++) {
        char *end;
        m[k] = strtod(p, &end);
        if (end == p) {
            halox__error(HALOX_ERR_IO,
                         "%s: line 2: Lattice=\"...\" needs 9 numbers (the three box vectors)",
                         path);
            return -1;
        }
        p = end;
    }
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (a != b && m[3 * a + b] != 0.0) {
                halox__error(HALOX_ERR_IO,
                             "%s: line 2: the Lattice is not orthorhombic (off-diagonal "
                             "element %g): halox-md needs an orthorhombic box",
                             path, m[3 * a + b]);
                return -1;
            }
    for (int d = 0; d < 3; d++)
        box[d] = m[4 * d];
    return 1;
}

/* 1 when the line holds an atom count alone (blanks around it allowed): 0 to 2^31-1. */
static int md__xyz_count(const char *line, long long *n_p)
{
    const char *p = line;
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p < '0' || *p > '9')
        return 0;
    char *end;
    errno = 0;
    long long n = strtoll(p, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
        end++;
    if (*end || errno || n > 2147483647LL)
        return 0;
    *n_p = n;
    return 1;
}

static int md__blank(const char *line) { return line[strspn(line, " \t\r\n")] == '\0'; }

/* An unwrapped position further out than this many box edges is refused: so far out, the
 * position wrapped into the box keeps few of its digits (1e300 in a box of 10 became 0). */
#define MD_XYZ_MAX_EDGES 1048576.0

halox_status_t md__read_xyz(const char *path, const double box_given[3], halox_md_system_t *sys)
{
    struct stat sb; /* before the open: a FIFO would wait for a writer, a directory reads empty */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return halox__error(HALOX_ERR_IO, "'%s' is %s, not a regular file: give an XYZ file", path,
                            halox__file_kind(sb.st_mode));
    FILE *fp = fopen(path, "r");
    if (!fp)
        return halox__error(HALOX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    halox_status_t st = HALOX_OK;
    size_t cap = 0;
    char *line = NULL;
    long long lineno = 0, n = 0;
    double box[3] = {0, 0, 0};
    /* line 1: atom count */
    if (getline(&line, &cap, fp) < 0) {
        st =
            halox__error(HALOX_ERR_IO, "%s is empty: an XYZ file starts with the atom count", path);
        goto out;
    }
    lineno = 1;
    {
        char *end;
        n = strtoll(line, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        if (end == line || *end || n < 2 || n > 2147483647LL) {
            line[strcspn(line, "\r\n")] = '\0';
            st = halox__error(HALOX_ERR_IO,
                              "%s: line 1 must hold the number of atoms (2 or more), found '%.40s'",
                              path, line);
            goto out;
        }
    }
    /* line 2: comment, maybe with the box */
    if (getline(&line, &cap, fp) < 0) {
        st = halox__error(HALOX_ERR_IO, "%s: the comment line (line 2) is missing", path);
        goto out;
    }
    lineno = 2;
    int lat = md__parse_lattice(line, path, box);
    if (lat < 0) {
        st = HALOX_ERR_IO;
        goto out;
    }
    if (lat == 0) {
        if (!(box_given && box_given[0] > 0 && box_given[1] > 0 && box_given[2] > 0)) {
            st = halox__error(HALOX_ERR_INVALID_ARG,
                              "%s has no Lattice=\"LX 0 0 0 LY 0 0 0 LZ\" on its comment line: "
                              "give the box with --box LX,LY,LZ",
                              path);
            goto out;
        }
        for (int d = 0; d < 3; d++)
            box[d] = box_given[d];
    }
    for (int d = 0; d < 3; d++)
        if (!(isfinite(box[d]) && box[d] > 0)) {
            st = halox__error(HALOX_ERR_IO, "%s: box edge %d is %g: it must be finite and > 0",
                              path, d, box[d]);
            goto out;
        }
    if ((st = md__system_alloc(sys, n)) != HALOX_OK)
        goto out;
    for (int d = 0; d < 3; d++)
        sys->box.len[d] = box[d];
    for (long long i = 0; i < n; i++) {
        if (getline(&line, &cap, fp) < 0) {
            st = halox__error(HALOX_ERR_IO,
                              "%s is truncated: line 1 announces %lld atoms but the file ends "
                              "after %lld",
                              path, n, i);
            goto out;
        }
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        /* species name */
        char *q = p;
        while (*q && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
            q++;
        if (q == p) {
            st = halox__error(HALOX_ERR_IO, "%s: line %lld is empty: expected 'NAME X Y Z'", path,
                              lineno);
            goto out;
        }
        p = q;
        for (int d = 0; d < 3; d++) {
            char *end;
            errno = 0;
            double v = strtod(p, &end);
            if (end == p || !isfinite(v)) {
                st = halox__error(HALOX_ERR_IO,
                                  "%s: line %lld: cannot read coordinate %c: expected "
                                  "'NAME X Y Z' with finite numbers",
                                  path, lineno, "xyz"[d]);
                goto out;
            }
            p = end;
            if (!(fabs(v) <= MD_XYZ_MAX_EDGES * box[d])) {
                st = halox__error(HALOX_ERR_IO,
                                  "%s: line %lld: coordinate %c = %g lies more than %.0f box edges "
                                  "(%g) from the box: give positions within that range",
                                  path, lineno, "xyz"[d], v, MD_XYZ_MAX_EDGES, box[d]);
                goto out;
            }
            double w = halox_wrap(v, box[d]);
            sys->x[3 * i + d] = w;
        }
    }
    /* After the atoms: blank lines, or a next frame (its atom count, then its comment line).
     * Anything else means the frame holds more atom lines than line 1 announces: refused, not
     * silently dropped. */
    while (getline(&line, &cap, fp) >= 0) {
        lineno++;
        if (md__blank(line))
            continue;
        long long next;
        if (md__xyz_count(line, &next)) {
            if (getline(&line, &cap, fp) < 0) {
                st = halox__error(HALOX_ERR_IO,
                                  "%s: line %lld holds the atom count %lld of a next frame, but "
                                  "its comment line is missing: the file is truncated",
                                  path, lineno, next);
                goto out;
            }
            break; /* a next frame: the first one is the system */
        }
        /* more atom lines: count them up to a next frame or the end, for the message */
        long long first = lineno, extra = 1;
        char shown[48];
        snprintf(shown, sizeof shown, "%.40s", line);
        shown[strcspn(shown, "\r\n")] = '\0';
        while (getline(&line, &cap, fp) >= 0) {
            if (md__xyz_count(line, &next))
                break;
            extra += !md__blank(line);
        }
        st = halox__error(HALOX_ERR_IO,
                          "%s: line 1 announces %lld atoms, but the frame holds %lld atom "
                          "lines (line %lld, '%s', is not the atom count of a next frame): "
                          "correct the count on line 1",
                          path, n, n + extra, first, shown);
        goto out;
    }
    if (ferror(fp))
        st = halox__error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
out:
    free(line);
    fclose(fp);
    return st;
}

halox_status_t halox_md_system_create(const halox_md_config_t *cfg, halox_md_system_t **sys_p)
{
    if (!cfg || !sys_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "system: NULL argument");
    *sys_p = NULL;
    halox_status_t st = halox_md_config_check(cfg);
    if (st != HALOX_OK)
        return st;
    halox_md_system_t *sys = calloc(1, sizeof *sys);
    if (!sys)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    switch (cfg->source) {
    case HALOX_MD_FCC:
        st = md__fcc(cfg, sys);
        break;
    case HALOX_MD_RANDOM:
        st = md__random(cfg, sys);
        break;
    case HALOX_MD_READ:
        st = md__read_xyz(cfg->read_path, cfg->box, sys);
        if (st == HALOX_OK) {
            char what[160];
            snprintf(what, sizeof what, "the box of '%.120s'", cfg->read_path);
            st = md__box_check(cfg, sys->box.len, what);
        }
        break;
    }
    if (st == HALOX_OK)
        st = md__velocities(sys, cfg->temp, cfg->seed);
    if (st != HALOX_OK) {
        halox_md_system_destroy(sys);
        return st;
    }
    *sys_p = sys;
    return HALOX_OK;
}

void halox_md_system_destroy(halox_md_system_t *sys)
{
    if (!sys)
        return;
    free(sys->x);
    free(sys->v);
    free(sys);
}
