/* Internal: the reader of the input files of --read (md__read_file, halox_md_read_probe), its
 * files each calling only those listed before it:
 *   read_text.c  the file line by line, the tokens and numbers of a line, the frame a scan keeps
 *   read_xyz.c   extended (and plain) XYZ: comment-line values, Lattice, Properties, the scan
 *   read_dump.c  LAMMPS text dumps: ITEM: lines, the columns of ITEM: ATOMS, the scan
 *   read_overlap.c  pairs of atoms too close to start a run from
 *   read_file.c  the frame chosen, its atom lines into the system (system.h)
 * The whole file is scanned first (frame boundaries, counts, headers; atom lines only counted),
 * so that a malformed file is refused whichever frame is asked for and the frame count is known;
 * then the chosen frame's atom lines are parsed, from its offset. */
#ifndef HALOX_MD_READ_H
#define HALOX_MD_READ_H

#include <stdio.h>
#include <sys/types.h>

#include "halox/md.h"

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

/* read_text.c */
/* Read the next line into in->line; 0 at the end of the file (or on an error: ferror). */
int md__text_next(md__in_t *in);
/* the line in a message: at most 40 characters, without its end of line */
const char *md__text_shown(const char *line, char buf[48]);
/* 1 when the line holds an atom count alone (blanks around it allowed): 0 to 2^31-1. */
int md__text_count(const char *line, long long *n_p);
/* 1 when the line holds only blanks. */
int md__text_blank(const char *line);
static inline int md__text_is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
/* A number filling a whole token. */
int md__text_number(const char *tok, double *v);
/* The starts of the first `want` blank-separated tokens of a line; how many there are. */
int md__text_tokens(const char *line, int want, const char **tok);
/* Keep frame `index` in f: in->line is its head line (XYZ: its comment line; dump: its ITEM:
 * ATOMS line), its atom lines follow. */
halox_status_t md__frame_keep(md__frame_t *f, long long index, long long count_line, long long n,
                              const md__in_t *in);

/* read_xyz.c */
/* The value of KEY= on an extended-XYZ comment line, copied into buf; NULL when absent. */
const char *md__xyz_value(const char *line, const char *key, char *buf, size_t len);
/* Lattice="...": 1 found and orthorhombic (box set); 0 absent; -1 unusable (message set). */
int md__xyz_lattice(const char *line, const char *path, long long lineno, double box[3]);
/* The columns of a frame from its comment line `head` (Properties=). */
halox_status_t md__xyz_cols(const char *path, long long lineno, const char *head, md__cols_t *c);
/* Scan every frame (in->line holds line 1), keep frame `want` in f, count the frames. */
halox_status_t md__xyz_scan(md__in_t *in, long long want, md__frame_t *f, long long *nframes_p);

/* read_dump.c */
/* "ITEM: NAME" -> NAME (blanks after the colon skipped), or NULL. */
const char *md__dump_item(const char *line);
/* The columns of a frame from its ITEM: ATOMS line `head`. */
halox_status_t md__dump_cols(const char *path, long long lineno, const char *head, md__cols_t *c);
/* Scan every frame (in->line holds the first ITEM: line), keep frame `want` in f, count them. */
halox_status_t md__dump_scan(md__in_t *in, long long want, md__frame_t *f, long long *nframes_p);

/* read_overlap.c */
/* Atoms of a frame closer than this (sigma = 1) are refused: at 0.5 the pair's energy is 1.6e4
 * epsilon and its force 3.9e5, which throws the pair apart in the first step faster than any
 * usable time step follows (atoms on top of each other give infinite energies). No liquid or
 * solid state comes near it: its closest pairs sit near 0.9. */
#define MD_READ_MIN_DISTANCE 0.5
/* A pair of the n atoms x (wrapped into the periodic box) closer than MD_READ_MIN_DISTANCE: 1
 * with their indices *a_p < *b_p and distance *r_p; 0 when none, or on an error (*st_p). */
int md__read_overlap(const double *x, long long n, const double box[3], long long *a_p,
                     long long *b_p, double *r_p, halox_status_t *st_p);

#endif
