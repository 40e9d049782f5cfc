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
    int shift_dims; /* bit d: periodic by shifts of box[d] */
    float box[3];
    int parts; /* CL_PARTS, or 1 without halo atoms (a one-rank run by shifts) */
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
        *c0 = cl_coord(lo - rl, g.lo[d], g.inv_w[d], g.m[d]);
        *c1 = cl_coord(hi + rl, g.lo[d], g.inv_w[d], g.m[d]);
    }
}

/* One warp per row cluster ic: scan the columns within rl of its box (wrapping in shift
 * dimensions) and append the clusters j >= ic whose boxes, shifted, are within rl (half lists,
 * in scan order: deterministic). Home rows take home clusters into the local list and halo
 * clusters into the non-local one; halo rows take halo clusters only (their pairs with home
 * clusters are in the home rows). */
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
    int nloc = 0, nnl = 0;
    for (int p = ihalo ? 1 : 0; p < g.parts; p++) {
        /* a whole part of halo atoms whose zone no atom of this row may pair with */
        if (p > 0 && !cl_zones_meet(zmi, 1u << p))
            continue;
        const int toloc = !ihalo && p == 0;
        int *row = toloc ? jl_loc + (size_t)ic * max_loc : jl_nl + (size_t)ic * max_nl;
        const int cap = toloc ? max_loc : max_nl;
        int k = toloc ? nloc : nnl;
        for (int cyr = cy0; cyr <= cy1; cyr++) {
            int cy = cyr, sy = 0;
            if ((g.shift_dims >> 1) & 1) {
                sy = cl_floor_div(cyr, g.m[1]);
                cy = cyr - sy * g.m[1];
                if (sy < -1 || sy > 1)
                    continue; /* two box edges away: no atom pair within rc */
            }
            for (int cxr = cx0; cxr <= cx1; cxr++) {
                int cx = cxr, sx = 0;
                if (g.shift_dims & 1) {
                    sx = cl_floor_div(cxr, g.m[0]);
                    cx = cxr - sx * g.m[0];
                    if (sx < -1 || sx > 1)
                        continue;
                }
                const float ox = sx * g.box[0], oy = sy * g.box[1];
                int cc = p * ncol + cy * g.m[0] + cx;
                int j0 = col[cc], j1 = col[cc + 1];
                if (j0 < ic)
                    j0 = ic < j1 ? ic : j1; /* half lists: j >= ic */
                for (int jb = j0; jb < j1; jb += 32) {
                    const int j = jb + lane;
                    float4 jlo = make_float4(0, 0, 0, 0), jhi = jlo;
                    if (j < j1) {
                        jlo = bbox[2 * (size_t)j];
                        jhi = bbox[2 * (size_t)j + 1];
                    }
                    const int zok = j < j1 && cl_zones_meet(zmi, __float_as_uint(jlo.w));
                    const float dx = fmaxf(0.0f, fmaxf(jlo.x + ox - ihi.x, ilo.x - jhi.x - ox));
                    const float dy = fmaxf(0.0f, fmaxf(jlo.y + oy - ihi.y, ilo.y - jhi.y - oy));
                    for (int sz = sz0; sz <= sz1; sz++) {
                        const float oz = sz * g.box[2];
                        const float dz = fmaxf(0.0f, fmaxf(jlo.z + oz - ihi.z, ilo.z - jhi.z - oz));
                        const int sh = (sx + 1) + 3 * (sy + 1) + 9 * (sz + 1);
                        /* the self pair: one of the shifts s and -s (s > 13), and s = 13 */
                        int ok = zok && dx * dx + dy * dy + dz * dz < rl2 &&
                                 (j != ic || sh >= MD_CLUSTER_NO_SHIFT);
                        unsigned b = __ballot_sync(CL_FULL, ok);
                        int pos = k + __popc(b & ((1u << lane) - 1u));
                        if (ok && pos < cap)
                            row[pos] = j | (sh << MD_CLUSTER_SHIFT_BIT);
                        k += __popc(b);
                    }
                }
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

/* The device's step state: maxima of squared displacements (float bits: non-negative floats
 * order as their bits) of the gathers of this step, the prune decisions for the next kernels,
 * counters. The last block of a gather finishes the step's part (a ticket). */
typedef struct cl_state {
    unsigned mx[4]; /* home vs local prune, all vs non-local prune, all vs build, last step */
    unsigned ticket;
    int prune[2];
    int valid[2]; /* the inner list was pruned since the build (by a kernel in prune mode) */
    long long steps, prunes[2], exceeded;
} cl_state_t;

__device__ static inline float cl_d2(float4 a, float4 b)
{
    const float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
    return dx * dx + dy * dy + dz * dz;
}

__device__ static inline float cl_warp_max(float v)
{
    for (int off = 16; off > 0; off /= 2)
        v = fmaxf(v, __shfl_down_sync(CL_FULL, v, off));
    return v;
}

/* Slots [s0, s1) take the current positions; refs: 3 arrays of nslots float4 (local prune,
 * non-local prune, build). fin_loc / fin_nl: this gather finishes the local / the whole step. */
__global__ void __launch_bounds__(256)
    cl_gather(int s0, int s1, int home_end, int fin_loc, int fin_nl, int count_nl, float thr_in2,
              float thr_out2, const int *__restrict__ perm, const float *__restrict__ x,
              const uint8_t *__restrict__ zone, float4 *__restrict__ xq,
              const float4 *__restrict__ ref, size_t nslots, cl_state_t *st,
              md_clusters_watch_t *watch)
{
    __shared__ float part[4][8];
    __shared__ int last;
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    float m[4] = {0, 0, 0, 0};
    if (s < s1) {
        const int a = perm[s];
        if (a >= 0) {
            const float4 p =
                make_float4(x[3 * (size_t)a], x[3 * (size_t)a + 1], x[3 * (size_t)a + 2],
                            __int_as_float(CL_ZONE_TAG | zone[a]));
            m[3] = cl_d2(p, xq[s]);
            xq[s] = p;
            if (ref) {
                if (s < home_end)
                    m[0] = cl_d2(p, ref[s]);
                m[1] = cl_d2(p, ref[nslots + s]);
                m[2] = cl_d2(p, ref[2 * nslots + s]);
            }
        }
    }
    if (!st)
        return;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        m[k] = cl_warp_max(m[k]);
        if (lane == 0)
            part[k][warp] = m[k];
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int k = 0; k < 4; k++) {
            float v = 0;
            for (int w = 0; w < (int)(blockDim.x >> 5); w++)
                v = fmaxf(v, part[k][w]);
            if (v > 0)
                atomicMax(&st->mx[k], __float_as_uint(v));
        }
        __threadfence();
        last = atomicAdd(&st->ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || threadIdx.x != 0)
        return;
    __threadfence();
    volatile cl_state_t *vs = st;
    const float mloc = __uint_as_float(vs->mx[0]), mnl = __uint_as_float(vs->mx[1]);
    /* a list not pruned since its build prunes whatever the displacement */
    if (fin_loc) {
        const int pr = !vs->valid[0] || mloc >= thr_in2;
        vs->prune[0] = pr;
        vs->prunes[0] += pr;
        vs->mx[0] = 0;
    }
    if (fin_nl) {
        const int pr = !vs->valid[1] || mnl >= thr_in2;
        const float mb = __uint_as_float(vs->mx[2]), ms = __uint_as_float(vs->mx[3]);
        vs->prune[1] = pr;
        vs->prunes[1] += pr && count_nl; /* no halo: no non-local kernel to prune */
        vs->exceeded += mb >= thr_out2;
        vs->steps += 1;
        vs->mx[1] = vs->mx[2] = vs->mx[3] = 0;
        if (watch) {
            volatile md_clusters_watch_t *w = watch;
            w->build_d2 = mb;
            w->step_d2 = ms;
            w->prunes[0] = vs->prunes[0];
            w->prunes[1] = vs->prunes[1];
            w->exceeded = vs->exceeded;
            __threadfence_system();
            w->steps = vs->steps; /* last: a reader that sees the count sees the values */
        }
    }
    vs->ticket = 0;
}

/* After a build: every list prunes in the next kernels, maxima and ticket cleared. */
__global__ void cl_arm(cl_state_t *st)
{
    st->prune[0] = st->prune[1] = 1;
    st->valid[0] = st->valid[1] = 0;
    st->mx[0] = st->mx[1] = st->mx[2] = st->mx[3] = 0;
    st->ticket = 0;
}

/* Sum v[k] (k = 0..7) over the 8 lanes il = lane & 7 of a group; lane il returns the sum of
 * v[il]: three halving exchanges (4 + 2 + 1 values per component). */
__device__ static inline float cl_reduce8(float v[MD_CLUSTER_SIZE], int il)
{
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const float send = (il & 4) ? v[j] : v[j + 4], keep = (il & 4) ? v[j + 4] : v[j];
        v[j] = keep + __shfl_xor_sync(CL_FULL, send, 4);
    }
#pragma unroll
    for (int j = 0; j < 2; j++) {
        const float send = (il & 2) ? v[j] : v[j + 2], keep = (il & 2) ? v[j + 2] : v[j];
        v[j] = keep + __shfl_xor_sync(CL_FULL, send, 2);
    }
    const float send = (il & 1) ? v[0] : v[1], keep = (il & 1) ? v[1] : v[0];
    return keep + __shfl_xor_sync(CL_FULL, send, 1);
}

/* One warp per row cluster; lane = j atom jl (lane & 7) of the pass's j-cluster g (lane >> 3).
 * Four j-clusters per pass: each lane loads its own j atom (shifted by the entry's image) and runs
 * over the row's 8 i atoms, staged once per row in shared memory and read by broadcast. The
 * force on the lane's j atom is complete after the pass (one atomic per component, no
 * reduction); the forces on the 8 i atoms accumulate in registers over the whole row and are
 * reduced over the warp once at its end. The pair term is computed branch-free and masked
 * (padding, the self pair's lower triangle, beyond the cut-off, and with ZONES the zone rule),
 * so the warp never diverges; 1/r^2 is the fast reciprocal (__fdividef: 2 ulp).
 *
 * With *prune_flag set (decided by the gathers) the warp runs over the outer row instead and
 * writes the entries with some atom pair within rl_in (rlin2) as the inner row, and the row's
 * positions as the reference of the next prune decision. */
template <int ENERGY, int ZONES>
__global__ void __launch_bounds__(CL_THREADS)
    cl_lj(const float4 *__restrict__ xq, const int *__restrict__ jl_out,
          const int *__restrict__ cnt_out, int *__restrict__ jl_in, int *__restrict__ cnt_in,
          int max_row, const int *prune_flag, int *valid, float4 *__restrict__ ref, float rlin2,
          int nrows, float rc2, float bx, float by, float bz, double eshift, float *__restrict__ fs,
          double *__restrict__ energy)
{
    __shared__ float4 si[CL_WARPS][MD_CLUSTER_SIZE];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int jl = lane & 7, g = lane >> 3;
    const int row = blockIdx.x * CL_WARPS + warp;
    const int prune = prune_flag ? *(volatile const int *)prune_flag : 0;
    if (prune && threadIdx.x == 0 && blockIdx.x == 0)
        *valid = 1; /* read by the next gather, after this kernel */
    double e = 0, w = 0;
    if (row < nrows) { /* uniform over the warp */
        if (lane < MD_CLUSTER_SIZE) {
            const float4 xi = xq[(size_t)row * MD_CLUSTER_SIZE + lane];
            si[warp][lane] = xi;
            if (prune)
                ref[(size_t)row * MD_CLUSTER_SIZE + lane] = xi;
        }
        __syncwarp();
        float fix[MD_CLUSTER_SIZE], fiy[MD_CLUSTER_SIZE], fiz[MD_CLUSTER_SIZE];
#pragma unroll
        for (int k = 0; k < MD_CLUSTER_SIZE; k++)
            fix[k] = fiy[k] = fiz[k] = 0.0f;
        const int m = prune ? cnt_out[row] : cnt_in[row];
        const int *lst = (prune ? jl_out : jl_in) + (size_t)row * max_row;
        int *keep_row = jl_in + (size_t)row * max_row;
        int kept = 0;
        for (int base = 0; base < m; base += 32) {
            const int mye = base + lane < m ? __ldg(&lst[base + lane]) : -1;
            const int nb = m - base < 32 ? m - base : 32;
            for (int q = 0; q < nb; q += 4) {
                const int ent = __shfl_sync(CL_FULL, mye, q + g);
                const int jc = ent >= 0 ? (ent & ((1 << MD_CLUSTER_SHIFT_BIT) - 1)) : -1;
                const int sh = ent >= 0 ? (ent >> MD_CLUSTER_SHIFT_BIT) : MD_CLUSTER_NO_SHIFT;
                float4 xj = make_float4(CL_PAD, CL_PAD, CL_PAD, __int_as_float(CL_ZONE_TAG));
                if (jc >= 0) {
                    xj = __ldg(&xq[(size_t)jc * MD_CLUSTER_SIZE + jl]);
                    xj.x += (float)(sh % 3 - 1) * bx;
                    xj.y += (float)((sh / 3) % 3 - 1) * by;
                    xj.z += (float)(sh / 9 - 1) * bz;
                }
                const int zj = __float_as_int(xj.w) & 0xff;
                const int self = jc == row && sh == MD_CLUSTER_NO_SHIFT;
                float fjx = 0.0f, fjy = 0.0f, fjz = 0.0f;
                int near = 0;
#pragma unroll
                for (int k = 0; k < MD_CLUSTER_SIZE; k++) {
                    const float4 a = si[warp][k];
                    const float dx = a.x - xj.x, dy = a.y - xj.y, dz = a.z - xj.z;
                    const float r2 = dx * dx + dy * dy + dz * dz;
                    int valid = r2 > 0.0f && (!self || k < jl);
                    if (ZONES)
                        valid = valid && ((__float_as_int(a.w) & zj & 0xff) == 0);
                    near |= valid && r2 < rlin2;
                    const int ok = valid && r2 < rc2;
                    const float sr2 = ok ? __fdividef(1.0f, r2) : 0.0f;
                    const float sr6 = sr2 * sr2 * sr2;
                    const float fp = 48.0f * sr6 * (sr6 - 0.5f) * sr2;
                    fix[k] += dx * fp;
                    fiy[k] += dy * fp;
                    fiz[k] += dz * fp;
                    fjx -= dx * fp;
                    fjy -= dy * fp;
                    fjz -= dz * fp;
                    if (ENERGY && ok) {
                        e += (double)(4.0f * sr6 * (sr6 - 1.0f)) - eshift;
                        w += (double)(r2 * fp);
                    }
                }
                if (jc >= 0 && (fjx != 0.0f || fjy != 0.0f || fjz != 0.0f)) {
                    float *o = fs + 3 * ((size_t)jc * MD_CLUSTER_SIZE + jl);
                    atomicAdd(o, fjx);
                    atomicAdd(o + 1, fjy);
                    atomicAdd(o + 2, fjz);
                }
                if (prune) {
                    const unsigned b = __ballot_sync(CL_FULL, near);
                    unsigned groups = 0;
#pragma unroll
                    for (int t = 0; t < 4; t++)
                        if ((b >> (8 * t)) & 0xffu)
                            groups |= 1u << t;
                    if (jl == 0 && ((groups >> g) & 1u))
                        keep_row[kept + __popc(groups & ((1u << g) - 1u))] = ent;
                    kept += __popc(groups);
                }
            }
        }
        if (prune && lane == 0)
            cnt_in[row] = kept;
        /* the i forces: over the 8 lanes of each group (lane jl takes i atom jl), then over the
         * four groups */
        float fx = cl_reduce8(fix, jl), fy = cl_reduce8(fiy, jl), fz = cl_reduce8(fiz, jl);
        fx += __shfl_xor_sync(CL_FULL, fx, 8);
        fy += __shfl_xor_sync(CL_FULL, fy, 8);
        fz += __shfl_xor_sync(CL_FULL, fz, 8);
        fx += __shfl_xor_sync(CL_FULL, fx, 16);
        fy += __shfl_xor_sync(CL_FULL, fy, 16);
        fz += __shfl_xor_sync(CL_FULL, fz, 16);
        if (g == 0 && (fx != 0.0f || fy != 0.0f || fz != 0.0f)) {
            float *o = fs + 3 * ((size_t)row * MD_CLUSTER_SIZE + jl);
            atomicAdd(o, fx);
            atomicAdd(o + 1, fy);
            atomicAdd(o + 2, fz);
        }
    }
    if (ENERGY) { /* each pair once */
        md__block_add(e, &energy[0]);
        md__block_add(w, &energy[1]);
    }
}

/* fnl[a] = fs[slot] for the halo slots [s0, s1), zeroing them. */
__global__ void cl_halo_forces(int s0, int s1, const int *__restrict__ perm, float *__restrict__ fs,
                               float *__restrict__ fnl)
{
    const int s = s0 + blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= s1)
        return;
    const int a = perm[s];
    if (a < 0)
        return;
    float *p = fs + 3 * (size_t)s;
    fnl[3 * (size_t)a] = p[0];
    fnl[3 * (size_t)a + 1] = p[1];
    fnl[3 * (size_t)a + 2] = p[2];
    p[0] = p[1] = p[2] = 0.0f;
}

