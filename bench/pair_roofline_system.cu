/* The test system of pair_roofline_bench (pair_roofline.h): atoms on a randomly filled cubic
 * lattice with a small jitter in a periodic box, their periodic images within rl as halo atoms,
 * the atom lists (pair_roofline_atoms.cu) and the engine's cluster lists on the device, and the
 * forces of both against a CPU double-precision O(N^2) minimum-image sum. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pair_roofline.h"
#include "platforms/cuda/md_cluster.h"

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

/* n home atoms on n random sites of an m^3 lattice (m^3 >= n) in the box [0, L)^3, jitter
 * +-0.1 lattice spacing, then the periodic images within rl of the box as halo atoms. Returns
 * the total (home + halo) count; *xo (3 floats per atom) and *zo (zones) are malloc'ed. */
static int make_system(int n, uint64_t seed, double *Lout, float **xo, uint8_t **zo)
{
    const double L = cbrt(n / DENSITY), rl = CUTOFF + SKIN;
    int m = (int)ceil(cbrt((double)n) - 1e-9);
    while ((long long)m * m * m < n)
        m++;
    const long long sites = (long long)m * m * m;
    int *site = (int *)malloc(sizeof(int) * (size_t)sites);
    double *hx = (double *)malloc(sizeof(double) * 3 * (size_t)n);
    if (!site || !hx) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    uint64_t s = seed;
    for (long long k = 0; k < sites; k++)
        site[k] = (int)k;
    const double a = L / m;
    for (int i = 0; i < n; i++) {
        long long r = i + (long long)(uniform(&s) * (double)(sites - i));
        if (r >= sites)
            r = sites - 1;
        int t = site[i];
        site[i] = site[r];
        site[r] = t;
        int c = site[i];
        int ix = c % m, iy = (c / m) % m, iz = c / (m * m);
        int idx[3] = {ix, iy, iz};
        for (int d = 0; d < 3; d++) {
            double v = (idx[d] + 0.5 + 0.2 * (uniform(&s) - 0.5)) * a;
            v = fmod(v, L);
            if (v < 0)
                v += L;
            hx[3 * (size_t)i + d] = v;
        }
    }
    free(site);
    /* count, then fill the halo images */
    size_t cap = (size_t)n + 1024, tot = (size_t)n;
    float *x = (float *)malloc(sizeof(float) * 3 * cap);
    if (!x) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    for (size_t k = 0; k < 3 * (size_t)n; k++)
        x[k] = (float)hx[k];
    for (int i = 0; i < n; i++)
        for (int sx = -1; sx <= 1; sx++)
            for (int sy = -1; sy <= 1; sy++)
                for (int sz = -1; sz <= 1; sz++) {
                    if (!sx && !sy && !sz)
                        continue;
                    int sh[3] = {sx, sy, sz}, in = 1;
                    double p[3];
                    for (int d = 0; d < 3; d++) {
                        p[d] = hx[3 * (size_t)i + d] + sh[d] * L;
                        in &= p[d] >= -rl && p[d] < L + rl;
                    }
                    if (!in)
                        continue;
                    if (tot == cap) {
                        cap *= 2;
                        float *nx = (float *)realloc(x, sizeof(float) * 3 * cap);
                        if (!nx) {
                            fprintf(stderr, "out of host memory\n");
                            exit(1);
                        }
                        x = nx;
                    }
                    for (int d = 0; d < 3; d++)
                        x[3 * tot + d] = (float)p[d];
                    tot++;
                }
    free(hx);
    if (tot > (size_t)0x7fffffff) {
        fprintf(stderr, "system too large\n");
        exit(1);
    }
    uint8_t *z = (uint8_t *)malloc(tot);
    if (!z) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    memset(z, 0, (size_t)n);
    memset(z + n, 1, tot - (size_t)n);
    *Lout = L;
    *xo = x;
    *zo = z;
    return (int)tot;
}

size_t prb_estimate_bytes(int n_home)
{
    double L = cbrt(n_home / DENSITY), rl = CUTOFF + SKIN;
    double n = n_home * pow((L + 2 * rl) / L, 3.0) * 1.05;
    double mean = DENSITY * 4.0 / 3.0 * M_PI * rl * rl * rl;
    double rowcap = 1.25 * mean + 32;
    /* atom lists, cluster lists (about 300 clusters per row, 8 atoms per row), per-atom arrays */
    return (size_t)((n_home + n) * rowcap * 4 * 1.3 + (n_home + n) / 8.0 * 300 * 4 * 1.3 + n * 64 +
                    2 * n * 4 + 1e8);
}

void prb_sys_free(prb_sys_t *s)
{
    void *p[] = {s->x,          s->f,      s->fnl,    s->zone,      s->cell_of,
                 s->cell_start, s->cursor, s->scan,   s->need,      s->nbr_loc,
                 s->cnt_loc,    s->nbr_nl, s->cnt_nl, s->cell_atoms};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    md__clusters_free(&s->cl);
    md__clusters_free(&s->shift);
    free(s->hx);
    memset(s, 0, sizeof *s);
}

