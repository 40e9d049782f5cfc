/* Cluster pair lists and the cluster Lennard-Jones kernel of the GPU engine
 * (md/platforms/cuda/md_cluster_*.cu; md_cluster_internal.cuh says which file holds what).
 *
 * Why clusters: per-atom lists cost a 4-byte index load and an uncoalesced 12-byte position
 * gather per pair. Here atoms are grouped spatially into clusters of 8; a list row is an
 * i-cluster, its entries are j-clusters whose bounding boxes come within the list radius. A warp
 * computes one i-cluster against 4 j-clusters at a time (lane = j atom + 8 x j-cluster): one
 * index per 64 pairs, each lane loads its j atom, the row's i atoms are staged once in shared
 * memory and read by broadcast.
 *
 * Layout: atoms are counting-sorted by (part, column, fine z bin), part 0 the home atoms
 * (index < n_home), parts 1..7 the halo atoms by zone (so a cluster holds one zone and the zone
 * rule prunes whole cluster pairs); columns tile x-y with the width of a cube holding 8 atoms at
 * the given density; each column's atoms, in z order, are cut into clusters of 8 (the last one
 * padded). Home clusters come first, so a cluster is all home or all halo. Slot s = 8 * cluster
 * + lane holds atom perm[s] (-1: padding, placed far away); slot_of[a] is the inverse.
 *
 * Periodic images by shifts: in the dimensions of shift_dims (one rank there, no halo pulses:
 * plan.h) the columns tile the box edge exactly and the search wraps around it; an entry is
 * (j-cluster | shift << MD_CLUSTER_SHIFT_BIT), the shift s = (sx+1) + 3 (sy+1) + 9 (sz+1) adds
 * (sx, sy, sz) box edges to the j positions. A cluster pair may be listed under two shifts when
 * clusters are long; that is exact because each atom pair has one image within the cut-off
 * (edges > 2 cut-offs), and the kernel's cut-off test selects it.
 *
 * Half lists: each cluster pair once (j-cluster >= i-cluster; the self pair with atom i < j;
 * of a self pair's shifts s and -s only s > 13). A lane's j force is complete after its pass
 * and the 8 i forces, kept in registers over the whole row, are reduced over the warp once at
 * its end (27 shuffles per row); both are added to the slot-ordered force array fs with float
 * atomics (3 per j atom of a pass, 3 per i atom of a row): the sums' order varies from run to
 * run, so forces agree to rounding (about 1e-7 relative), not bit for bit. A deterministic
 * alternative (fixed-point 64-bit atomics, or a second pass over a transposed list) would cost
 * a conversion per atomic or a second sweep over the list; nothing here needs bitwise
 * reproducibility on the GPU (the CPU engine is the bit-exact reference).
 *   local     rows: home clusters; entries: home clusters
 *   non-local rows: every cluster; entries: halo clusters (zone rule (za & zb) == 0 per atom
 *             pair in the kernel, and some pair of the clusters' zones must pass)
 *
 * Verlet buffer with dynamic pruning: the outer lists (radius rl, built by
 * md__clusters_build) feed inner lists of radius rl_in (md__clusters_set_prune). The
 * gathers compare the positions with those of the last prune, and each force kernel decides on
 * the device from their largest displacement whether it prunes: when some atom moved
 * (rl_in - rc) / 2 or more, the kernel runs over the outer row, keeps the cluster pairs with an
 * atom pair within rl_in and writes them as the inner row; otherwise it runs over the inner row.
 * So no pair within rc is ever missed by the inner lists while the outer list is valid: no atom
 * moved (rl - rc) / 2 since the build. That is watched too: the gathers compute the largest
 * displacement since the build and the largest of the last step, which the force kick publishes
 * with the device's step count in md_clusters_watch (host memory the device writes: the host
 * reads it without synchronising) so the engine can rebuild in time, and steps where it was
 * exceeded are counted. A gather ends with its last block (no ticket, no last block's
 * bookkeeping on the step's critical path); the kick that takes the step's forces counts the
 * prunes and clears the maxima.
 *
 * All launchers enqueue on `stream` and return the first CUDA error. md__clusters_build
 * replays its graph (one launch for the ~25 kernels and copies of a build: launched one by one
 * they cost the host more than the GPU its work), synchronises the stream (to size the lists)
 * and regrows the lists until every row fits. */
