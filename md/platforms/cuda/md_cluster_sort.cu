/* The cluster sort of a build (see md_cluster.h for the layout): atoms counting-sorted by (part,
 * column, z bin), each column cut into clusters of 8, the slots filled, bounding boxes. Plain
 * C-like CUDA behind the internal launchers of md_cluster_internal.cuh; every launch is checked. */
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>

#include "halox/device/scan.cuh"
#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_cluster_internal.cuh"
#include "platforms/cuda/md_kernels.h"

/* The build's first kernel: the atom counts the host wrote into h_small (pinned, so read at every
 * replay of the build's graph, as the copy node it replaces did), the other counts zeroed, the
 * parts' column ranges emptied, the keys' counters zeroed: one node where a copy and two clears
 * would be three, in the list build's chain of small kernels, which is a 2-rank rebuild's
 * critical path */
static __global__ void cl_reset(const volatile int *h_small, int *__restrict__ dims,
                                int *__restrict__ cursor, int ncursor)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < CL_D_COUNT)
        dims[i] = i < CL_D_NCL_HOME ? h_small[i] : 0;
    else if (i < CL_D_ALL)
        dims[i] = ((i - CL_D_PART_RANGE) & 1) ? -1 : INT_MAX; /* smallest, largest */
    if (i < ncursor)
        cursor[i] = 0;
}

/* key = ((part * ncol) + column) * nzb + z bin */
static __global__ void cl_keys(const float *__restrict__ x, const uint8_t *__restrict__ zone,
                               const int *__restrict__ dims, cl_geom_t g, int *__restrict__ key,
                               int *__restrict__ count)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x, n_home = dims[CL_D_NHOME];
    if (i >= dims[CL_D_N])
        return;
    int c[3]; /* column x, column y, z bin */
    md__cell_of(x, i, g.lo, g.inv_w, g.m, c);
    int part = 0;
    if (i >= n_home) { /* a halo atom always has a zone bit; 1 is a safe home for one without */
        part = zone[i] & (CL_PARTS - 1);
        part = part ? part : 1;
    }
    int k = ((part * g.m[1] + c[1]) * g.m[0] + c[0]) * g.m[2] + c[2];
    key[i] = k;
    atomicAdd(&count[k], 1);
}

static __global__ void cl_scatter(const int *__restrict__ dims, const int *__restrict__ key,
                                  int *__restrict__ cursor, int *__restrict__ sorted)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= dims[CL_D_N])
        return;
    sorted[atomicAdd(&cursor[key[i]], 1)] = i;
}

/* The scatter's order within a bin depends on atomics: sort each (small) bin by atom index so
 * clusters, lists and hence the force sums are the same in every run. The thread of a column's
 * first bin also counts the column's clusters (nkeys = ncols * nzb; a launch of its own before). */
static __global__ void cl_bin_order(int nkeys, int nzb, const int *__restrict__ bin,
                                    int *__restrict__ sorted, int *__restrict__ col)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nkeys)
        return;
    if (b % nzb == 0) {
        const int atoms = bin[b + nzb] - bin[b];
        col[b / nzb] = (atoms + MD_CLUSTER_SIZE - 1) / MD_CLUSTER_SIZE;
    }
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

/* The slots: atom p of the sort goes to its column's clusters, after the column's atoms before
 * it; the last atom of a column marks the rest of its cluster as padding (-1), so no slot needs
 * clearing first. Thread 0 also writes the cluster counts from the columns' offsets (home
 * columns first, then the halo parts'), read from the next kernel on. */
static __global__ void cl_fill(int *dims, int nzb, int ncol, int ncols,
                               const int *__restrict__ sorted, const int *__restrict__ key,
                               const int *__restrict__ bin, const int *__restrict__ col,
                               int *__restrict__ perm)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p == 0) {
        dims[CL_D_NCL_HOME] = col[ncol];
        dims[CL_D_NCL] = col[ncols];
    }
    if (p >= dims[CL_D_N])
        return;
    int i = sorted[p];
    int c = key[i] / nzb;
    const int b0 = bin[(size_t)c * nzb], atoms = bin[(size_t)(c + 1) * nzb] - b0;
    int idx = p - b0;
    int *at = perm + (size_t)col[c] * MD_CLUSTER_SIZE;
    at[idx] = i;
    if (idx == atoms - 1)
        for (int s = atoms; s % MD_CLUSTER_SIZE != 0; s++)
            at[s] = -1;
}