int prb_sys_build(prb_sys_t *s, int n_home, uint64_t seed, cudaStream_t st)
{
    memset(s, 0, sizeof *s);
    uint8_t *hz = NULL;
    s->n_home = n_home;
    s->n = make_system(n_home, seed, &s->L, &s->hx, &hz);
    const int n = s->n;
    const double rl = CUTOFF + SKIN;
    prb_cell_grid_t cg;
    prb_make_grid(s->L, rl, n, &cg);
    const int ncell = cg.m[0] * cg.m[1] * cg.m[2];
    CK(cudaMalloc((void **)&s->x, sizeof(float) * 3 * (size_t)n));
    CK(cudaMalloc((void **)&s->f, sizeof(float) * 3 * (size_t)n));
    CK(cudaMalloc((void **)&s->fnl, sizeof(float) * 3 * (size_t)n));
    CK(cudaMalloc((void **)&s->zone, (size_t)n));
    CK(cudaMalloc((void **)&s->cell_of, sizeof(int) * (size_t)n));
    CK(cudaMalloc((void **)&s->cell_atoms, sizeof(int) * (size_t)n));
    CK(cudaMalloc((void **)&s->cell_start, sizeof(int) * (size_t)(ncell + 1)));
    CK(cudaMalloc((void **)&s->cursor, sizeof(int) * (size_t)(ncell + 1)));
    CK(cudaMalloc((void **)&s->need, sizeof(int) * 2));
    CK(cudaMalloc((void **)&s->cnt_loc, sizeof(int) * (size_t)n_home));
    CK(cudaMalloc((void **)&s->cnt_nl, sizeof(int) * (size_t)n));
    CK(cudaMemcpy(s->x, s->hx, sizeof(float) * 3 * (size_t)n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(s->zone, hz, (size_t)n, cudaMemcpyHostToDevice));
    free(hz);
    CK(cudaMalloc((void **)&s->scan, sizeof(int) * prb_atoms_bin_scratch(ncell)));
    CK(prb_atoms_bin(s->x, n, &cg, s->cell_of, s->cell_start, s->cursor, s->cell_atoms, s->scan,
                     st));
    double mean = DENSITY * 4.0 / 3.0 * M_PI * rl * rl * rl;
    s->max_loc = s->max_nl = (int)(1.25 * mean + 32);
    for (int attempt = 0; attempt < 5; attempt++) {
        if (s->nbr_loc)
            cudaFree(s->nbr_loc);
        if (s->nbr_nl)
            cudaFree(s->nbr_nl);
        s->nbr_loc = s->nbr_nl = NULL;
        if (cudaMalloc((void **)&s->nbr_loc, sizeof(int) * (size_t)s->max_loc * n_home) !=
                cudaSuccess ||
            cudaMalloc((void **)&s->nbr_nl, sizeof(int) * (size_t)s->max_nl * n) != cudaSuccess) {
            cudaGetLastError();
            prb_sys_free(s);
            return -1;
        }
        int need[2] = {0, 0};
        CK(cudaMemcpyAsync(s->need, need, sizeof need, cudaMemcpyHostToDevice, st));
        CK(prb_atoms_pairlist(s->x, s->zone, n_home, n, &cg, s->cell_of, s->cell_start,
                              s->cell_atoms, (float)(rl * rl), s->nbr_loc, s->cnt_loc, s->max_loc,
                              s->nbr_nl, s->cnt_nl, s->max_nl, s->need, st));
        CK(cudaMemcpyAsync(need, s->need, sizeof need, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        if (need[0] <= s->max_loc && need[1] <= s->max_nl) {
            /* the engine's cluster lists over the same extent as the cell grid */
            float lo[3], ext[3];
            for (int d = 0; d < 3; d++) {
                lo[d] = (float)(-rl - 1e-3 * rl);
                ext[d] = (float)(s->L + 2 * rl + 2e-3 * rl);
            }
            cudaError_t e = md__clusters_build(&s->cl, s->x, s->zone, n_home, n, lo, ext, DENSITY,
                                               (float)rl, 0, st);
            /* the engine's periodic-shift lists: the home atoms alone in the periodic box
             * [0, L)^3, inner lists pruned at the engine's default inner buffer */
            if (e == cudaSuccess) {
                const float plo[3] = {0, 0, 0}, pext[3] = {(float)s->L, (float)s->L, (float)s->L};
                md__clusters_set_prune(&s->shift, (float)CUTOFF, (float)(CUTOFF * 1.05));
                e = md__clusters_build(&s->shift, s->x, s->zone, n_home, n_home, plo, pext, DENSITY,
                                       (float)rl, 7, st);
            }
            if (e == cudaErrorMemoryAllocation) {
                cudaGetLastError();
                prb_sys_free(s);
                return -1;
            }
            CK(e);
            return 0;
        }
        if (need[0] > s->max_loc)
            s->max_loc = need[0] + need[0] / 5 + 16;
        if (need[1] > s->max_nl)
            s->max_nl = need[1] + need[1] / 5 + 16;
    }
    fprintf(stderr, "pair lists did not converge\n");
    exit(1);
}

/* home forces f + fnl, as the engine sums them: atom lists or (clusters) cluster lists */
static void sys_forces(prb_sys_t *s, int clusters, cudaStream_t st)
{
    const float rc2 = (float)(CUTOFF * CUTOFF);
    if (clusters == 3) { /* super-rows of the periodic-shift list (pruned by a first kernel) */
        md_clusters_super_t su;
        memset(&su, 0, sizeof su);
        CK(md__clusters_lj(&s->shift, 0, rc2, 0.0, NULL, st));
        CK(md__clusters_clear_forces(&s->shift, st));
        CK(md__clusters_super_build(&s->shift, &su, st));
        CK(md__clusters_lj_super(&s->shift, &su, rc2, st));
        CK(md__clusters_take_forces(&s->shift, s->f, st));
        CK(cudaMemsetAsync(s->fnl, 0, sizeof(float) * 3 * (size_t)s->n, st));
        CK(cudaStreamSynchronize(st));
        md__clusters_super_free(&su);
    } else if (clusters == 2) { /* periodic shifts: every force of the home atoms from one list */
        CK(md__clusters_lj(&s->shift, 0, rc2, 0.0, NULL, st));
        CK(md__clusters_take_forces(&s->shift, s->f, st));
        CK(cudaMemsetAsync(s->fnl, 0, sizeof(float) * 3 * (size_t)s->n, st));
    } else if (clusters) {
        CK(md__clusters_lj(&s->cl, 0, rc2, 0.0, NULL, st));
        CK(md__clusters_lj(&s->cl, 1, rc2, 0.0, NULL, st));
        CK(md__clusters_take_forces(&s->cl, s->f, st));
        CK(cudaMemsetAsync(s->fnl, 0, sizeof(float) * 3 * (size_t)s->n, st));
    } else {
        CK(prb_atoms_lj(s->x, s->nbr_loc, s->cnt_loc, s->n_home, s->n_home, rc2, 0.0, s->f, s->f,
                        NULL, st));
        CK(prb_atoms_lj(s->x, s->nbr_nl, s->cnt_nl, s->n, s->n_home, rc2, 0.0, s->fnl, s->f, NULL,
                        st));
    }
    CK(cudaStreamSynchronize(st));
}

double prb_verify(int n_home, uint64_t seed, int clusters, cudaStream_t st, double *max_rel)
{
    prb_sys_t s;
    if (prb_sys_build(&s, n_home, seed, st) != 0) {
        fprintf(stderr, "verify: not enough device memory\n");
        exit(1);
    }
    sys_forces(&s, clusters, st);
    const int nh = s.n_home;
    float *f = (float *)malloc(sizeof(float) * 3 * (size_t)nh);
    float *fnl = (float *)malloc(sizeof(float) * 3 * (size_t)nh);
    CK(cudaMemcpy(f, s.f, sizeof(float) * 3 * (size_t)nh, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(fnl, s.fnl, sizeof(float) * 3 * (size_t)nh, cudaMemcpyDeviceToHost));
    const double L = s.L, rc2 = CUTOFF * CUTOFF;
    double num = 0, den = 0, worst = 0, fmax = 0;
    double *dd = (double *)malloc(sizeof(double) * (size_t)nh);
    for (int i = 0; i < nh; i++) {
        double fr[3] = {0, 0, 0};
        for (int j = 0; j < nh; j++) {
            if (j == i)
                continue;
            double d[3], r2 = 0;
            for (int k = 0; k < 3; k++) {
                d[k] = (double)s.hx[3 * (size_t)i + k] - (double)s.hx[3 * (size_t)j + k];
                d[k] -= L * nearbyint(d[k] / L);
                r2 += d[k] * d[k];
            }
            if (r2 >= rc2)
                continue;
            double sr2 = 1.0 / r2, sr6 = sr2 * sr2 * sr2, fp = 48.0 * sr6 * (sr6 - 0.5) * sr2;
            for (int k = 0; k < 3; k++)
                fr[k] += d[k] * fp;
        }
        double e2 = 0, r2 = 0;
        for (int k = 0; k < 3; k++) {
            double g = (double)f[3 * (size_t)i + k] + (double)fnl[3 * (size_t)i + k];
            e2 += (g - fr[k]) * (g - fr[k]);
            r2 += fr[k] * fr[k];
        }
        num += e2;
        den += r2;
        dd[i] = sqrt(e2);
        if (sqrt(r2) > fmax)
            fmax = sqrt(r2);
    }
    for (int i = 0; i < nh; i++)
        if (dd[i] > worst)
            worst = dd[i];
    *max_rel = fmax > 0 ? worst / fmax : 0;
    free(dd);
    free(f);
    free(fnl);
    prb_sys_free(&s);
    return den > 0 ? sqrt(num / den) : (num > 0 ? 1.0 : 0.0);
}
