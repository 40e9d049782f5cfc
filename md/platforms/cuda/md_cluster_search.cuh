/* The outer lists' search of a build (md_cluster_build.cu launches it), in a header of its own
 * so that the host emulation of tests/emu runs the very kernel in CI
 * (tests/gpu/test_cluster_search_emu.cpp). Needs md_cluster_internal.cuh. */
#ifndef HALOX_MD_CUDA_CLUSTER_SEARCH_CUH
#define HALOX_MD_CUDA_CLUSTER_SEARCH_CUH

#include "platforms/cuda/md_cluster_internal.cuh"

/* Does some zone of mask a pair with some zone of mask b under (za & zb) == 0? */
__device__ static inline int cl_zones_meet(unsigned a, unsigned b)
{
    for (int za = 0; za < 8; za++) {
        if (!((a >> za) & 1u))
            continue;
        unsigned ok = 0;
        for (int zb = 0; zb < 8; zb++)
            if ((za & zb) == 0)
                ok |= 1u << zb;
        if (b & ok)
            return 1;
    }
    return 0;
}

__device__ static inline int cl_floor_div(int a, int m)
{
    int q = a / m;
    return (a % m != 0 && a < 0) ? q - 1 : q;
}

/* The columns [c0, c1] of dimension d within rl of [lo, hi]: clamped to the grid, or in a shift
 * dimension unclamped and wrapped by the caller, widened by 1 % of a column so that the rounding
 * of an image's column (col(x) + s m against floor((x + s L - lo) / w)) cannot drop it (the
 * positions lie in the box at a build). */
__device__ static inline void cl_range(const cl_geom_t &g, int d, float lo, float hi, float rl,
                                       int *c0, int *c1)
{
    if ((g.shift_dims >> d) & 1) {
        *c0 = (int)floorf((lo - rl - g.lo[d]) * g.inv_w[d] - 0.01f);
        *c1 = (int)floorf((hi + rl - g.lo[d]) * g.inv_w[d] + 0.01f);
    } else {
        *c0 = md__cell_coord(lo - rl, g.lo[d], g.inv_w[d], g.m[d]);
        *c1 = md__cell_coord(hi + rl, g.lo[d], g.inv_w[d], g.m[d]);
    }
}

/* The first j in [a, e) with zwin[j].x >= v (bottom 0: the tops so far) or zwin[j].y > v
 * (bottom 1: the bottoms from there on); both grow along a column. Every lane alike (the loads
 * are broadcasts). */
__device__ static inline int cl_bisect(const float2 *__restrict__ zwin, int a, int e, float v,
                                       int bottom)
{
    while (a < e) {
        const int mid = (a + e) >> 1;
        const float2 w = zwin[mid];
        if (bottom ? w.y <= v : w.x < v)
            a = mid + 1;
        else
            e = mid;
    }
    return a;
}

/* Does row ic hold its pairs with home cluster j in the local list (of n home clusters)? Each
 * pair of home clusters once: j with ic when j follows ic by less than half the circle of the
 * sorted order (the half at exactly n / 2 by the lower index), ic itself (its images sorted out
 * by the shifts). Every row so holds about half of its neighbourhood; ownership by j >= ic would
 * give the first rows of the sort order their whole neighbourhood and the last ones nothing (the
 * periodic images wrap the order), a longest row of twice the mean, which the local kernel's
 * chunks are cut for. */
__device__ static inline int cl_owns(int ic, int j, int n)
{
    int d = j - ic;
    if (d < 0)
        d += n;
    return d == 0 || 2 * d < n || (2 * d == n && j > ic);
}

/* The clusters of [j0, j1) that row ic may own among n home clusters (cl_owns): the arc
 * [ic, ic + L] of the circle cut from the range, where it meets both ends of the arc (a range
 * holding ic and the wrapped end) their hull (the test of each candidate drops the rest). */
__device__ static inline void cl_own_range(int ic, int n, int *j0, int *j1)
{
    const int L = (n - 1) / 2 + (n % 2 == 0 && ic + n / 2 < n ? 1 : 0);
    const int a1 = max(*j0, ic), b1 = min(*j1, min(ic + L, n - 1) + 1);
    const int a2 = *j0, b2 = min(*j1, ic + L - n + 1);
    const int one = a1 < b1, two = a2 < b2;
    if (one && two) {
        *j0 = a2;
        *j1 = b1;
    } else if (one) {
        *j0 = a1;
        *j1 = b1;
    } else if (two) {
        *j0 = a2;
        *j1 = b2;
    } else {
        *j1 = *j0;
    }
}

/* A window of more clusters than this is bisected; a shorter one is read whole. */
#define CL_BISECT_ABOVE 8

