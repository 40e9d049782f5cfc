/* The GPU engine's cluster pair lists and cluster LJ kernel (md/platforms/cuda/md_cluster_*.cu)
 * against a CPU brute force over every pair, in double.
 *
 * System: a jittered cubic lattice at density 0.8 filling [0, Lh + rl)^3 (no overlaps). Atoms in
 * [0, Lh)^3 are home atoms (zone 0); the others are halo atoms whose zone has bit d set when
 * coordinate d is past Lh (an eighth-shell halo as the planner makes it). The pair rule is the
 * planner's: (za & zb) == 0. Home atoms come first, halo atoms after, in a shuffled order (the
 * lists must not depend on the input order).
 *
 *  1. pair counts: the kernels' energy path adds (pair energy - eshift) per pair; with eshift
 *     = -1e6 the sum counts the pairs exactly. At cut-off rc and at the list radius rl the
 *     counts equal the brute force's (a list that misses a pair, or a kernel that counts one
 *     twice or breaks the zone rule, fails);
 *  2. forces: every atom's force (home: local + non-local; halo: non-local) within 1e-5 of the
 *     largest force of the brute force (float against double);
 *  3. the same after every atom moved up to 0.49 skin (gather, no rebuild): the lists built at
 *     rl still hold every pair within rc;
 *  4. two runs agree to rounding (the j forces are added with atomics, in varying order);
 *     rebuilding after the move and with a third of the halo atoms gone replays the build's
 *     graph (no capture but for a growth of the rows; pairs and forces against the brute force
 *     of the smaller system); zero atoms make no clusters.
 *  4b. 1-3 with columns that put an edge at the home bound (md_clusters_t.edge, as the engine
 *     builds them): the bound lies on a column edge;
 *  5. periodic shifts (no halo: the home atoms alone in a periodic box, shift dimensions all
 *     three, then only y and z with x open; boxes tall enough that a column holds more
 *     clusters than a warp reads at once, where the search bisects the column): pairs and forces
 *     against a minimum-image brute force, with and without inner lists pruned at rc + 0.1;
 *  6. a hot system, step by step: every atom moves by a random step each step, the force
 *     kernel decides its prunes on the device; the forces of every step equal those of freshly
 *     built lists, as long as the watch says no atom moved half the skin since the build (and
 *     the device counts no exceeded step); the prunes happen. Also as a multi-step graph runs
 *     the steps: the sets of maxima alternating, each step's force kick inside the next step's
 *     home gather.
 *  7. the kernel timeline (HALOX_MD_TIMELINE's stamps) of part 6's steps: one stamped launch of
 *     the home gather and the force kernel per step, in the stream's order.
 *  8. a step captured once (gather, pair kernels, halo forces, kick) replayed after builds with
 *     other counts (the spans of md_cluster.h): pairs and forces against the brute force of each
 *     build; spans too small for a build are seen (test_span_graph).
 *  9. the rebuild's permute of the home atoms with the blow-up check's largest |v|^2
 *     (test_permute_speeds).
 *  1-3, 5 and 6 also run over inner lists pruned at rc + 0.1.
 *
 * Exit 77 (skipped) when no GPU is visible. Built as test_clusters_emu (HALOX_TEST_EMU_GPU) it runs
 * through the host emulation of tests/emu in CI: the whole set, a smaller one in sanitizer
 * builds. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mpi_common.h"
#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_kernels.h"
#include "test_gpu_common.h"

#define DENSITY 0.8
#define RC      2.5
#define SKIN    0.4

typedef struct sys {
    int nh, n;
    float *x;      /* 3n, home first */
    uint8_t *z;    /* n */
    double lh, rl; /* home edge (x and y; z too in a cubic system), list radius */
    double lz;     /* a periodic system's z edge (taller than lh: columns of many clusters) */
} sys_t;

static void make_system(sys_t *s, int cells, uint64_t seed)
{
    const double a = cbrt(1.0 / DENSITY);
    s->rl = RC + SKIN;
    s->lh = cells * a;
    const int m = cells + (int)ceil(s->rl / a);
    const int total = m * m * m;
    float *hx = malloc(sizeof(float) * 3 * (size_t)total);
    float *xx = malloc(sizeof(float) * 3 * (size_t)total);
    uint8_t *hz = malloc((size_t)total);
    uint64_t st = seed;
    int nh = 0, nhalo = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            for (int k = 0; k < m; k++) {
                double p[3] = {(i + 0.5) * a, (j + 0.5) * a, (k + 0.5) * a};
                uint8_t zone = 0;
                for (int d = 0; d < 3; d++) {
                    p[d] += (tm_uniform(&st) - 0.5) * 0.2 * a;
                    if (p[d] >= s->lh)
                        zone |= (uint8_t)(1u << d);
                }
                if (zone == 0) {
                    for (int d = 0; d < 3; d++)
                        hx[3 * nh + d] = (float)p[d];
                    nh++;
                } else {
                    hz[nhalo] = zone;
                    for (int d = 0; d < 3; d++)
                        xx[3 * nhalo + d] = (float)p[d];
                    nhalo++;
                }
            }
    /* shuffle the halo atoms among themselves, the home atoms among themselves */
    for (int pass = 0; pass < 2; pass++) {
        float *q = pass ? xx : hx;
        int cnt = pass ? nhalo : nh;
        for (int i = cnt - 1; i > 0; i--) {
            int j = (int)(tm_uniform(&st) * (i + 1));
            for (int d = 0; d < 3; d++) {
                float t = q[3 * i + d];
                q[3 * i + d] = q[3 * j + d];
                q[3 * j + d] = t;
            }
            if (pass) {
                uint8_t t = hz[i];
                hz[i] = hz[j];
                hz[j] = t;
            }
        }
    }
    s->nh = nh;
    s->n = nh + nhalo;
    s->x = malloc(sizeof(float) * 3 * (size_t)s->n);
    s->z = malloc((size_t)s->n);
    memcpy(s->x, hx, sizeof(float) * 3 * (size_t)nh);
    memcpy(s->x + 3 * (size_t)nh, xx, sizeof(float) * 3 * (size_t)nhalo);
    memset(s->z, 0, (size_t)nh);
    memcpy(s->z + nh, hz, (size_t)nhalo);
    free(hx);
    free(xx);
    free(hz);
}

/* brute force: pairs within r under the zone rule, with the minimum image in the dimensions of
 * shift_dims (edges lh, lh, lz), and with f the forces */
static long long brute(const sys_t *s, int shift_dims, double r, double *f)
{
    long long pairs = 0;
    if (f)
        memset(f, 0, sizeof(double) * 3 * (size_t)s->n);
    for (int i = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++) {
            if ((s->z[i] & s->z[j]) != 0)
                continue;
            double d[3], r2 = 0;
            for (int k = 0; k < 3; k++) {
                d[k] = (double)s->x[3 * (size_t)i + k] - (double)s->x[3 * (size_t)j + k];
                const double L = k == 2 ? s->lz : s->lh;
                if ((shift_dims >> k) & 1)
                    d[k] -= L * nearbyint(d[k] / L);
                r2 += d[k] * d[k];
            }
            if (r2 >= r * r)
                continue;
            pairs++;
            if (!f)
                continue;
            double sr2 = 1.0 / r2, sr6 = sr2 * sr2 * sr2, fp = 48.0 * sr6 * (sr6 - 0.5) * sr2;
            for (int k = 0; k < 3; k++) {
                f[3 * (size_t)i + k] += d[k] * fp;
                f[3 * (size_t)j + k] -= d[k] * fp;
            }
        }
    return pairs;
}

