/* Boxes, densities, coordinates and files the MD engine must refuse or survive, each with the
 * limit it is held to:
 *   - a box the precision cannot hold: its edge plus the halo distance beyond the precision's
 *     range (a float box of 4.7e40 from density 1e-120 makes halo images inf, and a cell
 *     search over them never ends), coordinates spaced more than 1/1024 of the cut-off at the edge,
 *     more than 2^29 cut-offs per edge (cell counts beyond an int); from the command line's
 *     settings, from a file's Lattice, from a caller's own system and from a restart's box;
 *   - the cell search itself: an inf or NaN coordinate is an error (not an endless loop or an
 *     index outside the cells), a huge finite spread still ends;
 *   - XYZ files: atom lines beyond the count of line 1 are refused (not dropped), a next
 *     frame and trailing blank lines are fine, coordinates far outside the box are refused.
 * The test's TIMEOUT catches a search that never ends. */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/md_internal.h"
#include "halox/endpoint.h"
#include "halox/md.h"
#include "harness.h"
#include "test_md_common.h"

static int contains(const char *s, const char *what) { return s && strstr(s, what) != NULL; }

static void fcc(halox_md_config_t *c, double density, halox_real_t real)
{
    halox_md_config_default(c);
    c->cells[0] = c->cells[1] = c->cells[2] = 3;
    c->density = density;
    c->real = real;
}

/* A box from the settings: fcc and random, both precisions, each limit and just inside it. */
static void settings_boxes(void)
{
    halox_md_config_t c;
    /* density 1e-120: fcc edge 3 * (4e120)^(1/3) = 4.76e40, beyond float */
    fcc(&c, 1e-120, HALOX_FLOAT);
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "4.7622e+40") &&
                  contains(halox_last_error(), "largest single-precision number"),
              "message: %s", halox_last_error());
    /* in double it is finite, but 1e31 cut-offs: the cell counts limit */
    fcc(&c, 1e-120, HALOX_DOUBLE);
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "overflow an int"), "message: %s", halox_last_error());
    /* density 1e-12: edge 47622, finite in float but 19000 cut-offs: float spaces coordinates
     * 0.0057 apart there; double holds it */
    fcc(&c, 1e-12, HALOX_FLOAT);
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "more than 8192 cut-offs") &&
                  contains(halox_last_error(), "--precision double"),
              "message: %s", halox_last_error());
    fcc(&c, 1e-12, HALOX_DOUBLE);
    CHECK_OK(halox_md_config_check(&c));
    /* just inside the float limit (8192 cut-offs = 20480): 3 cells of a = 6826 */
    double a = 20480.0 / 3 * (1 - 1e-9);
    fcc(&c, 4.0 / (a * a * a), HALOX_FLOAT);
    CHECK_OK(halox_md_config_check(&c));
    fcc(&c, 4.0 / (a * a * a) * 0.999, HALOX_FLOAT);
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    /* random atoms: 100 at density 1e-27 make an edge of 4.6e9: 1.9e9 cut-offs */
    halox_md_config_default(&c);
    c.source = HALOX_MD_RANDOM;
    c.natoms = 100;
    c.density = 1e-27;
    c.real = HALOX_DOUBLE;
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "random atoms") &&
                  contains(halox_last_error(), "4.64159e+09"),
              "message: %s", halox_last_error());
    /* a cut-off the precision cannot square */
    fcc(&c, 0.8442, HALOX_FLOAT);
    c.cutoff = 1e-20;
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "squares"), "message: %s", halox_last_error());
    /* a restart's box, when the caller gives it (the checkpoint's) */
    fcc(&c, 0.8442, HALOX_FLOAT);
    c.restart_path = "some.ckpt";
    c.box[0] = c.box[1] = c.box[2] = 1e39;
    CHECK_STATUS(halox_md_config_check(&c), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "checkpoint 'some.ckpt'"), "message: %s",
              halox_last_error());
    c.box[0] = c.box[1] = c.box[2] = 12;
    CHECK_OK(halox_md_config_check(&c));
}

/* A caller's own system with a box beyond float: refused at create (it hung). */
static void caller_system(void)
{
    halox_md_config_t c;
    fcc(&c, 0.8442, HALOX_FLOAT);
    halox_md_system_t *sys = NULL;
    CHECK_OK(halox_md_system_create(&c, &sys));
    if (!sys)
        return;
    for (int d = 0; d < 3; d++)
        sys->box.len[d] = 1e39;
    md_test_engine_t e;
    CHECK_STATUS(md_test_engine_create(&c, sys, 30, &e), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "the system's box"), "message: %s", halox_last_error());
    md_test_engine_destroy(&e);
    halox_md_system_destroy(sys);
}

/* The cell search on coordinates no step should make: errors for inf and NaN, an end for a
 * huge finite spread, in both precisions. */
