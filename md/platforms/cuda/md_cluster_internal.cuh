/* What the cluster files share (device and host code; included by the md_cluster_*.cu files
 * only): the slot encoding, the sort's geometry, the launch helpers, the device's step state, the
 * pruning switch, and the launchers one file calls in another. The files, each calling only those
 * listed after it (no circles):
 *   md_cluster_build.cu   the entry points of a build (sort, list search and work items
 *                         captured as one graph and replayed, rows grown until they fit), the
 *                         list sizes, free; its search kernel is md_cluster_search.cuh (a
 *                         header, so that tests/emu runs it on the CPU)
 *   md_cluster_sort.cu    the cluster sort of a build: geometry, keys, slots, bounding boxes;
 *                         the arrays' growth
 *   md_cluster_watch.cu   the gathers (displacements) and the step's end (prune counts, the
 *                         watch)
 *   md_cluster_lj.cu      the cluster LJ kernel (and the pruning it does); the super-row kernel
 *   md_cluster_forces.cu  the slots' forces back to the atoms: halo forces, kick, take, clear
 *   md_cluster_super.cu   super-rows (an experiment of the bench): two rows merged, masked
 * Kernels are static: without relocatable device code a kernel is launched from its own file, so
 * what one file starts in another goes through an extern "C" launcher declared here. */
#ifndef HALOX_MD_CUDA_CLUSTER_INTERNAL_CUH
#define HALOX_MD_CUDA_CLUSTER_INTERNAL_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "halox/device/launch.cuh"
#include "halox/status.h"
#include "platforms/cuda/cell_coord.cuh"
#include "platforms/cuda/md_cluster.h"

#define CL_FULL 0xffffffffu
#define CL_PAD  1.0e9f /* padding slots sit here: farther than any cut-off from real atoms */
/* zone bits ride in w of the slot's float4 with an exponent set, so w is a normal float and no
 * flush-to-zero of denormals can touch it; the low 8 bits are the zone */
#define CL_ZONE_TAG 0x40000000

/* parts of the sort: 0 the home atoms, 1..7 the halo atoms by zone, so that every cluster holds
 * one zone and the zone rule prunes whole cluster pairs (and whole parts) in the list build */
#define CL_PARTS 8

typedef struct cl_geom {
    float lo[3], inv_w[3];
    int m[3];
    int shift_dims; /* bit d: periodic by shifts of box[d] */
    float box[3];
    int parts; /* CL_PARTS, or 1 without halo atoms (a one-rank run by shifts) */
} cl_geom_t;

static inline cl_geom_t cl_geom_of(const md_clusters_t *c)
{
    cl_geom_t g;
    for (int d = 0; d < 3; d++) {
        g.lo[d] = c->lo[d];
        g.inv_w[d] = c->inv_w[d];
        g.m[d] = c->m[d];
        g.box[d] = c->box[d];
    }
    g.shift_dims = c->shift_dims;
    g.parts = c->n > c->n_home ? CL_PARTS : 1;
    return g;
}

#define CL_TRY(call)                                                                               \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return e_;                                                                             \
    } while (0)

/* A launcher of libhalox (halox_status_t, the runtime's error left set) as a CUDA error. */
static inline cudaError_t cl_halox(halox_status_t st)
{
    if (st == HALOX_OK)
        return cudaSuccess;
    const cudaError_t e = cudaGetLastError();
    return e != cudaSuccess ? e : cudaErrorInvalidValue;
}

static inline int cl_blocks(long long n, int threads)
{
    long long b = (n + threads - 1) / threads;
    return b < 1 ? 1 : (int)b;
}

/* The device's step state: maxima of squared displacements (float bits: non-negative floats
 * order as their bits) of the gathers since the last force kick, counters, the ticket of a halo
 * gather that completes an exchange. No kernel finishes a gather's part: the force kernels decide
 * their prunes from the maxima (cl_prunes_now) and count them, the force kick after them
 * publishes the step and clears the maxima (cl_step_end), so that a gather ends with its last
 * block. Two
 * sets of maxima (md_clusters_t.buf): a kernel that ends one step and gathers the next
 * (md__clusters_kick_gather with take) clears one while its blocks fill the other. */