/* f[a] = fs[slot_of[a]] (+ fnl[a], then zeroed), the slot zeroed; v[a] += h f[a] when v. */
__global__ void cl_kick(int n, const int *__restrict__ slot_of, float *__restrict__ fs,
                        float *__restrict__ fnl, float *__restrict__ f, float *__restrict__ v,
                        float h)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a >= n)
        return;
    float *p = fs + 3 * (size_t)slot_of[a];
    float t[3] = {p[0], p[1], p[2]};
    p[0] = p[1] = p[2] = 0.0f;
    if (fnl) {
        float *q = fnl + 3 * (size_t)a;
        t[0] += q[0], t[1] += q[1], t[2] += q[2];
        q[0] = q[1] = q[2] = 0.0f;
    }
    for (int k = 0; k < 3; k++) {
        f[3 * (size_t)a + k] = t[k];
        if (v)
            v[3 * (size_t)a + k] += h * t[k];
    }
}

__global__ void cl_slot_of(int nslots, const int *__restrict__ perm, int *__restrict__ slot_of)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < nslots && perm[s] >= 0)
        slot_of[perm[s]] = s;
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
        g.box[d] = c->box[d];
    }
    g.shift_dims = c->shift_dims;
    g.parts = c->n > c->n_home ? CL_PARTS : 1;
    return g;
}

