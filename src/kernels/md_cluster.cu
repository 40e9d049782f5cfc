/* Cluster pair lists and the cluster Lennard-Jones kernel (see md_cluster.h for the layout).
 * Plain C-like CUDA behind the C entry points of md_cluster.h; every launch is checked. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/md_cluster.h"
#include "kernels/md_kernels.h"
#include "kernels/md_reduce.cuh"

#define CL_FULL    0xffffffffu
#define CL_THREADS 128 /* 4 warps: 4 rows per block */
#define CL_WARPS   (CL_THREADS / 32)
#define CL_PAD     1.0e9f /* padding slots sit here: farther than any cut-off from real atoms */
/* zone bits ride in w of the slot's float4 with an exponent set, so w is a normal float and no
 * flush-to-zero of denormals can touch it; the low 8 bits are the zone */
#define CL_ZONE_TAG 0x40000000
/* parts of the sort: 0 the home atoms, 1..7 the halo atoms by zone, so that every cluster holds
 * one zone and the zone rule prunes whole cluster pairs (and whole parts) in the list build */
#define CL_PARTS 8

static int cl_blocks(long long n, int threads)
{
    long long b = (n + threads - 1) / threads;
    return b < 1 ? 1 : (int)b;
}

typedef struct cl_geom {
    float lo[3], inv_w[3];
    int m[3];
} cl_geom_t;

__device__ static inline int cl_coord(float x, float lo, float inv_w, int m)
{
    int c = (int)floorf((x - lo) * inv_w);
    return c < 0 ? 0 : (c >= m ? m - 1 : c);
}

/* key = ((part * ncol) + column) * nzb + z bin */
__global__ void cl_keys(const float *__restrict__ x, const uint8_t *__restrict__ zone, int n_home,
                        int n, cl_geom_t g, int *__restrict__ key, int *__restrict__ count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int cx = cl_coord(x[3 * (size_t)i], g.lo[0], g.inv_w[0], g.m[0]);
    int cy = cl_coord(x[3 * (size_t)i + 1], g.lo[1], g.inv_w[1], g.m[1]);
    int zb = cl_coord(x[3 * (size_t)i + 2], g.lo[2], g.inv_w[2], g.m[2]);
    int part = 0;
    if (i >= n_home) { /* a halo atom always has a zone bit; 1 is a safe home for one without */
        part = zone[i] & (CL_PARTS - 1);
        part = part ? part : 1;
    }
    int k = ((part * g.m[1] + cy) * g.m[0] + cx) * g.m[2] + zb;
    key[i] = k;
    atomicAdd(&count[k], 1);
}

__global__ void cl_scatter(int n, const int *__restrict__ key, int *__restrict__ cursor,
                           int *__restrict__ sorted)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    sorted[atomicAdd(&cursor[key[i]], 1)] = i;
}

/* The scatter's order within a bin depends on atomics: sort each (small) bin by atom index so
 * clusters, lists and hence the force sums are the same in every run. */
__global__ void cl_bin_order(int nkeys, const int *__restrict__ bin, int *__restrict__ sorted)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nkeys)
        return;
    int a = bin[b], e = bin[b + 1];
    for (int k = a + 1; k < e; k++) {
        int v = sorted[k], j = k - 1;
        while (j >= a && sorted[j] > v) {
            sorted[j + 1] = sorted[j];
            j--;
        }
        sorted[j + 1] = v;
    }
}

/* clusters per column (and part) */
__global__ void cl_col_count(int ncols, int nzb, const int *__restrict__ bin, int *__restrict__ col)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= ncols)
        return;
    int atoms = bin[(size_t)(c + 1) * nzb] - bin[(size_t)c * nzb];
    col[c] = (atoms + MD_CLUSTER_SIZE - 1) / MD_CLUSTER_SIZE;
}

__global__ void cl_fill(int n, int nzb, const int *__restrict__ sorted, const int *__restrict__ key,
                        const int *__restrict__ bin, const int *__restrict__ col,
                        int *__restrict__ perm)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n)
        return;
    int i = sorted[p];
    int c = key[i] / nzb;
    int idx = p - bin[(size_t)c * nzb];
    perm[(size_t)col[c] * MD_CLUSTER_SIZE + idx] = i;
}

