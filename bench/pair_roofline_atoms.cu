/* The per-atom baseline of pair_roofline_bench (pair_roofline.h): cell binning (counting sort),
 * full per-atom pair lists (local and non-local by the zone rule) and their Lennard-Jones kernel,
 * the engine's first GPU kernels (once in md/platforms/cuda/md_kernels.cu), and the count of list
 * entries within the cut-off. Every launch is checked. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "halox/device/scan.cuh"
#include "pair_roofline.h"
#include "platforms/cuda/cell_coord.cuh"
#include "platforms/cuda/md_kernels.h"
#include "platforms/cuda/md_reduce.cuh"

#define PRB_THREADS 128

/* The launch's error; clears the error state (sticky errors stay). */
static cudaError_t prb_launched(void) { return cudaGetLastError(); }

static int prb_blocks(int n, int threads)
{
    long long b = ((long long)n + threads - 1) / threads;
    return b < 1 ? 1 : (int)b;
}

void prb_make_grid(double L, double rl, int n, prb_cell_grid_t *cg)
{
    double lo = -rl - 1e-3 * rl, ext = L + 2 * rl + 2e-3 * rl, w = 0.5 * rl;
    int m = 1;
    for (;;) {
        double k = floor(ext / w);
        m = k < 1 ? 1 : (k > 1024 ? 1024 : (int)k);
        if ((double)m * m * m <= 2.0 * n + 64 || w > 4 * rl)
            break;
        w *= 1.25;
    }
    for (int d = 0; d < 3; d++) {
        cg->lo[d] = (float)lo;
        cg->inv_w[d] = (float)(m / ext);
        cg->m[d] = m;
    }
    cg->reach = (int)ceil(rl / (ext / m) - 1e-9);
    if (cg->reach < 1)
        cg->reach = 1;
}

static __global__ void prb_bin_count(const float *__restrict__ x, int n, prb_cell_grid_t g,
                                     int *__restrict__ cell_of, int *__restrict__ count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int c3[3];
    md__cell_of(x, i, g.lo, g.inv_w, g.m, c3);
    int c = (c3[2] * g.m[1] + c3[1]) * g.m[0] + c3[0];
    cell_of[i] = c;
    atomicAdd(&count[c], 1);
}

static __global__ void prb_bin_scatter(int n, const int *__restrict__ cell_of,
                                       int *__restrict__ cursor, int *__restrict__ cell_atoms)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int pos = atomicAdd(&cursor[cell_of[i]], 1);
    cell_atoms[pos] = i;
}

size_t prb_atoms_bin_scratch(int m) { return halox_scan_scratch(m); }

cudaError_t prb_atoms_bin(const float *x, int n, const prb_cell_grid_t *grid, int *cell_of,
                          int *cell_start, int *cursor, int *cell_atoms, int *scratch,
                          cudaStream_t stream)
{
    int m = grid->m[0] * grid->m[1] * grid->m[2];
    cudaError_t e = cudaMemsetAsync(cursor, 0, sizeof(int) * (size_t)(m + 1), stream);
    if (e != cudaSuccess)
        return e;
    if (n > 0) {
        prb_bin_count<<<prb_blocks(n, 256), 256, 0, stream>>>(x, n, *grid, cell_of, cursor);
        if ((e = prb_launched()) != cudaSuccess)
            return e;
    }
    /* scan the counts in place (each count is read before it is overwritten) */
    if ((e = halox_scan(cursor, m, cell_start, cursor, scratch, stream)) != cudaSuccess)
        return e;
    if (n > 0) {
        prb_bin_scatter<<<prb_blocks(n, 256), 256, 0, stream>>>(n, cell_of, cursor, cell_atoms);
        e = prb_launched();
    }
    return e;
}

static __global__ void
prb_pairlist_kernel(const float *__restrict__ x, const uint8_t *__restrict__ zone, int n_home,
                    int n, prb_cell_grid_t g, const int *__restrict__ cell_of,
                    const int *__restrict__ cell_start, const int *__restrict__ cell_atoms,
                    float rl2, int *__restrict__ nbr_loc, int *__restrict__ cnt_loc, int max_loc,
                    int *__restrict__ nbr_nl, int *__restrict__ cnt_nl, int max_nl,
                    int *__restrict__ need)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float xi = x[3 * (size_t)i], yi = x[3 * (size_t)i + 1], zi = x[3 * (size_t)i + 2];
    const uint8_t zni = zone[i];
    const int home_i = i < n_home;
    int c = cell_of[i];
    int cx = c % g.m[0], cy = (c / g.m[0]) % g.m[1], cz = c / (g.m[0] * g.m[1]);
    int nl = 0, nn = 0;
    const int R = g.reach;
    for (int dz = -R; dz <= R; dz++) {
        int z = cz + dz;
        if (z < 0 || z >= g.m[2])
            continue;
        for (int dy = -R; dy <= R; dy++) {
            int y = cy + dy;
            if (y < 0 || y >= g.m[1])
                continue;
            /* the dx range of one row of cells is contiguous in cell order */
            int x0 = cx - R < 0 ? 0 : cx - R, x1 = cx + R >= g.m[0] ? g.m[0] - 1 : cx + R;
            int row = (z * g.m[1] + y) * g.m[0];
            int k0 = cell_start[row + x0], k1 = cell_start[row + x1 + 1];
            for (int k = k0; k < k1; k++) {
                int j = cell_atoms[k];
                if (j == i)
                    continue;
                float dx = xi - x[3 * (size_t)j], dy2 = yi - x[3 * (size_t)j + 1],
                      dz2 = zi - x[3 * (size_t)j + 2];
                float r2 = dx * dx + dy2 * dy2 + dz2 * dz2;
                if (r2 >= rl2 || (zni & zone[j]) != 0)
                    continue;
                if (home_i && j < n_home) {
                    if (nl < max_loc)
                        nbr_loc[(size_t)nl * n_home + i] = j;
                    nl++;
                } else {
                    if (nn < max_nl)
                        nbr_nl[(size_t)nn * n + i] = j;
                    nn++;
                }
            }
        }
    }
    if (home_i)
        cnt_loc[i] = nl < max_loc ? nl : max_loc;
    cnt_nl[i] = nn < max_nl ? nn : max_nl;
    if (nl > max_loc || nn > max_nl) {
        atomicMax(&need[0], nl);
        atomicMax(&need[1], nn);
    }
}