/* The pruning thresholds: squared half buffers of the inner and the outer list. */
static int cl_pruning(const md_clusters_t *c)
{
    return c->rl_in > c->rc && c->rl_in < c->rl && c->rc > 0;
}

static float cl_half2(float r, float rc)
{
    float h = 0.5f * (r - rc);
    return h > 0 ? h * h : 0.0f;
}

extern "C" void md_clusters_set_prune(md_clusters_t *c, float rc, float rl_in)
{
    c->rc = rc;
    c->rl_in = rl_in;
}

extern "C" cudaError_t md_clusters_build(md_clusters_t *c, const float *x, const uint8_t *zone,
                                         int n_home, int n, const float lo[3], const float ext[3],
                                         double density, float rl, int shift_dims,
                                         cudaStream_t stream)
{
    c->n_home = n_home;
    c->n = n;
    c->rl = rl;
    c->shift_dims = shift_dims & 7;
    for (int d = 0; d < 3; d++)
        c->box[d] = ((shift_dims >> d) & 1) ? ext[d] : 0.0f;
    cl_geometry(c, lo, ext, density, n);
    const cl_geom_t g = cl_geom_of(c);
    const int ncol = c->m[0] * c->m[1], nzb = c->m[2];
    const int nkeys = g.parts * ncol * nzb; /* no halo: the 7 halo parts would stay empty */
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
        CL_TRY(cl_grow(p, el, 1, &c->cap_cols, (size_t)g.parts * ncol + 1));
    }
    if (!c->need) {
        CL_TRY(cudaMalloc((void **)&c->need, 2 * sizeof(int)));
        CL_TRY(cudaMallocHost((void **)&c->h_small, 4 * sizeof(int)));
        CL_TRY(cudaMalloc(&c->state, sizeof(cl_state_t)));
        CL_TRY(cudaMemsetAsync(c->state, 0, sizeof(cl_state_t), stream));
        CL_TRY(cudaHostAlloc((void **)&c->watch, sizeof(md_clusters_watch_t), cudaHostAllocMapped));
        memset(c->watch, 0, sizeof *c->watch);
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
    const int ncols = g.parts * ncol;
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
        void **p[] = {(void **)&c->perm, (void **)&c->xq, (void **)&c->ref, (void **)&c->fs};
        size_t el[] = {sizeof(int), 4 * sizeof(float), 12 * sizeof(float), 3 * sizeof(float)};
        CL_TRY(cl_grow(p, el, 4, &c->cap_slots, nslots > 0 ? nslots : 1));
    }
    {
        void **p[] = {(void **)&c->slot_of};
        size_t el[] = {sizeof(int)};
        CL_TRY(cl_grow(p, el, 1, &c->cap_atoms_slot, (size_t)(n > 0 ? n : 1)));
    }
    {
        void **p[] = {(void **)&c->bbox, (void **)&c->cnt_loc, (void **)&c->cnt_nl,
                      (void **)&c->cnt_loc_in, (void **)&c->cnt_nl_in};
        size_t el[] = {8 * sizeof(float), sizeof(int), sizeof(int), sizeof(int), sizeof(int)};
        CL_TRY(cl_grow(p, el, 5, &c->cap_cl, (size_t)(c->ncl > 0 ? c->ncl : 1)));
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
        cl_slot_of<<<cl_blocks((long long)nslots, 256), 256, 0, stream>>>((int)nslots, c->perm,
                                                                          c->slot_of);
        CL_TRY(cudaGetLastError());
        /* every reference at the build's positions; no forces yet */
        for (int k = 0; k < 3; k++)
            CL_TRY(cudaMemcpyAsync(c->ref + 4 * k * nslots, c->xq, 4 * sizeof(float) * nslots,
                                   cudaMemcpyDeviceToDevice, stream));
        CL_TRY(cudaMemsetAsync(c->fs, 0, 3 * sizeof(float) * nslots, stream));
    }
    cl_arm<<<1, 1, 0, stream>>>((cl_state_t *)c->state);
    CL_TRY(cudaGetLastError());
    /* lists: a first guess from the density, grown until every row fits */
    if (c->max_loc == 0) {
        double side = cbrt((double)MD_CLUSTER_SIZE / (density > 0 ? density : 1.0));
        double r = rl + 1.2 * side;
        int guess =
            (int)(4.0 / 3.0 * 3.14159265358979 * r * r * r * density / MD_CLUSTER_SIZE * 0.7 + 16);
        c->max_loc = c->max_nl = guess;
    }
    for (int attempt = 0; attempt < 4; attempt++) {
        {
            void **p[] = {(void **)&c->jl_loc, (void **)&c->jl_loc_in};
            size_t el[] = {sizeof(int), sizeof(int)};
            size_t want = (size_t)c->max_loc * (size_t)(c->ncl_home > 0 ? c->ncl_home : 1);
            CL_TRY(cl_grow(p, el, 2, &c->cap_loc, want));
        }
        {
            void **p[] = {(void **)&c->jl_nl, (void **)&c->jl_nl_in};
            size_t el[] = {sizeof(int), sizeof(int)};
            size_t want = (size_t)c->max_nl * (size_t)(c->ncl > 0 ? c->ncl : 1);
            CL_TRY(cl_grow(p, el, 2, &c->cap_nl, want));
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
    const int home_end = c->ncl_home * MD_CLUSTER_SIZE;
    int s0 = part == 1 ? home_end : 0;
    int s1 = part == 0 ? home_end : c->ncl * MD_CLUSTER_SIZE;
    if (s1 <= s0)
        return cudaSuccess;
    const int halo = c->ncl > c->ncl_home;
    const int fin_loc = part != 1, fin_nl = part != 0 || !halo;
    const float rin = cl_pruning(c) ? c->rl_in : c->rl;
    cl_gather<<<cl_blocks(s1 - s0, 256), 256, 0, stream>>>(
        s0, s1, home_end, fin_loc, fin_nl, halo, cl_half2(rin, c->rc), cl_half2(c->rl, c->rc),
        c->perm, x, zone, (float4 *)c->xq, (const float4 *)c->ref, (size_t)c->ncl * MD_CLUSTER_SIZE,
        (cl_state_t *)c->state, c->watch);
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_lj(const md_clusters_t *c, int nonlocal, float rc2,
                                      double eshift, double *energy, cudaStream_t stream)
{
    const int rows = nonlocal ? c->ncl : c->ncl_home;
    if (rows <= 0 || (nonlocal && c->ncl == c->ncl_home))
        return cudaSuccess; /* no halo: no non-local pair */
    const int pr = cl_pruning(c);
    const int *jo = nonlocal ? c->jl_nl : c->jl_loc;
    const int *co = nonlocal ? c->cnt_nl : c->cnt_loc;
    int *ji = pr ? (nonlocal ? c->jl_nl_in : c->jl_loc_in) : (int *)jo;
    int *ci = pr ? (nonlocal ? c->cnt_nl_in : c->cnt_loc_in) : (int *)co;
    cl_state_t *st = (cl_state_t *)c->state;
    const int *flag = pr ? &st->prune[nonlocal ? 1 : 0] : NULL;
    int *valid = &st->valid[nonlocal ? 1 : 0];
    float4 *ref = (float4 *)c->ref + (nonlocal ? (size_t)c->ncl * MD_CLUSTER_SIZE : 0);
    const int mx = nonlocal ? c->max_nl : c->max_loc;
    const float rlin2 = pr ? c->rl_in * c->rl_in : 0.0f;
    const float4 *xq = (const float4 *)c->xq;
    const int b = cl_blocks(rows, CL_WARPS);
#define CL_LJ(E, Z)                                                                                \
    cl_lj<E, Z><<<b, CL_THREADS, 0, stream>>>(xq, jo, co, ji, ci, mx, flag, valid, ref, rlin2,     \
                                              rows, rc2, c->box[0], c->box[1], c->box[2], eshift,  \
                                              c->fs, energy)
    /* home-home pairs never meet the zone rule: the local kernel skips it */
    if (nonlocal && energy)
        CL_LJ(1, 1);
    else if (nonlocal)
        CL_LJ(0, 1);
    else if (energy)
        CL_LJ(1, 0);
    else
        CL_LJ(0, 0);
#undef CL_LJ
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_halo_forces(const md_clusters_t *c, float *fnl,
                                               cudaStream_t stream)
{
    const int s0 = c->ncl_home * MD_CLUSTER_SIZE, s1 = c->ncl * MD_CLUSTER_SIZE;
    if (s1 <= s0)
        return cudaSuccess;
    cl_halo_forces<<<cl_blocks(s1 - s0, 256), 256, 0, stream>>>(s0, s1, c->perm, c->fs, fnl);
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_kick(const md_clusters_t *c, float *v, float *f, float *fnl,
                                        float h, cudaStream_t stream)
{
    if (c->n_home <= 0)
        return cudaSuccess;
    cl_kick<<<cl_blocks(c->n_home, 256), 256, 0, stream>>>(c->n_home, c->slot_of, c->fs, fnl, f, v,
                                                           h);
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_take_forces(const md_clusters_t *c, float *f,
                                               cudaStream_t stream)
{
    if (c->n <= 0)
        return cudaSuccess;
    cl_kick<<<cl_blocks(c->n, 256), 256, 0, stream>>>(c->n, c->slot_of, c->fs, NULL, f, NULL, 0.0f);
    return cudaGetLastError();
}

extern "C" cudaError_t md_clusters_clear_forces(const md_clusters_t *c, cudaStream_t stream)
{
    if (c->ncl <= 0)
        return cudaSuccess;
    return cudaMemsetAsync(c->fs, 0, 3 * sizeof(float) * (size_t)c->ncl * MD_CLUSTER_SIZE, stream);
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

extern "C" cudaError_t md_clusters_entries(const md_clusters_t *c, long long *loc, long long *nl,
                                           long long *loc_in, long long *nl_in)
{
    const int pr = cl_pruning(c), halo = c->ncl > c->ncl_home;
    CL_TRY(cudaDeviceSynchronize()); /* the kernels on any stream have written the counts */
    CL_TRY(cl_sum_counts(c->cnt_loc, c->ncl_home, loc));
    CL_TRY(cl_sum_counts(c->cnt_nl, halo ? c->ncl : 0, nl));
    CL_TRY(cl_sum_counts(pr ? c->cnt_loc_in : c->cnt_loc, c->ncl_home, loc_in));
    CL_TRY(cl_sum_counts(pr ? c->cnt_nl_in : c->cnt_nl, halo ? c->ncl : 0, nl_in));
    return cudaSuccess;
}

extern "C" void md_clusters_free(md_clusters_t *c)
{
    void *p[] = {c->xq,       c->ref,       c->fs,    c->perm,   c->slot_of,   c->bbox,
                 c->key,      c->sorted,    c->bin,   c->cursor, c->scan,      c->col,
                 c->jl_loc,   c->cnt_loc,   c->jl_nl, c->cnt_nl, c->jl_loc_in, c->cnt_loc_in,
                 c->jl_nl_in, c->cnt_nl_in, c->need,  c->state};
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
