/* Helpers shared by the MD tests: small systems, whole runs on the threads transport, and
 * comparisons of final states (positions by minimum image, velocities). */
#ifndef HALOX_TEST_MD_COMMON_H
#define HALOX_TEST_MD_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "halox/endpoint.h"
#include "halox/md.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "harness.h"

#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200809L /* mkdtemp */
/* A new scratch folder NAME-XXXXXX in $TMPDIR (else /tmp), its path in dir; -1 (said on stderr)
 * when it cannot be made. Remove it with md_test_remove_dir. */
static inline int md_test_make_dir(char *dir, size_t n, const char *name)
{
    snprintf(dir, n, "%s/%s-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
    if (mkdtemp(dir))
        return 0;
    fprintf(stderr, "cannot make a temporary directory %s: %s\n", dir, strerror(errno));
    return -1;
}
#endif

/* Remove a test's scratch folder: its plain files (no subfolders), then the folder. */
static inline void md_test_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* A whole file, NUL-terminated (free it); *n its bytes where n is not NULL. NULL where it
 * cannot be opened or read to its end. */
static inline char *md_test_slurp(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    long len = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
    char *buf = len >= 0 ? malloc((size_t)len + 1) : NULL;
    rewind(fp);
    if (buf && fread(buf, 1, (size_t)len, fp) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf) {
        buf[len] = '\0';
        if (n)
            *n = (size_t)len;
    }
    return buf;
}

/* A small fcc liquid: 4 * c^3 atoms at the LAMMPS density and temperature. */
static inline void md_test_config(halox_md_config_t *cfg, int c)
{
    halox_md_config_default(cfg);
    cfg->cells[0] = cfg->cells[1] = cfg->cells[2] = c;
    cfg->thermo_every = 10;
}

/* A preset's settings (halox_md_config_preset) with c^3 fcc cells. */
static inline void md_test_preset(halox_md_config_t *cfg, const char *preset, int c)
{
    halox_md_config_default(cfg);
    CHECK_OK(halox_md_config_preset(cfg, preset));
    cfg->cells[0] = cfg->cells[1] = cfg->cells[2] = c;
}

/* natoms placed at random at the density (seed), the other settings the defaults. */
static inline void md_test_random(halox_md_config_t *cfg, long long natoms, double density,
                                  uint64_t seed)
{
    halox_md_config_default(cfg);
    cfg->source = HALOX_MD_RANDOM;
    cfg->natoms = natoms;
    cfg->density = density;
    cfg->seed = seed;
}

/* The pair lists: the skin, rebuilt every `every` steps, and also as soon as an atom moved more
 * than skin / 2 where `check`. */
static inline void md_test_lists(halox_md_config_t *cfg, double skin, int every, int check)
{
    cfg->skin = skin;
    cfg->rebuild_every = every;
    cfg->rebuild_check = check;
}

/* Step 0 only of c^3 fcc cells (md_test_config) at T = 0 with the cut-off and skin: energy and
 * pressure of a fixed configuration, against a closed form or brute force. */
static inline void md_test_cold(halox_md_config_t *cfg, int c, double cutoff, double skin)
{
    md_test_config(cfg, c);
    cfg->temp = 0;
    cfg->cutoff = cutoff;
    cfg->skin = skin;
    cfg->steps = 0;
}

/* The edges of cfg's fcc box: cells of cbrt(4 / density). */
static inline void md_test_fcc_box(const halox_md_config_t *cfg, double box[3])
{
    for (int d = 0; d < 3; d++)
        box[d] = cbrt(4.0 / cfg->density) * cfg->cells[d];
}

/* The runs of the decomposition-invariance tests (test_md_decomp, test_md_mpi): 4000 atoms of
 * LJ liquid (10^3 cells), 100 steps, thermo every 50, tau 0.05 for NVT; and how far another
 * grid may end from 1 rank: positions and velocities (max abs.), energies (max rel.). */
static inline void md_test_decomp_config(halox_md_config_t *cfg, halox_real_t real,
                                         halox_md_ensemble_t ens)
{
    md_test_config(cfg, 10);
    cfg->steps = 100;
    cfg->thermo_every = 50;
    cfg->real = real;
    cfg->ensemble = ens;
    cfg->tau = 0.05;
}

static inline void md_test_decomp_tolerances(halox_real_t real, double *tol_x, double *tol_v,
                                             double *tol_e)
{
    int dbl = real == HALOX_DOUBLE;
    *tol_x = dbl ? 1e-11 : 5e-4;
    *tol_v = dbl ? 1e-11 : 5e-3;
    *tol_e = dbl ? 1e-12 : 2e-5;
}

/* Run on the threads transport; fail the test (and return non-zero) on an error. */
static inline int md_test_run(const halox_md_config_t *cfg, const halox_md_hooks_t *hooks,
                              int want_state, halox_md_result_t *res)
{
    memset(res, 0, sizeof *res);
    res->want_state = want_state;
    halox_status_t st = halox_md_threads_run(cfg, hooks, res);
    if (st != HALOX_OK) {
        fprintf(stderr, "run on grid %dx%dx%d failed: %s: %s\n", cfg->grid.n[0], cfg->grid.n[1],
                cfg->grid.n[2], halox_status_string(st), res->error);
        halox_test_failures++;
        return 1;
    }
    return 0;
}

/* cfg in precision real on grid ("NXxNYxNZ") through md_test_run. */
static inline int md_test_run_on(halox_md_config_t *cfg, halox_real_t real, const char *grid,
                                 int want_state, halox_md_result_t *res)
{
    cfg->real = real;
    CHECK_OK(halox_grid_parse(grid, &cfg->grid));
    return md_test_run(cfg, NULL, want_state, res);
}

/* A one-rank engine on the threads transport, built by hand as a caller of the library does
 * (team, endpoint, halox_md_create) for cfg and sys; sys NULL: the engine's own system from cfg.
 * Returns the status of the step that failed (e->md NULL then); destroy it in any case. */
typedef struct md_test_engine {
    halox_md_system_t *own_sys;
    halox_team_t *team;
    halox_comm_t *comm;
    halox_md_t *md;
} md_test_engine_t;

static inline halox_status_t md_test_engine_create(const halox_md_config_t *cfg,
                                                   const halox_md_system_t *sys, double timeout_s,
                                                   md_test_engine_t *e)
{
    memset(e, 0, sizeof *e);
    halox_status_t st = sys ? HALOX_OK : halox_md_system_create(cfg, &e->own_sys);
    if (st == HALOX_OK)
        st = halox_team_create(1, timeout_s, &e->team);
    halox_comm_args_t args = {.real = cfg->real, .stride = 3, .team = e->team, .rank = 0};
    if (st == HALOX_OK)
        st = halox_comm_create("threads", &args, &e->comm);
    if (st == HALOX_OK)
        st = halox_md_create(cfg, e->comm, sys ? sys : e->own_sys, NULL, &e->md);
    return st;
}

static inline void md_test_engine_destroy(md_test_engine_t *e)
{
    halox_md_destroy(e->md);
    halox_comm_destroy(e->comm);
    halox_team_destroy(e->team);
    halox_md_system_destroy(e->own_sys);
}

/* The last thermo record of a run. */
static inline const halox_md_thermo_t *md_test_last(const halox_md_result_t *r)
{
    return r->n_thermo > 0 ? &r->thermo[r->n_thermo - 1] : NULL;
}

/* Largest difference of positions (minimum image in the box) and of velocities. */
static inline void md_test_compare(const halox_md_result_t *a, const halox_md_result_t *b,
                                   const double box[3], double *dx_p, double *dv_p)
{
    double dx = 0, dv = 0;
    for (long long i = 0; i < a->natoms; i++)
        for (int d = 0; d < 3; d++) {
            double e = a->x[3 * i + d] - b->x[3 * i + d];
            e -= box[d] * nearbyint(e / box[d]);
            dx = fmax(dx, fabs(e));
            dv = fmax(dv, fabs(a->v[3 * i + d] - b->v[3 * i + d]));
        }
    *dx_p = dx;
    *dv_p = dv;
}

static inline double md_rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-300); }

#endif
