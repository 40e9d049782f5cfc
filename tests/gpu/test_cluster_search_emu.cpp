/* The GPU engine's pair-list search (md/platforms/cuda/md_cluster_search.cuh) on the CPU through
 * the host emulation of tests/emu, so that its logic runs in CI (no GPU there); test_gpu_clusters
 * runs the same kernel on the device against a brute force over atom pairs.
 *
 * The clusters are laid out here as the sort lays them out (md_cluster_sort.cu): columns of the
 * x-y grid, each column's atoms in z order cut into clusters of 8, bounding boxes with the zone
 * mask, the per-column running tops and bottoms (zwin). Each row's entries (the clusters j it
 * owns, and their image shifts) must equal, as a set and without repeats, the cluster pairs a brute force
 * over every pair of boxes and every image finds within the list radius, with the same float
 * arithmetic: a window the bisection cuts too short, a lane that takes the wrong window of the
 * packing, or a column range that misses one, drops or repeats entries. Boxes tall enough that a
 * column holds several warps of clusters (bisected) and a cube (short columns); periodic in z and
 * open. With halo atoms (zones 1, 2 and 3 of
 * a split in x and y, parts 4-7 empty) the non-local rows too: home rows take every halo cluster
 * in reach, halo rows the halo clusters j >= i whose zones may pair; the parts' column ranges
 * (CL_D_PART_RANGE) are made as the sort makes them, so a range that cuts a window too many
 * drops entries. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "platforms/cuda/md_cluster_search.cuh"

static int g_fail;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            if (g_fail++ < 20) {                                                                   \
                printf("FAIL %s:%d: ", __FILE__, __LINE__);                                        \
                printf(__VA_ARGS__);                                                               \
                printf("\n");                                                                      \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

/* One layout: n random atoms at density 0.8 in [0, L)^2 x [0, Lz), clustered as the sort does,
 * searched with radius rl under shift_dims, compared with the brute force. */