typedef struct dev {
    float *x, *f, *fnl;
    uint8_t *z;
    double *e;
} dev_t;

/* entries of a non-local row per warp of the pair kernel (md_clusters_t.chunk; 0: whole rows) */
static int g_chunk = 0;
/* the local kernel's warps at least (md_clusters_t.loc_warps; 0: whole local rows) */
static int g_loc_warps = 0;

/* forces (kernel cut-off r) of both lists; the pair count from the energy path */
static long long run(md_clusters_t *c, dev_t *d, const sys_t *s, double r, float *hf)
{
    const float r2 = (float)(r * r);
    TG_CUDA(cudaMemset(d->e, 0, 4 * sizeof(double)));
    TG_CUDA(md__clusters_lj(c, 0, r2, -1e6, d->e, 0));
    TG_CUDA(md__clusters_lj(c, 1, r2, -1e6, d->e + 2, 0));
    double e[4] = {0, 0, 0, 0};
    TG_CUDA(cudaMemcpy(e, d->e, sizeof e, cudaMemcpyDeviceToHost));
    /* every atom's force (home: local + non-local; halo: non-local), the slots cleared */
    TG_CUDA(md__clusters_take_forces(c, d->f, 0));
    if (hf)
        TG_CUDA(cudaMemcpy(hf, d->f, sizeof(float) * 3 * (size_t)s->n, cudaMemcpyDeviceToHost));
    /* each pair adds 1e6 + its energy (< 1e3 in total here), once (half lists) */
    return (long long)llround((e[0] + e[2]) / 1e6);
}

static double force_error(const sys_t *s, const float *hf, const double *ref, double *scale)
{
    double fmax = 0, worst = 0;
    for (size_t k = 0; k < 3 * (size_t)s->n; k++)
        fmax = fmax > fabs(ref[k]) ? fmax : fabs(ref[k]);
    for (size_t k = 0; k < 3 * (size_t)s->n; k++) {
        double e = fabs((double)hf[k] - ref[k]);
        worst = worst > e ? worst : e;
    }
    *scale = fmax;
    return fmax > 0 ? worst / fmax : worst;
}

/* 1-4 on a system with a halo; with rl_in > 0 over inner lists pruned at rl_in: the pair count
 * at rl is then the count at rl_in (a pruned list holds every pair within rl_in) */
