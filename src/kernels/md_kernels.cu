/* MD kernels of the GPU engine: cell binning (counting sort), full per-atom pair lists (local and
 * non-local by the zone rule), Lennard-Jones forces, velocity-Verlet kicks and drift, reductions.
 * Plain C-like CUDA behind the C launchers of md_kernels.h; every launch is checked. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/md_kernels.h"
#include "kernels/md_reduce.cuh"

#define MD__THREADS      128
#define MD__SCAN_THREADS 1024

/* The launch's error; clears the error state (sticky errors stay). */
static cudaError_t md__launched(void) { return cudaGetLastError(); }

static int md__blocks(int n, int threads)
{
    long long b = ((long long)n + threads - 1) / threads;
    return b < 1 ? 1 : (int)b;
}

__device__ static inline int md__cell_coord(float x, float lo, float inv_w, int m)
{
    int c = (int)floorf((x - lo) * inv_w);
    return c < 0 ? 0 : (c >= m ? m - 1 : c);
}

__global__ void md__bin_count(const float *__restrict__ x, int n, md_cell_grid_t g,
                              int *__restrict__ cell_of, int *__restrict__ count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int cx = md__cell_coord(x[3 * (size_t)i], g.lo[0], g.inv_w[0], g.m[0]);
    int cy = md__cell_coord(x[3 * (size_t)i + 1], g.lo[1], g.inv_w[1], g.m[1]);
    int cz = md__cell_coord(x[3 * (size_t)i + 2], g.lo[2], g.inv_w[2], g.m[2]);
    int c = (cz * g.m[1] + cy) * g.m[0] + cx;
    cell_of[i] = c;
    atomicAdd(&count[c], 1);
}

/* Exclusive scan of count[0..m) into start[0..m] (start[m] = total) by one block: each thread
 * sums a contiguous chunk, the chunk sums are scanned in shared memory, then written out. */
__global__ void md__scan(const int *count, int m, int *start, int *cursor)
{
    __shared__ int part[MD__SCAN_THREADS];
    int t = threadIdx.x;
    int chunk = (m + MD__SCAN_THREADS - 1) / MD__SCAN_THREADS;
    int a = t * chunk, b = a + chunk < m ? a + chunk : m;
    int s = 0;
    for (int k = a; k < b; k++)
        s += count[k];
    part[t] = s;
    __syncthreads();
    for (int off = 1; off < MD__SCAN_THREADS; off *= 2) {
        int v = t >= off ? part[t - off] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    int run = part[t] - s; /* exclusive prefix of this chunk */
    for (int k = a; k < b; k++) {
        int c = count[k];
        start[k] = run;
        cursor[k] = run;
        run += c;
    }
    if (t == MD__SCAN_THREADS - 1)
        start[m] = part[t];
}

__global__ void md__bin_scatter(int n, const int *__restrict__ cell_of, int *__restrict__ cursor,
                                int *__restrict__ cell_atoms)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int pos = atomicAdd(&cursor[cell_of[i]], 1);
    cell_atoms[pos] = i;
}

/* Inclusive scan of v over the block (blockDim.x == MD__SCAN_THREADS): warps by shuffles, then
 * the warps' totals. */
__device__ static inline int md__block_scan(int v)
{
    __shared__ int wsum[MD__SCAN_THREADS / 32];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    for (int o = 1; o < 32; o <<= 1) {
        int y = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o)
            v += y;
    }
    if (lane == 31)
        wsum[w] = v;
    __syncthreads();
    if (w == 0) {
        int s = wsum[lane];
        for (int o = 1; o < 32; o <<= 1) {
            int y = __shfl_up_sync(0xffffffffu, s, o);
            if (lane >= o)
                s += y;
        }
        wsum[lane] = s;
    }
    __syncthreads();
    if (w > 0)
        v += wsum[w - 1];
    return v;
}

/* pass 1 of the large scan: the sum of each tile of MD__SCAN_THREADS counts */
__global__ void md__scan_tiles(const int *count, int m, int *tile_sum)
{
    int k = blockIdx.x * MD__SCAN_THREADS + threadIdx.x;
    int v = md__block_scan(k < m ? count[k] : 0);
    if (threadIdx.x == MD__SCAN_THREADS - 1)
        tile_sum[blockIdx.x] = v;
}