static void check(double L, double Lz, int shift_dims, uint64_t seed, int halo = 0)
{
    const double density = 0.8, rl = 2.9;
    /* with halo: the home atoms below Lh in x and y, zone 1 beyond it in x, 2 in y, 3 in both */
    const double Lh = L - rl;
    const int n = (int)(density * L * L * Lz);
    std::vector<float> x(3 * (size_t)n);
    uint64_t st = seed;
    for (int i = 0; i < n; i++) {
        x[3 * i] = (float)(uniform(&st) * L);
        x[3 * i + 1] = (float)(uniform(&st) * L);
        x[3 * i + 2] = (float)(uniform(&st) * Lz);
    }
    /* the sort's geometry: columns as wide as a cube of 8 atoms; the extent is the box in
     * shift dimensions, else the atoms with a margin */
    const double side = cbrt(8.0 / density);
    cl_geom_t g;
    memset(&g, 0, sizeof g);
    const double ext[3] = {L, L, Lz};
    for (int d = 0; d < 3; d++) {
        const int per = (shift_dims >> d) & 1;
        const double lo = per ? 0.0 : -0.01, e = per ? ext[d] : ext[d] + 0.02;
        g.m[d] = d < 2 ? (int)ceil(e / side) : 1;
        g.lo[d] = (float)lo;
        g.inv_w[d] = (float)(g.m[d] / e);
        g.box[d] = per ? (float)ext[d] : 0.0f;
    }
    g.shift_dims = shift_dims;
    g.parts = halo ? CL_PARTS : 1;
    const int ncol = g.m[0] * g.m[1], ncols = g.parts * ncol;
    std::vector<int> zone((size_t)n, 0);
    std::vector<std::vector<int>> cols((size_t)ncols);
    for (int i = 0; i < n; i++) {
        int c[2];
        for (int d = 0; d < 2; d++) {
            int k = (int)floorf((x[3 * i + d] - g.lo[d]) * g.inv_w[d]);
            c[d] = k < 0 ? 0 : (k >= g.m[d] ? g.m[d] - 1 : k);
        }
        if (halo)
            zone[(size_t)i] = (x[3 * i] >= Lh ? 1 : 0) + (x[3 * i + 1] >= Lh ? 2 : 0);
        cols[(size_t)(zone[(size_t)i] * ncol + c[1] * g.m[0] + c[0])].push_back(i);
    }
    std::vector<int> col((size_t)ncols + 1, 0);
    std::vector<float4> bbox;
    for (int c = 0; c < ncols; c++) {
        std::vector<int> &a = cols[(size_t)c];
        std::sort(a.begin(), a.end(), [&](int p, int q) {
            return x[3 * p + 2] < x[3 * q + 2] || (x[3 * p + 2] == x[3 * q + 2] && p < q);
        });
        for (size_t k = 0; k < a.size(); k += 8) {
            const unsigned zm = 1u << zone[(size_t)a[k]]; /* a column holds one part */
            float4 lo = make_float4(3e38f, 3e38f, 3e38f, __uint_as_float(zm));
            float4 hi = make_float4(-3e38f, -3e38f, -3e38f, 0.0f);
            for (size_t l = k; l < k + 8 && l < a.size(); l++) {
                const float *p = &x[3 * (size_t)a[l]];
                lo.x = fminf(lo.x, p[0]), lo.y = fminf(lo.y, p[1]), lo.z = fminf(lo.z, p[2]);
                hi.x = fmaxf(hi.x, p[0]), hi.y = fmaxf(hi.y, p[1]), hi.z = fmaxf(hi.z, p[2]);
            }
            bbox.push_back(lo);
            bbox.push_back(hi);
        }
        col[(size_t)c + 1] = (int)(bbox.size() / 2);
    }
    const int ncl = col[(size_t)ncols], ncl_home = col[(size_t)ncol];
    std::vector<float2> zwin((size_t)ncl);
    int longest = 0;
    /* the parts' column ranges as the sort leaves them (cl_reset, cl_zwin) */
    int dims[CL_D_ALL] = {0};
    for (int k = CL_D_PART_RANGE; k < CL_D_ALL; k++)
        dims[k] = ((k - CL_D_PART_RANGE) & 1) ? -1 : 0x7fffffff;
    for (int c = 0; c < ncols; c++) {
        if (col[(size_t)c + 1] > col[(size_t)c]) {
            int *r = dims + CL_D_PART_RANGE + 4 * (c / ncol);
            const int cx = c % ncol % g.m[0], cy = c % ncol / g.m[0];
            r[0] = std::min(r[0], cx), r[1] = std::max(r[1], cx);
            r[2] = std::min(r[2], cy), r[3] = std::max(r[3], cy);
        }
        float top = -3e38f, bottom = 3e38f;
        for (int j = col[(size_t)c]; j < col[(size_t)c + 1]; j++)
            zwin[(size_t)j].x = top = fmaxf(top, bbox[2 * (size_t)j + 1].z);
        for (int j = col[(size_t)c + 1] - 1; j >= col[(size_t)c]; j--)
            zwin[(size_t)j].y = bottom = fminf(bottom, bbox[2 * (size_t)j].z);
        longest = std::max(longest, col[(size_t)c + 1] - col[(size_t)c]);
    }
    const int cap = 4096, cap_nl = halo ? cap : 0;
    std::vector<int> jl((size_t)ncl * cap, -1), cnt((size_t)ncl, -1), need(2, 0);
    std::vector<int> jl_nl((size_t)ncl * cap_nl + 1), cnt_nl((size_t)ncl, 0);
    dims[CL_D_NCL_HOME] = ncl_home;
    dims[CL_D_NCL] = ncl;
    HALOX_LAUNCH(cl_search, cl_blocks(32LL * ncl, 128), 128, 0)
    (bbox.data(), zwin.data(), col.data(), g, dims, (float)rl, jl.data(), cnt.data(), cap,
     jl_nl.data(), cnt_nl.data(), cap_nl, need.data());
    EXPECT(need[0] == 0 && need[1] == 0, "rows overflowed: need %d / %d", need[0], need[1]);

    /* the brute force: every box pair j >= i under every image, the kernel's arithmetic */
    const float rl2 = (float)(rl * rl);
    long long entries = 0, wrong = 0;
    for (int i = 0, list = 0; list < 2; i += 1) {
        if (i == ncl) { /* the non-local lists next (with halo) */
            if (!halo || list == 1)
                break;
            i = 0;
            list = 1;
        }
        const float4 ilo = bbox[2 * (size_t)i], ihi = bbox[2 * (size_t)i + 1];
        const unsigned zi = __float_as_uint(ilo.w);
        if (list == 0 && i >= ncl_home)
            continue; /* halo rows have no local list */
        std::vector<int> want;
        for (int j = list == 0 ? 0 : i; j < ncl; j++) {
            const float4 jlo = bbox[2 * (size_t)j], jhi = bbox[2 * (size_t)j + 1];
            /* local: home with home; non-local: any row with halo clusters whose zones meet */
            if (list == 0 ? j >= ncl_home
                          : (j < ncl_home || !cl_zones_meet(zi, __float_as_uint(jlo.w))))
                continue;
            /* local: the pair (i, j) in row i when j follows i by less than half the circle of
             * home clusters, at exactly half in the row of the lower index */
            const int ahead = (j - i + ncl_home) % ncl_home;
            if (list == 0 && ahead != 0 && 2 * ahead > ncl_home)
                continue;
            if (list == 0 && 2 * ahead == ncl_home && j < i)
                continue;
            for (int sz = -1; sz <= 1; sz++)
                for (int sy = -1; sy <= 1; sy++)
                    for (int sx = -1; sx <= 1; sx++) {
                        const int s[3] = {sx, sy, sz};
                        int ok = 1;
                        for (int d = 0; d < 3; d++)
                            ok &= s[d] == 0 || ((shift_dims >> d) & 1);
                        if (!ok)
                            continue;
                        const float ox = sx * g.box[0], oy = sy * g.box[1], oz = sz * g.box[2];
                        const float dx = fmaxf(0.0f, fmaxf(jlo.x + ox - ihi.x, ilo.x - jhi.x - ox));
                        const float dy = fmaxf(0.0f, fmaxf(jlo.y + oy - ihi.y, ilo.y - jhi.y - oy));
                        const float dz = fmaxf(0.0f, fmaxf(jlo.z + oz - ihi.z, ilo.z - jhi.z - oz));
                        const int sh = (sx + 1) + 3 * (sy + 1) + 9 * (sz + 1);
                        if (dx * dx + dy * dy + dz * dz < rl2 &&
                            (j != i || sh >= MD_CLUSTER_NO_SHIFT))
                            want.push_back(j | (sh << MD_CLUSTER_SHIFT_BIT));
                    }
        }
        const int *row = list ? jl_nl.data() + (long)i * cap_nl : jl.data() + (long)i * cap;
        std::vector<int> got(row, row + (list ? cnt_nl[i] : cnt[i]));
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
        entries += (long long)got.size();
        if (got != want && wrong++ < 5)
            EXPECT(0, "shifts %d, halo %d: %s row %d has %zu entries, the brute force %zu",
                   shift_dims, halo, list ? "non-local" : "local", i, got.size(), want.size());
    }
    EXPECT(wrong == 0, "shifts %d, halo %d: %lld rows differ", shift_dims, halo, wrong);
    /* periodic in every dimension, every row holds about half of its neighbourhood: the longest
     * local row near the mean (ownership by j >= i makes it twice the mean) */
    long long loc = 0;
    int most = 0;
    for (int i = 0; i < ncl_home; i++) {
        loc += cnt[(size_t)i];
        most = std::max(most, cnt[(size_t)i]);
    }
    const double mean = ncl_home > 0 ? (double)loc / ncl_home : 0.0;
    if (shift_dims == 7)
        EXPECT(most <= 1.8 * mean, "shifts 7: the longest local row holds %d entries, %.2f x the mean",
               most, most / mean);
    printf("box %.1f x %.1f, shifts %d, halo %d: %d atoms, %d clusters (%d home), "
           "%d in the longest column, %lld entries, local rows %.1f on average, %d at most\n",
           L, Lz, shift_dims, halo, n, ncl, ncl_home, longest, entries, mean, most);
}

int main(void)
{
    /* (every warp of the emulation is 32 threads of the host: the systems stay small) */
    check(6.5, 130.0, 7, 1);    /* tall, periodic: columns of ~34 clusters, bisected */
    check(6.5, 60.0, 3, 2);     /* tall, z open */
    check(12.0, 12.0, 6, 3);    /* a cube, x open: short columns, no bisection */
    check(9.0, 9.0, 7, 6);      /* periodic cubes about two list radii wide: every row meets */
    check(6.0, 6.0, 7, 7);      /* most clusters of the box, some under two images */
    check(14.0, 14.0, 4, 4, 1); /* halo zones 1-3 in x and y, z periodic */
    check(14.0, 40.0, 0, 5, 1); /* the same, open in z, bisected */
    printf(g_fail ? "%d check(s) failed\n" : "all checks passed\n", g_fail);
    return g_fail ? 1 : 0;
}
