/* Helpers shared by the MD tests: small systems, whole runs on the threads transport, and
 * comparisons of final states (positions by minimum image, velocities). */
#ifndef HALOX_TEST_MD_COMMON_H
#define HALOX_TEST_MD_COMMON_H

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "halox/md.h"
#include "harness.h"

/* A small fcc liquid: 4 * c^3 atoms at the LAMMPS density and temperature. */
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

static inline void md_test_config(halox_md_config_t *cfg, int c)
{
    halox_md_config_default(cfg);
    cfg->cells[0] = cfg->cells[1] = cfg->cells[2] = c;
    cfg->thermo_every = 10;
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
