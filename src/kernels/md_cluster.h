/* Cluster pair lists and the cluster Lennard-Jones kernel of the GPU engine
 * (src/kernels/md_cluster.cu).
 *
 * Why clusters: per-atom lists cost a 4-byte index load and an uncoalesced 12-byte position
 * gather per pair, which held the first kernel to ~9 % of the memory roofline and ~2 % of fp32.
 * Here atoms are grouped spatially into clusters of 8; a list row is a cluster, its entries are
 * clusters whose bounding boxes come within rl. A warp computes one i-cluster against 4
 * j-clusters at a time (lane = i atom + 8 x j-cluster): one index per 64 pairs, j positions
 * staged once in shared memory and read by broadcast, so the kernel is bound by arithmetic.
 *
 * Layout: atoms are counting-sorted by (part, column, fine z bin), part 0 the home atoms
 * (index < n_home), parts 1..7 the halo atoms by zone (so a cluster holds one zone and the zone
 * rule prunes whole cluster pairs); columns tile x-y with the width of a cube holding 8
 * atoms at the given density; each column's atoms, in z order, are cut into clusters of 8 (the
 * last one padded). Home clusters come first, so a cluster is all home or all halo. Slot
 * s = 8 * cluster + lane holds atom perm[s] (-1: padding, placed far away). Each step the
 * positions are gathered into the slots (float4, zone bits in w) after they change.
 *
 * Lists (full: a pair appears in both of its clusters' rows, so the kernels write each atom's
 * force once, without atomics, in a fixed order: forces are deterministic):
 *   local     rows: home clusters; entries: home clusters
 *   non-local rows: every cluster; entries: halo clusters for home rows, all clusters for halo
 *             rows (atom pairs filtered by the zone rule (za & zb) == 0 in the kernel)
 * Entries are kept when the clusters' boxes are within rl and some pair of their zones passes.
 *
 * All launchers enqueue on `stream` and return the first CUDA error. md_clusters_build
 * synchronises the stream (to size the lists) and regrows the lists until every row fits. */
#ifndef HALOX_KERNELS_MD_CLUSTER_H
#define HALOX_KERNELS_MD_CLUSTER_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { MD_CLUSTER_SIZE = 8 };

typedef struct md_clusters {
    /* geometry of the last build */
    int n_home, n;
    int m[3]; /* columns in x and y, fine z bins per column */
    float lo[3];
    float inv_w[3]; /* 1 / column width in x and y, 1 / z bin width */
    float rl;
    int ncl_home, ncl;   /* home clusters, all clusters (slots: 8 ncl) */
    int max_loc, max_nl; /* entries per row the lists hold */
    int grown;           /* times a build had to enlarge the lists */
    /* device arrays and their capacities (elements) */
    float *xq;   /* 4 per slot: x, y, z, zone bits */
    int *perm;   /* atom of each slot, -1 for padding */
    float *bbox; /* 8 per cluster: lo x y z, zone mask; hi x y z, unused */
    int *key;    /* per atom: sort key */
    int *sorted; /* atoms by key */
    int *bin;    /* key bins: start offsets (nkeys + 1) */
    int *cursor; /* scratch (nkeys + 1) */
    int *scan;   /* scan scratch */
    int *col;    /* per column and part: cluster offsets (8 ncol + 1) */
    int *jl_loc, *cnt_loc, *jl_nl, *cnt_nl;
    int *need;    /* [2]: the longest local / non-local row of the last build */
    int *h_small; /* pinned: [0..1] cluster counts, [2..3] need */
    size_t cap_atoms, cap_keys, cap_cols, cap_slots, cap_cl, cap_loc, cap_nl;
} md_clusters_t;

/** Sort the n atoms of x (home atoms first, n_home of them; zone[n]) into clusters over the box
 *  [lo, lo + ext) at `density` atoms per unit volume, and build both lists with list radius rl.
 *  Gathers all positions into the slots. Allocates and grows the arrays of c (zero-initialise c
 *  before the first call). Returns cudaErrorMemoryAllocation when memory runs out. */
cudaError_t md_clusters_build(md_clusters_t *c, const float *x, const uint8_t *zone, int n_home,
                              int n, const float lo[3], const float ext[3], double density,
                              float rl, cudaStream_t stream);

/** Gather the current positions into the slots: part 0 home clusters, 1 halo clusters, 2 all. */
cudaError_t md_clusters_gather(const md_clusters_t *c, const float *x, const uint8_t *zone,
                               int part, cudaStream_t stream);

/** Lennard-Jones forces of the local (nonlocal = 0) or non-local list on the gathered
 *  positions: the force on atom a is stored (not added) to out_lo[3a..] when a < n_home, else to
 *  out_hi[3a..]; every atom of the list's rows is written. Pairs at r2 >= rc2 add nothing. With
 *  energy non-NULL, adds half the rows' pair energies (shifted by eshift) and virials to
 *  energy[0], energy[1] (double). */
cudaError_t md_clusters_lj(const md_clusters_t *c, int nonlocal, float rc2, double eshift,
                           float *out_lo, float *out_hi, double *energy, cudaStream_t stream);

/** Entries in the local and non-local lists (copied back; synchronous). */
cudaError_t md_clusters_entries(const md_clusters_t *c, long long *loc, long long *nl);

void md_clusters_free(md_clusters_t *c);

#ifdef __cplusplus
}
#endif
#endif