/* pass 3: each tile's exclusive scan plus the tile's offset (count may be start or cursor: each
 * thread reads its count before anything of its tile is written) */
__global__ void md__scan_apply(const int *count, int m, const int *tile_off, int *start,
                               int *cursor)
{
    int k = blockIdx.x * MD__SCAN_THREADS + threadIdx.x;
    int c = k < m ? count[k] : 0;
    int incl = md__block_scan(c) + tile_off[blockIdx.x];
    if (k < m) {
        start[k] = incl - c;
        cursor[k] = incl - c;
    }
    if (k == m - 1)
        start[m] = incl;
}

extern "C" size_t md_kernel_scan_scratch(int m) { return 2 * ((size_t)m / MD__SCAN_THREADS + 2); }

extern "C" cudaError_t md_kernel_scan(const int *count, int m, int *start, int *cursor,
                                      int *scratch, cudaStream_t stream)
{
    if (m <= 16 * MD__SCAN_THREADS) { /* one block: a chunk per thread */
        md__scan<<<1, MD__SCAN_THREADS, 0, stream>>>(count, m, start, cursor);
        return md__launched();
    }
    /* tiles: their sums, the scan of the sums (one block), every tile with its offset */
    const int tiles = (m + MD__SCAN_THREADS - 1) / MD__SCAN_THREADS;
    int *tile_sum = scratch, *tile_off = scratch + tiles + 1;
    md__scan_tiles<<<tiles, MD__SCAN_THREADS, 0, stream>>>(count, m, tile_sum);
    cudaError_t e = md__launched();
    if (e != cudaSuccess)
        return e;
    md__scan<<<1, MD__SCAN_THREADS, 0, stream>>>(tile_sum, tiles, tile_off, tile_off);
    if ((e = md__launched()) != cudaSuccess)
        return e;
    md__scan_apply<<<tiles, MD__SCAN_THREADS, 0, stream>>>(count, m, tile_off, start, cursor);
    return md__launched();
}

extern "C" cudaError_t md_kernel_bin(const float *x, int n, const md_cell_grid_t *grid,
                                     int *cell_of, int *cell_start, int *cursor, int *cell_atoms,
                                     cudaStream_t stream)
{
    int m = grid->m[0] * grid->m[1] * grid->m[2];
    cudaError_t e = cudaMemsetAsync(cursor, 0, sizeof(int) * (size_t)(m + 1), stream);
    if (e != cudaSuccess)
        return e;
    if (n > 0) {
        md__bin_count<<<md__blocks(n, 256), 256, 0, stream>>>(x, n, *grid, cell_of, cursor);
        if ((e = md__launched()) != cudaSuccess)
            return e;
    }
    /* scan the counts in place (each thread reads a count before it overwrites it) */
    md__scan<<<1, MD__SCAN_THREADS, 0, stream>>>(cursor, m, cell_start, cursor);
    if ((e = md__launched()) != cudaSuccess)
        return e;
    if (n > 0) {
        md__bin_scatter<<<md__blocks(n, 256), 256, 0, stream>>>(n, cell_of, cursor, cell_atoms);
        e = md__launched();
    }
    return e;
}

__global__ void md__pairlist_kernel(const float *__restrict__ x, const uint8_t *__restrict__ zone,
                                    int n_home, int n, md_cell_grid_t g,
                                    const int *__restrict__ cell_of,
                                    const int *__restrict__ cell_start,
                                    const int *__restrict__ cell_atoms, float rl2,
                                    int *__restrict__ nbr_loc, int *__restrict__ cnt_loc,
                                    int max_loc, int *__restrict__ nbr_nl, int *__restrict__ cnt_nl,
                                    int max_nl, int *__restrict__ need)
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

extern "C" cudaError_t md_kernel_pairlist(const float *x, const uint8_t *zone, int n_home, int n,
                                          const md_cell_grid_t *grid, const int *cell_of,
                                          const int *cell_start, const int *cell_atoms, float rl2,
                                          int *nbr_loc, int *cnt_loc, int max_loc, int *nbr_nl,
                                          int *cnt_nl, int max_nl, int *need, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    md__pairlist_kernel<<<md__blocks(n, MD__THREADS), MD__THREADS, 0, stream>>>(
        x, zone, n_home, n, *grid, cell_of, cell_start, cell_atoms, rl2, nbr_loc, cnt_loc, max_loc,
        nbr_nl, cnt_nl, max_nl, need);
    return md__launched();
}

