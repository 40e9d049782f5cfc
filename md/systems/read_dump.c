#define _POSIX_C_SOURCE 200809L
/* LAMMPS text dumps for --read: the ITEM: lines, the columns of ITEM: ATOMS, the scan of the
 * frames. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/status.h"
#include "systems/read.h"

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

/* The names of a set of three whose column was found (present 1) or not (present 0), "a b". */
static const char *md__names(const char *const names[3], const int col[3], int present, char *buf,
                             size_t len)
{
    buf[0] = '\0';
    for (int d = 0; d < 3; d++)
        if ((col[d] >= 0) == present)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? " " : "", names[d]);
    return buf;
}

/* The columns of a LAMMPS dump from its ITEM: ATOMS line: positions x y z (or xu yu zu, xs ys
 * zs, xsu ysu zsu, in that order of preference, as MDAnalysis takes them), velocities vx vy vz,
 * the atom id. A column read twice, or a set of three given in part, is refused: either would
 * be read as something the file does not say. */
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
        int *slot = NULL;
        for (int s = 0; s < 4; s++)
            for (int d = 0; d < 3; d++)
                if (strlen(sets[s][d]) == n && !strncmp(p, sets[s][d], n))
                    slot = &found[s][d];
        for (int d = 0; d < 3; d++)
            if (n == 2 && !strncmp(p, vnames[d], 2))
                slot = &vel[d];
        if (n == 2 && !strncmp(p, "id", 2))
            slot = &c->id;
        if (slot && *slot >= 0)
            return halox_set_error(HALOX_ERR_IO,
                                   "%s: line %lld: ITEM: ATOMS names the column '%.*s' twice "
                                   "(columns %d and %d): give each column once",
                                   path, lineno, (int)n, p, *slot + 1, col + 1);
        if (slot)
            *slot = col;
        p += n;
        col++;
    }
    char has[16], miss[16];
    int set = -1, part = -1;
    for (int s = 3; s >= 0; s--) {
        const int k = (found[s][0] >= 0) + (found[s][1] >= 0) + (found[s][2] >= 0);
        if (k == 3)
            set = s;
        else if (k > 0)
            part = s;
    }
    if (set < 0 && part >= 0)
        return halox_set_error(HALOX_ERR_IO,
                               "%s: line %lld: ITEM: ATOMS has %s but not %s: give all of %s %s %s",
                               path, lineno, md__names(sets[part], found[part], 1, has, sizeof has),
                               md__names(sets[part], found[part], 0, miss, sizeof miss),
                               sets[part][0], sets[part][1], sets[part][2]);
    if (set < 0)
        return halox_set_error(HALOX_ERR_IO,
                               "%s: line %lld: ITEM: ATOMS has no positions: give the columns x y "
                               "z, xu yu zu, xs ys zs or xsu ysu zsu",
                               path, lineno);
    const int nv = (vel[0] >= 0) + (vel[1] >= 0) + (vel[2] >= 0);
    if (nv == 1 || nv == 2)
        return halox_set_error(
            HALOX_ERR_IO,
            "%s: line %lld: ITEM: ATOMS has %s but not %s: give all of vx vy vz, "
            "or none (velocities are then drawn at --temp)",
            path, lineno, md__names(vnames, vel, 1, has, sizeof has),
            md__names(vnames, vel, 0, miss, sizeof miss));
    c->scaled = set >= 2;
    const int has_v = nv == 3;
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

/* The items of a frame, told apart before their values are read: reading a value line reuses
 * (or moves) the line buffer that held the item's name. */
typedef enum md_dump_item {
    MD_ITEM_TIMESTEP,
    MD_ITEM_TIME,
    MD_ITEM_UNITS,
    MD_ITEM_NATOMS,
    MD_ITEM_BOX,
    MD_ITEM_ATOMS,
    MD_ITEM_UNKNOWN
} md_dump_item_t;

static md_dump_item_t md__item_kind(const char *item)
{
    static const struct {
        const char *name;
        md_dump_item_t kind;
    } known[] = {{"TIMESTEP", MD_ITEM_TIMESTEP}, {"TIME", MD_ITEM_TIME},
                 {"UNITS", MD_ITEM_UNITS},       {"NUMBER OF ATOMS", MD_ITEM_NATOMS},
                 {"BOX BOUNDS", MD_ITEM_BOX},    {"ATOMS", MD_ITEM_ATOMS}};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
        if (md__item_is(item, known[k].name))
            return known[k].kind;
    return MD_ITEM_UNKNOWN;
}

/* The words after ITEM: BOX BOUNDS: the tilt names (xy xz yz) of a triclinic box, then one
 * boundary flag per dimension (pp periodic; f, s, m fixed or shrink-wrapped, one letter for each
 * face). No flags at all is the layout of old LAMMPS versions, whose boxes were periodic. *tilt_p:
 * the value lines hold a third number, the tilt. */
