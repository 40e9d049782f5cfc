#define _POSIX_C_SOURCE 200809L
/* Extended (and plain) XYZ files for --read: the comment line's KEY=value pairs, its Lattice
 * and Properties (the columns), the scan of the frames. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "halox/status.h"
#include "systems/read.h"

/* The value of KEY= on an extended-XYZ comment line (quoted, or up to a blank), copied into
 * buf; NULL when absent. The key matches whole and without case, as ASE reads them. */
const char *md__xyz_value(const char *line, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    for (const char *p = line; *p; p++) {
        if ((p != line && !md__text_is_blank(p[-1])) || strncasecmp(p, key, kl) != 0 ||
            p[kl] != '=')
            continue;
        const char *v = p + kl + 1, *end;
        if (*v == '"') {
            v++;
            end = strchr(v, '"');
            if (!end)
                end = v + strlen(v);
        } else {
            for (end = v; *end && !md__text_is_blank(*end); end++)
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
int md__xyz_lattice(const char *line, const char *path, long long lineno, double box[3])
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
            halox_set_error(
                HALOX_ERR_IO,
                "%s: line %lld: Lattice=\"...\" needs 9 numbers (the three box vectors)", path,
                lineno);
            return -1;
        }
        p = end;
    }
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (a != b && m[3 * a + b] != 0.0) {
                halox_set_error(HALOX_ERR_IO,
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
halox_status_t md__xyz_cols(const char *path, long long lineno, const char *head, md__cols_t *c)
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
        return halox_set_error(HALOX_ERR_IO,
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
    return halox_set_error(HALOX_ERR_IO,
                           "%s: line %lld: cannot read Properties=%.200s: give NAME:TYPE:COUNT "
                           "triples (TYPE S, R, I or L), as species:S:1:pos:R:3:velo:R:3",
                           path, lineno, v);
}

/* Extended (or plain) XYZ: frames of an atom count, a comment line, the atom lines; between
 * frames only blank lines. in->line holds line 1. */
halox_status_t md__xyz_scan(md__in_t *in, long long want, md__frame_t *f, long long *nframes_p)
{
    const char *path = in->path;
    char shown[48];
    long long n;
    {
        char *end;
        n = strtoll(in->line, &end, 10);
        while (md__text_is_blank(*end))
            end++;
        if (end == in->line || *end || n < 2 || n > 2147483647LL)
            return halox_set_error(HALOX_ERR_IO,
                                   "%s: line 1 must hold the number of atoms (2 or more), found "
                                   "'%s'",
                                   path, md__text_shown(in->line, shown));
    }
    for (long long k = 0;; k++) {
        const long long count_line = in->lineno;
        if (!md__text_next(in)) {
            if (k == 0)
                return halox_set_error(HALOX_ERR_IO, "%s: the comment line (line 2) is missing",
                                       path);
            return halox_set_error(HALOX_ERR_IO,
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
            if (!md__text_next(in))
                return halox_set_error(HALOX_ERR_IO,
                                       "%s is truncated: line %lld announces %lld atoms but the "
                                       "file ends after %lld",
                                       path, count_line, n, i);
        /* After the atoms: blank lines, or a next frame (its atom count, then its comment
         * line). Anything else means the frame holds more atom lines than its count announces:
         * refused, not silently dropped. */
        int next = 0;
        while (!next && md__text_next(in)) {
            if (md__text_blank(in->line))
                continue;
            if (md__text_count(in->line, &n)) {
                next = 1;
                break;
            }
            /* more atom lines: count them up to a next frame or the end, for the message */
            long long first = in->lineno, extra = 1, m;
            md__text_shown(in->line, shown);
            while (md__text_next(in) && !md__text_count(in->line, &m))
                extra += !md__text_blank(in->line);
            return halox_set_error(HALOX_ERR_IO,
                                   "%s: line %lld announces %lld atoms, but the frame holds %lld "
                                   "atom lines (line %lld, '%s', is not the atom count of a next "
                                   "frame): correct the count on line %lld",
                                   path, count_line, n, n + extra, first, shown, count_line);
        }
        if (ferror(in->fp))
            return halox_set_error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        if (!next) {
            *nframes_p = k + 1;
            return HALOX_OK;
        }
    }
}