template <int ENERGY>
__global__ void md__lj_kernel(const float *__restrict__ x, const int *__restrict__ nbr,
                              const int *__restrict__ cnt, int n, int n_split, float rc2,
                              double eshift, float *__restrict__ out_lo, float *__restrict__ out_hi,
                              double *__restrict__ energy)
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

extern "C" cudaError_t md_kernel_lj(const float *x, const int *nbr, const int *cnt, int n,
                                    int n_split, float rc2, double eshift, float *out_lo,
                                    float *out_hi, double *energy, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    int b = md__blocks(n, MD__THREADS);
    if (energy)
        md__lj_kernel<1><<<b, MD__THREADS, 0, stream>>>(x, nbr, cnt, n, n_split, rc2, eshift,
                                                        out_lo, out_hi, energy);
    else
        md__lj_kernel<0><<<b, MD__THREADS, 0, stream>>>(x, nbr, cnt, n, n_split, rc2, eshift,
                                                        out_lo, out_hi, energy);
    return md__launched();
}

__global__ void md__kick_kernel(float *__restrict__ v, const float *__restrict__ f,
                                const float *__restrict__ fnl, float *__restrict__ x, int n3,
                                float h, float dt)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n3)
        return;
    float vk = v[k] + h * (fnl ? f[k] + fnl[k] : f[k]);
    v[k] = vk;
    if (x)
        x[k] += dt * vk;
}

extern "C" cudaError_t md_kernel_kick(float *v, const float *f, const float *fnl, float *x, int n,
                                      float h, float dt, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    md__kick_kernel<<<md__blocks(3 * n, 256), 256, 0, stream>>>(v, f, fnl, dt != 0.0f ? x : NULL,
                                                                3 * n, h, dt);
    return md__launched();
}

__global__ void md__scale_kernel(float *__restrict__ v, int n3, float a)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n3)
        v[k] *= a;
}

extern "C" cudaError_t md_kernel_scale(float *v, int n, float alpha, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    md__scale_kernel<<<md__blocks(3 * n, 256), 256, 0, stream>>>(v, 3 * n, alpha);
    return md__launched();
}

__global__ void md__kinetic_kernel(const float *__restrict__ v, int n3, double *out)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    double s = 0;
    if (k < n3)
        s = 0.5 * (double)v[k] * (double)v[k];
    md__block_add(s, out);
}

extern "C" cudaError_t md_kernel_kinetic(const float *v, int n, double *out, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    md__kinetic_kernel<<<md__blocks(3 * n, 256), 256, 0, stream>>>(v, 3 * n, out);
    return md__launched();
}

/* x into [0, len) per dimension (the periodic box of a one-rank run, an edge per component);
 * the largest v^2 (NaN as the largest float) into out[0] as float bits. */
__global__ void md__wrap_kernel(float *__restrict__ x, const float *__restrict__ v, int n, float lx,
                                float ly, float lz, unsigned *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float len[3] = {lx, ly, lz};
    float v2 = 0;
    for (int d = 0; d < 3; d++) {
        float p = x[3 * (size_t)i + d];
        p -= len[d] * floorf(p / len[d]);
        /* rounding can land exactly on the edge: the box is [0, len) */
        x[3 * (size_t)i + d] = p >= len[d] ? 0.0f : p;
        float c = v[3 * (size_t)i + d];
        v2 += c * c;
    }
    if (!(v2 == v2))
        v2 = 3.0e38f;
    atomicMax(out, __float_as_uint(v2));
}

extern "C" cudaError_t md_kernel_wrap(float *x, const float *v, int n, const float len[3],
                                      unsigned *max_v2, cudaStream_t stream)
{
    if (n <= 0)
        return cudaSuccess;
    md__wrap_kernel<<<md__blocks(n, 256), 256, 0, stream>>>(x, v, n, len[0], len[1], len[2],
                                                            max_v2);
    return md__launched();
}
