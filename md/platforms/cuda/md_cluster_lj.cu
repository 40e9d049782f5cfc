/* The cluster Lennard-Jones kernel over the local or the non-local list, pruning the inner list
 * from the outer one when the gathers decided so (see md_cluster.h). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_cluster_internal.cuh"
#include "platforms/cuda/md_reduce.cuh"
#include "platforms/cuda/md_timeline.cuh"

#define CL_THREADS 128 /* 4 warps: 4 rows per block */
#define CL_WARPS   (CL_THREADS / 32)

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

/* An entry's j cluster (-1: none, a padding entry) and its image (MD_CLUSTER_NO_SHIFT: none);
 * md_cluster_build.cu writes j | shift << MD_CLUSTER_SHIFT_BIT. */
__device__ static __forceinline__ int cl_entry_jc(int ent)
{
    return ent >= 0 ? (ent & ((1 << MD_CLUSTER_SHIFT_BIT) - 1)) : -1;
}
__device__ static __forceinline__ int cl_entry_sh(int ent)
{
    return ent >= 0 ? (ent >> MD_CLUSTER_SHIFT_BIT) : MD_CLUSTER_NO_SHIFT;
}

/* Lane jl's j atom of cluster jc (padding far away when jc < 0), moved by the image sh. */
__device__ static __forceinline__ float4 cl_j_atom(const float4 *__restrict__ xq, int jc, int sh,
                                                   int jl, float bx, float by, float bz)
{
    float4 xj = make_float4(CL_PAD, CL_PAD, CL_PAD, __int_as_float(CL_ZONE_TAG));
    if (jc >= 0) {
        xj = __ldg(&xq[(size_t)jc * MD_CLUSTER_SIZE + jl]);
        xj.x += (float)(sh % 3 - 1) * bx;
        xj.y += (float)((sh / 3) % 3 - 1) * by;
        xj.z += (float)(sh / 9 - 1) * bz;
    }
    return xj;
}

/* Can the j cluster of entry ent (moved by its image, as cl_j_atom moves each atom) hold an atom
 * within sqrt(r2) of the row's box [lo, hi]? bnow: the boxes at the last gather (md_cluster.h).
 * The squared distance of two boxes is at most that of any pair of their atoms; a relative
 * margin of 1e-5 covers the rounding (contracted or not) of the pair test, so an entry refused
 * here would have been refused there. */
__device__ static __forceinline__ int cl_box_near(const float4 *__restrict__ bnow, int ent,
                                                  float4 lo, float4 hi, float r2, float bx,
                                                  float by, float bz)
{
    const int jc = cl_entry_jc(ent), sh = cl_entry_sh(ent);
    const float sx = (float)(sh % 3 - 1) * bx, sy = (float)((sh / 3) % 3 - 1) * by,
                sz = (float)(sh / 9 - 1) * bz;
    const float4 jlo = __ldg(&bnow[2 * (size_t)jc]), jhi = __ldg(&bnow[2 * (size_t)jc + 1]);
    const float gx = fmaxf(0.0f, fmaxf(jlo.x + sx - hi.x, lo.x - (jhi.x + sx)));
    const float gy = fmaxf(0.0f, fmaxf(jlo.y + sy - hi.y, lo.y - (jhi.y + sy)));
    const float gz = fmaxf(0.0f, fmaxf(jlo.z + sz - hi.z, lo.z - (jhi.z + sz)));
    return gx * gx + gy * gy + gz * gz < r2 * (1.0f + 1e-5f);
}

/* The pair terms of the j atom xj (lane jl) with the 8 i atoms si, branch-free and masked by the
 * tests (not the same atom or padding, the self pair's lower triangle when self, beyond the
 * cut-off, with ZONES the zone rule). The i forces into fi*, the j force into fj*, with ENERGY the
 * energies and virials. */
