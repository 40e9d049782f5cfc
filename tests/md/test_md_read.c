/* Files for --read: the frame read (the last by default, any by number, one beyond the
 * last refused), the velocities a frame holds (extended-XYZ velo, vel and ASE's momenta, LAMMPS
 * dump vx vy vz; drawn at temp only where there are none, or when asked), LAMMPS text dumps
 * (ids in any order, a box not at the origin, scaled positions, value lines longer than their
 * item, CRLF line ends; malformed frames, columns given in part and boundaries that are not
 * periodic refused with the line), and what the engine writes read back bit for bit (extended XYZ
 * and dump, double). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halox/md.h"
#include "harness.h"
#include "test_md_common.h"

static char dir[256];

static int contains(const char *s, const char *what) { return s && strstr(s, what) != NULL; }

static const char *file(const char *name, const char *text)
{
    static char path[4][512];
    static int k = 0;
    char *p = path[k++ % 4];
    snprintf(p, 512, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    return p;
}

/* A system from the file: frame (HALOX_MD_READ_LAST or a number), temperature for drawn
 * velocities, whether to draw them anyway. */
static halox_status_t read_sys(const char *path, long long frame, double temp, int new_v,
                               halox_md_system_t **sys)
{
    halox_md_config_t c;
    halox_md_config_default(&c);
    c.source = HALOX_MD_READ;
    c.read_path = path;
    c.read_frame = frame;
    c.temp = temp;
    c.read_new_velocities = new_v;
    c.real = HALOX_DOUBLE;
    *sys = NULL;
    return halox_md_system_create(&c, sys);
}

/* temperature of a system's velocities, 3N-3 degrees of freedom, m = 1 */
static double temperature(const halox_md_system_t *s)
{
    double twoke = 0;
    for (long long k = 0; k < 3 * s->natoms; k++)
        twoke += s->v[k] * s->v[k];
    return twoke / (3.0 * (double)s->natoms - 3.0);
}

/* Three frames of 8 atoms on a cubic lattice in a box of 12 (frame f: x + f, v = (f + 1) (i, -i,
 * 0.5) / 10), Properties with the velocity column `vel` (NULL: none). */
static const char *xyz3(const char *name, const char *vel, const char *species)
{
    static char text[8192];
    int n = 0;
    for (int f = 0; f < 3; f++) {
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "8\nLattice=\"12 0 0 0 12 0 0 0 12\" Properties=species:S:1:pos:R:3%s%s%s "
                      "Time=%g Step=%d\n",
                      vel ? ":" : "", vel ? vel : "", vel ? ":R:3" : "", 0.5 * f, 100 * f);
        for (int i = 0; i < 8; i++) {
            n += snprintf(text + n, sizeof text - (size_t)n, "%s %g %g %g", species,
                          3.0 * (i % 2) + f + 1, 3.0 * (i / 2 % 2) + 1, 3.0 * (i / 4) + 1);
            if (vel)
                n += snprintf(text + n, sizeof text - (size_t)n, " %g %g %g", (f + 1) * i / 10.0,
                              -(f + 1) * i / 10.0, (f + 1) * 0.05);
            n += snprintf(text + n, sizeof text - (size_t)n, "\n");
        }
    }
    return file(name, text);
}