#ifndef HALOX_MD_CUDA_CLUSTER_H
#define HALOX_MD_CUDA_CLUSTER_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "halox/inline.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { MD_CLUSTER_SIZE = 8, MD_CLUSTER_SHIFT_BIT = 26, MD_CLUSTER_NO_SHIFT = 13 };

/** What the device reports of the last finished step (host memory the device writes). The
 *  first 16 bytes are published each step in one store, without a system-wide fence (which would
 *  hold up the step's next kernel): the host reads them while the device may be writing and
 *  keeps a read only when its check word matches (md__clusters_watch_read). The rest is complete
 *  once the device is idle. */
typedef struct md_clusters_watch {
    float build_d2;      /**< largest squared displacement of an atom since the build */
    float step_d2;       /**< largest squared displacement in the last step */
    unsigned steps_lo;   /**< the low 32 bits of steps */
    unsigned check;      /**< MD_CLUSTERS_WATCH_CHECK of the three words before */
    long long steps;     /**< gathers finished (one per step) since the first build */
    long long prunes[2]; /**< local / non-local prunes since the first build */
    long long exceeded;  /**< steps with an atom beyond (rl - rc) / 2 of its build position */
} md_clusters_watch_t;

/** The check word of a published watch (device and host; unsigned operands). */
#define MD_CLUSTERS_WATCH_CHECK(build_bits, step_bits, steps_lo)                                   \
    (((build_bits)*0x9e3779b1u) ^ ((step_bits)*0x85ebca6bu) ^ (steps_lo) ^ 0x5bd1e995u)

/** The published part of the watch, read while the device may write it: 1 with *out filled
 *  (build_d2, step_d2, steps_lo) when a read's check matched within a few tries, else 0. */
static inline int md__clusters_watch_read(const md_clusters_watch_t *w, md_clusters_watch_t *out)
{
    const volatile unsigned *p = (const volatile unsigned *)w;
    for (int tries = 0; tries < 8; tries++) {
        const unsigned b = p[0], s = p[1], lo = p[2], ck = p[3];
        if (ck == MD_CLUSTERS_WATCH_CHECK(b, s, lo)) {
            memcpy(&out->build_d2, &b, sizeof b);
            memcpy(&out->step_d2, &s, sizeof s);
            out->steps_lo = lo;
            return 1;
        }
    }
    return 0;
}

/** The kernel timeline (HALOX_MD_TIMELINE, a diagnosis): for each kind of step kernel, the
 *  first MD_TL_LAUNCHES launches since the last build, on the GPU's global clock (%globaltimer,
 *  ns; one clock for every process on a GPU, so ranks sharing it line up): the first block's
 *  start, the last block's end, and the first block past its in-kernel wait (nvshmem-inline:
 *  when the peers' data was there). A launch is numbered by the blocks of its kind that finished
 *  before it (launches of a kind are ordered on one stream, with one grid between builds). */
enum {
    MD_TL_HOME_GATHER = 0, /* kick, drift, home positions into the slots (inline: sent) */
    MD_TL_HALO_GATHER,     /* halo positions into the slots (inline: waited for first) */
    MD_TL_LOCAL,           /* local pair forces */
    MD_TL_NONLOCAL,        /* non-local pair forces */
    MD_TL_HALO_FORCES,     /* halo forces out (inline: to their owners) */
    MD_TL_KICK,            /* the second half kick (inline: returned forces waited for) */
    MD_TL_KINDS
};
enum { MD_TL_LAUNCHES = 128 };
typedef struct md_timeline {
    unsigned long long start[MD_TL_KINDS][MD_TL_LAUNCHES]; /* ~0: no such launch */
    unsigned long long end[MD_TL_KINDS][MD_TL_LAUNCHES];
    unsigned long long wait[MD_TL_KINDS][MD_TL_LAUNCHES]; /* ~0: no wait in that launch */
    unsigned done[MD_TL_KINDS];                           /* blocks finished */
} md_timeline_t;

