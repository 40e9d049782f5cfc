/* C entry points of the MD kernels of the GPU engine (src/kernels/md_kernels.cu).
 *
 * Single precision, positions and forces with stride 3 (float3 layout, what the halo transports
 * bind); energies and virial accumulated in double. Each launcher enqueues its kernels on
 * `stream` and checks the launch: it returns cudaSuccess or the launch's error. n == 0 launches
 * nothing. All pointers are device pointers unless said otherwise.
 *
 * The engine's pair lists and force kernel are the cluster ones of md_cluster.h. The per-atom
 * lists below (md_kernel_bin, md_kernel_pairlist, md_kernel_lj) were the first GPU kernels; they
 * stay as the baseline bench/pair_roofline_bench measures the cluster kernel against.
 *
 * Pair lists are full per-atom lists (each pair of a list appears on both of its atoms' rows),
 * stored column-major (neighbour k of atom i at nbr[k * n + i]) so that a warp's loads of its
 * atoms' k-th neighbours are coalesced. Full lists need no atomics in the force kernels, so the
 * forces are deterministic for a given list; the local list holds home-home pairs, the
 * non-local list every pair involving a halo atom that the plan's zone rule allows on this rank.
 */
#ifndef HALOX_KERNELS_MD_KERNELS_H
#define HALOX_KERNELS_MD_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Cell grid of a list build: m cells per dimension over [lo, lo + m / inv_w). */
typedef struct md_cell_grid {
    float lo[3];
    float inv_w[3];
    int m[3];
    int reach; /**< stencil half-width in cells (cells are >= rl / reach wide) */
} md_cell_grid_t;

/** Exclusive scan of count[0..m) into start[0..m] (start[m] = the total) and cursor[0..m);
 *  count may be start or cursor (each count is read before it is overwritten). scratch: device
 *  ints, md_kernel_scan_scratch(m) of them (unused for small m). */
cudaError_t md_kernel_scan(const int *count, int m, int *start, int *cursor, int *scratch,
                           cudaStream_t stream);
size_t md_kernel_scan_scratch(int m);

/** Counting sort of the n atoms of x into cells: cell_of[n], cell_start[ncell + 1] (offsets),
 *  cell_atoms[n] (atom indices by cell); cursor[ncell + 1] is scratch. */
cudaError_t md_kernel_bin(const float *x, int n, const md_cell_grid_t *grid, int *cell_of,
                          int *cell_start, int *cursor, int *cell_atoms, cudaStream_t stream);

/** Full lists within rl (squared: rl2), zone rule (za & zb) == 0. Local rows: home atoms
 *  i < n_home, neighbours j < n_home (nbr_loc[k * n_home + i], count cnt_loc[i]). Non-local rows:
 *  every local atom i < n, neighbours with i or j in the halo (nbr_nl[k * n + i], cnt_nl[i]).
 *  At most max_loc / max_nl neighbours are stored per row; the largest row found is written to
 *  need[0] (local) and need[1] (non-local) with atomicMax (set them to 0 first): a row longer
 *  than the capacity means the lists must be rebuilt larger. */
cudaError_t md_kernel_pairlist(const float *x, const uint8_t *zone, int n_home, int n,
                               const md_cell_grid_t *grid, const int *cell_of,
                               const int *cell_start, const int *cell_atoms, float rl2,
                               int *nbr_loc, int *cnt_loc, int max_loc, int *nbr_nl, int *cnt_nl,
                               int max_nl, int *need, cudaStream_t stream);

/** Lennard-Jones forces over full list rows 0..n-1 (row stride n): out_lo[i] for i < n_split,
 *  out_hi[i] for i >= n_split (stores, no accumulation). Pairs at r2 >= rc2 add nothing. With
 *  energy non-NULL, adds half of the rows' pair energies (shifted by eshift inside the cut-off)
 *  and virials to energy[0] and energy[1] (double atomics). */
cudaError_t md_kernel_lj(const float *x, const int *nbr, const int *cnt, int n, int n_split,
                         float rc2, double eshift, float *out_lo, float *out_hi, double *energy,
                         cudaStream_t stream);

/** v += h (f + fnl) (fnl may be NULL: v += h f); then x += dt v when dt != 0 (n home atoms). */
cudaError_t md_kernel_kick(float *v, const float *f, const float *fnl, float *x, int n, float h,
                           float dt, cudaStream_t stream);

/** v *= alpha. */
cudaError_t md_kernel_scale(float *v, int n, float alpha, cudaStream_t stream);

/** out[0] += 1/2 sum v^2 (double). */
cudaError_t md_kernel_kinetic(const float *v, int n, double *out, cudaStream_t stream);

/** Wrap the n positions of x into the periodic box [0, len) (each component; a one-rank run's
 *  rebuild on the device) and max_v2[0] = max(max_v2[0], largest |v|^2) as float bits (NaN as
 *  the largest float; set it to 0 first). */
cudaError_t md_kernel_wrap(float *x, const float *v, int n, const float len[3], unsigned *max_v2,
                           cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