template <int ENERGY, int ZONES>
__device__ static __forceinline__ void
cl_pairs8(const float4 *si, float4 xj, int self, int jl, float rc2, double eshift,
          float fix[MD_CLUSTER_SIZE], float fiy[MD_CLUSTER_SIZE], float fiz[MD_CLUSTER_SIZE],
          float &fjx, float &fjy, float &fjz, double &e, double &w)
{
    const int zj = __float_as_int(xj.w) & 0xff;
#pragma unroll
    for (int k = 0; k < MD_CLUSTER_SIZE; k++) {
        const float4 a = si[k];
        const float dx = a.x - xj.x, dy = a.y - xj.y, dz = a.z - xj.z;
        const float r2 = dx * dx + dy * dy + dz * dz;
        int ok = r2 > 0.0f && (!self || k < jl) && r2 < rc2;
        if (ZONES)
            ok = ok && ((__float_as_int(a.w) & zj & 0xff) == 0);
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
}

/* The i forces of a row cluster, reduced over the 8 lanes of each group (lane jl takes i atom
 * jl), then over the four groups, added to its slots o (3 per slot) by group 0; the whole warp
 * calls it. */
__device__ static __forceinline__ void cl_row_forces(float fix[MD_CLUSTER_SIZE],
                                                     float fiy[MD_CLUSTER_SIZE],
                                                     float fiz[MD_CLUSTER_SIZE], int jl, int g,
                                                     float *o)
{
    float fx = cl_reduce8(fix, jl), fy = cl_reduce8(fiy, jl), fz = cl_reduce8(fiz, jl);
    fx += __shfl_xor_sync(CL_FULL, fx, 8);
    fy += __shfl_xor_sync(CL_FULL, fy, 8);
    fz += __shfl_xor_sync(CL_FULL, fz, 8);
    fx += __shfl_xor_sync(CL_FULL, fx, 16);
    fy += __shfl_xor_sync(CL_FULL, fy, 16);
    fz += __shfl_xor_sync(CL_FULL, fz, 16);
    if (g == 0 && (fx != 0.0f || fy != 0.0f || fz != 0.0f)) {
        o += 3 * jl;
        atomicAdd(o, fx);
        atomicAdd(o + 1, fy);
        atomicAdd(o + 2, fz);
    }
}

/* The j force of a lane, once per entry (no reduction: the lane ran over all i atoms). */
__device__ static __forceinline__ void cl_j_forces(int jc, int jl, float fjx, float fjy, float fjz,
                                                   float *__restrict__ fs)
{
    if (jc >= 0 && (fjx != 0.0f || fjy != 0.0f || fjz != 0.0f)) {
        float *o = fs + 3 * ((size_t)jc * MD_CLUSTER_SIZE + jl);
        atomicAdd(o, fjx);
        atomicAdd(o + 1, fjy);
        atomicAdd(o + 2, fjz);
    }
}

/* One warp per row cluster (or per chunk of a row: the non-local work items, the local chunks
 * with LCH); lane = j atom jl (lane & 7) of the pass's j-cluster g (lane >> 3).
 * Four j-clusters per pass: each lane loads its own j atom (shifted by the entry's image) and runs
 * over the row's 8 i atoms, staged once per row in shared memory and read by broadcast. The
 * force on the lane's j atom is complete after the pass (one atomic per component, no
 * reduction); the forces on the 8 i atoms accumulate in registers over the whole row and are
 * reduced over the warp once at its end. The pair term is computed branch-free and masked
 * (padding, the self pair's lower triangle, beyond the cut-off, and with ZONES the zone rule),
 * so the warp never diverges; 1/r^2 is the fast reciprocal (__fdividef: 2 ulp).
 *
 * When the list prunes (cl_prunes_now: st given) the warp first runs over the outer row testing
 * distances only (32 entries at a time by their clusters' bounding boxes, a lane each, then the
 * atom pairs of those whose boxes are within rl_in, since testing every entry's 64 pairs costs
 * a prune step more than two plain steps: docs/MD-DESIGN.md#verlet-buffer-and-dynamic-pruning),
 * writes the entries with some atom pair within
 * rl_in (rlin2) as the inner row and the row's positions as the reference of the next prune
 * decision, then computes the forces over that inner row as on any step: the entries dropped
 * cost a distance test, not the pair term (forces over the outer row would double a prune
 * step's cost). */
template <int ENERGY, int ZONES, int LCH>
static __global__ void __launch_bounds__(CL_THREADS)
    cl_lj(const float4 *__restrict__ xq, const int *__restrict__ jl_out,
          const int *__restrict__ cnt_out, int *__restrict__ jl_in, int *__restrict__ cnt_in,
          int max_row, cl_state_t *st, int buf, int list, float thr_in2, float4 *__restrict__ ref,
          float rlin2, int nrows, const int *__restrict__ items, int nitems, int chunk, int kch,
          float rc2, float bx, float by, float bz, double eshift, float *__restrict__ fs,
          double *__restrict__ energy, const float4 *__restrict__ bnow,
          const int *__restrict__ dims, md_timeline_t *tl, int tl_kind)
{
    halox_chained_wait(); /* launched chained (halox/device/launch.cuh) */
    __shared__ float4 si[CL_WARPS][MD_CLUSTER_SIZE];
    __shared__ int sel[CL_WARPS][32]; /* a prune's entries that pass the box test */
    if (dims) {                       /* spans (md_cluster.h): the build's counts on the device */
        nrows = dims[ZONES ? CL_D_NCL : CL_D_NCL_HOME];
        nitems = dims[CL_D_ITEMS];
    }
    const int tn = cl_tl_begin(tl, tl_kind);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int jl = lane & 7, g = lane >> 3;
    const int wid = blockIdx.x * CL_WARPS + warp;
    const int prune = st ? cl_prunes_now(st, buf, list, thr_in2) : 0;
    if (prune && blockIdx.x == 0 && threadIdx.x == 0)
        st->prunes[list]++; /* one thread of the launch: read by the kick after it */
    /* the warp's row, and with items (non-local rows: ZONES) or LCH (local rows) its chunk kc,
     * entries [c0, c0 + ch) of the row: a prune then takes every row's positions as its
     * reference here (with items rows without items too, with LCH chunk 0's warp). Without,
     * the row's entries (the whole-row local instance compiles none of this and keeps its 64
     * registers) */
    const int its = ZONES && items != NULL, cut = its || (!ZONES && LCH);
    const int ch = cut ? chunk : max_row, kk = cut ? kch : 1;
    int row = wid, kc = 0;
    if (ZONES && its) {
        if (prune && wid < nrows && lane < MD_CLUSTER_SIZE)
            ref[(size_t)wid * MD_CLUSTER_SIZE + lane] = xq[(size_t)wid * MD_CLUSTER_SIZE + lane];
        const int it = wid < nitems ? __ldg(&items[wid]) : -1;
        row = it >= 0 ? it / kk : nrows;
        kc = it >= 0 ? it % kk : 0;
    }
    if (!ZONES && LCH && nrows > 0) { /* chunk-major: chunk kc of every row, then kc + 1 */
        kc = wid / nrows;
        row = kc < kk ? wid % nrows : nrows;
    }
    const int c0 = kc * ch;
    double e = 0, w = 0;
    if (row < nrows) { /* uniform over the warp */
        if (lane < MD_CLUSTER_SIZE) {
            const float4 xi = xq[(size_t)row * MD_CLUSTER_SIZE + lane];
            si[warp][lane] = xi;
            if (prune && !its && kc == 0)
                ref[(size_t)row * MD_CLUSTER_SIZE + lane] = xi;
        }
        __syncwarp();
        int *in_row = jl_in + (size_t)row * max_row + c0;
        int m = 0;                 /* entries of the inner row (uniform over the warp) */
        if (prune) {               /* the outer row, distances only, into the inner row */
            int mo = cnt_out[row]; /* the chunk's when cut, else the row's */
            if (cut)
                mo = mo - c0 < ch ? mo - c0 : ch;
            const int *out_row = jl_out + (size_t)row * max_row + c0;
            const float4 blo = bnow[2 * (size_t)row], bhi = bnow[2 * (size_t)row + 1];
            int kept = 0;
            for (int base = 0; base < mo; base += 32) {
                /* first a lane per entry: an entry whose j cluster's box is rl_in or more from
                 * the row's cannot hold a pair within rl_in; the others, in order, go on to the
                 * atom pairs' test below (which alone decides: the result is that of testing
                 * every entry) */
                const int mine = base + lane < mo ? __ldg(&out_row[base + lane]) : -1;
                const int near = mine >= 0 && cl_box_near(bnow, mine, blo, bhi, rlin2, bx, by, bz);
                const unsigned nearb = __ballot_sync(CL_FULL, near);
                if (near)
                    sel[warp][__popc(nearb & ((1u << lane) - 1u))] = mine;
                __syncwarp();
                const int nb = __popc(nearb);
                const int mye = lane < nb ? sel[warp][lane] : -1;
                __syncwarp(); /* read before the next pass writes */
                for (int q = 0; q < nb; q += 4) {
                    const int ent = __shfl_sync(CL_FULL, mye, q + g);
                    const int jc = cl_entry_jc(ent);
                    const int sh = cl_entry_sh(ent);
                    /* padding (jc < 0) sits farther than rl_in from every i atom */
                    const float4 xj = cl_j_atom(xq, jc, sh, jl, bx, by, bz);
                    const int zj = __float_as_int(xj.w) & 0xff;
                    const int self = jc == row && sh == MD_CLUSTER_NO_SHIFT;
                    unsigned bits = 0; /* bit k: i atom k within rl_in of this lane's j */
#pragma unroll
                    for (int k = 0; k < MD_CLUSTER_SIZE; k++) {
                        const float4 a = si[warp][k];
                        const float dx = a.x - xj.x, dy = a.y - xj.y, dz = a.z - xj.z;
                        const float r2 = dx * dx + dy * dy + dz * dz;
                        int ok = r2 > 0.0f && (!self || k < jl);
                        if (ZONES)
                            ok = ok && ((__float_as_int(a.w) & zj & 0xff) == 0);
                        bits |= (unsigned)(ok && r2 < rlin2) << k;
                    }
                    const unsigned b = __ballot_sync(CL_FULL, bits != 0);
                    unsigned groups = 0;
#pragma unroll
                    for (int t = 0; t < 4; t++)
                        if ((b >> (8 * t)) & 0xffu)
                            groups |= 1u << t;
                    if (((groups >> g) & 1u) && jl == 0)
                        in_row[kept + __popc(groups & ((1u << g) - 1u))] = ent;
                    kept += __popc(groups);
                }
            }
            if (lane == 0)
                cnt_in[(size_t)row * kk + kc] = kept;
            m = kept;
            __syncwarp(); /* the row's entries, written by its lanes, seen by all of them */
        }
        float fix[MD_CLUSTER_SIZE], fiy[MD_CLUSTER_SIZE], fiz[MD_CLUSTER_SIZE];
#pragma unroll
        for (int k = 0; k < MD_CLUSTER_SIZE; k++)
            fix[k] = fiy[k] = fiz[k] = 0.0f;
        /* the inner row: written above on a prune step (plain loads: not through the read-only
         * cache), by an earlier kernel otherwise */
        if (!prune)
            m = cut && !st ? min(cnt_out[row] - c0, ch) : cnt_in[(size_t)row * kk + kc];
        for (int base = 0; base < m; base += 32) {
            const int mye = base + lane < m ? (prune ? ((volatile const int *)in_row)[base + lane]
                                                     : __ldg(&in_row[base + lane]))
                                            : -1;
            const int nb = m - base < 32 ? m - base : 32;
            for (int q = 0; q < nb; q += 4) {
                const int ent = __shfl_sync(CL_FULL, mye, q + g);
                const int jc = cl_entry_jc(ent);
                const int sh = cl_entry_sh(ent);
                const float4 xj = cl_j_atom(xq, jc, sh, jl, bx, by, bz);
                float fjx = 0.0f, fjy = 0.0f, fjz = 0.0f;
                cl_pairs8<ENERGY, ZONES>(si[warp], xj, jc == row && sh == MD_CLUSTER_NO_SHIFT, jl,
                                         rc2, eshift, fix, fiy, fiz, fjx, fjy, fjz, e, w);
                cl_j_forces(jc, jl, fjx, fjy, fjz, fs);
            }
        }
        cl_row_forces(fix, fiy, fiz, jl, g, fs + 3 * (size_t)row * MD_CLUSTER_SIZE);
    }
    if (ENERGY) { /* each pair once */
        md__block_add(e, &energy[0]);
        md__block_add(w, &energy[1]);
    }
    cl_tl_end(tl, tl_kind, tn);
}

extern "C" cudaError_t md__clusters_lj(const md_clusters_t *c, int nonlocal, float rc2,
                                       double eshift, double *energy, cudaStream_t stream)
{
    /* the rows a launch spans (cl_reach; with spans the counts are read on the device) */
    const int halo = cl_span_clusters(c, 1), rows = cl_span_clusters(c, nonlocal ? 2 : 0);
    if (rows <= 0 || (nonlocal && halo <= 0))
        return cudaSuccess; /* no halo: no non-local pair */
    const int pr = cl_pruning(c);
    const int *jo = nonlocal ? c->jl_nl : c->jl_loc;
    const int *co = nonlocal ? c->cnt_nl : c->cnt_loc;
    int *ji = pr ? (nonlocal ? c->jl_nl_in : c->jl_loc_in) : (int *)jo;
    int *ci = pr ? (nonlocal ? c->cnt_nl_in : c->cnt_loc_in) : (int *)co;
    cl_state_t *st = pr ? (cl_state_t *)c->state : NULL;
    float4 *ref = (float4 *)c->ref + (nonlocal ? c->cap_slots : 0);
    const int mx = nonlocal ? c->max_nl : c->max_loc;
    const float rlin2 = pr ? c->rl_in * c->rl_in : 0.0f;
    const float4 *xq = (const float4 *)c->xq;
    /* the non-local work items (md_cluster.h), and at least a warp per row for the prunes'
     * references; the local rows' chunks (kloc of them per row, chunk-major) */
    const int span_items = cl_reach(c, c->span.items, c->nitems);
    const int *items = nonlocal && c->chunk > 0 && c->items && span_items > 0 ? c->items : NULL;
    const int nitems = items ? span_items : 0;
    const int lch = !nonlocal && c->kloc > 1;
    const int chunk = items ? c->chunk : lch ? c->lch : mx;
    const int kch = items ? c->kch : lch ? c->kloc : 1;
    const long long warps = lch ? (long long)rows * kch : nitems > rows ? nitems : rows;
    const int b = cl_blocks(warps, CL_WARPS);
    const int *dims = cl_span_dims(c);
#define CL_LJ(E, Z, L)                                                                             \
    HALOX_LAUNCH_CHAINED((cl_lj<E, Z, L>), b, CL_THREADS, stream)                                  \
    (xq, jo, co, ji, ci, mx, st, c->buf, nonlocal, cl_thr_in2(c), ref, rlin2, rows, items, nitems, \
     chunk, kch, rc2, c->box[0], c->box[1], c->box[2], eshift, c->fs, energy,                      \
     (const float4 *)c->bnow, dims, c->tl, nonlocal ? MD_TL_NONLOCAL : MD_TL_LOCAL)
    /* home-home pairs never meet the zone rule: the local kernel skips it */
    if (nonlocal && energy)
        CL_LJ(1, 1, 0);
    else if (nonlocal)
        CL_LJ(0, 1, 0);
    else if (energy && lch)
        CL_LJ(1, 0, 1);
    else if (lch)
        CL_LJ(0, 0, 1);
    else if (energy)
        CL_LJ(1, 0, 0);
    else
        CL_LJ(0, 0, 0);
#undef CL_LJ
    return cudaGetLastError();
}

/* Super-rows (md_cluster.h, an experiment timed by bench/pair_roofline_bench): one warp per pair
 * of row clusters (2r, 2r + 1), their 16 atoms staged once; each entry of the merged row loads
 * its j atoms once and runs them over the row clusters its mask names, so an entry both rows
 * hold costs one j load and one set of j atomics instead of two. The merge orders a row's
 * entries by mask in passes of 4, so the mask is the same for the warp's four groups and a pass
 * runs only the row clusters its entries meet, without divergence (empty padding entries cost
 * their pair terms, masked).
 * CL_SUPER_BLOCKS blocks per SM hold the registers to 85: at 45k atoms the 2,895 super-rows
 * then fit in one wave of 3,168 resident warps (96 registers: 2,772). */
#define CL_SUPER_BLOCKS 6
static __global__ void __launch_bounds__(CL_THREADS, CL_SUPER_BLOCKS)
    cl_lj_super(const float4 *__restrict__ xq, const int *__restrict__ jl_s,
                const uint8_t *__restrict__ mask_s, const int *__restrict__ cnt_s, int max_row,
                int nrows, int ncl_home, float rc2, float bx, float by, float bz,
                float *__restrict__ fs)
{
    halox_chained_wait();
    __shared__ float4 si[CL_WARPS][2 * MD_CLUSTER_SIZE];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int jl = lane & 7, g = lane >> 3;
    const int sr = blockIdx.x * CL_WARPS + warp;
    if (sr >= nrows) /* uniform over the warp; no block barrier follows */
        return;
    const int c0 = 2 * sr, two = c0 + 1 < ncl_home;
    if (lane < 2 * MD_CLUSTER_SIZE)
        si[warp][lane] = lane < MD_CLUSTER_SIZE || two
                             ? xq[(size_t)c0 * MD_CLUSTER_SIZE + lane]
                             : make_float4(CL_PAD, CL_PAD, CL_PAD, __int_as_float(CL_ZONE_TAG));
    __syncwarp();
    float fix0[MD_CLUSTER_SIZE], fiy0[MD_CLUSTER_SIZE], fiz0[MD_CLUSTER_SIZE];
    float fix1[MD_CLUSTER_SIZE], fiy1[MD_CLUSTER_SIZE], fiz1[MD_CLUSTER_SIZE];
#pragma unroll
    for (int k = 0; k < MD_CLUSTER_SIZE; k++)
        fix0[k] = fiy0[k] = fiz0[k] = fix1[k] = fiy1[k] = fiz1[k] = 0.0f;
    double e = 0, w = 0; /* no energies here */
    const int m = cnt_s[sr];
    const int *lst = jl_s + (size_t)sr * max_row;
    const uint8_t *ml = mask_s + (size_t)sr * max_row;
    for (int base = 0; base < m; base += 32) {
        const int mye = base + lane < m ? __ldg(&lst[base + lane]) : -1;
        const int mym = base + lane < m ? (int)__ldg(&ml[base + lane]) : 0;
        const int nb = m - base < 32 ? m - base : 32;
        for (int q = 0; q < nb; q += 4) {
            const int ent = __shfl_sync(CL_FULL, mye, q + g);
            const int mk = __shfl_sync(CL_FULL, mym, q + g);
            const int jc = cl_entry_jc(ent);
            const int sh = cl_entry_sh(ent);
            const float4 xj = cl_j_atom(xq, jc, sh, jl, bx, by, bz);
            float fjx = 0.0f, fjy = 0.0f, fjz = 0.0f;
            if (mk & 1)
                cl_pairs8<0, 0>(si[warp], xj, jc == c0 && sh == MD_CLUSTER_NO_SHIFT, jl, rc2, 0.0,
                                fix0, fiy0, fiz0, fjx, fjy, fjz, e, w);
            if (mk & 2)
                cl_pairs8<0, 0>(si[warp] + MD_CLUSTER_SIZE, xj,
                                jc == c0 + 1 && sh == MD_CLUSTER_NO_SHIFT, jl, rc2, 0.0, fix1, fiy1,
                                fiz1, fjx, fjy, fjz, e, w);
            cl_j_forces(jc, jl, fjx, fjy, fjz, fs);
        }
    }
    cl_row_forces(fix0, fiy0, fiz0, jl, g, fs + 3 * (size_t)c0 * MD_CLUSTER_SIZE);
    if (two)
        cl_row_forces(fix1, fiy1, fiz1, jl, g, fs + 3 * (size_t)(c0 + 1) * MD_CLUSTER_SIZE);
}

extern "C" cudaError_t md__clusters_lj_super(const md_clusters_t *c, const md_clusters_super_t *s,
                                             float rc2, cudaStream_t stream)
{
    if (s->nrows <= 0)
        return cudaSuccess;
    HALOX_LAUNCH_CHAINED(cl_lj_super, cl_blocks(s->nrows, CL_WARPS), CL_THREADS, stream)
    ((const float4 *)c->xq, s->jl, s->mask, s->cnt, s->max_row, s->nrows, c->ncl_home, rc2,
     c->box[0], c->box[1], c->box[2], c->fs);
    return cudaGetLastError();
}