/* bounding boxes and zone masks of the clusters; positions of all slots (padding far away) */
__global__ void cl_bbox(int ncl, const int *__restrict__ perm, const float *__restrict__ x,
                        const uint8_t *__restrict__ zone, float4 *__restrict__ bbox,
                        float4 *__restrict__ xq)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= ncl)
        return;
    float lo0 = 3e38f, lo1 = 3e38f, lo2 = 3e38f, hi0 = -3e38f, hi1 = -3e38f, hi2 = -3e38f;
    unsigned zm = 0;
    for (int l = 0; l < MD_CLUSTER_SIZE; l++) {
        size_t s = (size_t)c * MD_CLUSTER_SIZE + l;
        int a = perm[s];
        if (a < 0) {
            xq[s] = make_float4(CL_PAD, CL_PAD, CL_PAD, __int_as_float(CL_ZONE_TAG));
            continue;
        }
        float p0 = x[3 * (size_t)a], p1 = x[3 * (size_t)a + 1], p2 = x[3 * (size_t)a + 2];
        int z = zone[a];
        lo0 = fminf(lo0, p0), lo1 = fminf(lo1, p1), lo2 = fminf(lo2, p2);
        hi0 = fmaxf(hi0, p0), hi1 = fmaxf(hi1, p1), hi2 = fmaxf(hi2, p2);
        zm |= 1u << (z & 7);
        xq[s] = make_float4(p0, p1, p2, __int_as_float(CL_ZONE_TAG | z));
    }
    bbox[2 * (size_t)c] = make_float4(lo0, lo1, lo2, __uint_as_float(zm));
    bbox[2 * (size_t)c + 1] = make_float4(hi0, hi1, hi2, 0.0f);
}

__global__ void cl_gather(int s0, int s1, const int *__restrict__ perm, const float *__restrict__ x,
                          const uint8_t *__restrict__ zone, float4 *__restrict__ xq)
{
    int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= s1)
        return;
    int a = perm[s];
    if (a >= 0)
        xq[s] = make_float4(x[3 * (size_t)a], x[3 * (size_t)a + 1], x[3 * (size_t)a + 2],
                            __int_as_float(CL_ZONE_TAG | zone[a]));
}

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

/* One warp per row cluster: scan the columns within rl of its box, in both parts, and append
 * the clusters whose boxes are within rl (in scan order: deterministic). */
