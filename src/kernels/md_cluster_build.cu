/* The outer cluster pair lists of a build (see md_cluster.h for the layout): the search over the
 * sorted clusters (md_cluster_sort.cu), grown until every row fits; the list sizes, the arrays'
 * memory. Plain C-like CUDA behind the C entry points of md_cluster.h; every launch is checked. */
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/md_cluster.h"
#include "kernels/md_cluster_internal.cuh"

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
        *c0 = halox__cell_coord(lo - rl, g.lo[d], g.inv_w[d], g.m[d]);
        *c1 = halox__cell_coord(hi + rl, g.lo[d], g.inv_w[d], g.m[d]);
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

/* One warp per row cluster ic: scan the columns within rl of its box (wrapping in shift
 * dimensions) and append the clusters j >= ic whose boxes, shifted, are within rl (half lists,
 * in scan order: deterministic). A window is a column with one image in z; of a column only the
 * clusters in z reach of the row are read (bisected: a column holds the box height in clusters,
 * 72 at 3M atoms, the reach about nine, and reading them all grew as N^(4/3)), and the clusters
 * of 32 windows are packed onto the lanes (one column per pass left most lanes idle: nine
 * clusters to 32 lanes). Home rows take home clusters into the local list and halo clusters into
 * the non-local one; halo rows take halo clusters only (their pairs with home clusters are in
 * the home rows). */