static halox_status_t md__box_item(const char *path, long long lineno, const char *item,
                                   int *tilt_p)
{
    char shown[48];
    const char *tok[12];
    const char *words = item + strlen("BOX BOUNDS");
    const int nt = md__text_tokens(words, 12, tok);
    int tilt = 0, nflags = 0, bad = 0;
    size_t len[12];
    for (int k = 0; k < nt; k++) {
        len[k] = strcspn(tok[k], " \t\r\n");
        if (len[k] == 2 && nflags == 0 &&
            (!strncmp(tok[k], "xy", 2) || !strncmp(tok[k], "xz", 2) || !strncmp(tok[k], "yz", 2)))
            tilt = 1;
        else if (len[k] == 2 && strchr("pfsm", tok[k][0]) && strchr("pfsm", tok[k][1]))
            nflags++;
        else
            bad = 1;
    }
    *tilt_p = tilt;
    if (bad || (nflags != 0 && nflags != 3))
        return halox_set_error(HALOX_ERR_IO,
                               "%s: line %lld: cannot read 'ITEM: %s': give ITEM: BOX BOUNDS pp pp "
                               "pp (one boundary flag per dimension, after xy xz yz for a tilted "
                               "box)",
                               path, lineno, md__text_shown(item, shown));
    for (int k = nt - nflags, d = 0; k < nt; k++, d++)
        if (strncmp(tok[k], "pp", 2) != 0)
            return halox_set_error(HALOX_ERR_IO,
                                   "%s: line %lld: 'ITEM: %s' says the box is not periodic in %c "
                                   "(%.2s): halox-md needs a box periodic in every dimension "
                                   "(pp pp pp)",
                                   path, lineno, md__text_shown(item, shown), "xyz"[d], tok[k]);
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
                return halox_set_error(HALOX_ERR_IO,
                                       "%s is truncated: the frame that starts on line %lld ends "
                                       "before its ITEM: ATOMS",
                                       path, start);
            have = 0;
            if (md__text_blank(in->line))
                continue;
            const char *item = md__dump_item(in->line);
            if (!item)
                return halox_set_error(HALOX_ERR_IO,
                                       "%s: line %lld: expected an ITEM: line of a LAMMPS dump, "
                                       "found '%s'",
                                       path, in->lineno, md__text_shown(in->line, shown));
            /* all that is needed of the item line, before the value lines replace it */
            const md_dump_item_t kind = md__item_kind(item);
            if (kind == MD_ITEM_ATOMS)
                break;
            char name[48];
            md__text_shown(item, name);
            const long long item_line = in->lineno;
            if (kind == MD_ITEM_UNKNOWN)
                return halox_set_error(HALOX_ERR_IO,
                                       "%s: line %lld: unknown item 'ITEM: %s' (a LAMMPS dump has "
                                       "TIMESTEP, NUMBER OF ATOMS, BOX BOUNDS and ATOMS; TIME and "
                                       "UNITS are skipped)",
                                       path, item_line, name);
            int tilt = 0;
            if (kind == MD_ITEM_BOX) {
                halox_status_t bst = md__box_item(path, item_line, item, &tilt);
                if (bst != HALOX_OK)
                    return bst;
            }
            const int lines = kind == MD_ITEM_BOX ? 3 : 1;
            for (int l = 0; l < lines; l++) {
                if (!md__text_next(in))
                    return halox_set_error(HALOX_ERR_IO,
                                           "%s is truncated: ITEM: %s on line %lld has no value",
                                           path, name, item_line);
                char *end;
                if (kind == MD_ITEM_TIMESTEP) {
                    errno = 0;
                    step = strtoll(in->line, &end, 10);
                    if (end == in->line || errno || !md__text_blank(end) || step < 0)
                        return halox_set_error(HALOX_ERR_IO,
                                               "%s: line %lld: cannot read the TIMESTEP '%s': give "
                                               "a step from 0",
                                               path, in->lineno, md__text_shown(in->line, shown));
                } else if (kind == MD_ITEM_NATOMS) {
                    if (!md__text_count(in->line, &n))
                        return halox_set_error(HALOX_ERR_IO,
                                               "%s: line %lld: cannot read the number of atoms "
                                               "'%s'",
                                               path, in->lineno, md__text_shown(in->line, shown));
                    n_line = in->lineno;
                } else if (kind == MD_ITEM_BOX) {
                    double b[3] = {0, 0, 0};
                    const char *p = in->line;
                    for (int j = 0; j < 2 + tilt; j++) {
                        b[j] = strtod(p, &end);
                        if (end == p || !isfinite(b[j]))
                            return halox_set_error(
                                HALOX_ERR_IO,
                                "%s: line %lld: cannot read the box bounds '%s': "
                                "give LO HI%s",
                                path, in->lineno, md__text_shown(in->line, shown),
                                tilt ? " TILT" : "");
                        p = end;
                    }
                    if (tilt && b[2] != 0.0)
                        return halox_set_error(HALOX_ERR_IO,
                                               "%s: line %lld: the box is triclinic (tilt %g): "
                                               "halox-md needs an orthorhombic box",
                                               path, in->lineno, b[2]);
                    /* in every frame, read or not: a malformed frame is refused whichever
                     * frame is asked for */
                    if (!(b[1] - b[0] > 0 && isfinite(b[1] - b[0])))
                        return halox_set_error(HALOX_ERR_IO,
                                               "%s: line %lld: the box bounds '%s' make an edge "
                                               "of %g: give LO HI with HI above LO",
                                               path, in->lineno, md__text_shown(in->line, shown),
                                               b[1] - b[0]);
                    lo[l] = b[0];
                    len[l] = b[1] - b[0];
                    box = 1;
                }
            }
        }
        const long long atoms_line = in->lineno;
        if (n < 0 || !box)
            return halox_set_error(HALOX_ERR_IO,
                                   "%s: line %lld: ITEM: ATOMS before ITEM: %s in the frame that "
                                   "starts on line %lld",
                                   path, atoms_line, n < 0 ? "NUMBER OF ATOMS" : "BOX BOUNDS",
                                   start);
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
                return halox_set_error(HALOX_ERR_IO,
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
            return halox_set_error(HALOX_ERR_IO,
                                   "%s: line %lld announces %lld atoms, but the frame holds more "
                                   "atom lines (line %lld, '%s', is not an ITEM: line): correct "
                                   "the count on line %lld",
                                   path, n_line, n, in->lineno, md__text_shown(in->line, shown),
                                   n_line);
        }
        if (ferror(in->fp))
            return halox_set_error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        if (!next) {
            *nframes_p = k + 1;
            return HALOX_OK;
        }
    }
}