static void test_system(int cells, uint64_t seed, double rl_in, int edge)
{
    sys_t s;
    make_system(&s, cells, seed);
    const size_t n3 = 3 * (size_t)s.n;
    dev_t d;
    TG_CUDA(cudaMalloc((void **)&d.x, sizeof(float) * n3));
    TG_CUDA(cudaMalloc((void **)&d.f, sizeof(float) * n3));
    TG_CUDA(cudaMalloc((void **)&d.fnl, sizeof(float) * n3));
    TG_CUDA(cudaMalloc((void **)&d.z, (size_t)s.n));
    TG_CUDA(cudaMalloc((void **)&d.e, 4 * sizeof(double)));
    TG_CUDA(cudaMemcpy(d.x, s.x, sizeof(float) * n3, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(d.z, s.z, (size_t)s.n, cudaMemcpyHostToDevice));
    md_clusters_t c;
    memset(&c, 0, sizeof c);
    md__clusters_set_prune(&c, (float)RC, (float)rl_in);
    c.chunk = g_chunk;
    c.loc_warps = g_loc_warps;
    const double rl_count = rl_in > 0 ? rl_in : s.rl; /* the outer radius of what is counted */
    const float lo[3] = {-0.01f, -0.01f, -0.01f};
    const float ext = (float)(s.lh + s.rl + 0.02);
    const float exts[3] = {ext, ext, ext};
    if (edge) /* columns with an edge where the home atoms end (x and y) */
        c.edge[0] = c.edge[1] = (float)(s.lh - lo[0]);
    TG_CUDA(md__clusters_build(&c, d.x, d.z, s.nh, s.n, lo, exts, DENSITY, (float)s.rl, 0, 0));
    if (g_loc_warps > 0) /* the local rows cut: several chunks of a few passes each */
        CHECK_MSG(c.kloc > 1 && c.lch >= 16 && c.lch % 4 == 0 && c.kloc * c.lch >= c.max_loc,
                  "local chunks %d of %d entries, rows of %d", c.kloc, c.lch, c.max_loc);
    for (int k = 0; k < 2 && edge; k++) {
        /* the home bound on a column edge, with columns above it for the halo */
        const double at = c.edge[k] * c.inv_w[k];
        CHECK_MSG(fabs(at - floor(at + 0.5)) < 1e-4 && at > 0.5 && at < c.m[k] - 0.5,
                  "dimension %d: the home bound lies %.6f columns up, of %d", k, at, c.m[k]);
    }

    double *ref = malloc(sizeof(double) * n3);
    float *hf = malloc(sizeof(float) * n3), *hf2 = malloc(sizeof(float) * n3);
    long long want_rc = brute(&s, 0, RC, ref), want_rl = brute(&s, 0, rl_count, NULL);
    long long got_rc = run(&c, &d, &s, RC, hf), got_rl = run(&c, &d, &s, rl_count, NULL);
    double scale = 0, err = force_error(&s, hf, ref, &scale);
    long long el = 0, en = 0, eli = 0, eni = 0;
    TG_CUDA(md__clusters_entries(&c, &el, &en, &eli, &eni));
    if (rl_in > 0) /* pruned: fewer entries (the lattice is jittered) */
        CHECK_MSG(eli + eni < el + en, "inner %lld + %lld, outer %lld + %lld cluster pairs", eli,
                  eni, el, en);
    else /* no pruning asked for: the inner lists are the outer */
        CHECK(eli == el && eni == en);
    printf(
        "%d cells, inner radius %.2f%s: longest rows %d local (chunks %d), %d non-local; %d home "
        "+ %d halo atoms, %d + %d clusters, "
        "%lld + %lld cluster pairs (inner %lld + %lld; %.0f%% of the evaluated pairs within "
        "rc); pairs within rc %lld (brute %lld), within %.2f %lld (brute %lld); force error "
        "%.2e of %.3g\n",
        cells, rl_in, edge ? ", columns edged at the home bound" : "", c.max_loc, c.kloc, c.max_nl,
        s.nh, s.n - s.nh, c.ncl_home, c.ncl - c.ncl_home, el, en, eli, eni,
        100.0 * (double)want_rc / (64.0 * (double)(eli + eni)), got_rc, want_rc, rl_count, got_rl,
        want_rl, err, scale);
    CHECK_MSG(got_rc == want_rc, "pairs within rc: %lld, brute force %lld", got_rc, want_rc);
    CHECK_MSG(got_rl == want_rl, "pairs within %.2f: %lld, brute force %lld", rl_count, got_rl,
              want_rl);
    CHECK_MSG(err < 1e-5, "force error %.3e", err);

    /* a second run: the same forces to rounding (atomics add the j forces in varying order) */
    run(&c, &d, &s, RC, hf2);
    {
        double worst = 0;
        for (size_t k = 0; k < n3; k++)
            worst = fmax(worst, fabs((double)hf[k] - (double)hf2[k]));
        CHECK_MSG(worst <= 1e-6 * scale, "two runs differ by %.3e (largest force %.3g)", worst,
                  scale);
    }

    /* move every atom by up to 0.49 skin (a random direction), gather, no rebuild */
    uint64_t st = seed ^ 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (size_t)s.n; i++) {
        double v[3], len = 0;
        for (int k = 0; k < 3; k++) {
            v[k] = tm_uniform(&st) - 0.5;
            len += v[k] * v[k];
        }
        len = sqrt(len) + 1e-12;
        double step = 0.49 * SKIN * tm_uniform(&st);
        for (int k = 0; k < 3; k++)
            s.x[3 * i + k] = (float)(s.x[3 * i + k] + v[k] / len * step);
    }
    TG_CUDA(cudaMemcpy(d.x, s.x, sizeof(float) * n3, cudaMemcpyHostToDevice));
    TG_CUDA(md__clusters_gather(&c, d.x, d.z, 2, NULL, 0));
    want_rc = brute(&s, 0, RC, ref);
    got_rc = run(&c, &d, &s, RC, hf);
    err = force_error(&s, hf, ref, &scale);
    printf("  after moving every atom up to 0.49 skin: pairs within rc %lld (brute %lld), force "
           "error %.2e\n",
           got_rc, want_rc, err);
    CHECK_MSG(got_rc == want_rc, "moved: pairs within rc %lld, brute force %lld", got_rc, want_rc);
    CHECK_MSG(err < 1e-5, "moved: force error %.3e", err);

    /* rebuild on the moved atoms: the build's graph is replayed, not captured again (unless
     * the rows had to grow, which captures once per growth) */
    int caps = c.captures, grown = c.grown;
    TG_CUDA(md__clusters_build(&c, d.x, d.z, s.nh, s.n, lo, exts, DENSITY, (float)s.rl, 0, 0));
    got_rc = run(&c, &d, &s, RC, NULL);
    CHECK_MSG(got_rc == want_rc, "rebuilt: pairs within rc %lld, brute force %lld", got_rc,
              want_rc);
    CHECK_MSG(c.captures == caps + (c.grown - grown), "rebuilt: %d captures, before %d, %d growths",
              c.captures, caps, c.grown - grown);
    /* a third of the halo atoms gone (the last ones: a random third, the order is shuffled): the
     * same graph with other counts on the device, pairs and forces against the brute force */
    {
        sys_t s2 = s;
        s2.n = s.n - (s.n - s.nh) / 3;
        caps = c.captures;
        grown = c.grown;
        TG_CUDA(
            md__clusters_build(&c, d.x, d.z, s2.nh, s2.n, lo, exts, DENSITY, (float)s.rl, 0, 0));
        const long long want2 = brute(&s2, 0, RC, ref);
        const long long got2 = run(&c, &d, &s2, RC, hf);
        const double err2 = force_error(&s2, hf, ref, &scale);
        printf("  rebuilt with %d of %d halo atoms: pairs within rc %lld (brute %lld), force "
               "error %.2e, %d captures\n",
               s2.n - s2.nh, s.n - s.nh, got2, want2, err2, c.captures);
        CHECK_MSG(got2 == want2, "fewer atoms: pairs within rc %lld, brute force %lld", got2,
                  want2);
        CHECK_MSG(err2 < 1e-5, "fewer atoms: force error %.3e", err2);
        CHECK_MSG(c.captures == caps + (c.grown - grown),
                  "fewer atoms: %d captures, before %d, %d growths", c.captures, caps,
                  c.grown - grown);
    }
    /* then on none */
    TG_CUDA(md__clusters_build(&c, d.x, d.z, 0, 0, lo, exts, DENSITY, (float)s.rl, 0, 0));
    CHECK(c.ncl == 0 && c.ncl_home == 0);
    CHECK(run(&c, &d, &s, RC, NULL) == 0);
    TG_CUDA(cudaDeviceSynchronize());

    md__clusters_free(&c);
    cudaFree(d.x);
    cudaFree(d.f);
    cudaFree(d.fnl);
    cudaFree(d.z);
    cudaFree(d.e);
    free(ref);
    free(hf);
    free(hf2);
    free(s.x);
    free(s.z);
}

/* A periodic system: cells^2 cz atoms on a jittered lattice in [0, L)^2 x [0, Lz), all home
 * (zone 0). */
static void make_periodic(sys_t *s, int cells, int cz, uint64_t seed)
{
    const double a = cbrt(1.0 / DENSITY);
    s->rl = RC + SKIN;
    s->lh = cells * a;
    s->lz = cz * a;
    s->nh = s->n = cells * cells * cz;
    s->x = malloc(sizeof(float) * 3 * (size_t)s->n);
    s->z = calloc((size_t)s->n, 1);
    uint64_t st = seed;
    int k = 0;
    for (int i = 0; i < cells; i++)
        for (int j = 0; j < cells; j++)
            for (int l = 0; l < cz; l++, k++) {
                const int c[3] = {i, j, l};
                for (int d = 0; d < 3; d++)
                    s->x[3 * k + d] = (float)((c[d] + 0.5 + (tm_uniform(&st) - 0.5) * 0.2) * a);
            }
    /* shuffle: the lists must not depend on the input order */
    for (int i = s->n - 1; i > 0; i--) {
        int j = (int)(tm_uniform(&st) * (i + 1));
        for (int d = 0; d < 3; d++) {
            float t = s->x[3 * i + d];
            s->x[3 * i + d] = s->x[3 * j + d];
            s->x[3 * j + d] = t;
        }
    }
}

static void dev_alloc(dev_t *d, const sys_t *s)
{
    const size_t n3 = 3 * (size_t)(s->n > 0 ? s->n : 1);
    TG_CUDA(cudaMalloc((void **)&d->x, sizeof(float) * n3));
    TG_CUDA(cudaMalloc((void **)&d->f, sizeof(float) * n3));
    TG_CUDA(cudaMalloc((void **)&d->fnl, sizeof(float) * n3));
    TG_CUDA(cudaMalloc((void **)&d->z, (size_t)(s->n > 0 ? s->n : 1)));
    TG_CUDA(cudaMalloc((void **)&d->e, 4 * sizeof(double)));
    TG_CUDA(cudaMemcpy(d->x, s->x, sizeof(float) * 3 * (size_t)s->n, cudaMemcpyHostToDevice));
    TG_CUDA(cudaMemcpy(d->z, s->z, (size_t)s->n, cudaMemcpyHostToDevice));
}

static void dev_free(dev_t *d)
{
    cudaFree(d->x);
    cudaFree(d->f);
    cudaFree(d->fnl);
    cudaFree(d->z);
    cudaFree(d->e);
}

