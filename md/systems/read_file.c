#define _POSIX_C_SOURCE 200809L
/* Systems from a file (--read, halox_md_read_probe): an extended-XYZ file or a LAMMPS text dump,
 * any frame, with its velocities.
 * The whole file is scanned first (frame boundaries, counts, headers; atom lines only counted),
 * so that a malformed file is refused whichever frame is asked for and the frame count is known;
 * then the chosen frame's atom lines are parsed, from its offset. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/file.h"
#include "halox/status.h"
#include "systems/read.h"
#include "systems/system.h"

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
        st = halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for %lld atoms", n);
        goto out;
    }
    if (fseeko(in->fp, f->first_at, SEEK_SET) != 0) {
        st = halox_set_error(HALOX_ERR_IO, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    in->lineno = f->first_line - 1;
    char shown[48];
    for (long long i = 0; i < n; i++) {
        if (!md__text_next(in)) {
            st = halox_set_error(HALOX_ERR_IO, "%s changed while it was read (line %lld is gone)",
                                 path, in->lineno + 1);
            goto out;
        }
        const long long ln = in->lineno;
        int got = md__text_tokens(in->line, c->need, tok);
        if (got == 0) {
            st = halox_set_error(HALOX_ERR_IO, "%s: line %lld is empty: expected %s", path, ln,
                                 c->expect);
            goto out;
        }
        if (dump && got < c->need) {
            st = halox_set_error(HALOX_ERR_IO, "%s: line %lld: '%s' has %d columns, fewer than %s",
                                 path, ln, md__text_shown(in->line, shown), got, c->expect);
            goto out;
        }
        if (ids) {
            char *end;
            errno = 0;
            ids[i].id = strtoll(tok[c->id], &end, 10);
            ids[i].index = i;
            if (end == tok[c->id] || errno || !(*end == '\0' || md__text_is_blank(*end))) {
                st = halox_set_error(HALOX_ERR_IO, "%s: line %lld: cannot read the atom id '%s'",
                                     path, ln, md__text_shown(tok[c->id], shown));
                goto out;
            }
        }
        for (int d = 0; d < 3; d++) {
            double v;
            const int k = c->pos[d];
            if (k >= got || !md__text_number(tok[k], &v)) {
                st = halox_set_error(HALOX_ERR_IO,
                                     "%s: line %lld: cannot read coordinate %c: expected %s with "
                                     "finite numbers",
                                     path, ln, "xyz"[d], c -> expect);
                goto out;
            }
            /* relative to the box's origin (a dump's LO), in box units when scaled */
            v = c->scaled ? v * box[d] : v - f->lo[d];
            if (!(fabs(v) <= MD_XYZ_MAX_EDGES * box[d])) {
                st = halox_set_error(HALOX_ERR_IO,
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
            if (k >= got || !md__text_number(tok[k], &v)) {
                st = halox_set_error(HALOX_ERR_IO,
                                     "%s: line %lld: cannot read velocity v%c (%s): give finite "
                                     "numbers, or add --new-velocities to draw them at --temp",
                                     path, ln, "xyz"[d], c -> expect);
                goto out;
            }
            sys->v[3 * i + d] = v;
        }
    }
    long long a = 0, b = 0;
    double r = 0;
    if (md__read_overlap(sys->x, n, box, &a, &b, &r, &st)) {
        st = halox_set_error(HALOX_ERR_IO,
                             "%s: atoms %lld and %lld of frame %lld (lines %lld and %lld) are %g "
                             "apart, closer than %g (sigma 1): a pair so close blows the run up in "
                             "its first step; remove or move one of them",
                             path, a, b, f->index, f->first_line + a, f->first_line + b, r,
                             MD_READ_MIN_DISTANCE);
        goto out;
    }
    if (st != HALOX_OK)
        goto out;
    if (ids) { /* id order; a duplicate id is refused */
        qsort(ids, (size_t)n, sizeof *ids, md__id_cmp);
        for (long long i = 1; i < n; i++)
            if (ids[i].id == ids[i - 1].id) {
                long long a = ids[i - 1].index, b = ids[i].index;
                st = halox_set_error(
                    HALOX_ERR_IO, "%s: atom id %lld appears twice (lines %lld and %lld)", path,
                    ids[i].id, f->first_line + (a < b ? a : b), f->first_line + (a < b ? b : a));
                goto out;
            }
        double *x = malloc(sizeof(double) * 3 * (size_t)n);
        double *v = malloc(sizeof(double) * 3 * (size_t)n);
        if (!x || !v) {
            free(x);
            free(v);
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for %lld atoms", n);
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
halox_status_t md__read_file(const char *path, long long want, const double box_given[3],
                             int want_v, halox_md_system_t *sys, halox_md_read_info_t *info)
{
    memset(info, 0, sizeof *info);
    info->step = -1;
    if (want < HALOX_MD_READ_LAST)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "read frame %lld: give a frame from 0, or the last (%lld)", want,
                               HALOX_MD_READ_LAST);
    md__in_t in = {.path = path};
    /* only a regular file: a FIFO would wait for a writer, a directory reads empty */
    halox_status_t st = halox_input_open(path, NULL, "give an XYZ file or a LAMMPS dump", &in.fp);
    if (st != HALOX_OK)
        return st;
    md__frame_t f;
    memset(&f, 0, sizeof f);
    f.step = -1;
    md__cols_t c;
    long long nframes = 0;
    if (!md__text_next(&in)) {
        st = halox_set_error(HALOX_ERR_IO,
                             "%s is empty: an XYZ file starts with the atom count, a LAMMPS dump "
                             "with ITEM: TIMESTEP",
                             path);
        goto out;
    }
    const int dump = md__dump_item(in.line) != NULL;
    st = dump ? md__dump_scan(&in, want, &f, &nframes) : md__xyz_scan(&in, want, &f, &nframes);
    if (st != HALOX_OK)
        goto out;
    if (want >= nframes) {
        st =
            halox_set_error(HALOX_ERR_INVALID_ARG,
                            "%s holds %lld frame%s (0 to %lld): frame %lld is beyond the last; "
                            "give --read-frame from 0 to %lld, or last",
                            path, nframes, nframes == 1 ? "" : "s", nframes - 1, want, nframes - 1);
        goto out;
    }
    if (f.natoms < 2) {
        st = halox_set_error(
            HALOX_ERR_IO, "%s: frame %lld holds %lld atoms (line %lld): a system needs 2 or more",
            path, f.index, f.natoms, f.count_line);
        goto out;
    }
    if (dump) {
        st = md__dump_cols(path, f.head_line, f.head, &c);
    } else {
        st = md__xyz_cols(path, f.head_line, f.head, &c);
        int lat = st == HALOX_OK ? md__xyz_lattice(f.head, path, f.head_line, f.len) : 0;
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
        st = halox_set_error(HALOX_ERR_INVALID_ARG,
                             "%s has no Lattice=\"LX 0 0 0 LY 0 0 0 LZ\" on its comment line "
                             "(line %lld): give the box with --box LX,LY,LZ",
                             path, f.head_line);
        goto out;
    }
    for (int d = 0; d < 3; d++)
        if (!(isfinite(box[d]) && box[d] > 0)) {
            st = halox_set_error(HALOX_ERR_IO, "%s: box edge %d is %g: it must be finite and > 0",
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
        return halox_set_error(HALOX_ERR_INVALID_ARG, "read probe: NULL path");
    return md__read_file(path, frame, NULL, 0, NULL, info ? info : &local);
}