static void xyz_frames_and_velocities(void)
{
    halox_md_system_t *s = NULL;
    halox_md_read_info_t info;
    /* the default: the last frame, with its velocities */
    const char *p = xyz3("velo.xyz", "velo", "X");
    CHECK_OK(halox_md_read_probe(p, HALOX_MD_READ_LAST, &info));
    CHECK(info.format == HALOX_MD_TRAJ_XYZ && info.nframes == 3 && info.frame == 2 &&
          info.natoms == 8 && info.step == 200 && info.velocities && info.has_box &&
          info.box[0] == 12);
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.44, 0, &s));
    if (s) {
        CHECK(s->natoms == 8 && s->velocities_from_file && s->read.frame == 2);
        CHECK(s->x[0] == 3 && s->x[3] == 6 && s->x[3 * 7 + 2] == 4); /* x + 2 */
        CHECK(s->v[3 * 5 + 0] == 1.5 && s->v[3 * 5 + 1] == -1.5 && s->v[3 * 5 + 2] == 0.15);
    }
    halox_md_system_destroy(s);
    /* frame 0 by number */
    CHECK_OK(read_sys(p, 0, 1.44, 0, &s));
    if (s)
        CHECK(s->x[0] == 1 && s->v[3 * 7] == 7 / 10.0 && s->read.step == 0);
    halox_md_system_destroy(s);
    /* a frame beyond the last */
    CHECK_STATUS(read_sys(p, 3, 1.44, 0, &s), HALOX_ERR_INVALID_ARG);
    CHECK_MSG(contains(halox_last_error(), "holds 3 frames (0 to 2): frame 3 is beyond the last"),
              "message: %s", halox_last_error());
    CHECK_STATUS(halox_md_read_probe(p, 7, &info), HALOX_ERR_INVALID_ARG);
    /* velocities drawn anyway: exactly at temp */
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 2.5, 1, &s));
    if (s) {
        CHECK(!s->velocities_from_file);
        CHECK_NEAR(temperature(s), 2.5, 1e-12);
    }
    halox_md_system_destroy(s);
    /* halox-md's old output (vel, species LJ), ASE's momenta (m = 1) */
    const char *names[2] = {"vel", "momenta"};
    for (int k = 0; k < 2; k++) {
        p = xyz3(k ? "momenta.xyz" : "vel.xyz", names[k], k ? "Ar" : "LJ");
        CHECK_OK(read_sys(p, 1, 1.44, 0, &s));
        if (s)
            CHECK_MSG(s->velocities_from_file && s->v[3 * 3] == 2 * 3 / 10.0, "%s: v %g", names[k],
                      s ? s->v[9] : 0.0);
        halox_md_system_destroy(s);
    }
    /* no velocity column: drawn at temp (extra numbers without Properties are not taken) */
    p = xyz3("none.xyz", NULL, "X");
    CHECK_OK(halox_md_read_probe(p, HALOX_MD_READ_LAST, &info));
    CHECK(!info.velocities);
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.2, 0, &s));
    if (s)
        CHECK(!s->velocities_from_file && fabs(temperature(s) - 1.2) < 1e-12);
    halox_md_system_destroy(s);
    p = file("plain7.xyz", "2\nLattice=\"9 0 0 0 9 0 0 0 9\"\nAr 1 1 1 5 5 5\nAr 4 4 4 5 5 5\n");
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s));
    if (s)
        CHECK(!s->velocities_from_file && s->x[3] == 4);
    halox_md_system_destroy(s);
    /* a velocity that is not a number; Properties without positions or malformed */
    p = file("badv.xyz", "2\nLattice=\"9 0 0 0 9 0 0 0 9\" Properties=species:S:1:pos:R:3:velo:R:3"
                         "\nX 1 1 1 0 0 0\nX 4 4 4 0 nan 0\n");
    CHECK_STATUS(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "line 4: cannot read velocity vy"), "message: %s",
              halox_last_error());
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.0, 1, &s)); /* not read with --new-velocities */
    halox_md_system_destroy(s);
    p = file("nopos.xyz", "2\nLattice=\"9 0 0 0 9 0 0 0 9\" Properties=species:S:1:velo:R:3\n"
                          "X 1 1 1\nX 4 4 4\n");
    CHECK_STATUS(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "line 2: Properties=species:S:1:velo:R:3 has no pos"),
              "message: %s", halox_last_error());
    p = file("badprop.xyz", "2\nLattice=\"9 0 0 0 9 0 0 0 9\" Properties=species:S:1:pos:Q:3\n"
                            "X 1 1 1\nX 4 4 4\n");
    CHECK_STATUS(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "cannot read Properties=species:S:1:pos:Q:3"),
              "message: %s", halox_last_error());
    /* a later frame with more atom lines than its count: refused with that frame's line */
    p = file("extra2.xyz", "2\nLattice=\"9 0 0 0 9 0 0 0 9\"\nX 1 1 1\nX 4 4 4\n"
                           "2\nLattice=\"9 0 0 0 9 0 0 0 9\"\nX 1 1 1\nX 4 4 4\nX 5 5 5\n");
    CHECK_STATUS(read_sys(p, 0, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "line 5 announces 2 atoms, but the frame holds 3 atom "
                                           "lines (line 9, 'X 5 5 5'"),
              "message: %s", halox_last_error());
    /* the chosen frame's own Lattice */
    p = file("boxes.xyz", "2\nLattice=\"9 0 0 0 9 0 0 0 9\"\nX 1 1 1\nX 4 4 4\n"
                          "2\nLattice=\"10 0 0 0 11 0 0 0 12\"\nX 1 1 1\nX 4 4 4\n");
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s));
    if (s)
        CHECK(s->box.len[0] == 10 && s->box.len[1] == 11 && s->box.len[2] == 12);
    halox_md_system_destroy(s);
}

