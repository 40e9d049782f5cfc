/* Random sequential addition: uniform trial positions, rejected when closer than dmin to an atom
 * already placed (periodic). dmin keeps the packing fraction of spheres of diameter dmin at 0.3,
 * well below the jamming limit of random sequential addition (0.38), capped at 1 sigma (where
 * the LJ energy is zero); the start is then free of overlaps but not equilibrated.
 * Large boxes are filled block by block (B^3 blocks of about 32^3 cells, each given its share of
 * the atoms, trials uniform inside the block, checked against every atom placed so far): the
 * cells a trial reads then stay in cache, instead of a random cache miss per neighbour in a box
 * of gigabytes (hours for tens of millions of atoms). Up to 32 cells per edge (about 150k
 * atoms) B = 1: the plain algorithm. With HALOX_SYSTEM_CACHE the placement is read from, or
 * kept in, the system cache (system_cache.c). */
#include <math.h>
#include <stdlib.h>

#include "engine/md_internal.h"
#include "engine/rng.h"
#include "halox/status.h"
#include "systems/system.h"

halox_status_t md__random(const halox_md_config_t *cfg, halox_md_system_t *sys)
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
    int cached = 0;
    if ((st = md__system_cache_read(cfg, sys, &cached)) != HALOX_OK || cached)
        return st;
    /* clamped before the conversion: L / dmin of a huge box is beyond an int */
    const double mf = floor(L / dmin);
    int m = !(mf >= 1) ? 1 : mf > 1024 ? 1024 : (int)mf;
    long long ncell = (long long)m * m * m;
    int *head = malloc(sizeof(int) * (size_t)ncell);
    int *next = malloc(sizeof(int) * (size_t)n);
    if (!head || !next) {
        free(head);
        free(next);
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for %lld cells", ncell);
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
                    return halox_set_error(
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
    md__system_cache_write(cfg, sys);
    return HALOX_OK;
}