static __global__ void cl_search(const float4 *__restrict__ bbox, const float2 *__restrict__ zwin,
                                 const int *__restrict__ col, int bisect_above, cl_geom_t g,
                                 int ncl_home, int ncl, float rl, int *__restrict__ jl_loc,
                                 int *__restrict__ cnt_loc, int max_loc, int *__restrict__ jl_nl,
                                 int *__restrict__ cnt_nl, int max_nl, int *__restrict__ need)
{
    int ic = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    int lane = threadIdx.x & 31;
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
    const int ncol = g.m[0] * g.m[1];
    const int nx = cx1 - cx0 + 1, nz = sz1 - sz0 + 1, nwin = (cy1 - cy0 + 1) * nx * nz;
    const float tol = 1e-3f * rl;
    int nloc = 0, nnl = 0;
    for (int p = ihalo ? 1 : 0; p < g.parts; p++) {
        /* a whole part of halo atoms whose zone no atom of this row may pair with */
        if (p > 0 && !cl_zones_meet(zmi, 1u << p))
            continue;
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
                const int cxr = cx0 + (w / nz) % nx, cyr = cy0 + w / (nz * nx);
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
                    if (j0 < ic)
                        j0 = ic < j1 ? ic : j1; /* half lists: j >= ic */
                    ox = sx * g.box[0];
                    oy = sy * g.box[1];
                    oz = sz * g.box[2];
                    /* the clusters whose boxes, shifted by oz, reach the row's slab [ilo.z - rl,
                     * ihi.z + rl], widened by a margin so that only boxes the test below
                     * refuses are left out */
                    if (j1 - j0 > bisect_above) {
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
                               (j != ic || vsh >= MD_CLUSTER_NO_SHIFT);
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

/* ---- host side ------------------------------------------------------------------------- */

extern "C" void halox__md_clusters_set_prune(md_clusters_t *c, float rc, float rl_in)
{
    c->rc = rc;
    c->rl_in = rl_in;
}

extern "C" cudaError_t halox__md_clusters_build(md_clusters_t *c, const float *x,
                                                const uint8_t *zone, int n_home, int n,
                                                const float lo[3], const float ext[3],
                                                double density, float rl, int shift_dims,
                                                cudaStream_t stream)
{
    c->n_home = n_home;
    c->n = n;
    c->rl = rl;
    c->shift_dims = shift_dims & 7;
    for (int d = 0; d < 3; d++)
        c->box[d] = ((shift_dims >> d) & 1) ? ext[d] : 0.0f;
    /* the first build: row lengths found, pinned counts, the device's step state, the watch */
    if (!c->need) {
        CL_TRY(cudaMalloc((void **)&c->need, 2 * sizeof(int)));
        CL_TRY(cudaMallocHost((void **)&c->h_small, 4 * sizeof(int)));
        CL_TRY(cudaMalloc(&c->state, sizeof(cl_state_t)));
        CL_TRY(cudaMemsetAsync(c->state, 0, sizeof(cl_state_t), stream));
        CL_TRY(cudaHostAlloc((void **)&c->watch, sizeof(md_clusters_watch_t), cudaHostAllocMapped));
        memset(c->watch, 0, sizeof *c->watch);
    }
    CL_TRY(halox__md_clusters_sort(c, x, zone, lo, ext, density, stream));
    const cl_geom_t g = cl_geom_of(c);
    CL_TRY(halox__md_clusters_arm(c, stream));
    /* lists: a first guess from the density, grown until every row fits */
    if (c->max_loc == 0) {
        double side = cbrt((double)MD_CLUSTER_SIZE / (density > 0 ? density : 1.0));
        double r = rl + 1.2 * side;
        int guess =
            (int)(4.0 / 3.0 * 3.14159265358979 * r * r * r * density / MD_CLUSTER_SIZE * 0.7 + 16);
        c->max_loc = c->max_nl = guess;
    }
    /* the pair masks (8 bytes per entry) exist only while the kernels use them, grown with
     * the lists they belong to */
    const int km = c->masks != MD_CLUSTER_MASKS_TEST;
    uint8_t **mks[] = {&c->mk_loc_in, &c->mk_nl_in};
    size_t *caps[] = {&c->cap_loc, &c->cap_nl};
    for (int k = 0; k < 2; k++) {
        if (!km && *mks[k]) {
            cudaFree(*mks[k]);
            *mks[k] = NULL;
        }
        if (km && !*mks[k])
            *caps[k] = 0; /* allocated below with the lists */
    }
    for (int attempt = 0; attempt < 4; attempt++) {
        {
            void **p[] = {(void **)&c->jl_loc, (void **)&c->jl_loc_in, (void **)&c->mk_loc_in};
            size_t el[] = {sizeof(int), sizeof(int), MD_CLUSTER_SIZE};
            size_t want = (size_t)c->max_loc * (size_t)(c->ncl_home > 0 ? c->ncl_home : 1);
            CL_TRY(halox__md_clusters_grow(p, el, km ? 3 : 2, &c->cap_loc, want));
        }
        {
            void **p[] = {(void **)&c->jl_nl, (void **)&c->jl_nl_in, (void **)&c->mk_nl_in};
            size_t el[] = {sizeof(int), sizeof(int), MD_CLUSTER_SIZE};
            size_t want = (size_t)c->max_nl * (size_t)(c->ncl > 0 ? c->ncl : 1);
            CL_TRY(halox__md_clusters_grow(p, el, km ? 3 : 2, &c->cap_nl, want));
        }
        CL_TRY(cudaMemsetAsync(c->need, 0, 2 * sizeof(int), stream));
        if (c->ncl > 0) {
            cl_search<<<cl_blocks(32LL * c->ncl, 128), 128, 0, stream>>>(
                (const float4 *)c->bbox, (const float2 *)c->zwin, c->col,
                c->no_bisect ? INT_MAX : 8, g, c->ncl_home, c->ncl, rl, c->jl_loc, c->cnt_loc,
                c->max_loc, c->jl_nl, c->cnt_nl, c->max_nl, c->need);
            CL_TRY(cudaGetLastError());
        }
        CL_TRY(cudaMemcpyAsync(&c->h_small[2], c->need, 2 * sizeof(int), cudaMemcpyDeviceToHost,
                               stream));
        CL_TRY(cudaStreamSynchronize(stream));
        int nl = c->h_small[2], nn = c->h_small[3];
        if (nl <= c->max_loc && nn <= c->max_nl)
            return cudaSuccess;
        if (nl > c->max_loc)
            c->max_loc = nl + nl / 5 + 8;
        if (nn > c->max_nl)
            c->max_nl = nn + nn / 5 + 8;
        c->grown++;
    }
    return cudaErrorInvalidValue; /* cannot happen: the second attempt has room for every row */
}

static cudaError_t cl_sum_counts(const int *cnt, int rows, long long *out)
{
    *out = 0;
    if (rows <= 0)
        return cudaSuccess;
    int *h = (int *)malloc(sizeof(int) * (size_t)rows);
    if (!h)
        return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMemcpy(h, cnt, sizeof(int) * (size_t)rows, cudaMemcpyDeviceToHost);
    for (int r = 0; e == cudaSuccess && r < rows; r++)
        *out += h[r];
    free(h);
    return e;
}

extern "C" cudaError_t halox__md_clusters_entries(const md_clusters_t *c, long long *loc,
                                                  long long *nl, long long *loc_in,
                                                  long long *nl_in)
{
    const int pr = cl_pruning(c), halo = c->ncl > c->ncl_home;
    CL_TRY(cudaDeviceSynchronize()); /* the kernels on any stream have written the counts */
    CL_TRY(cl_sum_counts(c->cnt_loc, c->ncl_home, loc));
    CL_TRY(cl_sum_counts(c->cnt_nl, halo ? c->ncl : 0, nl));
    CL_TRY(cl_sum_counts(pr ? c->cnt_loc_in : c->cnt_loc, c->ncl_home, loc_in));
    CL_TRY(cl_sum_counts(pr ? c->cnt_nl_in : c->cnt_nl, halo ? c->ncl : 0, nl_in));
    return cudaSuccess;
}

extern "C" void halox__md_clusters_free(md_clusters_t *c)
{
    void *p[] = {c->xq,        c->ref,    c->fs,        c->perm,       c->slot_of,
                 c->bbox,      c->zwin,   c->key,       c->sorted,     c->bin,
                 c->cursor,    c->scan,   c->col,       c->jl_loc,     c->cnt_loc,
                 c->jl_nl,     c->cnt_nl, c->jl_loc_in, c->cnt_loc_in, c->jl_nl_in,
                 c->cnt_nl_in, c->need,   c->state,     c->mk_loc_in,  c->mk_nl_in};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    if (c->h_small)
        cudaFreeHost(c->h_small);
    if (c->watch)
        cudaFreeHost(c->watch);
    (void)cudaGetLastError();
    memset(c, 0, sizeof *c);
}
