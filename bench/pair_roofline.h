/* pair_roofline_bench (pair_roofline_bench.cu): what its files share.
 *   pair_roofline_atoms.cu   the per-atom baseline: cell binning, full per-atom pair lists (local
 *                            and non-local by the zone rule) and their Lennard-Jones kernel, the
 *                            first GPU kernels of the engine, kept here as the baseline the
 *                            engine's cluster kernel (md/platforms/cuda/md_cluster.h) is measured
 * against pair_roofline_system.cu  the test system, its lists (atom and cluster) on the device, the
 *                            forces against a CPU double reference
 *   pair_roofline_bench.cu   the roofline, the timings, the report, main
 * Each file calls only those listed before it. */
#ifndef HALOX_BENCH_PAIR_ROOFLINE_H
#define HALOX_BENCH_PAIR_ROOFLINE_H

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "platforms/cuda/md_cluster.h"

#define DENSITY 0.8
#define CUTOFF  5.0
#define SKIN    0.5

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                   \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the per-atom baseline (pair_roofline_atoms.cu) ------------------------------------------
 *
 * Single precision, positions and forces with stride 3; energies and virial accumulated in
 * double. Each launcher enqueues its kernels on `stream` and returns cudaSuccess or the launch's
 * error; bin, pairlist and lj launch nothing for n == 0. Pair lists are full per-atom lists (each
 * pair of a list appears on both of its atoms' rows), stored column-major (neighbour k of atom i at
 * nbr[k * n + i]) so that a warp's loads of its atoms' k-th neighbours are coalesced. Full lists
 * need no atomics in the force kernel, so the forces are deterministic for a given list; the local
 * list holds home-home pairs, the non-local list every pair involving a halo atom that the zone
 * rule allows.
 */

/* Cell grid of a list build: m cells per dimension over [lo, lo + m / inv_w). */
typedef struct prb_cell_grid {
    float lo[3];
    float inv_w[3];
    int m[3];
    int reach; /* stencil half-width in cells (cells are >= rl / reach wide) */
} prb_cell_grid_t;

/* The engine's first cell grid: cells >= rl / 2 wide over the box with its halo [-rl, L + rl),
 * at most 2n + 64 cells. */
void prb_make_grid(double L, double rl, int n, prb_cell_grid_t *cg);

/* Device ints prb_atoms_bin needs as scratch for a grid of m cells. */
size_t prb_atoms_bin_scratch(int m);

/* Counting sort of the n atoms of x into cells: cell_of[n], cell_start[ncell + 1] (offsets),
 * cell_atoms[n] (atom indices by cell); cursor[ncell + 1] and scratch[prb_atoms_bin_scratch(ncell)]
 * are scratch. */
cudaError_t prb_atoms_bin(const float *x, int n, const prb_cell_grid_t *grid, int *cell_of,
                          int *cell_start, int *cursor, int *cell_atoms, int *scratch,
                          cudaStream_t stream);

/* Full lists within rl (squared: rl2), zone rule (za & zb) == 0. Local rows: home atoms
 * i < n_home, neighbours j < n_home (nbr_loc[k * n_home + i], count cnt_loc[i]). Non-local rows:
 * every local atom i < n, neighbours with i or j in the halo (nbr_nl[k * n + i], cnt_nl[i]).
 * At most max_loc / max_nl neighbours are stored per row; the largest row found is written to
 * need[0] (local) and need[1] (non-local) with atomicMax (set them to 0 first): a row longer
 * than the capacity means the lists must be rebuilt larger. */
cudaError_t prb_atoms_pairlist(const float *x, const uint8_t *zone, int n_home, int n,
                               const prb_cell_grid_t *grid, const int *cell_of,
                               const int *cell_start, const int *cell_atoms, float rl2,
                               int *nbr_loc, int *cnt_loc, int max_loc, int *nbr_nl, int *cnt_nl,
                               int max_nl, int *need, cudaStream_t stream);

/* Lennard-Jones forces over full list rows 0..n-1 (row stride n): out_lo[i] for i < n_split,
 * out_hi[i] for i >= n_split (stores, no accumulation). Pairs at r2 >= rc2 add nothing. With
 * energy non-NULL, adds half of the rows' pair energies (shifted by eshift inside the cut-off)
 * and virials to energy[0] and energy[1] (double atomics). */
cudaError_t prb_atoms_lj(const float *x, const int *nbr, const int *cnt, int n, int n_split,
                         float rc2, double eshift, float *out_lo, float *out_hi, double *energy,
                         cudaStream_t stream);

/* out[0] += the entries of rows 0..n-1 (row stride n) with r^2 < rc2. */
cudaError_t prb_atoms_count(const float *x, const int *nbr, const int *cnt, int n, float rc2,
                            unsigned long long *out, cudaStream_t stream);

/* ---- the test system (pair_roofline_system.cu) ---------------------------------------------- */

/* A system on the device with its lists built. */
typedef struct prb_sys {
    int n_home, n;
    double L;
    float *x, *f, *fnl;
    uint8_t *zone;
    int *cell_of, *cell_start, *cursor, *cell_atoms, *scan, *need;
    int *nbr_loc, *cnt_loc, *nbr_nl, *cnt_nl;
    int max_loc, max_nl;
    md_clusters_t cl;    /* the same atoms in the engine's cluster lists (halo copies) */
    md_clusters_t shift; /* the home atoms in periodic-shift lists (what a 1x1x1 run uses) */
    float *hx;           /* host positions */
} prb_sys_t;

/* Device bytes a system of n_home atoms needs, about. */
size_t prb_estimate_bytes(int n_home);

/* Build a system of n_home atoms (and its periodic images within rl as halo atoms) with its lists
 * on the device: 0 on success, -1 when the device memory is not enough (everything freed). */
int prb_sys_build(prb_sys_t *s, int n_home, uint64_t seed, cudaStream_t st);
void prb_sys_free(prb_sys_t *s);

/* GPU forces of a small system (clusters: 0 atom lists, 1 cluster lists with halo copies, 2 the
 * periodic-shift cluster list, 3 its super-rows) against a CPU double O(N^2) minimum-image sum: the
 * relative error
 * ||F_gpu - F_cpu|| / ||F_cpu||, and in *max_rel the largest atom error over the largest force. */
double prb_verify(int n_home, uint64_t seed, int clusters, cudaStream_t st, double *max_rel);

#endif
