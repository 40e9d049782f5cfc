#define _POSIX_C_SOURCE 200809L
/* LAMMPS text dumps for --read: the ITEM: lines, the columns of ITEM: ATOMS, the scan of the
 * frames. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "md/read.h"

/* "ITEM: NAME" -> NAME (blanks after the colon skipped), or NULL. */
const char *md__dump_item(const char *line)
{
    const char *p = line + strspn(line, " \t");
    if (strncmp(p, "ITEM:", 5) != 0)
        return NULL;
    return p + 5 + strspn(p + 5, " \t");
}

static int md__item_is(const char *item, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(item, name, n) && (item[n] == '\0' || md__text_is_blank(item[n]));
}

/* The columns of a LAMMPS dump from its ITEM: ATOMS line: positions x y z (or xu yu zu, xs ys
 * zs, xsu ysu zsu, in that order of preference, as MDAnalysis takes them), velocities vx vy vz,
 * the atom id. */
halox_status_t md__dump_cols(const char *path, long long lineno, const char *head, md__cols_t *c)
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
        while (*p && md__text_is_blank(*p))
            p++;
        if (!*p)
            break;
        size_t n = 0;
        while (p[n] && !md__text_is_blank(p[n]))
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

/* LAMMPS text dump: frames of ITEM: blocks (TIMESTEP, NUMBER OF ATOMS, BOX BOUNDS, ATOMS; TIME
 * and UNITS skipped), the atom lines after ITEM: ATOMS. in->line holds the first ITEM: line. */
halox_status_t md__dump_scan(md__in_t *in, long long want, md__frame_t *f, long long *nframes_p)
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
            if (!have && !md__text_next(in))
                return halox__error(HALOX_ERR_IO,
                                    "%s is truncated: the frame that starts on line %lld ends "
                                    "before its ITEM: ATOMS",
                                    path, start);
            have = 0;
            if (md__text_blank(in->line))
                continue;
            const char *item = md__dump_item(in->line);
            if (!item)
                return halox__error(HALOX_ERR_IO,
                                    "%s: line %lld: expected an ITEM: line of a LAMMPS dump, "
                                    "found '%s'",
                                    path, in->lineno, md__text_shown(in->line, shown));
            if (md__item_is(item, "ATOMS"))
                break;
            char name[48];
            md__text_shown(item, name);
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
                if (!md__text_next(in))
                    return halox__error(HALOX_ERR_IO,
                                        "%s is truncated: ITEM: %s on line %lld has no value", path,
                                        name, item_line);
                char *end;
                if (md__item_is(item, "TIMESTEP")) {
                    errno = 0;
                    step = strtoll(in->line, &end, 10);
                    if (end == in->line || errno || !md__text_blank(end) || step < 0)
                        return halox__error(HALOX_ERR_IO,
                                            "%s: line %lld: cannot read the TIMESTEP '%s'", path,
                                            in->lineno, md__text_shown(in->line, shown));
                } else if (!strncmp(item, "NUMBER OF ATOMS", 15)) {
                    if (!md__text_count(in->line, &n))
                        return halox__error(HALOX_ERR_IO,
                                            "%s: line %lld: cannot read the number of atoms "
                                            "'%s'",
                                            path, in->lineno, md__text_shown(in->line, shown));
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
                                                path, in->lineno, md__text_shown(in->line, shown),
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
            if (!md__text_next(in))
                return halox__error(HALOX_ERR_IO,
                                    "%s is truncated: line %lld announces %lld atoms but the "
                                    "file ends after %lld",
                                    path, n_line, n, i);
        int next = 0;
        while (md__text_next(in)) {
            if (md__text_blank(in->line))
                continue;
            if (md__dump_item(in->line)) {
                next = have = 1;
                break;
            }
            return halox__error(HALOX_ERR_IO,
                                "%s: line %lld announces %lld atoms, but the frame holds more "
                                "atom lines (line %lld, '%s', is not an ITEM: line): correct "
                                "the count on line %lld",
                                path, n_line, n, in->lineno, md__text_shown(in->line, shown),
                                n_line);
        }
        if (ferror(in->fp))
            return halox__error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        if (!next) {
            *nframes_p = k + 1;
            return HALOX_OK;
        }
    }
}
