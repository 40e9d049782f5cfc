/* The cluster Lennard-Jones kernel over the local or the non-local list, pruning the inner list
 * from the outer one when the gathers decided so (see md_cluster.h). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/md_cluster.h"
#include "kernels/md_cluster_internal.cuh"
#include "kernels/md_cluster_row.cuh"
#include "kernels/md_reduce.cuh"
#include "kernels/md_timeline.cuh"

/* One warp per row cluster of the list (cl_row); *prune_flag (decided by the gathers) makes the
 * rows prune first. */
template <int ENERGY, int ZONES, int MASKS>
static __global__ void __launch_bounds__(CL_THREADS)
    cl_lj(cl_list_t L, const int *prune_flag, int *valid, const float4 *__restrict__ xq, float rc2,
          float bx, float by, float bz, double eshift, float *__restrict__ fs,
          double *__restrict__ energy, const float4 *__restrict__ bnow, md_timeline_t *tl,
          int tl_kind)
{
    __shared__ float4 si[CL_WARPS][MD_CLUSTER_SIZE];
    __shared__ int sel[CL_WARPS][32]; /* a prune's entries that pass the box test */
    const int tn = cl_tl_begin(tl, tl_kind);
    const int warp = threadIdx.x >> 5;
    const int row = blockIdx.x * CL_WARPS + warp;
    const int prune = prune_flag ? *(volatile const int *)prune_flag : 0;
    if (prune && threadIdx.x == 0 && blockIdx.x == 0)
        *valid = 1; /* read by the next gather, after this kernel */
    double e = 0, w = 0;
    if (row < L.nrows) /* uniform over the warp */
        cl_row<ENERGY, ZONES, MASKS>(L, row, prune, xq, bnow, rc2, bx, by, bz, eshift, fs, si[warp],
                                     sel[warp], e, w);
    if (ENERGY) { /* each pair once */
        md__block_add(e, &energy[0]);
        md__block_add(w, &energy[1]);
    }
    cl_tl_end(tl, tl_kind, tn);
}

extern "C" cudaError_t halox__md_clusters_lj(const md_clusters_t *c, int nonlocal, float rc2,
                                             double eshift, double *energy, cudaStream_t stream)
{
    const int rows = nonlocal ? c->ncl : c->ncl_home;
    if (rows <= 0 || (nonlocal && c->ncl == c->ncl_home))
        return cudaSuccess; /* no halo: no non-local pair */
    int masks;
    const cl_list_t L = cl_list_of(c, nonlocal, &masks);
    cl_state_t *st = (cl_state_t *)c->state;
    const int *flag = cl_pruning(c) ? &st->prune[nonlocal ? 1 : 0] : NULL;
    int *valid = &st->valid[nonlocal ? 1 : 0];
    const int b = cl_blocks(rows, CL_WARPS);
#define CL_LJ(E, Z, M)                                                                             \
    cl_lj<E, Z, M><<<b, CL_THREADS, 0, stream>>>(                                                  \
        L, flag, valid, (const float4 *)c->xq, rc2, c->box[0], c->box[1], c->box[2], eshift,       \
        c->fs, energy, (const float4 *)c->bnow, c->tl, nonlocal ? MD_TL_NONLOCAL : MD_TL_LOCAL)
#define CL_LJ_M(E, Z)                                                                              \
    do {                                                                                           \
        if (masks == MD_CLUSTER_MASKS_SKIP)                                                        \
            CL_LJ(E, Z, MD_CLUSTER_MASKS_SKIP);                                                    \
        else if (masks == MD_CLUSTER_MASKS_BITS)                                                   \
            CL_LJ(E, Z, MD_CLUSTER_MASKS_BITS);                                                    \
        else                                                                                       \
            CL_LJ(E, Z, MD_CLUSTER_MASKS_TEST);                                                    \
    } while (0)
    /* home-home pairs never meet the zone rule: the local kernel skips it */
    if (nonlocal && energy)
        CL_LJ_M(1, 1);
    else if (nonlocal)
        CL_LJ_M(0, 1);
    else if (energy)
        CL_LJ_M(1, 0);
    else
        CL_LJ_M(0, 0);
#undef CL_LJ_M
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
                cl_pairs8<0, 0, 0>(si[warp], xj, jc == c0 && sh == MD_CLUSTER_NO_SHIFT, 0u, jl, rc2,
                                   0.0, fix0, fiy0, fiz0, fjx, fjy, fjz, e, w);
            if (mk & 2)
                cl_pairs8<0, 0, 0>(si[warp] + MD_CLUSTER_SIZE, xj,
                                   jc == c0 + 1 && sh == MD_CLUSTER_NO_SHIFT, 0u, jl, rc2, 0.0,
                                   fix1, fiy1, fiz1, fjx, fjy, fjz, e, w);
            cl_j_forces(jc, jl, fjx, fjy, fjz, fs);
        }
    }
    cl_row_forces(fix0, fiy0, fiz0, jl, g, fs + 3 * (size_t)c0 * MD_CLUSTER_SIZE);
    if (two)
        cl_row_forces(fix1, fiy1, fiz1, jl, g, fs + 3 * (size_t)(c0 + 1) * MD_CLUSTER_SIZE);
}

extern "C" cudaError_t halox__md_clusters_lj_super(const md_clusters_t *c,
                                                   const md_clusters_super_t *s, float rc2,
                                                   cudaStream_t stream)
{
    if (s->nrows <= 0)
        return cudaSuccess;
    cl_lj_super<<<cl_blocks(s->nrows, CL_WARPS), CL_THREADS, 0, stream>>>(
        (const float4 *)c->xq, s->jl, s->mask, s->cnt, s->max_row, s->nrows, c->ncl_home, rc2,
        c->box[0], c->box[1], c->box[2], c->fs);
    return cudaGetLastError();
}
