/* Super-rows of the local list (see md_cluster.h): rows 2r and 2r + 1 merged, each entry with the
 * mask of the rows that hold it. An experiment that bench/pair_roofline_bench times against the
 * rows (md__clusters_lj_super in md_cluster_lj.cu); the engine does not use it. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_cluster_internal.cuh"

/* One thread per super-row. The merge into t: row 2r's entries (mask 1), then row 2r + 1's,
 * marked where 2r holds them already (a row holds an entry once) and appended otherwise (mask 2).
 * Then the row in segments by mask (both rows, 2r only, 2r + 1 only), each padded with empty
 * entries (-1) to a multiple of 4: a warp's pass takes 4 entries, so its four groups always run
 * the same row clusters and the warp never diverges (with mixed masks in a pass, a group that
 * meets one cluster waits for one that meets both, and the pass costs both). */
static __global__ void cl_super_merge(int ncl_home, const int *__restrict__ jl,
                                      const int *__restrict__ cnt, int max_row, int nrows, int smax,
                                      int *__restrict__ tjl, uint8_t *__restrict__ tmask,
                                      int *__restrict__ sjl, uint8_t *__restrict__ smask,
                                      int *__restrict__ scnt)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows)
        return;
    const int a = 2 * r, b = a + 1;
    int *t = tjl + (size_t)r * smax;
    uint8_t *tm = tmask + (size_t)r * smax;
    const int na = cnt[a];
    int n = 0;
    for (int k = 0; k < na; k++, n++) {
        t[n] = jl[(size_t)a * max_row + k];
        tm[n] = 1;
    }
    if (b < ncl_home) {
        const int nb = cnt[b];
        for (int k = 0; k < nb; k++) {
            const int e = jl[(size_t)b * max_row + k];
            int at = -1;
            for (int q = 0; q < na && at < 0; q++)
                if (t[q] == e)
                    at = q;
            if (at >= 0) {
                tm[at] |= 2;
            } else {
                t[n] = e;
                tm[n++] = 2;
            }
        }
    }
    int *o = sjl + (size_t)r * smax;
    uint8_t *om = smask + (size_t)r * smax;
    int out = 0;
    for (int seg = 0; seg < 3; seg++) {
        const uint8_t want = seg == 0 ? 3 : (uint8_t)seg;
        for (int k = 0; k < n; k++)
            if (tm[k] == want) {
                o[out] = t[k];
                om[out++] = want;
            }
        for (; out & 3; out++) { /* nothing when the segment is empty: out was a multiple */
            o[out] = -1;
            om[out] = want;
        }
    }
    scnt[r] = out;
}

extern "C" cudaError_t md__clusters_super_build(const md_clusters_t *c, md_clusters_super_t *s,
                                                cudaStream_t stream)
{
    const int pr = cl_pruning(c);
    if (pr && c->kloc > 1)
        return cudaErrorInvalidValue; /* the inner rows count per chunk: build with loc_warps 0 */
    const int *jl = pr ? c->jl_loc_in : c->jl_loc, *cnt = pr ? c->cnt_loc_in : c->cnt_loc;
    /* both rows' entries, and the padding of three segments */
    const int nrows = (c->ncl_home + 1) / 2, max_row = 2 * c->max_loc + 9;
    if (nrows <= 0) {
        s->nrows = 0;
        return cudaSuccess;
    }
    const size_t want = (size_t)nrows * (size_t)max_row;
    if (want > s->cap || !s->jl) {
        md__clusters_super_free(s);
        CL_TRY(cudaMalloc((void **)&s->jl, sizeof(int) * want));
        CL_TRY(cudaMalloc((void **)&s->mask, want));
        CL_TRY(cudaMalloc((void **)&s->tmp, sizeof(int) * want));
        CL_TRY(cudaMalloc((void **)&s->tmp_mask, want));
        CL_TRY(cudaMalloc((void **)&s->cnt, sizeof(int) * (size_t)nrows));
        s->cap = want;
    }
    s->nrows = nrows;
    s->max_row = max_row;
    HALOX_LAUNCH(cl_super_merge, cl_blocks(nrows, 128), 128, stream)
    (c->ncl_home, jl, cnt, c->max_loc, nrows, max_row, s->tmp, s->tmp_mask, s->jl, s->mask, s->cnt);
    CL_TRY(cudaGetLastError());
    return cudaStreamSynchronize(stream);
}

extern "C" void md__clusters_super_free(md_clusters_super_t *s)
{
    if (s->jl)
        cudaFree(s->jl);
    if (s->mask)
        cudaFree(s->mask);
    if (s->cnt)
        cudaFree(s->cnt);
    if (s->tmp)
        cudaFree(s->tmp);
    if (s->tmp_mask)
        cudaFree(s->tmp_mask);
    (void)cudaGetLastError();
    s->jl = NULL;
    s->mask = NULL;
    s->cnt = NULL;
    s->tmp = NULL;
    s->tmp_mask = NULL;
    s->cap = 0;
    s->nrows = s->max_row = 0;
}