/* One warp per row cluster ic: scan the columns within rl of its box (wrapping in shift
 * dimensions) and append the clusters whose boxes, shifted, are within rl: of home clusters those
 * the row owns (cl_owns), of halo clusters in halo rows those j >= ic (half lists, in scan
 * order: deterministic). A window is a column with one image in z; of a column only the
 * clusters in z reach of the row are read (bisected: a column holds the box height in clusters,
 * 72 at 3M atoms, the reach about nine, and reading them all grows as N^(4/3)), and the clusters
 * of 32 windows are packed onto the lanes (one column per pass left most lanes idle: nine
 * clusters to 32 lanes). Home rows take home clusters into the local list and halo clusters into
 * the non-local one; halo rows take halo clusters only (their pairs with home clusters are in
 * the home rows). Of each part only the columns where it has clusters are read (the part's
 * column range in dims, from the sort). The cluster counts come from dims (CL_D_*), need is
 * where the longest rows go when they do not fit. */
static __global__ void cl_search(const float4 *__restrict__ bbox, const float2 *__restrict__ zwin,
                                 const int *__restrict__ col, cl_geom_t g,
                                 const int *__restrict__ dims, float rl, int *__restrict__ jl_loc,
                                 int *__restrict__ cnt_loc, int max_loc, int *__restrict__ jl_nl,
                                 int *__restrict__ cnt_nl, int max_nl, int *__restrict__ need)
{
    int ic = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    int lane = threadIdx.x & 31;
    /* the cluster counts the sort found (the grid spans the capacity) */
    const int ncl_home = dims[CL_D_NCL_HOME], ncl = dims[CL_D_NCL];
    if (ic >= ncl)
        return; /* the whole warp */
    const float4 ilo = bbox[2 * (size_t)ic], ihi = bbox[2 * (size_t)ic + 1];
    const unsigned zmi = __float_as_uint(ilo.w);
    const int ihalo = ic >= ncl_home;
    const float rl2 = rl * rl;
    int cx0, cx1, cy0, cy1;
    cl_range(g, 0, ilo.x, ihi.x, rl, &cx0, &cx1);
    cl_range(g, 1, ilo.y, ihi.y, rl, &cy0, &cy1);
    /* z images: only a row within rl of a z face of the box can meet the image beyond it (the
     * clusters' boxes lie in the box, to rounding, at a build) */
    int sz0 = 0, sz1 = 0;
    if ((g.shift_dims >> 2) & 1) {
        const float zlo = g.lo[2], zhi = g.lo[2] + g.box[2], tol = 1e-2f * rl;
        sz0 = ilo.z - zlo < rl + tol ? -1 : 0;
        sz1 = zhi - ihi.z < rl + tol ? 1 : 0;
    }
    const int ncol = g.m[0] * g.m[1], nz = sz1 - sz0 + 1;
    const float tol = 1e-3f * rl;
    int nloc = 0, nnl = 0;
    for (int p = ihalo ? 1 : 0; p < g.parts; p++) {
        /* a whole part of halo atoms whose zone no atom of this row may pair with */
        if (p > 0 && !cl_zones_meet(zmi, 1u << p))
            continue;
        /* the row's columns where the part has clusters (CL_D_PART_RANGE): an empty part, or
         * one out of reach in a dimension without shifts, costs no window (in a shift dimension
         * the range wraps: taken whole) */
        const int *pr = dims + CL_D_PART_RANGE + 4 * p;
        int px0 = cx0, px1 = cx1, py0 = cy0, py1 = cy1;
        if (!(g.shift_dims & 1)) {
            px0 = max(px0, pr[0]);
            px1 = min(px1, pr[1]);
        }
        if (!((g.shift_dims >> 1) & 1)) {
            py0 = max(py0, pr[2]);
            py1 = min(py1, pr[3]);
        }
        if (pr[1] < 0 || px0 > px1 || py0 > py1)
            continue;
        const int nx = px1 - px0 + 1, nwin = (py1 - py0 + 1) * nx * nz;
        const int toloc = !ihalo && p == 0;
        int *row = toloc ? jl_loc + (size_t)ic * max_loc : jl_nl + (size_t)ic * max_nl;
        const int cap = toloc ? max_loc : max_nl;
        int k = toloc ? nloc : nnl;
        /* the row's windows (column, image in z) 32 at a time, one per lane; then their
         * clusters packed onto the lanes, in window order (deterministic) */
        for (int w0 = 0; w0 < nwin; w0 += 32) {
            const int w = w0 + lane;
            int ja = 0, len = 0, sh = 0;
            float ox = 0.0f, oy = 0.0f, oz = 0.0f;
            if (w < nwin) {
                const int cxr = px0 + (w / nz) % nx, cyr = py0 + w / (nz * nx);
                const int sz = sz0 + w % nz;
                int cx = cxr, sx = 0, cy = cyr, sy = 0;
                if (g.shift_dims & 1) {
                    sx = cl_floor_div(cxr, g.m[0]);
                    cx = cxr - sx * g.m[0];
                }
                if ((g.shift_dims >> 1) & 1) {
                    sy = cl_floor_div(cyr, g.m[1]);
                    cy = cyr - sy * g.m[1];
                }
                /* two box edges away: no atom pair within rc */
                if (sx >= -1 && sx <= 1 && sy >= -1 && sy <= 1) {
                    const int cc = p * ncol + cy * g.m[0] + cx;
                    int j0 = col[cc], j1 = col[cc + 1];
                    if (toloc) /* half lists: each pair by one of its rows */
                        cl_own_range(ic, ncl_home, &j0, &j1);
                    else if (j0 < ic)
                        j0 = ic < j1 ? ic : j1; /* halo rows: j >= ic */
                    ox = sx * g.box[0];
                    oy = sy * g.box[1];
                    oz = sz * g.box[2];
                    /* the clusters whose boxes, shifted by oz, reach the row's slab [ilo.z - rl,
                     * ihi.z + rl], widened by a margin so that only boxes the test below
                     * refuses are left out */
                    if (j1 - j0 > CL_BISECT_ABOVE) {
                        j0 = cl_bisect(zwin, j0, j1, ilo.z - rl - tol - oz, 0);
                        j1 = cl_bisect(zwin, j0, j1, ihi.z + rl + tol - oz, 1);
                    }
                    ja = j0;
                    len = j1 - j0;
                    sh = (sx + 1) + 3 * (sy + 1) + 9 * (sz + 1);
                }
            }
            int end = len; /* inclusive prefix sum over the lanes: window ends */
            for (int d = 1; d < 32; d <<= 1) {
                const int t = __shfl_up_sync(CL_FULL, end, d);
                if (lane >= d)
                    end += t;
            }
            const int total = __shfl_sync(CL_FULL, end, 31);
            const int start = end - len;
            for (int t0 = 0; t0 < total; t0 += 32) {
                const int t = t0 + lane;
                int v = 0; /* the window of candidate t: the lanes whose windows end at or
                              before t */
                for (int step = 16; step > 0; step >>= 1) {
                    const int e = __shfl_sync(CL_FULL, end, v + step - 1);
                    if (e <= t)
                        v += step;
                }
                const int vja = __shfl_sync(CL_FULL, ja, v), vst = __shfl_sync(CL_FULL, start, v);
                const int vsh = __shfl_sync(CL_FULL, sh, v);
                const float vox = __shfl_sync(CL_FULL, ox, v), voy = __shfl_sync(CL_FULL, oy, v);
                const float voz = __shfl_sync(CL_FULL, oz, v);
                const int j = vja + (t - vst);
                const int in = t < total;
                float4 jlo = make_float4(0, 0, 0, 0), jhi = jlo;
                if (in) {
                    jlo = bbox[2 * (size_t)j];
                    jhi = bbox[2 * (size_t)j + 1];
                }
                const int zok = in && cl_zones_meet(zmi, __float_as_uint(jlo.w));
                const float dx = fmaxf(0.0f, fmaxf(jlo.x + vox - ihi.x, ilo.x - jhi.x - vox));
                const float dy = fmaxf(0.0f, fmaxf(jlo.y + voy - ihi.y, ilo.y - jhi.y - voy));
                const float dz = fmaxf(0.0f, fmaxf(jlo.z + voz - ihi.z, ilo.z - jhi.z - voz));
                /* the self pair: one of the shifts s and -s (s > 13), and s = 13 */
                const int ok = zok && dx * dx + dy * dy + dz * dz < rl2 &&
                               (j != ic || vsh >= MD_CLUSTER_NO_SHIFT) &&
                               (!toloc || cl_owns(ic, j, ncl_home));
                const unsigned b = __ballot_sync(CL_FULL, ok);
                const int pos = k + __popc(b & ((1u << lane) - 1u));
                if (ok && pos < cap)
                    row[pos] = j | (vsh << MD_CLUSTER_SHIFT_BIT);
                k += __popc(b);
            }
        }
        if (toloc)
            nloc = k;
        else
            nnl = k;
    }
    if (lane == 0) {
        if (!ihalo)
            cnt_loc[ic] = nloc < max_loc ? nloc : max_loc;
        cnt_nl[ic] = nnl < max_nl ? nnl : max_nl;
        if (nloc > max_loc)
            atomicMax(&need[0], nloc);
        if (nnl > max_nl)
            atomicMax(&need[1], nnl);
    }
}

#endif