static void lammps_dumps(void)
{
    halox_md_system_t *s = NULL;
    halox_md_read_info_t info;
    /* two frames; ids out of order; a box from -2 to 7 (edge 9); frame 1 in scaled positions;
     * ITEM: UNITS and ITEM: TIME (LAMMPS' dump_modify units / time) are skipped */
    const char *text =
        "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\nITEM: BOX BOUNDS pp pp pp\n-2 7\n-2 7\n"
        "-2 7\nITEM: ATOMS id type x y z vx vy vz\n3 1 0 0 0 0.3 0 0\n1 1 -1 -1 -1 0.1 0 0\n"
        "2 1 6.5 1 1 0.2 0 0\n"
        "ITEM: UNITS\nlj\nITEM: TIME\n0.25\nITEM: TIMESTEP\n50\nITEM: NUMBER OF ATOMS\n3\n"
        "ITEM: BOX BOUNDS pp pp pp\n-2 7\n-2 7\n-2 7\nITEM: ATOMS id xs ys zs vx vy vz type\n"
        "2 0.5 0.5 0.5 -2 -3 -4 1\n3 0.25 0 1 7 8 9 1\n1 0 0 0 1 2 3 1\n";
    const char *p = file("two.lammpstrj", text);
    CHECK_OK(halox_md_read_probe(p, HALOX_MD_READ_LAST, &info));
    CHECK(info.format == HALOX_MD_TRAJ_LAMMPS && info.nframes == 2 && info.frame == 1 &&
          info.step == 50 && info.natoms == 3 && info.velocities && info.box[2] == 9);
    CHECK_OK(read_sys(p, 0, 1.0, 0, &s));
    if (s) { /* by id: 1, 2, 3; relative to the box's origin -2 */
        CHECK(s->box.len[0] == 9 && s->x[0] == 1 && s->x[3] == 8.5 && s->x[6] == 2);
        CHECK(s->v[0] == 0.1 && s->v[3] == 0.2 && s->v[6] == 0.3);
    }
    halox_md_system_destroy(s);
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s));
    if (s) { /* scaled: 0.5 of 9; z of 1 wraps to 0 */
        CHECK(s->x[0] == 0 && s->x[3] == 4.5 && s->x[6] == 2.25 && s->x[8] == 0);
        CHECK(s->v[0] == 1 && s->v[4] == -3 && s->v[8] == 9);
    }
    halox_md_system_destroy(s);
    static const struct {
        const char *name, *text, *message;
    } bad[] = {
        {"dup.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z\n4 1 1 1\n4 2 2 2\n",
         "atom id 4 appears twice (lines 10 and 11)"},
        {"tri.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS xy xz yz pp pp pp\n"
         "0 9 0.5\n0 9 0\n0 9 0\nITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "line 6: the box is triclinic (tilt 0.5)"},
        {"nopos.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y\n1 1 1\n2 2 2\n",
         "line 9: ITEM: ATOMS has x y but not z: give all of x y z"},
        {"nopos2.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id type\n1 1\n2 1\n",
         "line 9: ITEM: ATOMS has no positions"},
        /* velocities in part would be dropped (and drawn at temp) without a word */
        {"partv.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z vx vz\n1 1 1 1 0 0\n2 2 2 2 0 0\n",
         "line 9: ITEM: ATOMS has vx vz but not vy: give all of vx vy vz, or none"},
        {"twice.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z x\n1 1 1 1 5\n2 2 2 2 6\n",
         "line 9: ITEM: ATOMS names the column 'x' twice (columns 2 and 5)"},
        /* halox-md's boxes are periodic: a fixed or shrink-wrapped boundary is refused */
        {"fixed.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS ff pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "line 5: 'ITEM: BOX BOUNDS ff pp pp' says the box is not periodic in x (ff)"},
        {"shrink.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS xy xz yz pp pp sm\n"
         "0 9 0\n0 9 0\n0 9 0\nITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "says the box is not periodic in z (sm)"},
        {"flags.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "line 5: cannot read 'ITEM: BOX BOUNDS pp pp': give ITEM: BOX BOUNDS pp pp pp"},
        /* a frame not read is checked too */
        {"edge.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 -5\n0 9\n"
         "ITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n"
         "ITEM: TIMESTEP\n1\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "line 7: the box bounds '0 -5' make an edge of -5: give LO HI with HI above LO"},
        /* a TIMESTEP that is not a step was skipped (the item's name was overwritten) */
        {"step.dump",
         "ITEM: TIMESTEP\nabcdefgh\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n"
         "0 9\n0 9\nITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "line 2: cannot read the TIMESTEP 'abcdefgh'"},
        {"short.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "is truncated: line 4 announces 3 atoms but the file ends after 2"},
        {"more.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n3 3 3 3\n",
         "line 4 announces 2 atoms, but the frame holds more atom lines (line 12, '3 3 3 3'"},
        {"order.dump", "ITEM: TIMESTEP\n0\nITEM: ATOMS id x y z\n1 1 1 1\n2 2 2 2\n",
         "line 3: ITEM: ATOMS before ITEM: NUMBER OF ATOMS"},
        {"item.dump", "ITEM: TIMESTEP\n0\nITEM: BONDS\n1\n", "unknown item 'ITEM: BONDS'"},
        {"cols.dump",
         "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 9\n0 9\n0 9\n"
         "ITEM: ATOMS id x y z vx vy vz\n1 1 1 1 0 0 0\n2 2 2 2 0 0\n",
         "line 11: '2 2 2 2 0 0' has 6 columns, fewer than the 7 columns of ITEM: ATOMS"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        p = file(bad[k].name, bad[k].text);
        halox_status_t st = read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s);
        CHECK_MSG(st != HALOX_OK && contains(halox_last_error(), bad[k].message),
                  "%s: status %d, message: %s", bad[k].name, (int)st, halox_last_error());
        halox_md_system_destroy(s);
    }
}

/* Atoms on top of each other gave infinite energies and a run that ended with exit 0: a pair
 * closer than 0.5 is refused with both atoms, across the periodic boundary too; a cluster in a
 * sparse box (far more cells of that width than atoms) is checked as fast as a dense one. */
static void overlapping_atoms(void)
{
    halox_md_system_t *s = NULL;
    const char *p = file("coincident.xyz", "3\nLattice=\"9 0 0 0 9 0 0 0 9\"\nAr 1 1 1\nAr 4 4 4\n"
                                           "Ar 1 1 1\n");
    CHECK_STATUS(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "coincident.xyz: atoms 0 and 2 of frame 0 (lines 3 and "
                                           "5) are 0 apart, closer than 0.5"),
              "message: %s", halox_last_error());
    p = file("close.xyz", "3\nLattice=\"9 0 0 0 9 0 0 0 9\"\nAr 4 4 4\nAr 0.1 1 1\n"
                          "Ar 8.9 1 1.2\n");
    CHECK_STATUS(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "atoms 1 and 2 of frame 0 (lines 4 and 5) are 0.282843 "
                                           "apart"),
              "message: %s", halox_last_error());
    enum { N = 4096 };
    char *text = malloc((size_t)N * 48 + 100);
    if (!text)
        return;
    int n = sprintf(text, "%d\nLattice=\"1e6 0 0 0 1e6 0 0 0 1e6\"\n", N);
    for (int i = 0; i < N; i++)
        n += sprintf(text + n, "Ar %d %d %d\n", i % 16, i / 16 % 16, i / 256);
    p = file("sparse.xyz", text);
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s));
    halox_md_system_destroy(s);
    s = NULL;
    n += sprintf(text + n, "Ar 15 15 15.4\n");
    text[0] = '4', text[1] = '0', text[2] = '9', text[3] = '7';
    p = file("sparse2.xyz", text);
    free(text);
    CHECK_STATUS(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s), HALOX_ERR_IO);
    CHECK_MSG(contains(halox_last_error(), "atoms 4095 and 4096 of frame 0 (lines 4098 and 4099) "
                                           "are 0.4 apart"),
              "message: %s", halox_last_error());
}

/* Value lines as long as the ITEM: line before them or longer (the scan once kept the item's
 * name in the line buffer that its values then overwrote): a TIMESTEP of 123456, an atom count
 * of 3000 with CRLF line ends, and the engine's own dump of 10976 atoms, read back bit for bit. */
static void dump_long_values(void)
{
    enum { N = 3000 };
    size_t cap = 200 + (size_t)N * 64, n = 0;
    char *text = malloc(cap);
    if (!text) {
        CHECK(0);
        return;
    }
    n += (size_t)snprintf(text, cap,
                          "ITEM: TIMESTEP\r\n123456\r\nITEM: NUMBER OF ATOMS\r\n%d\r\n"
                          "ITEM: BOX BOUNDS pp pp pp\r\n0 15\r\n0 15\r\n0 15\r\n"
                          "ITEM: ATOMS id x y z vx vy vz\r\n",
                          N);
    for (int i = 0; i < N; i++) /* one per unit cube, ids from 1 */
        n += (size_t)snprintf(text + n, cap - n, "%d %d %d %d 0.5 %g -0.25\r\n", i + 1, i % 15,
                              i / 15 % 15, i / 225, 0.001 * i);
    const char *p = file("crlf.lammpstrj", text);
    free(text);
    halox_md_read_info_t info;
    CHECK_OK(halox_md_read_probe(p, HALOX_MD_READ_LAST, &info));
    CHECK_MSG(info.step == 123456 && info.natoms == N && info.velocities, "step %lld, %lld atoms",
              info.step, info.natoms);
    halox_md_system_t *s = NULL;
    CHECK_OK(read_sys(p, HALOX_MD_READ_LAST, 1.0, 0, &s));
    if (s)
        CHECK(s->natoms == N && s->x[3 * 2999] == 14 && s->x[3 * 2999 + 2] == 13 &&
              s->v[3 * 2999 + 1] == 0.001 * 2999 && s->v[3 * 2999 + 2] == -0.25);
    halox_md_system_destroy(s);

    char path[512];
    snprintf(path, sizeof path, "%s/big.lammpstrj", dir);
    halox_md_config_t c;
    halox_md_config_default(&c);
    c.cells[0] = c.cells[1] = c.cells[2] = 14;
    c.steps = 0;
    c.xyz_path = path;
    c.real = HALOX_DOUBLE;
    halox_md_result_t res;
    memset(&res, 0, sizeof res);
    res.want_state = 1;
    CHECK_OK(halox_md_threads_run(&c, NULL, &res));
    CHECK_OK(halox_md_read_probe(path, HALOX_MD_READ_LAST, &info));
    CHECK_MSG(info.natoms == 10976 && info.step == 0, "%lld atoms, step %lld", info.natoms,
              info.step);
    s = NULL;
    CHECK_OK(read_sys(path, HALOX_MD_READ_LAST, 1.0, 0, &s));
    long long diff = 0;
    for (long long i = 0; s && res.x && i < 3 * s->natoms; i++)
        diff += s->x[i] != res.x[i] || s->v[i] != res.v[i];
    CHECK_MSG(s && res.x && s->natoms == res.natoms && diff == 0,
              "big.lammpstrj: %lld of the positions and velocities differ", diff);
    halox_md_system_destroy(s);
    halox_md_result_free(&res);
    remove(path);
}

/* What the engine writes, read back: the last frame of each format equals the run's final
 * state bit for bit (double, 17 digits), and the frame count, step and box are the run's. */
static void round_trip(void)
{
    const char *names[2] = {"run.xyz", "run.lammpsdump"};
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        halox_md_config_t c;
        halox_md_config_default(&c);
        c.cells[0] = c.cells[1] = c.cells[2] = 4;
        c.steps = 10;
        c.xyz_every = 5;
        c.xyz_path = path; /* the format by the name */
        c.real = HALOX_DOUBLE;
        c.grid = (halox_grid_t){{2, 1, 1}};
        halox_md_result_t res;
        memset(&res, 0, sizeof res);
        res.want_state = 1;
        CHECK_OK(halox_md_threads_run(&c, NULL, &res));
        halox_md_read_info_t info;
        CHECK_OK(halox_md_read_probe(path, HALOX_MD_READ_LAST, &info));
        CHECK_MSG(info.format == (k ? HALOX_MD_TRAJ_LAMMPS : HALOX_MD_TRAJ_XYZ) &&
                      info.nframes == 3 && info.frame == 2 && info.step == 10 &&
                      info.natoms == 256 && info.velocities && info.has_box,
                  "%s: format %d, %lld frames, step %lld", names[k], (int)info.format, info.nframes,
                  info.step);
        halox_md_system_t *s = NULL;
        CHECK_OK(read_sys(path, HALOX_MD_READ_LAST, 1.0, 0, &s));
        long long diff = 0;
        for (long long i = 0; s && res.x && i < 3 * s->natoms; i++)
            diff += s->x[i] != res.x[i] || s->v[i] != res.v[i];
        CHECK_MSG(s && res.x && s->natoms == res.natoms && diff == 0,
                  "%s: %lld of the positions and velocities differ", names[k], diff);
        halox_md_system_destroy(s);
        halox_md_result_free(&res);
        remove(path);
    }
}

int main(void)
{
    if (md_test_make_dir(dir, sizeof dir, "halox-md-read") != 0)
        return 1;
    xyz_frames_and_velocities();
    lammps_dumps();
    overlapping_atoms();
    dump_long_values();
    round_trip();
    md_test_remove_dir(dir);
    TEST_DONE();
}