typedef struct cl_state {
    unsigned mx[2][4]; /* per set: home vs local prune, all vs non-local prune, all vs build,
                          last step */
    unsigned ticket;
    int valid[2]; /* the inner list was pruned since the build (by a kernel in prune mode) */
    long long steps, prunes[2], exceeded;
} cl_state_t;

/* After a build: every list prunes in the next kernels, maxima and ticket cleared (one thread,
 * inside a kernel of the build: a launch of its own cost the graph a node). */
__device__ static inline void cl_arm(cl_state_t *st)
{
    st->valid[0] = st->valid[1] = 0;
    for (int k = 0; k < 8; k++)
        st->mx[k / 4][k % 4] = 0;
    st->ticket = 0;
}

/* Does the force kernel of list k (0 local, 1 non-local) prune, by the maxima of set buf? When
 * its inner list was not pruned since the build, or some atom moved half the inner buffer
 * (thr_in2: its square) since the last prune. The gathers before it have finished (stream
 * order), the kick after it has not cleared the maxima: every warp reads the same. */
__device__ static inline int cl_prunes_now(const cl_state_t *st, int buf, int k, float thr_in2)
{
    return !__ldcg(&st->valid[k]) || __uint_as_float(__ldcg(&st->mx[buf][k])) >= thr_in2;
}

/* What a step kernel's launch spans (md_clusters_span_t): with spans, the larger of the span
 * and the build's count (a build the spans do not fit is still computed whole: its graph is
 * captured again, md__clusters_span_fits, but a launch before that must be right);
 * without, the count. */
static inline int cl_spans(const md_clusters_t *c)
{
    return c->span.ncl_home + c->span.ncl_halo > 0;
}
static inline int cl_reach(const md_clusters_t *c, int span, int count)
{
    return cl_spans(c) && span > count ? span : count;
}
/* The clusters of part 0 (home), 1 (halo) or 2 (all) a launch spans. */
static inline int cl_span_clusters(const md_clusters_t *c, int part)
{
    const int home = cl_reach(c, c->span.ncl_home, c->ncl_home);
    const int halo = cl_reach(c, c->span.ncl_halo, c->ncl - c->ncl_home);
    return part == 0 ? home : part == 1 ? halo : home + halo;
}
/* The counts a step kernel reads on the device (with spans), else NULL: its launch's values. */
static inline const int *cl_span_dims(const md_clusters_t *c)
{
    return cl_spans(c) ? c->dims : NULL;
}

/* Are there inner lists (an inner radius between the cut-off and the outer radius)? */
static inline int cl_pruning(const md_clusters_t *c)
{
    return c->rl_in > c->rc && c->rl_in < c->rl && c->rc > 0;
}

/* The end of a step's forces (the force kick's first thread, after the force kernels, which
 * counted their prunes): the inner lists marked valid (pruned now or before), the step counted
 * when an atom passed the outer list's half buffer (thr_out2: its square), the watch published
 * (md_cluster.h: its first words in one store, no fence), the maxima of set buf cleared for the
 * step after next. */
__device__ static inline void cl_step_end(cl_state_t *st, int buf, md_clusters_watch_t *watch,
                                          float thr_out2)
{
    const uint4 mx = __ldcg((const uint4 *)st->mx[buf]);
    const long long steps = __ldcg(&st->steps), p0 = __ldcg(&st->prunes[0]),
                    p1 = __ldcg(&st->prunes[1]), ex = __ldcg(&st->exceeded);
    const long long exceeded = ex + (__uint_as_float(mx.z) >= thr_out2);
    *(uint4 *)st->mx[buf] = make_uint4(0, 0, 0, 0);
    st->valid[0] = 1;
    st->valid[1] = 1;
    st->exceeded = exceeded;
    if (watch) {
        volatile md_clusters_watch_t *w = watch;
        w->steps = steps;
        w->prunes[0] = p0;
        w->prunes[1] = p1;
        w->exceeded = exceeded;
        const unsigned lo = (unsigned)steps;
        *(uint4 *)watch = make_uint4(mx.z, mx.w, lo, MD_CLUSTERS_WATCH_CHECK(mx.z, mx.w, lo));
    }
}