/* bounding boxes and zone masks of the clusters; positions of all slots (padding far away),
 * also as the three references (the prunes' and the build's: nslots, the slots' capacity, apart:
 * where they are does not depend on the build's count), and no forces yet;
 * the slot of each atom. A thread per slot, the 8 slots of a cluster on 8 neighbouring lanes
 * that reduce its box by shuffles (a thread per cluster would walk its 8 atoms one load after
 * another, a large part of the build). */
static __global__ void cl_bbox(const int *__restrict__ dims, const int *__restrict__ perm,
                               const float *__restrict__ x, const uint8_t *__restrict__ zone,
                               float4 *__restrict__ bbox, float4 *__restrict__ bnow,
                               float4 *__restrict__ xq, float4 *__restrict__ ref,
                               float *__restrict__ fs, int *__restrict__ slot_of, size_t nslots)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x, ncl = dims[CL_D_NCL];
    const int c = s / MD_CLUSTER_SIZE;
    if (c >= ncl)
        return; /* the cluster's 8 lanes alike */
    const unsigned group = 0xffu << (threadIdx.x & 24);
    float lo0 = 3e38f, lo1 = 3e38f, lo2 = 3e38f, hi0 = -3e38f, hi1 = -3e38f, hi2 = -3e38f;
    unsigned zm = 0;
    const int a = perm[s];
    float4 q = make_float4(CL_PAD, CL_PAD, CL_PAD, __int_as_float(CL_ZONE_TAG));
    if (a >= 0) {
        const float p0 = x[3 * (size_t)a], p1 = x[3 * (size_t)a + 1], p2 = x[3 * (size_t)a + 2];
        const int z = zone[a];
        lo0 = hi0 = p0, lo1 = hi1 = p1, lo2 = hi2 = p2;
        zm = 1u << (z & 7);
        q = make_float4(p0, p1, p2, __int_as_float(CL_ZONE_TAG | z));
        slot_of[a] = s;
    }
    xq[s] = q;
    for (int k = 0; k < 3; k++)
        ref[k * nslots + s] = q;
    fs[3 * (size_t)s] = fs[3 * (size_t)s + 1] = fs[3 * (size_t)s + 2] = 0.0f;
    for (int o = 1; o < MD_CLUSTER_SIZE; o <<= 1) {
        lo0 = fminf(lo0, __shfl_xor_sync(group, lo0, o, MD_CLUSTER_SIZE));
        lo1 = fminf(lo1, __shfl_xor_sync(group, lo1, o, MD_CLUSTER_SIZE));
        lo2 = fminf(lo2, __shfl_xor_sync(group, lo2, o, MD_CLUSTER_SIZE));
        hi0 = fmaxf(hi0, __shfl_xor_sync(group, hi0, o, MD_CLUSTER_SIZE));
        hi1 = fmaxf(hi1, __shfl_xor_sync(group, hi1, o, MD_CLUSTER_SIZE));
        hi2 = fmaxf(hi2, __shfl_xor_sync(group, hi2, o, MD_CLUSTER_SIZE));
        zm |= __shfl_xor_sync(group, zm, o, MD_CLUSTER_SIZE);
    }
    if (s % MD_CLUSTER_SIZE == 0) { /* the boxes now are the build's until a gather moves */
        const float4 b0 = make_float4(lo0, lo1, lo2, __uint_as_float(zm));
        const float4 b1 = make_float4(hi0, hi1, hi2, 0.0f);
        bbox[2 * (size_t)c] = bnow[2 * (size_t)c] = b0;
        bbox[2 * (size_t)c + 1] = bnow[2 * (size_t)c + 1] = b1;
    }
}

/* Per column (and part), whose clusters are cut from atoms in z-bin order: the running largest
 * top and the running smallest bottom from the other end, monotonic along the column where the
 * boxes themselves are only nearly so (atoms within a bin are in index order). A warp per
 * column, 32 clusters at a time by a scan over the lanes (a thread per column would walk it one
 * cluster after another). */
