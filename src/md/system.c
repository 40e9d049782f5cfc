#define _POSIX_C_SOURCE 200809L
/* Initial systems: fcc lattice, random non-overlapping placement, a file (extended XYZ or LAMMPS
 * text dump, any frame, with its velocities). Each is built whole,
 * in id order, identically on every process, so the start does not depend on the decomposition. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/* ---- files for --read: extended XYZ and LAMMPS text dumps ---------------------------------------
 * The whole file is scanned first (frame boundaries, counts, headers; atom lines only counted),
 * so that a malformed file is refused whichever frame is asked for and the frame count is known;
 * then the chosen frame's atom lines are parsed, from its offset. */

/* A file read line by line: line numbers for the messages, byte offsets to come back to the
 * chosen frame (summed from the lengths read: no ftello per line). */
typedef struct md__in {
    FILE *fp;
    const char *path;
    char *line;
    size_t cap;
    long long lineno; /* of the line in `line` */
    off_t pos;        /* offset of the next line */
} md__in_t;

static int md__next(md__in_t *in)
{
    ssize_t len = getline(&in->line, &in->cap, in->fp);
    if (len < 0)
        return 0;
    in->pos += len;
    in->lineno++;
    return 1;
}

/* the line in a message: at most 40 characters, without its end of line */
static const char *md__shown(const char *line, char buf[48])
{
    snprintf(buf, 48, "%.40s", line);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

/* Where an atom line holds what is read. */
typedef struct md__cols {
    int need;    /* columns an atom line must have at least */
    int id;      /* dump: the atom id's column, or -1 */
    int pos[3];  /* the position columns */
    int scaled;  /* dump: positions as fractions of the box (xs ys zs, xsu ysu zsu) */
    int vel[3];  /* the velocity columns, or -1 */
    int momenta; /* XYZ: the velocity columns are momenta (m = 1 in reduced units) */
    char expect[160];
} md__cols_t;

/* One frame of the file, as the scan found it. */
typedef struct md__frame {
    long long index;      /* from 0 */
    long long count_line; /* line of its atom count (XYZ line 1 of the frame; dump: the line
                             after ITEM: NUMBER OF ATOMS) */
    long long natoms;
    long long step; /* -1: not given */
    long long head_line;
    char *head; /* XYZ: its comment line; dump: its ITEM: ATOMS line (malloc) */
    long long first_line;
    off_t first_at; /* offset of its first atom line */
    int has_box;
    double lo[3], len[3];
} md__frame_t;

static halox_status_t md__frame_keep(md__frame_t *f, long long index, long long count_line,
                                     long long n, const md__in_t *in)
{
    char *head = strdup(in->line);
    if (!head)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    free(f->head);
    f->head = head;
    f->head[strcspn(f->head, "\r\n")] = '\0';
    f->index = index;
    f->count_line = count_line;
    f->natoms = n;
    f->head_line = in->lineno;
    f->first_line = in->lineno + 1;
    f->first_at = in->pos;
    return HALOX_OK;
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

static int md__is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* A number filling a whole token. */
static int md__number(const char *tok, double *v)
{
    char *end;
    errno = 0;
    *v = strtod(tok, &end);
    return end != tok && (*end == '\0' || md__is_blank(*end)) && isfinite(*v);
}

/* The starts of the first `want` blank-separated tokens of a line; how many there are. */
static int md__tokens(const char *line, int want, const char **tok)
{
    int k = 0;
    const char *p = line;
    while (k < want) {
        while (*p && md__is_blank(*p))
            p++;
        if (!*p)
            break;
        tok[k++] = p;
        while (*p && !md__is_blank(*p))
            p++;
    }
    return k;
}

/* The value of KEY= on an extended-XYZ comment line (quoted, or up to a blank), copied into
 * buf; NULL when absent. The key matches whole and without case, as ASE reads them. */
static const char *md__xyz_value(const char *line, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = line; *p; p++) {
        if ((p != line && !md__is_blank(p[-1])) || strncasecmp(p, key, kl) != 0 || p[kl] != '=')
            continue;
        const char *v = p + kl + 1, *end;
        if (*v == '"') {
            v++;
            end = strchr(v, '"');
            if (!end)
                end = v + strlen(v);
        } else {
            for (end = v; *end && !md__is_blank(*end); end++)
                ;
        }
        size_t n = (size_t)(end - v) < len - 1 ? (size_t)(end - v) : len - 1;
        memcpy(buf, v, n);
        buf[n] = '\0';
        return buf;
    }
    return NULL;
}

/* Lattice="..." of an extended-XYZ comment line: 1 found and orthorhombic; 0 absent; -1 present
 * but unusable (message set). */
static int md__parse_lattice(const char *line, const char *path, long long lineno, double box[3])
{
    char buf[1024];
    const char *p = md__xyz_value(line, "Lattice", buf, sizeof buf);
    if (!p)
        return 0;
    double m[9];
    for (int k = 0; k < 9; k++) {
        char *end;
        m[k] = strtod(p, &end);
        if (end == p) {
            halox__error(HALOX_ERR_IO,
                         "%s: line %lld: Lattice=\"...\" needs 9 numbers (the three box vectors)",
                         path, lineno);
            return -1;
        }
        p = end;
    }
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (a != b && m[3 * a + b] != 0.0) {
                halox__error(HALOX_ERR_IO,
                             "%s: line %lld: the Lattice is not orthorhombic (off-diagonal "
                             "element %g): halox-md needs an orthorhombic box",
                             path, lineno, m[3 * a + b]);
                return -1;
            }
    for (int d = 0; d < 3; d++)
        box[d] = m[4 * d];
    return 1;
}

/* The columns of an extended-XYZ frame from its Properties= (absent: 'NAME X Y Z', the plain
 * XYZ layout). Velocities: velo (OVITO, libAtoms), vel (halox-md before), velocity or
 * velocities; else momenta (ASE), read as velocities since the mass is 1. */
static halox_status_t md__xyz_cols(const char *path, long long lineno, const char *head,
                                   md__cols_t *c)
{
    memset(c, 0, sizeof *c);
    c->id = -1;
    for (int d = 0; d < 3; d++)
        c->vel[d] = -1;
    char buf[1024];
    const char *v = md__xyz_value(head, "Properties", buf, sizeof buf);
    if (!v) {
        for (int d = 0; d < 3; d++)
            c->pos[d] = 1 + d;
        c->need = 4;
        snprintf(c->expect, sizeof c->expect, "'NAME X Y Z'");
        return HALOX_OK;
    }
    int col = 0, pos = -1, vel = -1, mom = -1;
    for (const char *p = v; *p;) {
        const char *colon = strchr(p, ':');
        char name[64];
        char *end;
        if (!colon || colon == p || colon - p >= (long)sizeof name)
            goto bad;
        memcpy(name, p, (size_t)(colon - p));
        name[colon - p] = '\0';
        p = colon + 1;
        char type = *p;
        if (!type || !strchr("SRIL", type) || p[1] != ':')
            goto bad;
        p += 2;
        long count = strtol(p, &end, 10);
        if (end == p || count < 1 || count > 1000 || (*end && *end != ':'))
            goto bad;
        p = *end ? end + 1 : end;
        int r3 = type == 'R' && count == 3;
        if (r3 && !strcmp(name, "pos") && pos < 0)
            pos = col;
        else if (r3 && vel < 0 &&
                 (!strcasecmp(name, "velo") || !strcasecmp(name, "vel") ||
                  !strcasecmp(name, "velocity") || !strcasecmp(name, "velocities")))
            vel = col;
        else if (r3 && mom < 0 && !strcasecmp(name, "momenta"))
            mom = col;
        col += (int)count;
        if (col > 4096)
            goto bad;
    }
    if (pos < 0)
        return halox__error(HALOX_ERR_IO,
                            "%s: line %lld: Properties=%s has no pos:R:3: halox-md needs the "
                            "positions",
                            path, lineno, v);
    if (vel < 0 && mom >= 0) {
        vel = mom;
        c->momenta = 1;
    }
    c->need = pos + 3;
    for (int d = 0; d < 3; d++) {
        c->pos[d] = pos + d;
        c->vel[d] = vel >= 0 ? vel + d : -1;
    }
    if (vel >= 0 && vel + 3 > c->need)
        c->need = vel + 3;
    snprintf(c->expect, sizeof c->expect, "the columns of Properties=%.100s", v);
    return HALOX_OK;
bad:
    return halox__error(HALOX_ERR_IO,
                        "%s: line %lld: cannot read Properties=%.200s: give NAME:TYPE:COUNT "
                        "triples (TYPE S, R, I or L), as species:S:1:pos:R:3:velo:R:3",
                        path, lineno, v);
}

/* The columns of a LAMMPS dump from its ITEM: ATOMS line: positions x y z (or xu yu zu, xs ys
 * zs, xsu ysu zsu, in that order of preference, as MDAnalysis takes them), velocities vx vy vz,
 * the atom id. */
static halox_status_t md__dump_cols(const char *path, long long lineno, const char *head,
                                    md__cols_t *c)
{
    static const char *const sets[4][3] = {
        {"x", "y", "z"}, {"xu", "yu", "zu"}, {"xs", "ys", "zs"}, {"xsu", "ysu", "zsu"}};
    static const char *const vnames[3] = {"vx", "vy", "vz"};
    memset(c, 0, sizeof *c);
    c->id = -1;
    int found[4][3], vel[3] = {-1, -1, -1};
    for (int s = 0; s < 4; s++)
        for (int d = 0; d < 3; d++)
            found[s][d] = -1;
    const char *p = head + strspn(head, " \t");
    p += 5; /* "ITEM:" */
    p += strspn(p, " \t");
    p += 5; /* "ATOMS" */
    int col = 0;
    for (;;) {
        while (*p && md__is_blank(*p))
            p++;
        if (!*p)
            break;
        size_t n = 0;
        while (p[n] && !md__is_blank(p[n]))
            n++;
        for (int s = 0; s < 4; s++)
            for (int d = 0; d < 3; d++)
                if (strlen(sets[s][d]) == n && !strncmp(p, sets[s][d], n))
                    found[s][d] = col;
        for (int d = 0; d < 3; d++)
            if (n == 2 && !strncmp(p, vnames[d], 2))
                vel[d] = col;
        if (n == 2 && !strncmp(p, "id", 2))
            c->id = col;
        p += n;
        col++;
    }
    int set = -1;
    for (int s = 3; s >= 0; s--)
        if (found[s][0] >= 0 && found[s][1] >= 0 && found[s][2] >= 0)
            set = s;
    if (set < 0)
        return halox__error(HALOX_ERR_IO,
                            "%s: line %lld: ITEM: ATOMS has no positions: give the columns x y "
                            "z, xu yu zu, xs ys zs or xsu ysu zsu",
                            path, lineno);
    c->scaled = set >= 2;
    int has_v = vel[0] >= 0 && vel[1] >= 0 && vel[2] >= 0;
    c->need = c->id + 1;
    for (int d = 0; d < 3; d++) {
        c->pos[d] = found[set][d];
        c->vel[d] = has_v ? vel[d] : -1;
        if (c->pos[d] + 1 > c->need)
            c->need = c->pos[d] + 1;
        if (has_v && vel[d] + 1 > c->need)
            c->need = vel[d] + 1;
    }
    snprintf(c->expect, sizeof c->expect, "the %d columns of ITEM: ATOMS", col);
    return HALOX_OK;
}

/* Extended (or plain) XYZ: frames of an atom count, a comment line, the atom lines; between
 * frames only blank lines. in->line holds line 1. */
static halox_status_t md__xyz_scan(md__in_t *in, long long want, md__frame_t *f,
                                   long long *nframes_p)
{
    const char *path = in->path;
    char shown[48];
    long long n;
    {
        char *end;
        n = strtoll(in->line, &end, 10);
        while (md__is_blank(*end))
            end++;
        if (end == in->line || *end || n < 2 || n > 2147483647LL)
            return halox__error(HALOX_ERR_IO,
                                "%s: line 1 must hold the number of atoms (2 or more), found "
                                "'%s'",
                                path, md__shown(in->line, shown));
    }
    for (long long k = 0;; k++) {
        const long long count_line = in->lineno;
        if (!md__next(in)) {
            if (k == 0)
                return halox__error(HALOX_ERR_IO, "%s: the comment line (line 2) is missing", path);
            return halox__error(HALOX_ERR_IO,
                                "%s: line %lld holds the atom count %lld of a next frame, but "
                                "its comment line is missing: the file is truncated",
                                path, count_line, n);
        }
        halox_status_t st = HALOX_OK;
        if (want == HALOX_MD_READ_LAST || k == want)
            st = md__frame_keep(f, k, count_line, n, in);
        if (st != HALOX_OK)
            return st;
        for (long long i = 0; i < n; i++)
            if (!md__next(in))
                return halox__error(HALOX_ERR_IO,
                                    "%s is truncated: line %lld announces %lld atoms but the "
                                    "file ends after %lld",
                                    path, count_line, n, i);
        /* After the atoms: blank lines, or a next frame (its atom count, then its comment
         * line). Anything else means the frame holds more atom lines than its count announces:
         * refused, not silently dropped. */
        int next = 0;
        while (!next && md__next(in)) {
            if (md__blank(in->line))
                continue;
            if (md__xyz_count(in->line, &n)) {
                next = 1;
                break;
            }
            /* more atom lines: count them up to a next frame or the end, for the message */
            long long first = in->lineno, extra = 1, m;
            md__shown(in->line, shown);
            while (md__next(in) && !md__xyz_count(in->line, &m))
                extra += !md__blank(in->line);
            return halox__error(HALOX_ERR_IO,
                                "%s: line %lld announces %lld atoms, but the frame holds %lld "
                                "atom lines (line %lld, '%s', is not the atom count of a next "
                                "frame): correct the count on line %lld",
                                path, count_line, n, n + extra, first, shown, count_line);
        }
        if (ferror(in->fp))
            return halox__error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        if (!next) {
            *nframes_p = k + 1;
            return HALOX_OK;
        }
    }
}

/* "ITEM: NAME" -> NAME (blanks after the colon skipped), or NULL. */
static const char *md__item(const char *line)
{
    const char *p = line + strspn(line, " \t");
    if (strncmp(p, "ITEM:", 5) != 0)
        return NULL;
    return p + 5 + strspn(p + 5, " \t");
}

static int md__item_is(const char *item, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(item, name, n) && (item[n] == '\0' || md__is_blank(item[n]));
}

/* LAMMPS text dump: frames of ITEM: blocks (TIMESTEP, NUMBER OF ATOMS, BOX BOUNDS, ATOMS; TIME
 * and UNITS skipped), the atom lines after ITEM: ATOMS. in->line holds the first ITEM: line. */
static halox_status_t md__dump_scan(md__in_t *in, long long want, md__frame_t *f,
                                    long long *nframes_p)
{
    const char *path = in->path;
    char shown[48];
    int have = 1; /* in->line holds a line not yet looked at */
    for (long long k = 0;; k++) {
        long long step = -1, n = -1, n_line = 0;
        int box = 0;
        double lo[3] = {0, 0, 0}, len[3] = {0, 0, 0};
        const long long start = in->lineno + !have;
        for (;;) { /* the items of frame k, up to ITEM: ATOMS */
            if (!have && !md__next(in))
                return halox__error(HALOX_ERR_IO,
                                    "%s is truncated: the frame that starts on line %lld ends "
                                    "before its ITEM: ATOMS",
                                    path, start);
            have = 0;
            if (md__blank(in->line))
                continue;
            const char *item = md__item(in->line);
            if (!item)
                return halox__error(HALOX_ERR_IO,
                                    "%s: line %lld: expected an ITEM: line of a LAMMPS dump, "
                                    "found '%s'",
                                    path, in->lineno, md__shown(in->line, shown));
            if (md__item_is(item, "ATOMS"))
                break;
            char name[48];
            md__shown(item, name);
            const long long item_line = in->lineno;
            int lines = md__item_is(item, "BOX") ? 3 : 1;
            int tilt = lines == 3 && strstr(item, "xy") != NULL;
            if (!md__item_is(item, "TIMESTEP") && !md__item_is(item, "TIME") &&
                !md__item_is(item, "UNITS") && strncmp(item, "NUMBER OF ATOMS", 15) != 0 &&
                strncmp(item, "BOX BOUNDS", 10) != 0)
                return halox__error(HALOX_ERR_IO,
                                    "%s: line %lld: unknown item 'ITEM: %s' (a LAMMPS dump has "
                                    "TIMESTEP, NUMBER OF ATOMS, BOX BOUNDS and ATOMS; TIME and "
                                    "UNITS are skipped)",
                                    path, item_line, name);
            for (int l = 0; l < lines; l++) {
                if (!md__next(in))
                    return halox__error(HALOX_ERR_IO,
                                        "%s is truncated: ITEM: %s on line %lld has no value", path,
                                        name, item_line);
                char *end;
                if (md__item_is(item, "TIMESTEP")) {
                    errno = 0;
                    step = strtoll(in->line, &end, 10);
                    if (end == in->line || errno || !md__blank(end) || step < 0)
                        return halox__error(HALOX_ERR_IO,
                                            "%s: line %lld: cannot read the TIMESTEP '%s'", path,
                                            in->lineno, md__shown(in->line, shown));
                } else if (!strncmp(item, "NUMBER OF ATOMS", 15)) {
                    if (!md__xyz_count(in->line, &n))
                        return halox__error(HALOX_ERR_IO,
                                            "%s: line %lld: cannot read the number of atoms "
                                            "'%s'",
                                            path, in->lineno, md__shown(in->line, shown));
                    n_line = in->lineno;
                } else if (lines == 3) {
                    double b[3] = {0, 0, 0};
                    const char *p = in->line;
                    for (int j = 0; j < 2 + tilt; j++) {
                        b[j] = strtod(p, &end);
                        if (end == p || !isfinite(b[j]))
                            return halox__error(HALOX_ERR_IO,
                                                "%s: line %lld: cannot read the box bounds '%s': "
                                                "give LO HI%s",
                                                path, in->lineno, md__shown(in->line, shown),
                                                tilt ? " TILT" : "");
                        p = end;
                    }
                    if (tilt && b[2] != 0.0)
                        return halox__error(HALOX_ERR_IO,
                                            "%s: line %lld: the box is triclinic (tilt %g): "
                                            "halox-md needs an orthorhombic box",
                                            path, in->lineno, b[2]);
                    lo[l] = b[0];
                    len[l] = b[1] - b[0];
                    box = 1;
                }
            }
        }
        const long long atoms_line = in->lineno;
        if (n < 0 || !box)
            return halox__error(HALOX_ERR_IO,
                                "%s: line %lld: ITEM: ATOMS before ITEM: %s in the frame that "
                                "starts on line %lld",
                                path, atoms_line, n < 0 ? "NUMBER OF ATOMS" : "BOX BOUNDS", start);
        if (want == HALOX_MD_READ_LAST || k == want) {
            halox_status_t st = md__frame_keep(f, k, n_line, n, in);
            if (st != HALOX_OK)
                return st;
            f->step = step;
            f->has_box = 1;
            for (int d = 0; d < 3; d++) {
                f->lo[d] = lo[d];
                f->len[d] = len[d];
            }
        }
        for (long long i = 0; i < n; i++)
            if (!md__next(in))
                return halox__error(HALOX_ERR_IO,
                                    "%s is truncated: line %lld announces %lld atoms but the "
                                    "file ends after %lld",
                                    path, n_line, n, i);
        int next = 0;
        while (md__next(in)) {
            if (md__blank(in->line))
                continue;
            if (md__item(in->line)) {
                next = have = 1;
                break;
            }
            return halox__error(HALOX_ERR_IO,
                                "%s: line %lld announces %lld atoms, but the frame holds more "
                                "atom lines (line %lld, '%s', is not an ITEM: line): correct "
                                "the count on line %lld",
                                path, n_line, n, in->lineno, md__shown(in->line, shown), n_line);
        }
        if (ferror(in->fp))
            return halox__error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        if (!next) {
            *nframes_p = k + 1;
            return HALOX_OK;
        }
    }
}

/* An unwrapped position further out than this many box edges is refused: so far out, the
 * position wrapped into the box keeps few of its digits (1e300 in a box of 10 became 0). */
#define MD_XYZ_MAX_EDGES 1048576.0

typedef struct md__id {
    long long id, index;
} md__id_t;

static int md__id_cmp(const void *a, const void *b)
{
    const md__id_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* The chosen frame's atom lines, into sys (its box set): positions wrapped into the box, the
 * velocities when want_v and the frame has them, atoms in id order where the frame has ids. */
static halox_status_t md__read_atoms(md__in_t *in, const md__frame_t *f, const md__cols_t *c,
                                     int dump, int want_v, halox_md_system_t *sys)
{
    const char *path = in->path;
    const long long n = f->natoms;
    const double *box = sys->box.len;
    const int take_v = want_v && c->vel[0] >= 0;
    halox_status_t st = HALOX_OK;
    const char **tok = malloc(sizeof *tok * (size_t)c->need);
    md__id_t *ids = c->id >= 0 ? malloc(sizeof *ids * (size_t)n) : NULL;
    if (!tok || (c->id >= 0 && !ids)) {
        st = halox__error(HALOX_ERR_NO_MEMORY, "no memory for %lld atoms", n);
        goto out;
    }
    if (fseeko(in->fp, f->first_at, SEEK_SET) != 0) {
        st = halox__error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    in->lineno = f->first_line - 1;
    char shown[48];
    for (long long i = 0; i < n; i++) {
        if (!md__next(in)) {
            st = halox__error(HALOX_ERR_IO, "%s changed while it was read (line %lld is gone)",
                              path, in->lineno + 1);
            goto out;
        }
        const long long ln = in->lineno;
        int got = md__tokens(in->line, c->need, tok);
        if (got == 0) {
            st = halox__error(HALOX_ERR_IO, "%s: line %lld is empty: expected %s", path, ln,
                              c->expect);
            goto out;
        }
        if (dump && got < c->need) {
            st = halox__error(HALOX_ERR_IO, "%s: line %lld: '%s' has %d columns, fewer than %s",
                              path, ln, md__shown(in->line, shown), got, c->expect);
            goto out;
        }
        if (ids) {
            char *end;
            errno = 0;
            ids[i].id = strtoll(tok[c->id], &end, 10);
            ids[i].index = i;
            if (end == tok[c->id] || errno || !(*end == '\0' || md__is_blank(*end))) {
                st = halox__error(HALOX_ERR_IO, "%s: line %lld: cannot read the atom id '%s'", path,
                                  ln, md__shown(tok[c->id], shown));
                goto out;
            }
        }
        for (int d = 0; d < 3; d++) {
            double v;
            const int k = c->pos[d];
            if (k >= got || !md__number(tok[k], &v)) {
                st = halox__error(HALOX_ERR_IO,
                                  "%s: line %lld: cannot read coordinate %c: expected %s with "
                                  "finite numbers",
                                  path, ln, "xyz"[d], c -> expect);
                goto out;
            }
            /* relative to the box's origin (a dump's LO), in box units when scaled */
            v = c->scaled ? v * box[d] : v - f->lo[d];
            if (!(fabs(v) <= MD_XYZ_MAX_EDGES * box[d])) {
                st = halox__error(HALOX_ERR_IO,
                                  "%s: line %lld: coordinate %c = %g lies more than %.0f box "
                                  "edges (%g) from the box: give positions within that range",
                                  path, ln, "xyz"[d], c -> scaled ? v / box[d] : v + f -> lo[d],
                                  MD_XYZ_MAX_EDGES, box[d]);
                goto out;
            }
            sys->x[3 * i + d] = halox_wrap(v, box[d]);
        }
        for (int d = 0; take_v && d < 3; d++) {
            double v;
            const int k = c->vel[d];
            if (k >= got || !md__number(tok[k], &v)) {
                st = halox__error(HALOX_ERR_IO,
                                  "%s: line %lld: cannot read velocity v%c (%s): give finite "
                                  "numbers, or add --new-velocities to draw them at --temp",
                                  path, ln, "xyz"[d], c -> expect);
                goto out;
            }
            sys->v[3 * i + d] = v;
        }
    }
    if (ids) { /* id order; a duplicate id is refused */
        qsort(ids, (size_t)n, sizeof *ids, md__id_cmp);
        for (long long i = 1; i < n; i++)
            if (ids[i].id == ids[i - 1].id) {
                long long a = ids[i - 1].index, b = ids[i].index;
                st = halox__error(
                    HALOX_ERR_IO, "%s: atom id %lld appears twice (lines %lld and %lld)", path,
                    ids[i].id, f->first_line + (a < b ? a : b), f->first_line + (a < b ? b : a));
                goto out;
            }
        double *x = malloc(sizeof(double) * 3 * (size_t)n);
        double *v = malloc(sizeof(double) * 3 * (size_t)n);
        if (!x || !v) {
            free(x);
            free(v);
            st = halox__error(HALOX_ERR_NO_MEMORY, "no memory for %lld atoms", n);
            goto out;
        }
        for (long long i = 0; i < n; i++)
            for (int d = 0; d < 3; d++) {
                x[3 * i + d] = sys->x[3 * ids[i].index + d];
                v[3 * i + d] = sys->v[3 * ids[i].index + d];
            }
        free(sys->x);
        free(sys->v);
        sys->x = x;
        sys->v = v;
    }
    sys->velocities_from_file = take_v;
out:
    free(tok);
    free(ids);
    return st;
}

/* Scan `path`, choose frame `want` (from 0, or HALOX_MD_READ_LAST) and fill info; with sys,
 * read that frame's atoms into it (box from the frame, else box_given; velocities where the
 * frame has them and want_v). */
static halox_status_t md__read_file(const char *path, long long want, const double box_given[3],
                                    int want_v, halox_md_system_t *sys, halox_md_read_info_t *info)
{
    memset(info, 0, sizeof *info);
    info->step = -1;
    struct stat sb; /* before the open: a FIFO would wait for a writer, a directory reads empty */
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return halox__error(HALOX_ERR_IO,
                            "'%s' is %s, not a regular file: give an XYZ file or a LAMMPS dump",
                            path, halox__file_kind(sb.st_mode));
    if (want < HALOX_MD_READ_LAST)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "read frame %lld: give a frame from 0, or the last (%lld)", want,
                            HALOX_MD_READ_LAST);
    md__in_t in = {.path = path};
    in.fp = fopen(path, "r");
    if (!in.fp)
        return halox__error(HALOX_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    md__frame_t f;
    memset(&f, 0, sizeof f);
    f.step = -1;
    md__cols_t c;
    long long nframes = 0;
    halox_status_t st;
    if (!md__next(&in)) {
        st = halox__error(HALOX_ERR_IO,
                          "%s is empty: an XYZ file starts with the atom count, a LAMMPS dump "
                          "with ITEM: TIMESTEP",
                          path);
        goto out;
    }
    const int dump = md__item(in.line) != NULL;
    st = dump ? md__dump_scan(&in, want, &f, &nframes) : md__xyz_scan(&in, want, &f, &nframes);
    if (st != HALOX_OK)
        goto out;
    if (want >= nframes) {
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "%s holds %lld frame%s (0 to %lld): frame %lld is beyond the last; "
                          "give --read-frame from 0 to %lld, or last",
                          path, nframes, nframes == 1 ? "" : "s", nframes - 1, want, nframes - 1);
        goto out;
    }
    if (f.natoms < 2) {
        st = halox__error(HALOX_ERR_IO,
                          "%s: frame %lld holds %lld atoms (line %lld): a system needs 2 or more",
                          path, f.index, f.natoms, f.count_line);
        goto out;
    }
    if (dump) {
        st = md__dump_cols(path, f.head_line, f.head, &c);
    } else {
        st = md__xyz_cols(path, f.head_line, f.head, &c);
        int lat = st == HALOX_OK ? md__parse_lattice(f.head, path, f.head_line, f.len) : 0;
        if (lat < 0)
            st = HALOX_ERR_IO;
        f.has_box = lat > 0;
        char buf[64];
        const char *s = md__xyz_value(f.head, "Step", buf, sizeof buf);
        char *end;
        long long v = s ? strtoll(s, &end, 10) : -1;
        f.step = s && end != s && !*end && v >= 0 ? v : -1;
    }
    if (st != HALOX_OK)
        goto out;
    info->format = dump ? HALOX_MD_TRAJ_LAMMPS : HALOX_MD_TRAJ_XYZ;
    info->nframes = nframes;
    info->frame = f.index;
    info->natoms = f.natoms;
    info->step = f.step;
    info->velocities = c.vel[0] >= 0;
    info->has_box = f.has_box;
    for (int d = 0; d < 3; d++)
        info->box[d] = f.has_box ? f.len[d] : 0.0;
    if (!sys)
        goto out;
    double box[3];
    if (f.has_box) {
        for (int d = 0; d < 3; d++)
            box[d] = f.len[d];
    } else if (box_given && box_given[0] > 0 && box_given[1] > 0 && box_given[2] > 0) {
        for (int d = 0; d < 3; d++)
            box[d] = box_given[d];
    } else {
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "%s has no Lattice=\"LX 0 0 0 LY 0 0 0 LZ\" on its comment line "
                          "(line %lld): give the box with --box LX,LY,LZ",
                          path, f.head_line);
        goto out;
    }
    for (int d = 0; d < 3; d++)
        if (!(isfinite(box[d]) && box[d] > 0)) {
            st = halox__error(HALOX_ERR_IO, "%s: box edge %d is %g: it must be finite and > 0",
                              path, d, box[d]);
            goto out;
        }
    if ((st = md__system_alloc(sys, f.natoms)) != HALOX_OK)
        goto out;
    for (int d = 0; d < 3; d++)
        sys->box.len[d] = box[d];
    st = md__read_atoms(&in, &f, &c, dump, want_v, sys);
    if (st == HALOX_OK)
        sys->read = *info;
out:
    free(f.head);
    free(in.line);
    fclose(in.fp);
    return st;
}

halox_status_t halox_md_read_probe(const char *path, long long frame, halox_md_read_info_t *info)
{
    halox_md_read_info_t local;
    if (!path)
        return halox__error(HALOX_ERR_INVALID_ARG, "read probe: NULL path");
    return md__read_file(path, frame, NULL, 0, NULL, info ? info : &local);
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
        st = md__read_file(cfg->read_path, cfg->read_frame, cfg->box, !cfg->read_new_velocities,
                           sys, &sys->read);
        if (st == HALOX_OK) {
            char what[160];
            snprintf(what, sizeof what, "the box of '%.120s'", cfg->read_path);
            st = md__box_check(cfg, sys->box.len, what);
        }
        break;
    }
    /* a file's velocities are the state it continues from: --temp draws them only where the
     * frame has none (or with --new-velocities) */
    if (st == HALOX_OK && !sys->velocities_from_file)
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