static void cell_search(halox_real_t real)
{
    halox_md_config_t c;
    fcc(&c, 0.8442, real);
    halox_md_system_t *sys = NULL;
    CHECK_OK(halox_md_system_create(&c, &sys));
    if (!sys)
        return;
    md_test_engine_t e;
    CHECK_OK(md_test_engine_create(&c, sys, 30, &e));
    if (e.md) {
        halox_md_t *md = e.md;
        const double rl = md->prm.cutoff + md->prm.buffer;
        const int n = md->atoms.n_total;
        CHECK(n > 2);
        const double bad[3] = {INFINITY, -INFINITY, NAN};
        for (int k = 0; k < 3; k++) {
            double keep = halox_atoms_get(&md->atoms, n - 1, 1);
            halox_atoms_set(&md->atoms, n - 1, 1, bad[k]);
            CHECK_STATUS(md__nlist_build(md, rl), HALOX_ERR_COORDINATE);
            CHECK_MSG(contains(halox_last_error(), "not a finite range"), "message: %s",
                      halox_last_error());
            halox_atoms_set(&md->atoms, n - 1, 1, keep);
        }
        /* a spread of the whole range of the precision: finite, so cells are found (few and
         * wide) and the search ends */
        const double far = real == HALOX_FLOAT ? FLT_MAX : DBL_MAX / 4;
        double k0 = halox_atoms_get(&md->atoms, 0, 0), k1 = halox_atoms_get(&md->atoms, 1, 0);
        halox_atoms_set(&md->atoms, 0, 0, far);
        halox_atoms_set(&md->atoms, 1, 0, -far);
        CHECK_OK(md__nlist_build(md, rl));
        halox_atoms_set(&md->atoms, 0, 0, k0);
        halox_atoms_set(&md->atoms, 1, 0, k1);
        /* and the list is whole again afterwards */
        CHECK_OK(md__nlist_build(md, rl));
        CHECK(md->nl.npairs > 0);
    }
    md_test_engine_destroy(&e);
    halox_md_system_destroy(sys);
}

/* XYZ files, written here: 125 atoms of a simple cubic lattice (spacing 1.6) in a box of 8. */
static char dir[256];

static const char *xyz_write(const char *name, const char *count, const char *lattice, int atoms,
                             const char *tail)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        return NULL;
    fprintf(f, "%s\nLattice=\"%s\" Properties=species:S:1:pos:R:3\n", count, lattice);
    for (int i = 0; i < atoms; i++)
        fprintf(f, "Ar %.6f %.6f %.6f\n", 1.6 * (i % 5), 1.6 * (i / 5 % 5), 1.6 * (i / 25));
    fputs(tail, f);
    fclose(f);
    return path;
}

static halox_status_t xyz_read(const char *path, halox_real_t real, long long *natoms_p)
{
    halox_md_config_t c;
    halox_md_config_default(&c);
    c.source = HALOX_MD_READ;
    c.read_path = path;
    c.real = real;
    halox_md_system_t *sys = NULL;
    halox_status_t st = halox_md_system_create(&c, &sys);
    *natoms_p = sys ? sys->natoms : -1;
    halox_md_system_destroy(sys);
    return st;
}

static void xyz_files(void)
{
    const char *L8 = "8 0 0 0 8 0 0 0 8";
    long long n;
    /* 50 announced, 125 held: refused, naming both counts and the first extra line */
    const char *p = xyz_write("trailing.xyz", "50", L8, 125, "");
    CHECK_STATUS(xyz_read(p, HALOX_FLOAT, &n), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "announces 50 atoms, but the frame holds 125 atom "
                                           "lines (line 53"),
              "message: %s", halox_last_error());
    /* one stray line after the atoms */
    p = xyz_write("stray.xyz", "125", L8, 125, "end of data\n");
    CHECK_STATUS(xyz_read(p, HALOX_FLOAT, &n), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "holds 126 atom lines (line 128, 'end of data'"),
              "message: %s", halox_last_error());
    /* legal: trailing blank lines; a second frame (count, comment, atoms) */
    p = xyz_write("blank.xyz", "125", L8, 125, "\n   \n\t\n");
    CHECK_OK(xyz_read(p, HALOX_FLOAT, &n));
    CHECK(n == 125);
    char frame2[8192];
    int k = snprintf(frame2, sizeof frame2, "125\nLattice=\"%s\" Time=1\n", L8);
    for (int i = 0; i < 125 && k < (int)sizeof frame2 - 64; i++)
        k += snprintf(frame2 + k, sizeof frame2 - (size_t)k, "Ar %.6f %.6f %.6f\n",
                      1.6 * (i % 5) + 0.01, 1.6 * (i / 5 % 5), 1.6 * (i / 25));
    p = xyz_write("frames.xyz", "125", L8, 125, frame2);
    CHECK_OK(xyz_read(p, HALOX_FLOAT, &n));
    CHECK(n == 125);
    /* a next frame's count without its comment line: truncated */
    p = xyz_write("header.xyz", "125", L8, 125, "125\n");
    CHECK_STATUS(xyz_read(p, HALOX_FLOAT, &n), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "line 128 holds the atom count 125 of a next frame"),
              "message: %s", halox_last_error());
    /* a Lattice beyond float: refused with the file's name; double refuses it by cut-offs */
    p = xyz_write("huge.xyz", "125", "1e39 0 0 0 1e39 0 0 0 1e39", 125, "");
    CHECK_STATUS(xyz_read(p, HALOX_FLOAT, &n), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "huge.xyz'") &&
                  contains(halox_last_error(), "largest single-precision number"),
              "message: %s", halox_last_error());
    CHECK_STATUS(xyz_read(p, HALOX_DOUBLE, &n), HALOX_ERR_INVALID_ARG);
    /* a coordinate 1e300 in a box of 8 (it was wrapped to garbage) */
    p = xyz_write("far.xyz", "126", L8, 125, "Ar 1e300 1 1\n");
    CHECK_STATUS(xyz_read(p, HALOX_DOUBLE, &n), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "line 128: coordinate x = 1e+300"), "message: %s",
              halox_last_error());
    /* an unwrapped trajectory some boxes out is fine */
    p = xyz_write("unwrapped.xyz", "126", L8, 125, "Ar 800.5 -1600.5 1\n");
    CHECK_OK(xyz_read(p, HALOX_DOUBLE, &n));
}

int main(void)
{
    if (md_test_make_dir(dir, sizeof dir, "halox-md-ranges") != 0)
        return 1;
    settings_boxes();
    caller_system();
    cell_search(HALOX_FLOAT);
    cell_search(HALOX_DOUBLE);
    xyz_files();
    md_test_remove_dir(dir);
    TEST_DONE();
}