static __global__ void cl_zwin(int ncols, int ncol, int m0, const int *__restrict__ col,
                               const float4 *__restrict__ bbox, float2 *__restrict__ zwin,
                               cl_state_t *st, int *__restrict__ dims)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        cl_arm(st); /* read by the kernels after the build */
    const int c = (int)(((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (c >= ncols)
        return; /* the whole warp */
    const int a = col[c], e = col[c + 1];
    if (lane == 0 && e > a) { /* the part's column range (CL_D_PART_RANGE) */
        const int p = c / ncol, cx = c % ncol % m0, cy = c % ncol / m0;
        int *r = dims + CL_D_PART_RANGE + 4 * p;
        atomicMin(&r[0], cx);
        atomicMax(&r[1], cx);
        atomicMin(&r[2], cy);
        atomicMax(&r[3], cy);
    }
    float top = -3e38f;
    for (int j0 = a; j0 < e; j0 += 32) {
        const int j = j0 + lane;
        float v = j < e ? bbox[2 * (size_t)j + 1].z : -3e38f;
        for (int d = 1; d < 32; d <<= 1) {
            const float t = __shfl_up_sync(CL_FULL, v, d);
            if (lane >= d)
                v = fmaxf(v, t);
        }
        v = fmaxf(v, top);
        if (j < e)
            zwin[j].x = v;
        top = __shfl_sync(CL_FULL, v, 31);
    }
    float bottom = 3e38f;
    for (int j1 = e; j1 > a; j1 -= 32) { /* from the top down: lane 0 the highest */
        const int j = j1 - 1 - lane;
        float v = j >= a ? bbox[2 * (size_t)j].z : 3e38f;
        for (int d = 1; d < 32; d <<= 1) {
            const float t = __shfl_up_sync(CL_FULL, v, d);
            if (lane >= d)
                v = fminf(v, t);
        }
        v = fminf(v, bottom);
        if (j >= a)
            zwin[j].y = v;
        bottom = __shfl_sync(CL_FULL, v, 31);
    }
}

/* ---- host side ------------------------------------------------------------------------- */

/* Make each of the k arrays hold at least `want` elements of its size (contents not kept). */
/* Zero new memory before any stream uses it (growth only: a rebuild's rare event): on the
 * legacy stream, waited for, since the build's streams do not wait for that stream. */
extern "C" cudaError_t md__clusters_zero(void *p, size_t bytes)
{
    CL_TRY(cudaMemset(p, 0, bytes));
    return cudaStreamSynchronize(0);
}

/* The build's scans share one scratch (one stream, one after another), its own allocation: zero
 * when new, and every scan leaves it ready for the next (md_kernels.h). */
extern "C" cudaError_t md__clusters_scan_room(md_clusters_t *c, size_t ints)
{
    if (ints <= c->cap_scan && c->scan)
        return cudaSuccess;
    void **p[] = {(void **)&c->scan};
    size_t el[] = {sizeof(int)};
    CL_TRY(md__clusters_grow(p, el, 1, &c->cap_scan, ints));
    return md__clusters_zero(c->scan, sizeof(int) * c->cap_scan);
}

extern "C" cudaError_t md__clusters_grow(void **p[], const size_t elem[], int k, size_t *cap,
                                         size_t want)
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

/* Columns as wide as a cube of 8 atoms, z bins a quarter of that; coarser when the key space
 * would outgrow the atoms (sparse systems). Where c->edge asks for it (x, y), a whole number of
 * columns below that edge and the extent rounded up to whole columns of that width. */
static void cl_geometry(md_clusters_t *c, const float lo[3], const float ext[3], double density,
                        int n)
{
    double side = cbrt((double)MD_CLUSTER_SIZE / (density > 0 ? density : 1.0));
    double w[3] = {side, side, 0.25 * side};
    double e[3];
    for (;;) {
        double keys = 2.0; /* home and halo: the halo parts share the halo atoms */
        for (int d = 0; d < 3; d++) {
            double k = ceil(ext[d] / w[d]);
            e[d] = ext[d];
            const double edge = d < 2 ? (double)c->edge[d] : 0.0;
            if (edge > 0 && edge < ext[d]) {
                const double below = fmax(1.0, floor(edge / w[d] + 0.5));
                const double ka = ceil(ext[d] / (edge / below));
                if (ka <= 4096) {
                    k = ka;
                    e[d] = ka * (edge / below);
                }
            }
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
        c->inv_w[d] = (float)(c->m[d] / e[d]);
    }
}

extern "C" cudaError_t md__clusters_sort_prepare(md_clusters_t *c, const float lo[3],
                                                 const float ext[3], double density)
{
    cl_geometry(c, lo, ext, density, c->n);
    const cl_geom_t g = cl_geom_of(c);
    const int n = c->n;
    const int ncol = c->m[0] * c->m[1], nzb = c->m[2];
    const int nkeys = g.parts * ncol * nzb; /* no halo: the 7 halo parts would stay empty */
    {
        void **p[] = {(void **)&c->key, (void **)&c->sorted, (void **)&c->slot_of};
        size_t el[] = {sizeof(int), sizeof(int), sizeof(int)};
        CL_TRY(md__clusters_grow(p, el, 3, &c->cap_atoms, (size_t)(n > 0 ? n : 1)));
    }
    {
        void **p[] = {(void **)&c->bin, (void **)&c->cursor};
        size_t el[] = {sizeof(int), sizeof(int)};
        CL_TRY(md__clusters_grow(p, el, 2, &c->cap_keys, (size_t)nkeys + 1));
    }
    CL_TRY(md__clusters_scan_room(c, halox_scan_scratch(nkeys)));
    CL_TRY(md__clusters_scan_room(c, halox_scan_scratch(g.parts * ncol)));
    {
        void **p[] = {(void **)&c->col};
        size_t el[] = {sizeof(int)};
        CL_TRY(md__clusters_grow(p, el, 1, &c->cap_cols, (size_t)g.parts * ncol + 1));
    }
    /* the clusters are counted on the device: room for as many as the atoms can make */
    const size_t most = cl_cluster_bound(n, (long long)g.parts * ncol);
    {
        void **p[] = {(void **)&c->perm, (void **)&c->xq, (void **)&c->ref, (void **)&c->fs};
        size_t el[] = {sizeof(int), 4 * sizeof(float), 12 * sizeof(float), 3 * sizeof(float)};
        CL_TRY(md__clusters_grow(p, el, 4, &c->cap_slots, MD_CLUSTER_SIZE * most));
    }
    {
        void **p[] = {(void **)&c->bbox, (void **)&c->cnt_loc, (void **)&c->cnt_nl,
                      (void **)&c->zwin, (void **)&c->bnow};
        size_t el[] = {8 * sizeof(float), sizeof(int), sizeof(int), 2 * sizeof(float),
                       8 * sizeof(float)};
        CL_TRY(md__clusters_grow(p, el, 5, &c->cap_cl, most));
    }
    return cudaSuccess;
}

extern "C" cudaError_t md__clusters_sort_enqueue(const md_clusters_t *c, const float *x,
                                                 const uint8_t *zone, cudaStream_t stream)
{
    const cl_geom_t g = cl_geom_of(c);
    const int ncol = c->m[0] * c->m[1], nzb = c->m[2];
    const int nkeys = g.parts * ncol * nzb, ncols = g.parts * ncol;
    const long long atoms = (long long)c->cap_atoms, cls = (long long)c->cap_cl;
    /* sort the atoms by key: count, scan, scatter, order each bin by index */
    HALOX_LAUNCH(cl_reset, cl_blocks(nkeys + 1 > CL_D_ALL ? nkeys + 1 : CL_D_ALL, 256), 256, stream)
    (c->h_small, c->dims, c->cursor, nkeys + 1);
    CL_TRY(cudaGetLastError());
    HALOX_LAUNCH(cl_keys, cl_blocks(atoms, 256), 256, stream)
    (x, zone, c->dims, g, c->key, c->cursor);
    CL_TRY(cudaGetLastError());
    CL_TRY(halox_scan(c->cursor, nkeys, c->bin, c->cursor, c->scan, stream));
    HALOX_LAUNCH(cl_scatter, cl_blocks(atoms, 256), 256, stream)
    (c->dims, c->key, c->cursor, c->sorted);
    CL_TRY(cudaGetLastError());
    /* each bin in index order, and the clusters per column */
    HALOX_LAUNCH(cl_bin_order, cl_blocks(nkeys, 256), 256, stream)
    (nkeys, nzb, c->bin, c->sorted, c->col);
    CL_TRY(cudaGetLastError());
    /* the columns' offsets: home columns first, then the halo parts' columns */
    CL_TRY(halox_scan(c->col, ncols, c->col, c->col, c->scan, stream));
    /* the counts, the slots and the boxes without a launch of their own each (the build is a
     * chain of small kernels, each node a cost of its own) */
    HALOX_LAUNCH(cl_fill, cl_blocks(atoms, 256), 256, stream)
    (c->dims, nzb, ncol, ncols, c->sorted, c->key, c->bin, c->col, c->perm);
    CL_TRY(cudaGetLastError());
    /* every reference at the build's positions; no forces yet */
    HALOX_LAUNCH(cl_bbox, cl_blocks(MD_CLUSTER_SIZE * cls, 128), 128, stream)
    (c->dims, c->perm, x, zone, (float4 *)c->bbox, (float4 *)c->bnow, (float4 *)c->xq,
     (float4 *)c->ref, c->fs, c->slot_of, c->cap_slots);
    CL_TRY(cudaGetLastError());
    HALOX_LAUNCH(cl_zwin, cl_blocks(32LL * ncols, 128), 128, stream)
    (ncols, ncol, c->m[0], c->col, (const float4 *)c->bbox, (float2 *)c->zwin,
     (cl_state_t *)c->state, c->dims);
    return cudaGetLastError();
}
