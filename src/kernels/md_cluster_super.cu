/* Super-rows of the local list (see md_cluster.h): rows 2r and 2r + 1 merged, each entry with the
 * mask of the rows that hold it. An experiment that bench/pair_roofline_bench times against the
 * rows (halox__md_clusters_lj_super in md_cluster_lj.cu); the engine does not use it. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/md_cluster.h"
#include "kernels/md_cluster_internal.cuh"

/* One thread per super-row: row 2r's entries (mask 1), then row 2r + 1's, marked where 2r holds
 * them already (a row holds an entry once) and appended otherwise (mask 2). */
static __global__ void cl_super_merge(int ncl_home, const int *__restrict__ jl,
                                      const int *__restrict__ cnt, int max_row, int nrows, int smax,
                                      int *__restrict__ sjl, uint8_t *__restrict__ smask,
                                      int *__restrict__ scnt)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= nrows)
        return;
    const int a = 2 * r, b = a + 1;
    int *o = sjl + (size_t)r * smax;
    uint8_t *om = smask + (size_t)r * smax;
    const int na = cnt[a];
    int n = 0;
    for (int k = 0; k < na; k++, n++) {
        o[n] = jl[(size_t)a * max_row + k];
        om[n] = 1;
    }
    if (b < ncl_home) {
        const int nb = cnt[b];
        for (int k = 0; k < nb; k++) {
            const int e = jl[(size_t)b * max_row + k];
            int at = -1;
            for (int t = 0; t < na && at < 0; t++)
                if (o[t] == e)
                    at = t;
            if (at >= 0) {
                om[at] |= 2;
            } else {
                o[n] = e;
                om[n++] = 2;
            }
        }
    }
    scnt[r] = n;
}

extern "C" cudaError_t halox__md_clusters_super_build(const md_clusters_t *c,
                                                      md_clusters_super_t *s, cudaStream_t stream)
{
    const int pr = cl_pruning(c);
    const int *jl = pr ? c->jl_loc_in : c->jl_loc, *cnt = pr ? c->cnt_loc_in : c->cnt_loc;
    s->nrows = (c->ncl_home + 1) / 2;
    s->max_row = 2 * c->max_loc;
    if (s->nrows <= 0)
        return cudaSuccess;
    const size_t want = (size_t)s->nrows * (size_t)s->max_row;
    if (want > s->cap || !s->jl) {
        halox__md_clusters_super_free(s);
        s->nrows = (c->ncl_home + 1) / 2;
        s->max_row = 2 * c->max_loc;
        CL_TRY(cudaMalloc((void **)&s->jl, sizeof(int) * want));
        CL_TRY(cudaMalloc((void **)&s->mask, want));
        CL_TRY(cudaMalloc((void **)&s->cnt, sizeof(int) * (size_t)s->nrows));
        s->cap = want;
    }
    cl_super_merge<<<cl_blocks(s->nrows, 128), 128, 0, stream>>>(
        c->ncl_home, jl, cnt, c->max_loc, s->nrows, s->max_row, s->jl, s->mask, s->cnt);
    CL_TRY(cudaGetLastError());
    return cudaStreamSynchronize(stream);
}

extern "C" void halox__md_clusters_super_free(md_clusters_super_t *s)
{
    if (s->jl)
        cudaFree(s->jl);
    if (s->mask)
        cudaFree(s->mask);
    if (s->cnt)
        cudaFree(s->cnt);
    (void)cudaGetLastError();
    s->jl = NULL;
    s->mask = NULL;
    s->cnt = NULL;
    s->cap = 0;
    s->nrows = s->max_row = 0;
}