/* the box of a periodic system for the lists: [0, L) in shift dimensions, open (with a margin)
 * in the others */
static void pbc_extent(const sys_t *s, int shift_dims, float lo[3], float ext[3])
{
    for (int d = 0; d < 3; d++) {
        const int per = (shift_dims >> d) & 1;
        lo[d] = per ? 0.0f : -0.01f;
        const double L = d == 2 ? s->lz : s->lh;
        ext[d] = per ? (float)L : (float)(L + 0.02);
    }
}

/* 5. periodic shifts, with rl_in > 0 also inner lists */
static void test_shifts(int cells, int cz, int shift_dims, double rl_in, uint64_t seed)
{
    sys_t s;
    make_periodic(&s, cells, cz, seed);
    const size_t n3 = 3 * (size_t)s.n;
    dev_t d;
    dev_alloc(&d, &s);
    md_clusters_t c;
    memset(&c, 0, sizeof c);
    md__clusters_set_prune(&c, (float)RC, (float)rl_in);
    c.chunk = g_chunk;
    c.loc_warps = g_loc_warps;
    float lo[3], ext[3];
    pbc_extent(&s, shift_dims, lo, ext);
    TG_CUDA(
        md__clusters_build(&c, d.x, d.z, s.n, s.n, lo, ext, DENSITY, (float)s.rl, shift_dims, 0));
    double *ref = malloc(sizeof(double) * n3);
    float *hf = malloc(sizeof(float) * n3);
    const long long want = brute(&s, shift_dims, RC, ref);
    /* the first kernels prune (the build armed it: a gather before them keeps the prune); a
     * gather without motion then decides no prune, so the later ones run over the inner lists:
     * energy kernels (which count the pairs), then the force-only kernel (forces checked) */
    TG_CUDA(md__clusters_gather(&c, d.x, d.z, 2, NULL, 0));
    for (int pass = 0; pass < 3; pass++) {
        long long got = want;
        if (pass < 2) {
            got = run(&c, &d, &s, RC, hf);
        } else {
            TG_CUDA(md__clusters_lj(&c, 0, (float)(RC * RC), 0.0, NULL, 0));
            TG_CUDA(md__clusters_take_forces(&c, d.f, 0));
            TG_CUDA(cudaMemcpy(hf, d.f, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        }
        double scale = 0, err = force_error(&s, hf, ref, &scale);
        CHECK_MSG(got == want, "shifts %d, pass %d: pairs within rc %lld, brute force %lld",
                  shift_dims, pass, got, want);
        CHECK_MSG(err < 1e-5, "shifts %d, pass %d: force error %.3e", shift_dims, pass, err);
        TG_CUDA(md__clusters_gather(&c, d.x, d.z, 2, NULL, 0));
    }
    long long el = 0, en = 0, eli = 0, eni = 0;
    TG_CUDA(md__clusters_entries(&c, &el, &en, &eli, &eni));
    printf(
        "shifts %d, %d atoms, box %.2f x %.2f, inner radius %.2f: %d clusters, %lld outer / %lld "
        "inner cluster pairs (%.0f%% / %.0f%% of the evaluated pairs within rc), %lld pairs\n",
        shift_dims, s.n, s.lh, s.lz, rl_in, c.ncl, el, eli, 100.0 * want / (64.0 * el),
        100.0 * want / (64.0 * (eli > 0 ? eli : 1)), want);
    CHECK(c.ncl == c.ncl_home && en == 0);
    /* a near-perfect lattice may keep every entry at rc + 0.1 (all but the cube with x open
     * do): pruning is asserted in the hot test, where the atoms move off the lattice */
    if (rl_in > RC)
        CHECK_MSG(shift_dims == 6 ? eli < el : eli <= el && eli > 0,
                  "inner %lld, outer %lld cluster pairs", eli, el);
    else
        CHECK(eli == el);
    TG_CUDA(cudaDeviceSynchronize());
    md__clusters_free(&c);
    dev_free(&d);
    free(ref);
    free(hf);
    free(s.x);
    free(s.z);
}

/* 6. a hot system step by step against freshly built lists (the kernels over the inner lists;
 * the fresh lists' kernel over their outer ones) */
/* 7. the kernel timeline of `steps` steps of one stream (each a home gather and a local force
 * kernel; the take kernels stamp nothing): one stamped launch of each per step (the first
 * MD_TL_LAUNCHES), each ending after it started and before the next kernel on the stream
 * started, no wait, nothing of the kinds not launched. */
static void check_timeline(const md_clusters_t *c, int steps)
{
    md_timeline_t *t = malloc(sizeof *t);
    TG_CUDA(md__clusters_timeline_read(c, t));
    const int n = steps < MD_TL_LAUNCHES ? steps : MD_TL_LAUNCHES;
    for (int k = 0; k < MD_TL_KINDS; k++) {
        const int launched = k == MD_TL_HOME_GATHER || k == MD_TL_LOCAL;
        int stamped = 0;
        for (int i = 0; i < MD_TL_LAUNCHES; i++)
            stamped += t->start[k][i] != ~0ull;
        CHECK_MSG(stamped == (launched ? n : 0), "timeline kind %d: %d launches stamped of %d", k,
                  stamped, launched ? n : 0);
        for (int i = 0; launched && i < n; i++) {
            CHECK(t->wait[k][i] == ~0ull);
            CHECK_MSG(t->start[k][i] <= t->end[k][i], "kind %d launch %d ends before it starts", k,
                      i);
        }
    }
    for (int i = 0; i < n; i++) {
        CHECK(t->end[MD_TL_HOME_GATHER][i] <= t->start[MD_TL_LOCAL][i]);
        if (i + 1 < n)
            CHECK(t->end[MD_TL_LOCAL][i] <= t->start[MD_TL_HOME_GATHER][i + 1]);
    }
    CHECK(t->done[MD_TL_HOME_GATHER] > 0 && t->done[MD_TL_KICK] == 0);
    printf("timeline: %d steps stamped, the first %.1f us gather + %.1f us forces\n", n,
           1e-3 * (double)(t->end[0][0] - t->start[0][0]),
           1e-3 * (double)(t->end[MD_TL_LOCAL][0] - t->start[MD_TL_LOCAL][0]));
    free(t);
}

/* The forces hf of a hot step against those of fresh lists (hr): the largest difference
 * relative to the largest force, checked below 1e-5. */
static double hot_compare(const sys_t *s, const float *hf, const float *hr, int step)
{
    const size_t n3 = 3 * (size_t)s->n;
    double fbig = 0, err = 0;
    for (size_t k = 0; k < n3; k++) {
        fbig = fmax(fbig, fabs((double)hr[k]));
        err = fmax(err, fabs((double)hf[k] - (double)hr[k]));
    }
    CHECK_MSG(err <= 1e-5 * fbig, "hot step %d: forces differ from fresh lists by %.3e of %.3g",
              step, err, fbig);
    return err / fbig;
}

/* The watch a step's end published: the largest displacement since the build, that of the
 * host's moves (most) to float rounding. */
static void hot_watch(const md_clusters_watch_t *w, double most, int step)
{
    md_clusters_watch_t r;
    memset(&r, 0, sizeof r);
    CHECK(md__clusters_watch_read(w, &r));
    CHECK_MSG(fabs(sqrt((double)r.build_d2) - most) < 1e-4,
              "hot step %d: the watch says %.6f from the build, the moves %.6f", step,
              sqrt((double)r.build_d2), most);
}

/* fused: as a multi-step graph runs them (md_clusters_t.buf): the steps alternate the sets of
 * maxima, and each step after the first moves its atoms in the home gather that also takes the
 * forces of the step before (md__clusters_kick_gather with take, h 0 and dt 1: v = the step's
 * move), so those forces are checked one step late; called right after the plain run of the
 * same system, whose prunes it must repeat. */
static void test_hot(int cells, uint64_t seed, int fused)
{
    sys_t s;
    make_periodic(&s, cells, cells, seed);
    const size_t n3 = 3 * (size_t)s.n;
    dev_t d;
    dev_alloc(&d, &s);
    md_clusters_t c, fresh;
    memset(&c, 0, sizeof c);
    memset(&fresh, 0, sizeof fresh);
    const double rl_in = RC + 0.1, half = 0.5 * SKIN;
    md__clusters_set_prune(&c, (float)RC, (float)rl_in);
    c.chunk = g_chunk;
    c.loc_warps = g_loc_warps;
    float lo[3], ext[3];
    pbc_extent(&s, 7, lo, ext);
    TG_CUDA(md__clusters_timeline(&c)); /* the stamps of part 7 */
    TG_CUDA(md__clusters_build(&c, d.x, d.z, s.n, s.n, lo, ext, DENSITY, (float)s.rl, 7, 0));
    const long long steps0 = c.watch->steps;
    float *x0 = malloc(sizeof(float) * n3), *hf = malloc(sizeof(float) * n3),
          *hr = malloc(sizeof(float) * n3), *hv = malloc(sizeof(float) * n3);
    float *dv = NULL;
    TG_CUDA(cudaMalloc((void **)&dv, sizeof(float) * n3));
    memcpy(x0, s.x, sizeof(float) * n3);
    uint64_t st = seed * 7919u + 1;
    int steps = 0;
    double worst = 0, last_most = 0;
    for (;; steps++) {
        /* a random step of up to 0.02 per atom (prunes every third step: odd and even ones), unless
         * it would take an atom half the skin from its build position (the list's end: the engine
         * rebuilds there) */
        double most = 0;
        float *nx = malloc(sizeof(float) * n3);
        for (int i = 0; i < s.n; i++) {
            double v[3], len = 0, d2 = 0;
            for (int k = 0; k < 3; k++) {
                v[k] = tm_uniform(&st) - 0.5;
                len += v[k] * v[k];
            }
            len = sqrt(len) + 1e-12;
            const double step = 0.02 * tm_uniform(&st);
            for (int k = 0; k < 3; k++) {
                nx[3 * i + k] = (float)(s.x[3 * i + k] + v[k] / len * step);
                const double e = (double)nx[3 * i + k] - (double)x0[3 * i + k];
                d2 += e * e;
            }
            most = fmax(most, sqrt(d2));
        }
        const int more = steps < 200 && most < 0.98 * half;
        if (fused && steps > 0) {
            /* the last step's forces: taken by this step's gather, or at the end */
            if (more) {
                for (size_t k = 0; k < n3; k++)
                    hv[k] = nx[k] - s.x[k];
                TG_CUDA(cudaMemcpy(dv, hv, sizeof(float) * n3, cudaMemcpyHostToDevice));
                c.buf = steps & 1;
                TG_CUDA(md__clusters_kick_gather(&c, dv, d.f, d.x, d.z, 0.0f, 1.0f, 1, NULL, 0));
            } else {
                TG_CUDA(md__clusters_take_forces(&c, d.f, 0));
            }
            TG_CUDA(cudaMemcpy(hf, d.f, sizeof(float) * n3, cudaMemcpyDeviceToHost));
            worst = fmax(worst, hot_compare(&s, hf, hr, steps - 1));
            CHECK(c.watch->steps == steps0 + steps);
            hot_watch(c.watch, last_most, steps - 1);
        }
        last_most = most;
        if (!more) {
            free(nx);
            break;
        }
        if (fused && steps > 0) { /* the atoms where the gather put them */
            TG_CUDA(cudaMemcpy(s.x, d.x, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        } else {
            memcpy(s.x, nx, sizeof(float) * n3);
            TG_CUDA(cudaMemcpy(d.x, s.x, sizeof(float) * n3, cudaMemcpyHostToDevice));
            c.buf = 0;
            TG_CUDA(md__clusters_gather(&c, d.x, d.z, 0, NULL, 0));
        }
        free(nx);
        TG_CUDA(md__clusters_lj(&c, 0, (float)(RC * RC), 0.0, NULL, 0)); /* force-only */
        if (!fused) {
            TG_CUDA(md__clusters_take_forces(&c, d.f, 0));
            TG_CUDA(cudaMemcpy(hf, d.f, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        }
        /* the fresh lists from the positions wrapped into the box, as a rebuild has them */
        for (size_t k = 0; k < n3; k++)
            hr[k] = (float)(s.x[k] - s.lh * floor(s.x[k] / s.lh));
        TG_CUDA(cudaMemcpy(d.fnl, hr, sizeof(float) * n3, cudaMemcpyHostToDevice));
        TG_CUDA(
            md__clusters_build(&fresh, d.fnl, d.z, s.n, s.n, lo, ext, DENSITY, (float)s.rl, 7, 0));
        TG_CUDA(md__clusters_lj(&fresh, 0, (float)(RC * RC), 0.0, NULL, 0));
        TG_CUDA(md__clusters_take_forces(&fresh, d.f, 0));
        TG_CUDA(cudaMemcpy(hr, d.f, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        if (!fused) {
            worst = fmax(worst, hot_compare(&s, hf, hr, steps));
            CHECK(c.watch->steps == steps0 + steps + 1);
            hot_watch(c.watch, most, steps);
        }
    }
    c.buf = 0;
    cudaFree(dv);
    free(hv);
    TG_CUDA(cudaDeviceSynchronize());
    const md_clusters_watch_t *w = c.watch;
    printf("hot system: %d atoms, %d steps until an atom would pass half the skin, "
           "%lld prunes, largest displacement %.3f (watch), %lld exceeded steps, worst force "
           "difference %.2e\n",
           s.n, steps, w->prunes[0], sqrt(w->build_d2), w->exceeded, worst);
    CHECK_MSG(steps >= 8, "only %d steps", steps);
    CHECK_MSG(w->prunes[0] >= 1 && w->prunes[0] < steps, "%lld prunes in %d steps", w->prunes[0],
              steps);
    /* the same moves (called right after the plain run): the same prunes, done by the kernel
     * (a kernel reading the other set of maxima, or a step ended from the wrong set, prunes
     * at other steps) */
    static long long plain_prunes = -1;
    if (!fused)
        plain_prunes = w->prunes[0];
    else
        CHECK_MSG(w->prunes[0] == plain_prunes, "fused steps: %lld prunes, plain steps %lld",
                  w->prunes[0], plain_prunes);
    CHECK(w->exceeded == 0);
    CHECK(sqrt(w->build_d2) < half && sqrt(w->build_d2) > 0.5 * half);
    check_timeline(&c, steps);
    long long el = 0, en = 0, eli = 0, eni = 0;
    TG_CUDA(md__clusters_entries(&c, &el, &en, &eli, &eni));
    printf("hot system: %lld outer, %lld inner cluster pairs at the end\n", el, eli);
    CHECK_MSG(eli <= el && eli > 0, "inner %lld, outer %lld cluster pairs", eli, el);
    md__clusters_free(&c);
    md__clusters_free(&fresh);
    dev_free(&d);
    free(x0);
    free(hf);
    free(hr);
    free(s.x);
    free(s.z);
}

/* 8. A step captured once and replayed across builds (spans, md_cluster.h): the gather of every
 * slot, both pair kernels, the halo forces and the kick, captured as a graph on a stream of the
 * test after a build with spans of 25 % headroom; replayed after the atoms moved (no build),
 * after builds with a third of the halo atoms gone and with a fifth of the home atoms gone too
 * (other counts: the same arrays and values, the key unchanged, the counts fit the spans), and
 * after a build of the whole system again: each time the pairs within rc and every atom's force
 * (home: the kick's f; halo: what the halo forces left in fnl) against the brute force of the
 * system built. Spans taken tight on a build with two thirds of the halo atoms gone do not fit
 * the whole system, whose direct launches still cover every cluster. */
typedef struct span_run {
    cudaStream_t cs;
    cudaGraphExec_t exec;
} span_run_t;

/* pairs within rc and the force error of one launch of the captured step on system s */
static long long span_replay(span_run_t *r, dev_t *d, const sys_t *s, double *err)
{
    TG_CUDA(cudaGraphLaunch(r->exec, r->cs));
    TG_CUDA(cudaStreamSynchronize(r->cs));
    double e[4] = {0, 0, 0, 0};
    TG_CUDA(cudaMemcpy(e, d->e, sizeof e, cudaMemcpyDeviceToHost));
    const size_t n3 = 3 * (size_t)s->n;
    float *hf = malloc(sizeof(float) * n3), *hnl = malloc(sizeof(float) * n3);
    double *ref = malloc(sizeof(double) * n3);
    /* home atoms: the kick's forces; halo atoms: the halo forces (the kick cleared nothing there
     * and wrote no halo row of f: copying those rows read memory never written, which
     * compute-sanitizer's initcheck reported) */
    TG_CUDA(cudaMemcpy(hf, d->f, sizeof(float) * 3 * (size_t)s->nh, cudaMemcpyDeviceToHost));
    TG_CUDA(cudaMemcpy(hnl, d->fnl, sizeof(float) * n3, cudaMemcpyDeviceToHost));
    memcpy(hf + 3 * (size_t)s->nh, hnl + 3 * (size_t)s->nh,
           sizeof(float) * 3 * (size_t)(s->n - s->nh));
    brute(s, 0, RC, ref);
    double scale = 0;
    *err = force_error(s, hf, ref, &scale);
    free(hf);
    free(hnl);
    free(ref);
    return (long long)llround((e[0] + e[2]) / 1e6);
}

/* s as it is built after dropping the last drop_halo halo atoms and the last drop_home home atoms
 * (the halo atoms move down: home atoms first) */
static sys_t span_subset(const sys_t *s, int drop_home, int drop_halo)
{
    sys_t t = *s;
    t.nh = s->nh - drop_home;
    t.n = t.nh + (s->n - s->nh - drop_halo);
    t.x = malloc(sizeof(float) * 3 * (size_t)(t.n > 0 ? t.n : 1));
    t.z = malloc((size_t)(t.n > 0 ? t.n : 1));
    memcpy(t.x, s->x, sizeof(float) * 3 * (size_t)t.nh);
    memcpy(t.x + 3 * (size_t)t.nh, s->x + 3 * (size_t)s->nh,
           sizeof(float) * 3 * (size_t)(t.n - t.nh));
    memcpy(t.z, s->z, (size_t)t.nh);
    memcpy(t.z + t.nh, s->z + s->nh, (size_t)(t.n - t.nh));
    return t;
}

static void test_span_graph(int cells, uint64_t seed, double rl_in)
{
    sys_t s;
    make_system(&s, cells, seed);
    const size_t n3 = 3 * (size_t)s.n;
    dev_t d;
    dev_alloc(&d, &s);
    TG_CUDA(cudaMemset(d.fnl, 0, sizeof(float) * n3));
    md_clusters_t c;
    memset(&c, 0, sizeof c);
    md__clusters_set_prune(&c, (float)RC, (float)rl_in);
    c.chunk = g_chunk;
    c.loc_warps = g_loc_warps;
    const float lo[3] = {-0.01f, -0.01f, -0.01f};
    const float ext = (float)(s.lh + s.rl + 0.02);
    const float exts[3] = {ext, ext, ext};
    TG_CUDA(md__clusters_build(&c, d.x, d.z, s.nh, s.n, lo, exts, DENSITY, (float)s.rl, 0, 0));
    md__clusters_set_span(&c, 0.25);
    CHECK(md__clusters_span_fits(&c));
    md_clusters_step_key_t key, now;
    md__clusters_step_key(&c, &key);

    span_run_t r;
    cudaGraph_t graph = NULL;
    TG_CUDA(cudaStreamCreateWithFlags(&r.cs, cudaStreamNonBlocking));
    TG_CUDA(cudaStreamBeginCapture(r.cs, cudaStreamCaptureModeThreadLocal));
    TG_CUDA(cudaMemsetAsync(d.e, 0, 4 * sizeof(double), r.cs));
    TG_CUDA(md__clusters_gather(&c, d.x, d.z, 2, NULL, r.cs));
    TG_CUDA(md__clusters_lj(&c, 0, (float)(RC * RC), -1e6, d.e, r.cs));
    TG_CUDA(md__clusters_lj(&c, 1, (float)(RC * RC), -1e6, d.e + 2, r.cs));
    TG_CUDA(md__clusters_halo_forces(&c, d.fnl, NULL, r.cs));
    TG_CUDA(md__clusters_kick(&c, NULL, d.f, d.fnl, 0.0f, NULL, r.cs));
    TG_CUDA(cudaStreamEndCapture(r.cs, &graph));
    TG_CUDA(cudaGraphInstantiate(&r.exec, graph, 0));
    TG_CUDA(cudaGraphDestroy(graph));

    double err = 0;
    long long want = brute(&s, 0, RC, NULL), got = span_replay(&r, &d, &s, &err);
    printf("spans (%d cells, inner radius %.2f, chunk %d): %d home atoms, %d + %d "
           "clusters spanned; built: pairs within rc %lld (brute %lld), force error %.2e\n",
           cells, rl_in, g_chunk, c.span.n_home, c.span.ncl_home, c.span.ncl_halo, got, want, err);
    CHECK_MSG(got == want && err < 1e-5, "spans, built: pairs %lld (brute %lld), error %.3e", got,
              want, err);

    /* the atoms moved up to 0.49 skin, no build: the graph's gather takes them */
    uint64_t st = seed ^ 0x51ed27ull;
    for (size_t k = 0; k < n3; k++)
        s.x[k] = (float)(s.x[k] + (tm_uniform(&st) - 0.5) * 0.49 * SKIN / sqrt(3.0));
    TG_CUDA(cudaMemcpy(d.x, s.x, sizeof(float) * n3, cudaMemcpyHostToDevice));
    want = brute(&s, 0, RC, NULL);
    got = span_replay(&r, &d, &s, &err);
    CHECK_MSG(got == want && err < 1e-5, "spans, moved: pairs %lld (brute %lld), error %.3e", got,
              want, err);

    /* builds with other counts on the same arrays: the captured step replayed as it is */
    const int halo = s.n - s.nh;
    const int drops[3][2] = {{0, halo / 3}, {s.nh / 5, halo / 3}, {0, 0}};
    for (int k = 0; k < 3; k++) {
        sys_t t = span_subset(&s, drops[k][0], drops[k][1]);
        TG_CUDA(cudaMemcpy(d.x, t.x, sizeof(float) * 3 * (size_t)t.n, cudaMemcpyHostToDevice));
        TG_CUDA(cudaMemcpy(d.z, t.z, (size_t)t.n, cudaMemcpyHostToDevice));
        TG_CUDA(md__clusters_build(&c, d.x, d.z, t.nh, t.n, lo, exts, DENSITY, (float)t.rl, 0, 0));
        /* as the engine after a build: the kick adds fnl of the home atoms (the returned forces),
         * where a halo atom of the last build left its force */
        TG_CUDA(cudaMemset(d.fnl, 0, sizeof(float) * n3));
        md__clusters_step_key(&c, &now);
        const int fits = md__clusters_span_fits(&c);
        const int same = memcmp(&key, &now, sizeof key) == 0;
        want = brute(&t, 0, RC, NULL);
        got = span_replay(&r, &d, &t, &err);
        printf("  built with %d home + %d halo atoms (%d + %d clusters): fits %d, key %s; pairs "
               "within rc %lld (brute %lld), force error %.2e\n",
               t.nh, t.n - t.nh, c.ncl_home, c.ncl - c.ncl_home, fits,
               same ? "unchanged" : "changed", got, want, err);
        CHECK_MSG(fits && same, "build %d: the step's spans %s, its key %s", k,
                  fits ? "fit" : "do not fit", same ? "unchanged" : "changed");
        CHECK_MSG(got == want && err < 1e-5, "build %d: pairs %lld (brute %lld), error %.3e", k,
                  got, want, err);
        free(t.x);
        free(t.z);
    }
    /* tight spans on a smaller build do not hold the whole system */
    {
        sys_t t = span_subset(&s, 0, 2 * halo / 3);
        TG_CUDA(cudaMemcpy(d.x, t.x, sizeof(float) * 3 * (size_t)t.n, cudaMemcpyHostToDevice));
        TG_CUDA(cudaMemcpy(d.z, t.z, (size_t)t.n, cudaMemcpyHostToDevice));
        TG_CUDA(md__clusters_build(&c, d.x, d.z, t.nh, t.n, lo, exts, DENSITY, (float)t.rl, 0, 0));
        md__clusters_set_span(&c, 0.0);
        CHECK(md__clusters_span_fits(&c));
        TG_CUDA(cudaMemcpy(d.x, s.x, sizeof(float) * n3, cudaMemcpyHostToDevice));
        TG_CUDA(cudaMemcpy(d.z, s.z, (size_t)s.n, cudaMemcpyHostToDevice));
        TG_CUDA(md__clusters_build(&c, d.x, d.z, s.nh, s.n, lo, exts, DENSITY, (float)s.rl, 0, 0));
        CHECK_MSG(!md__clusters_span_fits(&c),
                  "%d halo clusters fit spans of %d taken on %d halo atoms", c.ncl - c.ncl_home,
                  c.span.ncl_halo, t.n - t.nh);
        /* launched directly (not the graph), the kernels still cover the whole build */
        double *ref = malloc(sizeof(double) * n3), scale = 0;
        float *hf = malloc(sizeof(float) * n3);
        want = brute(&s, 0, RC, ref);
        TG_CUDA(md__clusters_gather(&c, d.x, d.z, 2, NULL, 0));
        got = run(&c, &d, &s, RC, hf);
        err = force_error(&s, hf, ref, &scale);
        CHECK_MSG(got == want && err < 1e-5,
                  "beyond the spans, launched directly: pairs %lld (brute %lld), error %.3e", got,
                  want, err);
        free(ref);
        free(hf);
        free(t.x);
        free(t.z);
    }
    TG_CUDA(cudaGraphExecDestroy(r.exec));
    TG_CUDA(cudaStreamDestroy(r.cs));
    md__clusters_free(&c);
    dev_free(&d);
    free(s.x);
    free(s.z);
}

/* 9. the rebuild's permute (md__kernel_permute) with the blow-up check riding along: the
 * atoms laid out in a random order (positions, velocities, ids against the host's), the largest
 * |v|^2 in mapped host memory against the host's, the [max, ticket] pair left zero for the next
 * launch (a second launch with slower atoms reports their maximum, not the first one's), a NaN
 * velocity reported as the largest float. */
static void test_permute_speeds(int n, uint64_t seed)
{
    float *x = malloc(sizeof(float) * 3 * (size_t)n), *v = malloc(sizeof(float) * 3 * (size_t)n);
    float *xo = malloc(sizeof(float) * 3 * (size_t)n), *vo = malloc(sizeof(float) * 3 * (size_t)n);
    int32_t *id = malloc(sizeof(int32_t) * (size_t)n), *ido = malloc(sizeof(int32_t) * (size_t)n);
    int *order = malloc(sizeof(int) * (size_t)n);
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        order[i] = i;
        id[i] = 1000 + i;
    }
    for (int i = n - 1; i > 0; i--) { /* a random permutation */
        const int j = (int)(tm_uniform(&st) * (i + 1)) % (i + 1);
        const int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    float *dx, *dv, *scratch;
    int32_t *did;
    int *dorder;
    unsigned *pair, *h_out, *d_out;
    TG_CUDA(cudaMalloc((void **)&dx, sizeof(float) * 3 * (size_t)n));
    TG_CUDA(cudaMalloc((void **)&dv, sizeof(float) * 3 * (size_t)n));
    TG_CUDA(cudaMalloc((void **)&did, sizeof(int32_t) * (size_t)n));
    TG_CUDA(cudaMalloc((void **)&dorder, sizeof(int) * (size_t)n));
    TG_CUDA(cudaMalloc((void **)&scratch, sizeof(float) * 7 * (size_t)n));
    TG_CUDA(cudaMalloc((void **)&pair, 2 * sizeof(unsigned)));
    TG_CUDA(cudaMemset(pair, 0, 2 * sizeof(unsigned)));
    TG_CUDA(cudaHostAlloc((void **)&h_out, sizeof(unsigned), cudaHostAllocMapped));
    TG_CUDA(cudaHostGetDevicePointer((void **)&d_out, h_out, 0));
    TG_CUDA(cudaMemcpy(dorder, order, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice));
    for (int round = 0; round < 3; round++) {
        /* round 1: slower atoms than round 0; round 2: one velocity NaN */
        const double scale = round == 1 ? 0.25 : 1.0;
        double most = 0;
        for (int i = 0; i < n; i++) {
            double v2 = 0;
            for (int d = 0; d < 3; d++) {
                x[3 * i + d] = (float)(10.0 * tm_uniform(&st));
                v[3 * i + d] = (float)(scale * (tm_uniform(&st) - 0.5) * (1 + i % 7));
                v2 += (double)v[3 * i + d] * v[3 * i + d];
            }
            most = v2 > most ? v2 : most;
        }
        if (round == 2)
            v[3 * (n / 3) + 1] = NAN;
        TG_CUDA(cudaMemcpy(dx, x, sizeof(float) * 3 * (size_t)n, cudaMemcpyHostToDevice));
        TG_CUDA(cudaMemcpy(dv, v, sizeof(float) * 3 * (size_t)n, cudaMemcpyHostToDevice));
        TG_CUDA(cudaMemcpy(did, id, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice));
        *h_out = 0x12345678u;
        TG_CUDA(md__kernel_permute(dorder, n, dx, dv, did, scratch, pair, d_out, 0));
        TG_CUDA(cudaDeviceSynchronize());
        TG_CUDA(cudaMemcpy(xo, dx, sizeof(float) * 3 * (size_t)n, cudaMemcpyDeviceToHost));
        TG_CUDA(cudaMemcpy(vo, dv, sizeof(float) * 3 * (size_t)n, cudaMemcpyDeviceToHost));
        TG_CUDA(cudaMemcpy(ido, did, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost));
        unsigned left[2] = {1, 1};
        TG_CUDA(cudaMemcpy(left, pair, sizeof left, cudaMemcpyDeviceToHost));
        int moved = 1;
        for (int k = 0; k < n && moved; k++) {
            const int a = order[k];
            moved = ido[k] == id[a];
            for (int d = 0; d < 3; d++)
                moved = moved && xo[3 * k + d] == x[3 * a + d] &&
                        memcmp(&vo[3 * k + d], &v[3 * a + d], sizeof(float)) == 0;
        }
        float got;
        memcpy(&got, h_out, sizeof got);
        printf("permute with the blow-up check, %d atoms, round %d: largest v^2 %.7g (host %.7g), "
               "pair left %u/%u\n",
               n, round, (double)got, round == 2 ? 3.0e38 : most, left[0], left[1]);
        CHECK_MSG(moved, "round %d: the atoms are not where the order puts them", round);
        CHECK(left[0] == 0 && left[1] == 0);
        if (round == 2)
            CHECK_MSG(got == 3.0e38f, "a NaN velocity reported as %g", (double)got);
        else
            CHECK_MSG(fabs((double)got - most) <= 1e-6 * most, "largest v^2 %.9g, host %.9g",
                      (double)got, most);
    }
    cudaFree(dx);
    cudaFree(dv);
    cudaFree(did);
    cudaFree(dorder);
    cudaFree(scratch);
    cudaFree(pair);
    cudaFreeHost(h_out);
    free(x);
    free(v);
    free(xo);
    free(vo);
    free(id);
    free(ido);
    free(order);
}

int main(void)
{
    if (tg_device_count() == 0) {
        printf("no CUDA device visible: skipped\n");
        return HALOX_TEST_SKIP;
    }
    test_permute_speeds(1000, 21); /* several blocks, the last one partly full */
    test_permute_speeds(1, 22);
#ifdef HALOX_TEST_EMU_GPU
    /* test_clusters_emu in a sanitizer build (the host emulation, tests/emu, runs every GPU
     * thread on one core): each path once, on small systems: a halo with outer lists, inner
     * lists on edged columns, periodic shifts pruned, a hot system, the non-local work items.
     * The plain build runs the whole set. */
    if (test_sanitized()) {
        test_system(6, 1, 0.0, 0);
        test_system(7, 9, RC + 0.1, 1);
        test_shifts(6, 6, 6, RC + 0.1, 6);
        test_hot(6, 8, 0);
        test_hot(6, 8, 1);
        test_span_graph(6, 12, 0.0);
        g_chunk = 32;
        test_system(7, 9, RC + 0.1, 0);
        test_span_graph(7, 13, RC + 0.1);
        g_loc_warps = 1 << 20;
        test_shifts(6, 6, 6, RC + 0.1, 6);
        TEST_DONE();
    }
#endif
    test_system(6, 1, 0.0, 0);       /* small: few clusters per column */
    test_system(14, 2, 0.0, 0);      /* 2744 home atoms, several list rows per column */
    test_system(14, 9, RC + 0.1, 0); /* inner lists with a halo (the zone rule) */
    /* columns with an edge at the home bound (what the engine asks for) */
    test_system(14, 2, 0.0, 1);
    test_system(15, 11, RC + 0.1, 1);
    /* periodic shifts: box 6.5 (2.2 list radii: a few columns) and 13 */
    test_shifts(6, 6, 7, 0.0, 3);
    test_shifts(12, 12, 7, 0.0, 4);
    test_shifts(12, 12, 1, 0.0, 7); /* x periodic only */
    /* tall columns (48 clusters, more than a warp): the search bisects each column for the
     * row's z reach, periodic in z (images at both ends) and open */
    test_shifts(8, 96, 7, 0.0, 9);
    test_shifts(8, 96, 3, RC + 0.1, 10);
    test_shifts(12, 12, 7, RC + 0.1, 5);
    test_shifts(12, 12, 6, RC + 0.1, 6); /* x open, y and z periodic; this one prunes */
    test_hot(12, 8, 0);
    test_hot(12, 8, 1); /* as a multi-step graph: alternating maxima, fused force kicks */
    /* a step captured once, replayed across builds (spans) */
    test_span_graph(14, 12, 0.0);
    test_span_graph(14, 13, RC + 0.1);
    /* the non-local kernel's warps taking rows in chunks of 32 and 64 entries (work items):
     * the same pairs, forces and inner lists, a prune writing each chunk's inner row */
    for (g_chunk = 32; g_chunk <= 64; g_chunk *= 2) {
        test_system(14, 2, 0.0, 0);
        test_system(14, 9, RC + 0.1, 0);
        test_shifts(8, 96, 3, RC + 0.1, 10);
        test_shifts(12, 12, 6, RC + 0.1, 6);
        test_hot(12, 8, 0);
        test_span_graph(14, 13, RC + 0.1);
    }
    /* the local rows in chunks (as many warps asked for as give chunks of the fewest entries):
     * the same pairs, forces and inner lists, a prune writing each chunk's inner row */
    g_chunk = 64;
    g_loc_warps = 1 << 20;
    test_system(14, 2, 0.0, 0);
    test_system(14, 9, RC + 0.1, 0);
    test_shifts(12, 12, 6, RC + 0.1, 6);
    test_hot(12, 8, 0);
    test_hot(12, 8, 1);
    test_span_graph(14, 13, RC + 0.1);
    TEST_DONE();
}