__global__ void cl_search(const float4 *__restrict__ bbox, const int *__restrict__ col, cl_geom_t g,
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
    int cx0 = cl_coord(ilo.x - rl, g.lo[0], g.inv_w[0], g.m[0]);
    int cx1 = cl_coord(ihi.x + rl, g.lo[0], g.inv_w[0], g.m[0]);
    int cy0 = cl_coord(ilo.y - rl, g.lo[1], g.inv_w[1], g.m[1]);
    int cy1 = cl_coord(ihi.y + rl, g.lo[1], g.inv_w[1], g.m[1]);
    const int ncol = g.m[0] * g.m[1];
    int nloc = 0, nnl = 0;
    for (int p = 0; p < CL_PARTS; p++) {
        /* a whole part of halo atoms whose zone no atom of this row may pair with */
        if (p > 0 && !cl_zones_meet(zmi, 1u << p))
            continue;
        const int toloc = !ihalo && p == 0;
        int *row = toloc ? jl_loc + (size_t)ic * max_loc : jl_nl + (size_t)ic * max_nl;
        const int cap = toloc ? max_loc : max_nl;
        int k = toloc ? nloc : nnl;
        for (int cy = cy0; cy <= cy1; cy++)
            for (int cx = cx0; cx <= cx1; cx++) {
                int cc = p * ncol + cy * g.m[0] + cx;
                int j0 = col[cc], j1 = col[cc + 1];
                for (int jb = j0; jb < j1; jb += 32) {
                    int j = jb + lane, ok = 0;
                    if (j < j1) {
                        float4 jlo = bbox[2 * (size_t)j], jhi = bbox[2 * (size_t)j + 1];
                        float dx = fmaxf(0.0f, fmaxf(jlo.x - ihi.x, ilo.x - jhi.x));
                        float dy = fmaxf(0.0f, fmaxf(jlo.y - ihi.y, ilo.y - jhi.y));
                        float dz = fmaxf(0.0f, fmaxf(jlo.z - ihi.z, ilo.z - jhi.z));
                        ok = dx * dx + dy * dy + dz * dz < rl2 &&
                             cl_zones_meet(zmi, __float_as_uint(jlo.w));
                    }
                    unsigned b = __ballot_sync(CL_FULL, ok);
                    int pos = k + __popc(b & ((1u << lane) - 1u));
                    if (ok && pos < cap)
                        row[pos] = j;
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

/* One warp per row cluster; lane = i atom (lane & 7) + 8 x j-cluster group (lane >> 3). Four
 * j-clusters per pass: the 32 j positions are staged in shared memory and each lane reads the 8
 * of its group by broadcast. The pair term is computed branch-free and masked (padding, self,
 * beyond the cut-off, and with ZONES the zone rule), so the warp never diverges. */
template <int ENERGY, int ZONES>
__global__ void __launch_bounds__(CL_THREADS)
    cl_lj(const float4 *__restrict__ xq, const int *__restrict__ perm, const int *__restrict__ jl,
          const int *__restrict__ cnt, int max_row, int nrows, int n_split, float rc2,
          double eshift, float *__restrict__ out_lo, float *__restrict__ out_hi,
          double *__restrict__ energy)
{
    __shared__ float4 sj[CL_WARPS][32];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int il = lane & 7, g = lane >> 3;
    const int row = blockIdx.x * CL_WARPS + warp;
    double e = 0, w = 0;
    if (row < nrows) { /* uniform over the warp */
        const float4 xi = xq[(size_t)row * MD_CLUSTER_SIZE + il];
        const int zi = __float_as_int(xi.w) & 0xff;
        float fx = 0, fy = 0, fz = 0;
        const int m = cnt[row];
        const int *lst = jl + (size_t)row * max_row;
        for (int base = 0; base < m; base += 32) {
            const int myj = base + lane < m ? __ldg(&lst[base + lane]) : -1;
            const int nb = m - base < 32 ? m - base : 32;
            for (int q = 0; q < nb; q += 4) {
                const int jc = __shfl_sync(CL_FULL, myj, q + g);
                const float4 xj =
                    jc >= 0 ? __ldg(&xq[(size_t)jc * MD_CLUSTER_SIZE + il])
                            : make_float4(CL_PAD, CL_PAD, CL_PAD, __int_as_float(CL_ZONE_TAG));
                __syncwarp();
                sj[warp][lane] = xj;
                __syncwarp();
#pragma unroll
                for (int k = 0; k < MD_CLUSTER_SIZE; k++) {
                    const float4 a = sj[warp][g * MD_CLUSTER_SIZE + k];
                    const float dx = xi.x - a.x, dy = xi.y - a.y, dz = xi.z - a.z;
                    const float r2 = dx * dx + dy * dy + dz * dz;
                    int ok = r2 < rc2 && r2 > 0.0f;
                    if (ZONES)
                        ok = ok && (zi & __float_as_int(a.w) & 0xff) == 0;
                    const float sr2 = ok ? __frcp_rn(r2) : 0.0f;
                    const float sr6 = sr2 * sr2 * sr2;
                    const float fp = 48.0f * sr6 * (sr6 - 0.5f) * sr2;
                    fx += dx * fp;
                    fy += dy * fp;
                    fz += dz * fp;
                    if (ENERGY && ok) {
                        e += (double)(4.0f * sr6 * (sr6 - 1.0f)) - eshift;
                        w += (double)(r2 * fp);
                    }
                }
            }
        }
        /* the four groups' partial sums of each i atom */
        fx += __shfl_xor_sync(CL_FULL, fx, 8);
        fy += __shfl_xor_sync(CL_FULL, fy, 8);
        fz += __shfl_xor_sync(CL_FULL, fz, 8);
        fx += __shfl_xor_sync(CL_FULL, fx, 16);
        fy += __shfl_xor_sync(CL_FULL, fy, 16);
        fz += __shfl_xor_sync(CL_FULL, fz, 16);
        if (g == 0) {
            const int a = perm[(size_t)row * MD_CLUSTER_SIZE + il];
            if (a >= 0) {
                float *o = a < n_split ? out_lo : out_hi;
                o[3 * (size_t)a] = fx;
                o[3 * (size_t)a + 1] = fy;
                o[3 * (size_t)a + 2] = fz;
            }
        }
    }
    if (ENERGY) {
        /* full lists hold every pair twice */
        md__block_add(0.5 * e, &energy[0]);
        md__block_add(0.5 * w, &energy[1]);
    }
}

/* ---- host side ------------------------------------------------------------------------- */

/* Make each of the k arrays hold at least `want` elements of its size (contents not kept). */
static cudaError_t cl_grow(void **p[], const size_t elem[], int k, size_t *cap, size_t want)
{
    if (want <= *cap && *p[0])
        return cudaSuccess;
    size_t n = want + want / 5 + 64;
    for (int a = 0; a < k; a++) {
        if (*p[a])
            cudaFree(*p[a]);
        *p[a] = NULL;
    }
    *cap = 0;
    for (int a = 0; a < k; a++) {
        cudaError_t e = cudaMalloc(p[a], n * elem[a]);
        if (e != cudaSuccess) {
            for (int b = 0; b < a; b++) {
                cudaFree(*p[b]);
                *p[b] = NULL;
            }
            *p[a] = NULL;
            return e;
        }
    }
    *cap = n;
    return cudaSuccess;
}

#define CL_TRY(call)                                                                               \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return e_;                                                                             \
    } while (0)

/* Columns as wide as a cube of 8 atoms, z bins a quarter of that; coarser when the key space
 * would outgrow the atoms (sparse systems). */
static void cl_geometry(md_clusters_t *c, const float lo[3], const float ext[3], double density,
                        int n)
{
    double side = cbrt((double)MD_CLUSTER_SIZE / (density > 0 ? density : 1.0));
    double w[3] = {side, side, 0.25 * side};
    for (;;) {
        double keys = 2.0; /* home and halo: the halo parts share the halo atoms */
        for (int d = 0; d < 3; d++) {
            double k = ceil(ext[d] / w[d]);
            c->m[d] = k < 1 ? 1 : (k > 4096 ? 4096 : (int)k);
            keys *= c->m[d];
        }
        if (keys <= 4.0 * n + 4096)
            break;
        for (int d = 0; d < 3; d++)
            w[d] *= 1.25;
    }
    for (int d = 0; d < 3; d++) {
        c->lo[d] = lo[d];
        c->inv_w[d] = (float)(c->m[d] / (double)ext[d]);
    }
}

static cl_geom_t cl_geom_of(const md_clusters_t *c)
{
    cl_geom_t g;
    for (int d = 0; d < 3; d++) {
        g.lo[d] = c->lo[d];
        g.inv_w[d] = c->inv_w[d];
        g.m[d] = c->m[d];
    }
    return g;
}

extern "C" cudaError_t md_clusters_build(md_clusters_t *c, const float *x, const uint8_t *zone,
                                         int n_home, int n, const float lo[3], const float ext[3],
                                         double density, float rl, cudaStream_t stream)
{
    c->n_home = n_home;
    c->n = n;
    c->rl = rl;
    cl_geometry(c, lo, ext, density, n);
    const cl_geom_t g = cl_geom_of(c);
    const int ncol = c->m[0] * c->m[1], nzb = c->m[2];
    const int nkeys = CL_PARTS * ncol * nzb;
    {
        void **p[] = {(void **)&c->key, (void **)&c->sorted};
        size_t el[] = {sizeof(int), sizeof(int)};
        CL_TRY(cl_grow(p, el, 2, &c->cap_atoms, (size_t)(n > 0 ? n : 1)));
    }
    {
        void **p[] = {(void **)&c->bin, (void **)&c->cursor, (void **)&c->scan};
        size_t el[] = {sizeof(int), sizeof(int), sizeof(int)};
        /* the scan scratch is far smaller than the keys: it fits the same capacity */
        CL_TRY(cl_grow(p, el, 3, &c->cap_keys, (size_t)nkeys + 1));
    }
    {
        void **p[] = {(void **)&c->col};
        size_t el[] = {sizeof(int)};
        CL_TRY(cl_grow(p, el, 1, &c->cap_cols, (size_t)CL_PARTS * ncol + 1));
    }
    if (!c->need) {
        CL_TRY(cudaMalloc((void **)&c->need, 2 * sizeof(int)));
        CL_TRY(cudaMallocHost((void **)&c->h_small, 4 * sizeof(int)));
    }
    /* sort the atoms by key: count, scan, scatter, order each bin by index */
    CL_TRY(cudaMemsetAsync(c->cursor, 0, sizeof(int) * ((size_t)nkeys + 1), stream));
    if (n > 0) {
        cl_keys<<<cl_blocks(n, 256), 256, 0, stream>>>(x, zone, n_home, n, g, c->key, c->cursor);
        CL_TRY(cudaGetLastError());
    }
    CL_TRY(md_kernel_scan(c->cursor, nkeys, c->bin, c->cursor, c->scan, stream));
    if (n > 0) {
        cl_scatter<<<cl_blocks(n, 256), 256, 0, stream>>>(n, c->key, c->cursor, c->sorted);
        CL_TRY(cudaGetLastError());
    }
    cl_bin_order<<<cl_blocks(nkeys, 256), 256, 0, stream>>>(nkeys, c->bin, c->sorted);
    CL_TRY(cudaGetLastError());
    /* clusters per column, their offsets: home columns first, then the halo parts' columns */
    const int ncols = CL_PARTS * ncol;
    cl_col_count<<<cl_blocks(ncols, 256), 256, 0, stream>>>(ncols, nzb, c->bin, c->col);
    CL_TRY(cudaGetLastError());
    CL_TRY(md_kernel_scan(c->col, ncols, c->col, c->col, c->scan, stream));
    CL_TRY(cudaMemcpyAsync(&c->h_small[0], &c->col[ncol], sizeof(int), cudaMemcpyDeviceToHost,
                           stream));
    CL_TRY(cudaMemcpyAsync(&c->h_small[1], &c->col[ncols], sizeof(int), cudaMemcpyDeviceToHost,
                           stream));
    CL_TRY(cudaStreamSynchronize(stream));
    c->ncl_home = c->h_small[0];
    c->ncl = c->h_small[1];
    const size_t nslots = (size_t)c->ncl * MD_CLUSTER_SIZE;
    {
        void **p[] = {(void **)&c->perm, (void **)&c->xq};
        size_t el[] = {sizeof(int), 4 * sizeof(float)};
        CL_TRY(cl_grow(p, el, 2, &c->cap_slots, nslots > 0 ? nslots : 1));
    }
    {
        void **p[] = {(void **)&c->bbox, (void **)&c->cnt_loc, (void **)&c->cnt_nl};
        size_t el[] = {8 * sizeof(float), sizeof(int), sizeof(int)};
        CL_TRY(cl_grow(p, el, 3, &c->cap_cl, (size_t)(c->ncl > 0 ? c->ncl : 1)));
    }
    CL_TRY(cudaMemsetAsync(c->perm, 0xff, sizeof(int) * (nslots > 0 ? nslots : 1), stream));
    if (n > 0) {
        cl_fill<<<cl_blocks(n, 256), 256, 0, stream>>>(n, nzb, c->sorted, c->key, c->bin, c->col,
                                                       c->perm);
        CL_TRY(cudaGetLastError());
    }
    if (c->ncl > 0) {
        cl_bbox<<<cl_blocks(c->ncl, 128), 128, 0, stream>>>(c->ncl, c->perm, x, zone,
                                                            (float4 *)c->bbox, (float4 *)c->xq);
        CL_TRY(cudaGetLastError());
    }
    /* lists: a first guess from the density, grown until every row fits */
    if (c->max_loc == 0) {
        double side = cbrt((double)MD_CLUSTER_SIZE / (density > 0 ? density : 1.0));
        double r = rl + 1.2 * side;
        int guess =
            (int)(4.0 / 3.0 * 3.14159265358979 * r * r * r * density / MD_CLUSTER_SIZE * 1.2 + 16);
        c->max_loc = c->max_nl = guess;
    }
    for (int attempt = 0; attempt < 4; attempt++) {
        {
            void **p[] = {(void **)&c->jl_loc};
            size_t el[] = {sizeof(int)};
            size_t want = (size_t)c->max_loc * (size_t)(c->ncl_home > 0 ? c->ncl_home : 1);
            CL_TRY(cl_grow(p, el, 1, &c->cap_loc, want));
        }
        {
            void **p[] = {(void **)&c->jl_nl};
            size_t el[] = {sizeof(int)};
            size_t want = (size_t)c->max_nl * (size_t)(c->ncl > 0 ? c->ncl : 1);
            CL_TRY(cl_grow(p, el, 1, &c->cap_nl, want));
        }
        CL_TRY(cudaMemsetAsync(c->need, 0, 2 * sizeof(int), stream));
        if (c->ncl > 0) {
            cl_search<<<cl_blocks(32LL * c->ncl, 128), 128, 0, stream>>>(
                (const float4 *)c->bbox, c->col, g, c->ncl_home, c->ncl, rl, c->jl_loc, c->cnt_loc,
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

extern "C" cudaError_t md_clusters_gather(const md_clusters_t *c, const float *x,
                                          const uint8_t *zone, int part, cudaStream_t stream)
{
    int s0 = part == 1 ? c->ncl_home * MD_CLUSTER_SIZE : 0;
    int s1 = part == 0 ? c->ncl_home * MD_CLUSTER_SIZE : c->ncl * MD_CLUSTER_SIZE;
    if (s1 <= s0)
        return cudaSuccess;
    cl_gather<<<cl_blocks(s1 - s0, 256), 256, 0, stream>>>(s0, s1, c->perm, x, zone,
                                                           (float4 *)c->xq);
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_lj(const md_clusters_t *c, int nonlocal, float rc2,
                                      double eshift, float *out_lo, float *out_hi, double *energy,
                                      cudaStream_t stream)
{
    const int rows = nonlocal ? c->ncl : c->ncl_home;
    if (rows <= 0)
        return cudaSuccess;
    const int *jl = nonlocal ? c->jl_nl : c->jl_loc;
    const int *cnt = nonlocal ? c->cnt_nl : c->cnt_loc;
    const int mx = nonlocal ? c->max_nl : c->max_loc;
    const float4 *xq = (const float4 *)c->xq;
    const int b = cl_blocks(rows, CL_WARPS);
    /* home-home pairs never meet the zone rule: the local kernel skips it */
    if (nonlocal && energy)
        cl_lj<1, 1><<<b, CL_THREADS, 0, stream>>>(xq, c->perm, jl, cnt, mx, rows, c->n_home, rc2,
                                                  eshift, out_lo, out_hi, energy);
    else if (nonlocal)
        cl_lj<0, 1><<<b, CL_THREADS, 0, stream>>>(xq, c->perm, jl, cnt, mx, rows, c->n_home, rc2,
                                                  eshift, out_lo, out_hi, energy);
    else if (energy)
        cl_lj<1, 0><<<b, CL_THREADS, 0, stream>>>(xq, c->perm, jl, cnt, mx, rows, c->n_home, rc2,
                                                  eshift, out_lo, out_hi, energy);
    else
        cl_lj<0, 0><<<b, CL_THREADS, 0, stream>>>(xq, c->perm, jl, cnt, mx, rows, c->n_home, rc2,
                                                  eshift, out_lo, out_hi, energy);
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_entries(const md_clusters_t *c, long long *loc, long long *nl)
{
    *loc = *nl = 0;
    int rows[2] = {c->ncl_home, c->ncl};
    const int *cnt[2] = {c->cnt_loc, c->cnt_nl};
    long long *out[2] = {loc, nl};
    for (int k = 0; k < 2; k++) {
        if (rows[k] <= 0)
            continue;
        int *h = (int *)malloc(sizeof(int) * (size_t)rows[k]);
        if (!h)
            return cudaErrorMemoryAllocation;
        cudaError_t e =
            cudaMemcpy(h, cnt[k], sizeof(int) * (size_t)rows[k], cudaMemcpyDeviceToHost);
        for (int r = 0; e == cudaSuccess && r < rows[k]; r++)
            *out[k] += h[r];
        free(h);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

extern "C" void md_clusters_free(md_clusters_t *c)
{
    void *p[] = {c->xq,   c->perm, c->bbox,   c->key,     c->sorted, c->bin,    c->cursor,
                 c->scan, c->col,  c->jl_loc, c->cnt_loc, c->jl_nl,  c->cnt_nl, c->need};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    if (c->h_small)
        cudaFreeHost(c->h_small);
    (void)cudaGetLastError();
    memset(c, 0, sizeof *c);
}