/* The pruning thresholds: squared half buffers of the inner and the outer list. */
static inline float cl_half2(float r, float rc)
{
    const float h = 0.5f * (r - rc);
    return h > 0 ? h * h : 0.0f;
}
static inline float cl_thr_in2(const md_clusters_t *c)
{
    return cl_half2(cl_pruning(c) ? c->rl_in : c->rl, c->rc);
}
static inline float cl_thr_out2(const md_clusters_t *c) { return cl_half2(c->rl, c->rc); }

/* The counts of a build in device memory (md_clusters_t.dims, mirrored in the pinned h_small):
 * the atoms (copied up at the build's start), what the sort and the search find, so that a build
 * is one captured graph whose kernels read their sizes here (grids sized by the capacities). */
enum {
    CL_D_NHOME = 0, /* home atoms (in) */
    CL_D_N,         /* all atoms (in) */
    CL_D_NCL_HOME,  /* home clusters (out) */
    CL_D_NCL,       /* all clusters (out) */
    CL_D_NEED_LOC,  /* longest local row found (out) */
    CL_D_NEED_NL,   /* longest non-local row found (out) */
    CL_D_ITEMS,     /* the non-local kernel's work items (out) */
    CL_D_COUNT = 8, /* the counts above (h_small mirrors these) */
    /* per part p, at CL_D_PART_RANGE + 4 p: the smallest and largest column x, then y, of the
     * part's non-empty columns (out; INT_MAX and -1 when the part is empty), so that the search
     * reads no window of a part outside them: a home row would otherwise loop over all 8 parts,
     * of which a 2-rank split by x fills 2 */
    CL_D_PART_RANGE = CL_D_COUNT,
    CL_D_ALL = CL_D_PART_RANGE + 4 * CL_PARTS /* the ints of dims */
};

/* The clusters n atoms can make in `cols` (part, column) bins of up to 8-atom clusters: each
 * bin's last cluster may be short, so at most n / 8 plus 7 / 8 of each non-empty bin. The
 * arrays of clusters are sized by it before the sort knows the count. */
static inline size_t cl_cluster_bound(long long n, long long cols)
{
    const long long bins = cols < n ? cols : n;
    return (size_t)((n + 7 * bins) / MD_CLUSTER_SIZE + 1);
}

/* Make each of the k arrays hold at least `want` elements of its size (contents not kept;
 * md_cluster_sort.cu). */
/* Zeroes new device memory, waited for (md_cluster_sort.cu). */
extern "C" cudaError_t md__clusters_zero(void *p, size_t bytes);
/* The build's scans' scratch (c->scan) for `ints` ints, zero when new (md_cluster_sort.cu). */
extern "C" cudaError_t md__clusters_scan_room(md_clusters_t *c, size_t ints);
extern "C" cudaError_t md__clusters_grow(void **p[], const size_t elem[], int k, size_t *cap,
                                         size_t want);

/* Before a build's sort (md_cluster_sort.cu): the geometry of [lo, lo + ext) and the sort's
 * arrays grown for c->n atoms and as many clusters as they can make (cl_cluster_bound). Needs
 * n_home, n, shift_dims and box of c. */
extern "C" cudaError_t md__clusters_sort_prepare(md_clusters_t *c, const float lo[3],
                                                 const float ext[3], double density);

/* Enqueue the sort of the atoms of x (counts in c->dims, from the atom counts in c->h_small; the
 * build's other counts zeroed) into clusters over the prepared
 * geometry: the slots (perm, slot_of) with their positions xq and the prune references, the
 * bounding boxes, fs zeroed, the cluster counts into c->dims (md_cluster_sort.cu). Grids are
 * sized by the capacities, nothing waits: a build captures it in its graph. */
extern "C" cudaError_t md__clusters_sort_enqueue(const md_clusters_t *c, const float *x,
                                                 const uint8_t *zone, cudaStream_t stream);

#endif