/** The spans of the step kernels (md__clusters_set_span; all 0: none). Without spans the
 *  step kernels (the gathers, the pair kernels, the halo forces, the kick) take the counts of the
 *  last build as values and size their grids by them, so a graph that captured them holds that
 *  build only. With spans they read the counts on the device (dims) and their grids span these,
 *  so a captured step stays valid for every later build whose counts fit the spans
 *  (md__clusters_span_fits) and whose arrays and values did not change
 *  (md__clusters_step_key). A launch for a build the spans do not fit spans its counts
 *  (always right; only a graph captured before it is not). */
typedef struct md_clusters_span {
    int n_home;   /**< home atoms (the kick) */
    int ncl_home; /**< home clusters (home gather, local rows) */
    int ncl_halo; /**< halo clusters (halo gather, halo forces; the non-local rows span both) */
    int items;    /**< the non-local kernel's work items (with chunk > 0) */
} md_clusters_span_t;

/** What a captured step took as values from c besides the counts: the arrays and their
 *  capacities, the row lengths and the geometry the kernels read, the spans (compared as bytes:
 *  built zeroed by md__clusters_step_key). */
typedef struct md_clusters_step_key {
    const void *ptr[24];
    size_t cap_slots;
    int iv[8];
    float fv[7];
    md_clusters_span_t span;
} md_clusters_step_key_t;