cudaError_t prb_atoms_pairlist(const float *x, const uint8_t *zone, int n_home, int n,
                               const prb_cell_grid_t *grid, const int *cell_of,
                               const int *cell_start, const int *cell_atoms, float rl2,
                               int *nbr_loc, int *cnt_loc, int max_loc, int *nbr_nl, int *cnt_nl,
                               int max_nl, int *need, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    prb_pairlist_kernel<<<prb_blocks(n, PRB_THREADS), PRB_THREADS, 0, stream>>>(
        x, zone, n_home, n, *grid, cell_of, cell_start, cell_atoms, rl2, nbr_loc, cnt_loc, max_loc,
        nbr_nl, cnt_nl, max_nl, need);
    return prb_launched();
}

template <int ENERGY>
static __global__ void prb_lj_kernel(const float *__restrict__ x, const int *__restrict__ nbr,
                                     const int *__restrict__ cnt, int n, int n_split, float rc2,
                                     double eshift, float *__restrict__ out_lo,
                                     float *__restrict__ out_hi, double *__restrict__ energy)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double e = 0, w = 0;
    if (i < n) {
        const float xi = x[3 * (size_t)i], yi = x[3 * (size_t)i + 1], zi = x[3 * (size_t)i + 2];
        float fx = 0, fy = 0, fz = 0;
        const int m = cnt[i];
        for (int k = 0; k < m; k++) {
            const size_t j = (size_t)__ldg(&nbr[(size_t)k * n + i]);
            const float dx = xi - __ldg(&x[3 * j]), dy = yi - __ldg(&x[3 * j + 1]),
                        dz = zi - __ldg(&x[3 * j + 2]);
            const float r2 = dx * dx + dy * dy + dz * dz;
            if (r2 < rc2) {
                const float sr2 = 1.0f / r2;
                const float sr6 = sr2 * sr2 * sr2;
                const float fpair = 48.0f * sr6 * (sr6 - 0.5f) * sr2;
                fx += dx * fpair;
                fy += dy * fpair;
                fz += dz * fpair;
                if (ENERGY) {
                    e += (double)(4.0f * sr6 * (sr6 - 1.0f)) - eshift;
                    w += (double)(r2 * fpair);
                }
            }
        }
        float *o = i < n_split ? out_lo : out_hi;
        o[3 * (size_t)i] = fx;
        o[3 * (size_t)i + 1] = fy;
        o[3 * (size_t)i + 2] = fz;
    }
    if (ENERGY) {
        /* full lists hold every pair twice */
        md__block_add(0.5 * e, &energy[0]);
        md__block_add(0.5 * w, &energy[1]);
    }
}

cudaError_t prb_atoms_lj(const float *x, const int *nbr, const int *cnt, int n, int n_split,
                         float rc2, double eshift, float *out_lo, float *out_hi, double *energy,
                         cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    int b = prb_blocks(n, PRB_THREADS);
    if (energy)
        prb_lj_kernel<1><<<b, PRB_THREADS, 0, stream>>>(x, nbr, cnt, n, n_split, rc2, eshift,
                                                        out_lo, out_hi, energy);
    else
        prb_lj_kernel<0><<<b, PRB_THREADS, 0, stream>>>(x, nbr, cnt, n, n_split, rc2, eshift,
                                                        out_lo, out_hi, energy);
    return prb_launched();
}

/* entries of rows 0..n-1 (row stride n) with r^2 < rc2 */
static __global__ void prb_count_kernel(const float *__restrict__ x, const int *__restrict__ nbr,
                                        const int *__restrict__ cnt, int n, float rc2,
                                        unsigned long long *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float xi = x[3 * (size_t)i], yi = x[3 * (size_t)i + 1], zi = x[3 * (size_t)i + 2];
    unsigned long long c = 0;
    for (int k = 0; k < cnt[i]; k++) {
        size_t j = (size_t)nbr[(size_t)k * n + i];
        float dx = xi - x[3 * j], dy = yi - x[3 * j + 1], dz = zi - x[3 * j + 2];
        c += dx * dx + dy * dy + dz * dz < rc2;
    }
    atomicAdd(out, c);
}

cudaError_t prb_atoms_count(const float *x, const int *nbr, const int *cnt, int n, float rc2,
                            unsigned long long *out, cudaStream_t stream)
{
    prb_count_kernel<<<(n + 127) / 128, 128, 0, stream>>>(x, nbr, cnt, n, rc2, out);
    return prb_launched();
}