typedef struct md_clusters {
    /* geometry of the last build */
    int n_home, n;
    int m[3]; /* columns in x and y, fine z bins per column */
    float lo[3];
    float inv_w[3]; /* 1 / column width in x and y, 1 / z bin width */
    float rl;       /* outer list radius */
    float rc;       /* cut-off of the pruning thresholds (md__clusters_set_prune) */
    float rl_in;    /* inner list radius; 0 or >= rl: no pruning, the kernels use the outer */
    int shift_dims; /* bit d: periodic by shifts in d, box edge box[d] */
    float box[3];
    int ncl_home, ncl;   /* home clusters, all clusters (slots: 8 ncl) */
    int max_loc, max_nl; /* entries per row the lists hold */
    int grown;           /* times a build had to enlarge the lists */
    /* device arrays and their capacities (elements) */
    float *xq;    /* 4 per slot: x, y, z, zone bits */
    float *ref;   /* 3 x 4 per slot: positions at the local prune, the non-local prune, the build */
    float *fs;    /* 3 per slot: forces, accumulated by the kernels (atomics) */
    int *perm;    /* atom of each slot, -1 for padding */
    int *slot_of; /* slot of each atom */
    float *bbox;  /* 8 per cluster: lo x y z, zone mask; hi x y z, unused */
    float *bnow;  /* 8 per cluster: lo x y z, -; hi x y z, - of its atoms at the last gather (the
                     build's for the slots no gather took since), read by the prunes */
    float *zwin;  /* 2 per cluster, within its column (and part): the largest box top z of the
                     clusters up to it, the smallest box bottom z from it on (both monotonic:
                     the search finds a row's z window by bisection) */
    int *key;     /* per atom: sort key */
    int *sorted;  /* atoms by key; after a build its first n_home are the home atoms in the
                     order of their slots */
    int *bin;     /* key bins: start offsets (nkeys + 1) */
    int *cursor;  /* scratch (nkeys + 1) */
    int *scan;    /* scan scratch */
    int *col;     /* per column and part: cluster offsets (8 ncol + 1) */
    int *jl_loc, *cnt_loc, *jl_nl, *cnt_nl;             /* outer lists */
    int *jl_loc_in, *cnt_loc_in, *jl_nl_in, *cnt_nl_in; /* inner (pruned) lists */
    /* Work items of the non-local pair kernel: with chunk > 0 (a multiple of 32; set before a
     * build) the non-local rows are cut into chunks of that many entries, and the kernel's warps
     * take the non-empty chunks from items (row * kch + chunk, chunk-major, nitems of them, made
     * by each build), so a long row is shared by several warps and no warp goes to an empty row
     * (most non-local rows are). The non-local inner list then counts per chunk (cnt_nl_in[row *
     * kch + chunk], the entries at the chunk's place in the row). 0: one warp per row, every row
     * (kch 1). */
    int chunk, kch, nitems;
    int *items;
    size_t cap_items, cap_in[2];
    /* Local rows in chunks when they are too few to fill the GPU: loc_warps (set before a build;
     * 0: never) is the warps the local kernel should have at least. A build whose home clusters
     * are fewer cuts every local row into kloc chunks of lch entries (kloc = 1: whole rows, as
     * on a full GPU, where chunks only add reductions: docs/MD-DESIGN.md#cluster-pair-lists);
     * warp w takes chunk w / rows of row w % rows (chunk-major, as the non-local items), and
     * the local inner list counts per chunk (cnt_loc_in[row * kloc + chunk]). */
    int loc_warps, lch, kloc;
    /* The set of the device's displacement maxima the step kernels enqueued next use (0 or 1;
     * 0 unless a multi-step graph alternates them: a home gather with take ends the step before
     * from the other set while it fills this one). */
    int buf;
    /* > 0 in x or y: the columns put an edge at lo + edge[d] (the home atoms' upper bound, where
     * the halo begins). Set before a build. A column straddling that bound holds a sliver of
     * home atoms and one of halo atoms, and the clusters cut from a sliver span the column's
     * whole height: every cluster in reach of them gets a long row (about twice the non-local
     * entries of a row without the edge). */
    float edge[3];
    int *dims;    /* device: the counts of a build (CL_D_*, md_cluster_internal.cuh): atoms in;
                     clusters, longest rows, work items out */
    int *h_small; /* pinned: the same, the atoms written before and the rest read after a build */
    /* A build is one CUDA graph (sort, search, work items), captured on a stream of its own and
     * replayed on the caller's: its kernels read their sizes from dims, their grids span the
     * capacities, so a build with other atom counts replays it; anything it captured as a value
     * (arrays, capacities, geometry, row lengths) is kept in graph_key, and a change captures
     * again (counted in captures). An array the build's kernels read must join that key
     * (cl_key_of, md_cluster_build.cu), or a regrown one would be replayed stale. */
    cudaGraphExec_t graph;
    cudaStream_t capture_stream;
    void *graph_key;
    int captures;
    void *state;                /* device: maxima of the step, prune decisions, counters */
    md_clusters_watch_t *watch; /* mapped host memory the force kick publishes into */
    md_timeline_t *tl;          /* device: the kernel timeline (md__clusters_timeline), or NULL */
    md_clusters_span_t span;    /* the step kernels' spans, or zero (md_clusters_span_t) */
    size_t cap_atoms, cap_keys, cap_cols, cap_slots, cap_cl, cap_loc, cap_nl;
    size_t cap_scan; /* ints of scan: the build's scans' scratch (halox_scan) */
} md_clusters_t;

/** Sort the n atoms of x (home atoms first, n_home of them; zone[n]) into clusters over the box
 *  [lo, lo + ext) at `density` atoms per unit volume, and build both outer lists with radius rl.
 *  In the dimensions of shift_dims, [lo, lo + ext) must be the periodic box (ext = box edge),
 *  the positions must lie in it (to rounding: wrapped, as a rebuild leaves them) and pairs take
 *  the minimum image; the other dimensions are not periodic. Gathers all positions
 *  into the slots, zeroes the forces fs and arms a prune for the next kernels. Allocates and
 *  grows the arrays of c (zero-initialise c before the first call). Returns
 *  cudaErrorMemoryAllocation when memory runs out. */
cudaError_t md__clusters_build(md_clusters_t *c, const float *x, const uint8_t *zone, int n_home,
                               int n, const float lo[3], const float ext[3], double density,
                               float rl, int shift_dims, cudaStream_t stream);

/** md__clusters_build in two halves, so that the host can do other work while the GPU
 *  builds: _begin launches the build on `stream` (nothing waits), _end waits for it and builds
 *  again with longer rows until every row fits (the same x and zone; c untouched in between). */
cudaError_t md__clusters_build_begin(md_clusters_t *c, const float *x, const uint8_t *zone,
                                     int n_home, int n, const float lo[3], const float ext[3],
                                     double density, float rl, int shift_dims, cudaStream_t stream);
cudaError_t md__clusters_build_end(md_clusters_t *c, const float *x, const uint8_t *zone,
                                   cudaStream_t stream);

/** Inner lists of radius rl_in for cut-off rc (rl_in <= rc or >= rl: none). Takes effect at the
 *  next build. */
void md__clusters_set_prune(md_clusters_t *c, float rc, float rl_in);

/** Gather the current positions into the slots: part 0 home clusters, 1 halo clusters, 2 all;
 *  measures the displacements the next force kernels decide their prunes by (part 0 those of
 *  the local list and of the non-local one's home atoms, parts 1 and 2 the rest), and counts a
 *  step where it completes the positions (part 0 without halo clusters, 1, 2). With inl
 *  (nvshmem-inline; parts 1 and 2) it first waits for the halo's coordinates and completes that
 *  exchange (halox/inline.h). */
cudaError_t md__clusters_gather(const md_clusters_t *c, const float *x, const uint8_t *zone,
                                int part, const halox_inline_view_t *inl, cudaStream_t stream);

/** The home gather (part 0) that first kicks and drifts each home atom as md__kernel_kick
 *  does (v += h f, x += dt v; v NULL: no kick, the current positions), one pass over the home
 *  atoms instead of two. With take it is also the step before's force kick (md__clusters_kick:
 *  f from the slots, v += h f first, that step ended from the other set of maxima than c->buf),
 *  one kernel for the two: no halo, no send. With send (nvshmem-inline) each new position also
 *  goes into the halos it is sent to and the receivers are signalled (halox/inline.h), also by a
 *  rank without home atoms. */
cudaError_t md__clusters_kick_gather(const md_clusters_t *c, float *v, float *f, float *x,
                                     const uint8_t *zone, float h, float dt, int take,
                                     const halox_inline_view_t *send, cudaStream_t stream);

/** Lennard-Jones forces of the local (nonlocal = 0) or non-local list on the gathered positions,
 *  added to fs (each pair once, on both atoms), pruning first when the gathers since the last
 *  kick or take say so. Pairs at r2 >= rc2 add nothing. With energy
 *  non-NULL, adds the pair energies (shifted by eshift) and virials to energy[0], energy[1]
 *  (double). */
cudaError_t md__clusters_lj(const md_clusters_t *c, int nonlocal, float rc2, double eshift,
                            double *energy, cudaStream_t stream);

/** fnl[a] = fs of a's slot for the halo atoms (what the force exchange sends back), zeroing those
 *  slots. With inl (nvshmem-inline) the forces go straight to their owners instead of fnl, whose
 *  signals the launch's last block raises (view ticket 2). */
cudaError_t md__clusters_halo_forces(const md_clusters_t *c, float *fnl,
                                     const halox_inline_view_t *inl, cudaStream_t stream);

/** The second half kick of velocity Verlet on the home atoms: f[a] = fs of a's slot (+ fnl[a]
 *  when fnl is not NULL, then fnl[a] = 0), the slot zeroed; v[a] += h f[a] when v is not NULL.
 *  With inl (nvshmem-inline) it first waits for the forces the owners of our halo returned, adds
 *  them (view ticket 3) and completes that exchange. Ends the step: the prunes of the force
 *  kernels before it counted, the watch published, the displacements cleared. */
cudaError_t md__clusters_kick(const md_clusters_t *c, float *v, float *f, float *fnl, float h,
                              const halox_inline_view_t *inl, cudaStream_t stream);

/** f[a] = fs of a's slot for every atom (home and halo), zeroing the slots (tests, probes); ends
 *  the step as md__clusters_kick does. */
cudaError_t md__clusters_take_forces(const md_clusters_t *c, float *f, cudaStream_t stream);

/** Zero the forces fs (after work whose forces are not used). */
cudaError_t md__clusters_clear_forces(const md_clusters_t *c, cudaStream_t stream);

/** Super-rows, an experiment (bench/pair_roofline_bench times it against the rows): the home
 *  rows 2r and 2r + 1 of the local inner list (the outer one without pruning) merged into one
 *  row whose entries carry a mask of the rows that hold them (bit 0: 2r, bit 1: 2r + 1), in
 *  segments by mask (3, 1, 2), each padded with empty entries (-1) to a multiple of 4. */
typedef struct md_clusters_super {
    int nrows, max_row;
    int *jl;           /* nrows x max_row entries */
    uint8_t *mask;     /* nrows x max_row */
    int *cnt;          /* nrows: entries with the padding */
    int *tmp;          /* the merge before the segments (as jl) */
    uint8_t *tmp_mask; /* (as mask) */
    size_t cap;        /* entries allocated */
} md_clusters_super_t;

/** Merge c's local rows (after a build, and a kernel that pruned when c prunes) into s (grown;
 *  zero-initialise s before the first call); synchronises the stream. */
cudaError_t md__clusters_super_build(const md_clusters_t *c, md_clusters_super_t *s,
                                     cudaStream_t stream);

/** Lennard-Jones forces of the super-rows (home-home pairs, no zone rule, no energies) on the
 *  gathered positions, added to c->fs: the forces md__clusters_lj gives on the local list. */
cudaError_t md__clusters_lj_super(const md_clusters_t *c, const md_clusters_super_t *s, float rc2,
                                  cudaStream_t stream);

void md__clusters_super_free(md_clusters_super_t *s);

/** Spans for the step kernels (md_clusters_span_t) of the current build's counts times (1 +
 *  headroom), plus a block's worth, within the capacities; headroom < 0: none (counts as values).
 *  Takes effect at the next launch of a step kernel. */
void md__clusters_set_span(md_clusters_t *c, double headroom);

/** 1 when spans are set and the current build's counts fit them, with halo clusters as the spans
 *  have them (some or none: the launches made differ). */
int md__clusters_span_fits(const md_clusters_t *c);

/** What a step captured now takes from c as values (md_clusters_step_key_t). */
void md__clusters_step_key(const md_clusters_t *c, md_clusters_step_key_t *key);

/** Entries (cluster pairs) in the outer and inner lists, local and non-local (synchronous). */
cudaError_t md__clusters_entries(const md_clusters_t *c, long long *loc, long long *nl,
                                 long long *loc_in, long long *nl_in);

/** Turn the kernel timeline on (allocated, cleared at every build); cudaErrorMemoryAllocation
 *  when memory runs out. */
cudaError_t md__clusters_timeline(md_clusters_t *c);

/** The timeline since the last build into *out (host); synchronises the device. */
cudaError_t md__clusters_timeline_read(const md_clusters_t *c, md_timeline_t *out);

void md__clusters_free(md_clusters_t *c);

#ifdef __cplusplus
}
#endif
#endif
