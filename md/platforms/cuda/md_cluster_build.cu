/* The outer cluster pair lists of a build (see md_cluster.h for the layout): the search over the
 * sorted clusters (md_cluster_sort.cu), grown until every row fits; the list sizes, the arrays'
 * memory. Plain C-like CUDA behind the C entry points of md_cluster.h; every launch is checked. */
#include <cuda_runtime.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "halox/device/compact.cuh"
#include "platforms/cuda/md_cluster.h"
#include "platforms/cuda/md_cluster_internal.cuh"
#include "platforms/cuda/md_kernels.h"

#include "platforms/cuda/md_cluster_search.cuh"

/* ---- host side ------------------------------------------------------------------------- */

extern "C" void md__clusters_set_prune(md_clusters_t *c, float rc, float rl_in)
{
    c->rc = rc;
    c->rl_in = rl_in;
}

/* the timeline's launches from 0 (md_cluster.h): no launch has start ~0, end 0, wait ~0 */
static cudaError_t md__timeline_clear(md_timeline_t *tl, cudaStream_t stream)
{
    CL_TRY(cudaMemsetAsync(tl->start, 0xff, sizeof tl->start, stream));
    CL_TRY(cudaMemsetAsync(tl->end, 0, sizeof tl->end, stream));
    CL_TRY(cudaMemsetAsync(tl->wait, 0xff, sizeof tl->wait, stream));
    return cudaMemsetAsync(tl->done, 0, sizeof tl->done, stream);
}

/* The non-local kernel's work items (md_cluster.h): the non-empty chunks of the rows, flagged,
 * scanned and written behind the search; their count comes back with the search's (one wait for
 * both). Slot (k, r) is chunk k of row r,
 * k-major: chunk k of every row before chunk k + 1 of any, so a block's warps take neighbouring
 * rows (which share j clusters) as with a warp per row. The slots span the capacity (the row
 * count is on the device); those past kch x rows flag nothing. */
/* One compaction (halox/device/compact.cuh) over the slots: a slot is an item when its row has
 * entries in that chunk; items[pos] = row * kch + chunk in slot order, their number into dims, and
 * every slot's inner count zeroed (chunks no item names count nothing: md__clusters_entries sums
 * them all). Three kernels before (the flags, their scan, the items). */
struct cl_item_of {
    const int *dims, *cnt;
    int kch, ch;
    int *cnt_in, *items;
    __device__ int operator()(int s) const
    {
        const int n = dims[CL_D_NCL];
        cnt_in[s] = 0;
        return s < kch * n && cnt[s % n] > (s / n) * ch;
    }
    __device__ void keep(int pos, int s, int) const
    {
        const int n = dims[CL_D_NCL];
        items[pos] = (s % n) * kch + s / n;
    }
    __device__ unsigned bit(int) const { return 0u; }
};

/* The local rows' chunks (md_cluster.h: loc_warps): as many as give the local kernel loc_warps
 * warps over the home clusters the atoms make, each of at least CL_LOC_CHUNK_MIN entries (a
 * chunk costs its row's reduction and the i atoms' load again), a multiple of the 4 entries of
 * a pass. */
#define CL_LOC_CHUNK_MIN 16
static void cl_local_chunks(md_clusters_t *c)
{
    const int rows = (c->n_home + MD_CLUSTER_SIZE - 1) / MD_CLUSTER_SIZE;
    int k = 1;
    if (c->loc_warps > 0 && rows > 0 && rows < c->loc_warps) {
        const int most = c->max_loc / CL_LOC_CHUNK_MIN;
        k = (c->loc_warps + rows - 1) / rows;
        k = k < most ? k : most;
    }
    if (k <= 1) {
        c->kloc = 1;
        c->lch = c->max_loc;
        return;
    }
    c->lch = ((c->max_loc + k - 1) / k + 3) / 4 * 4;
    c->kloc = (c->max_loc + c->lch - 1) / c->lch;
}

/* The work items' arrays for the rows the capacity holds, and the chunks per row (non-local
 * and local). */
static cudaError_t cl_items_prepare(md_clusters_t *c)
{
    cl_local_chunks(c);
    /* no halo: no non-local rows (the kernel does not run), nothing to cut */
    const int halo = c->n > c->n_home;
    const int ch = c->chunk > 0 && halo ? c->chunk : 0;
    c->kch = ch > 0 && ch < c->max_nl ? (c->max_nl + ch - 1) / ch : 1;
    const size_t rows = c->cap_cl, kch[2] = {(size_t)c->kloc, (size_t)c->kch};
    int **cnt_in[2] = {&c->cnt_loc_in, &c->cnt_nl_in};
    for (int k = 0; k < 2; k++) {
        void **p[] = {(void **)cnt_in[k]};
        size_t el[] = {sizeof(int)};
        CL_TRY(md__clusters_grow(p, el, 1, &c->cap_in[k], rows * kch[k]));
    }
    if (!ch)
        return cudaSuccess;
    const size_t most = rows * (size_t)c->kch;
    if (most > INT_MAX / 2)
        return cudaErrorInvalidValue;
    {
        void **p[] = {(void **)&c->items};
        size_t el[] = {sizeof(int)};
        CL_TRY(md__clusters_grow(p, el, 1, &c->cap_items, most));
    }
    /* the compaction's scratch: the build's scans' (the same layout; they run one after
     * another on one stream) */
    return md__clusters_scan_room(c, halox_cmp_scratch((int)most) + 1);
}

static cudaError_t cl_items_enqueue(const md_clusters_t *c, cudaStream_t stream)
{
    const int ch = c->chunk > 0 && c->n > c->n_home ? c->chunk : 0;
    if (!ch)
        return cudaSuccess;
    const int slots = (int)(c->cap_cl * (size_t)c->kch);
    const cl_item_of f = {c->dims, c->cnt_nl, c->kch, ch, c->cnt_nl_in, c->items};
    /* the compaction's output is the slots: into items too, where keep() puts the item at once */
    return halox_compact(f, 0, slots, c->items, c->dims + CL_D_ITEMS, NULL, c->scan, stream);
}

/* What a build's graph captured as values: a build whose key differs captures again. Built
 * zeroed (padding included) and compared as bytes. */
typedef struct cl_graph_key {
    const void *ptr[27];
    size_t cap[10];
    cl_geom_t g;
    float rl;
    int iv[7]; /* row lengths, chunks per row, chunk, halo, local chunks */
} cl_graph_key_t;

static void cl_key_of(const md_clusters_t *c, const float *x, const uint8_t *zone,
                      cl_graph_key_t *k)
{
    memset(k, 0, sizeof *k);
    const void *p[] = {x,          zone,     c->dims, c->h_small,   c->key,    c->sorted,  c->bin,
                       c->cursor,  c->scan,  c->col,  c->perm,      c->xq,     c->ref,     c->fs,
                       c->slot_of, c->bbox,  c->zwin, c->bnow,      c->jl_loc, c->cnt_loc, c->jl_nl,
                       c->cnt_nl,  c->state, c->tl,   c->cnt_nl_in, c->items};
    memcpy(k->ptr, p, sizeof p);
    const size_t cap[] = {c->cap_atoms, c->cap_keys, c->cap_cols,  c->cap_slots, c->cap_cl,
                          c->cap_loc,   c->cap_nl,   c->cap_items, c->cap_scan,  c->cap_in[1]};
    memcpy(k->cap, cap, sizeof cap);
    const int iv[] = {c->max_loc, c->max_nl, c->kch, c->chunk, c->n > c->n_home, c->kloc, c->lch};
    memcpy(k->iv, iv, sizeof iv);
    k->g = cl_geom_of(c);
    k->rl = c->rl;
}

/* Everything of a build after the host's preparation, in the stream's order: the atom counts up
 * from h_small, the sort, the arming, the search, the work items, the counts down into h_small. */
static cudaError_t cl_enqueue(md_clusters_t *c, const float *x, const uint8_t *zone,
                              cudaStream_t stream)
{
    if (c->tl) /* the launches of this list's life */
        CL_TRY(md__timeline_clear(c->tl, stream));
    CL_TRY(md__clusters_sort_enqueue(c, x, zone, stream));
    const cl_geom_t g = cl_geom_of(c);
    HALOX_LAUNCH(cl_search, cl_blocks(32LL * (long long)c->cap_cl, 128), 128, stream)
    ((const float4 *)c->bbox, (const float2 *)c->zwin, c->col, g, c->dims, c->rl, c->jl_loc,
     c->cnt_loc, c->max_loc, c->jl_nl, c->cnt_nl, c->max_nl, c->dims + CL_D_NEED_LOC);
    CL_TRY(cudaGetLastError());
    CL_TRY(cl_items_enqueue(c, stream));
    return cudaMemcpyAsync(c->h_small + CL_D_NCL_HOME, c->dims + CL_D_NCL_HOME,
                           (CL_D_COUNT - CL_D_NCL_HOME) * sizeof(int), cudaMemcpyDeviceToHost,
                           stream);
}

/* Capture the build on the private stream (nothing runs there; the caller's stream may be the
 * legacy one, where capturing is not allowed) and instantiate it. */
static cudaError_t cl_capture(md_clusters_t *c, const float *x, const uint8_t *zone)
{
    if (c->graph) {
        cudaGraphExecDestroy(c->graph);
        c->graph = NULL;
    }
    if (!c->capture_stream)
        CL_TRY(cudaStreamCreateWithFlags(&c->capture_stream, cudaStreamNonBlocking));
    CL_TRY(cudaStreamBeginCapture(c->capture_stream, cudaStreamCaptureModeThreadLocal));
    cudaError_t e = cl_enqueue(c, x, zone, c->capture_stream);
    cudaGraph_t graph = NULL;
    const cudaError_t ended = cudaStreamEndCapture(c->capture_stream, &graph); /* always */
    if (e == cudaSuccess)
        e = ended;
    if (e == cudaSuccess)
        e = cudaGraphInstantiate(&c->graph, graph, 0);
    if (graph)
        cudaGraphDestroy(graph);
    if (e != cudaSuccess) {
        c->graph = NULL;
        (void)cudaGetLastError();
        return e;
    }
    c->captures++;
    return cudaSuccess;
}

/* The lists' arrays grown for the current row lengths, the graph captured again when what it
 * holds as values changed, the atom counts written for it, and the launch. */
static cudaError_t cl_launch_build(md_clusters_t *c, const float *x, const uint8_t *zone,
                                   cudaStream_t stream)
{
    /* rows for as many clusters as the atoms can make (the count is found on the device) */
    const size_t rows_home = cl_cluster_bound(c->n_home, (long long)c->m[0] * c->m[1]);
    {
        void **p[] = {(void **)&c->jl_loc, (void **)&c->jl_loc_in};
        size_t el[] = {sizeof(int), sizeof(int)};
        size_t want = (size_t)c->max_loc * rows_home;
        CL_TRY(md__clusters_grow(p, el, 2, &c->cap_loc, want));
    }
    {
        void **p[] = {(void **)&c->jl_nl, (void **)&c->jl_nl_in};
        size_t el[] = {sizeof(int), sizeof(int)};
        size_t want = (size_t)c->max_nl * c->cap_cl;
        CL_TRY(md__clusters_grow(p, el, 2, &c->cap_nl, want));
    }
    CL_TRY(cl_items_prepare(c));
    cl_graph_key_t key;
    cl_key_of(c, x, zone, &key);
    if (!c->graph || memcmp(&key, c->graph_key, sizeof key) != 0) {
        CL_TRY(cl_capture(c, x, zone));
        memcpy(c->graph_key, &key, sizeof key);
    }
    c->h_small[CL_D_NHOME] = c->n_home;
    c->h_small[CL_D_N] = c->n;
    return cudaGraphLaunch(c->graph, stream);
}

extern "C" cudaError_t md__clusters_build_begin(md_clusters_t *c, const float *x,
                                                const uint8_t *zone, int n_home, int n,
                                                const float lo[3], const float ext[3],
                                                double density, float rl, int shift_dims,
                                                cudaStream_t stream)
{
    c->n_home = n_home;
    c->n = n;
    c->rl = rl;
    c->shift_dims = shift_dims & 7;
    for (int d = 0; d < 3; d++)
        c->box[d] = ((shift_dims >> d) & 1) ? ext[d] : 0.0f;
    /* the first build: the counts, the device's step state, the watch, the graph's key */
    if (!c->dims) {
        CL_TRY(cudaMalloc((void **)&c->dims, CL_D_ALL * sizeof(int)));
        CL_TRY(cudaMallocHost((void **)&c->h_small, CL_D_COUNT * sizeof(int)));
        CL_TRY(cudaMalloc(&c->state, sizeof(cl_state_t)));
        CL_TRY(cudaMemsetAsync(c->state, 0, sizeof(cl_state_t), stream));
        CL_TRY(cudaHostAlloc((void **)&c->watch, sizeof(md_clusters_watch_t), cudaHostAllocMapped));
        memset(c->watch, 0, sizeof *c->watch);
        c->graph_key = calloc(1, sizeof(cl_graph_key_t));
        if (!c->graph_key)
            return cudaErrorMemoryAllocation;
    }
    CL_TRY(md__clusters_sort_prepare(c, lo, ext, density));
    /* lists: a first guess from the density, grown until every row fits */
    if (c->max_loc == 0) {
        double side = cbrt((double)MD_CLUSTER_SIZE / (density > 0 ? density : 1.0));
        double r = rl + 1.2 * side;
        int guess =
            (int)(4.0 / 3.0 * 3.14159265358979 * r * r * r * density / MD_CLUSTER_SIZE * 0.7 + 16);
        c->max_loc = c->max_nl = guess;
    }
    return cl_launch_build(c, x, zone, stream);
}

extern "C" cudaError_t md__clusters_build_end(md_clusters_t *c, const float *x, const uint8_t *zone,
                                              cudaStream_t stream)
{
    for (int attempt = 0; attempt < 4; attempt++) {
        CL_TRY(cudaStreamSynchronize(stream));
        c->ncl_home = c->h_small[CL_D_NCL_HOME];
        c->ncl = c->h_small[CL_D_NCL];
        c->nitems = c->h_small[CL_D_ITEMS];
        const int nl = c->h_small[CL_D_NEED_LOC], nn = c->h_small[CL_D_NEED_NL];
        if (nl <= c->max_loc && nn <= c->max_nl)
            return cudaSuccess;
        if (nl > c->max_loc)
            c->max_loc = nl + nl / 5 + 8;
        if (nn > c->max_nl)
            c->max_nl = nn + nn / 5 + 8;
        c->grown++;
        CL_TRY(cl_launch_build(c, x, zone, stream));
    }
    return cudaErrorInvalidValue; /* cannot happen: the second attempt has room for every row */
}

extern "C" cudaError_t md__clusters_build(md_clusters_t *c, const float *x, const uint8_t *zone,
                                          int n_home, int n, const float lo[3], const float ext[3],
                                          double density, float rl, int shift_dims,
                                          cudaStream_t stream)
{
    CL_TRY(
        md__clusters_build_begin(c, x, zone, n_home, n, lo, ext, density, rl, shift_dims, stream));
    return md__clusters_build_end(c, x, zone, stream);
}

extern "C" cudaError_t md__clusters_timeline(md_clusters_t *c)
{
    if (!c->tl) {
        CL_TRY(cudaMalloc((void **)&c->tl, sizeof *c->tl));
        CL_TRY(md__timeline_clear(c->tl, 0));
        CL_TRY(cudaDeviceSynchronize());
    }
    return cudaSuccess;
}

extern "C" cudaError_t md__clusters_timeline_read(const md_clusters_t *c, md_timeline_t *out)
{
    if (!c->tl)
        return cudaErrorInvalidValue;
    CL_TRY(cudaDeviceSynchronize()); /* the kernels on any stream have stamped */
    return cudaMemcpy(out, c->tl, sizeof *out, cudaMemcpyDeviceToHost);
}

static cudaError_t cl_sum_counts(const int *cnt, int rows, long long *out)
{
    *out = 0;
    if (rows <= 0)
        return cudaSuccess;
    int *h = (int *)malloc(sizeof(int) * (size_t)rows);
    if (!h)
        return cudaErrorMemoryAllocation;
    cudaError_t e = cudaMemcpy(h, cnt, sizeof(int) * (size_t)rows, cudaMemcpyDeviceToHost);
    for (int r = 0; e == cudaSuccess && r < rows; r++)
        *out += h[r];
    free(h);
    return e;
}

/* ---- spans of the step kernels (md_cluster.h) --------------------------------------------- */

static int cl_span_of(int count, double headroom, int pad, size_t cap)
{
    double v = count + count * headroom + pad;
    if (v > (double)cap)
        v = (double)cap;
    return v > 0 ? (int)v : 0;
}

extern "C" void md__clusters_set_span(md_clusters_t *c, double headroom)
{
    memset(&c->span, 0, sizeof c->span);
    if (headroom < 0)
        return;
    const int halo = c->ncl - c->ncl_home;
    /* a block of the gathers and the kick (256 threads) over each count; clusters: 8 slots */
    c->span.n_home = cl_span_of(c->n_home, headroom, 256, c->cap_atoms);
    c->span.ncl_home = cl_span_of(c->ncl_home, headroom, 32, c->cap_cl);
    c->span.ncl_halo = halo > 0 ? cl_span_of(halo, headroom, 32, c->cap_cl) : 0;
    c->span.items =
        c->chunk > 0 && halo > 0 ? cl_span_of(c->nitems, headroom, 64, c->cap_items) : 0;
}

extern "C" int md__clusters_span_fits(const md_clusters_t *c)
{
    const md_clusters_span_t *p = &c->span;
    const int halo = c->ncl - c->ncl_home;
    if (p->ncl_home + p->ncl_halo <= 0)
        return 0;
    return c->n_home <= p->n_home && c->ncl_home <= p->ncl_home && halo <= p->ncl_halo &&
           (halo > 0) == (p->ncl_halo > 0) &&
           (!(c->chunk > 0 && halo > 0) || c->nitems <= p->items) &&
           c->ncl_home + halo <= (int)c->cap_cl;
}

extern "C" void md__clusters_step_key(const md_clusters_t *c, md_clusters_step_key_t *k)
{
    memset(k, 0, sizeof *k);
    const void *p[] = {c->xq,        c->ref,        c->fs,       c->perm,      c->slot_of,
                       c->bnow,      c->jl_loc,     c->cnt_loc,  c->jl_nl,     c->cnt_nl,
                       c->jl_loc_in, c->cnt_loc_in, c->jl_nl_in, c->cnt_nl_in, c->items,
                       c->state,     c->watch,      c->tl,       c->dims};
    memcpy(k->ptr, p, sizeof p);
    k->cap_slots = c->cap_slots;
    const int iv[] = {c->max_loc, c->max_nl, c->kch, c->chunk, cl_pruning(c), c->kloc, c->lch};
    memcpy(k->iv, iv, sizeof iv);
    const float fv[] = {c->rl, c->rc, c->rl_in, c->box[0], c->box[1], c->box[2]};
    memcpy(k->fv, fv, sizeof fv);
    k->span = c->span;
}

extern "C" cudaError_t md__clusters_entries(const md_clusters_t *c, long long *loc, long long *nl,
                                            long long *loc_in, long long *nl_in)
{
    const int pr = cl_pruning(c), halo = c->ncl > c->ncl_home;
    CL_TRY(cudaDeviceSynchronize()); /* the kernels on any stream have written the counts */
    CL_TRY(cl_sum_counts(c->cnt_loc, c->ncl_home, loc));
    CL_TRY(cl_sum_counts(c->cnt_nl, halo ? c->ncl : 0, nl));
    /* the inner lists count per chunk */
    const int k0 = pr && c->kloc > 0 ? c->kloc : 1, k1 = pr && c->kch > 0 ? c->kch : 1;
    CL_TRY(cl_sum_counts(pr ? c->cnt_loc_in : c->cnt_loc, c->ncl_home * k0, loc_in));
    CL_TRY(cl_sum_counts(pr ? c->cnt_nl_in : c->cnt_nl, halo ? c->ncl * k1 : 0, nl_in));
    return cudaSuccess;
}

extern "C" void md__clusters_free(md_clusters_t *c)
{
    void *p[] = {c->xq,         c->ref,      c->fs,        c->perm,  c->slot_of, c->bbox,
                 c->zwin,       c->key,      c->sorted,    c->bin,   c->cursor,  c->scan,
                 c->col,        c->jl_loc,   c->cnt_loc,   c->jl_nl, c->cnt_nl,  c->jl_loc_in,
                 c->cnt_loc_in, c->jl_nl_in, c->cnt_nl_in, c->dims,  c->state,   c->tl,
                 c->bnow,       c->items};
    for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
        if (p[k])
            cudaFree(p[k]);
    if (c->graph)
        cudaGraphExecDestroy(c->graph);
    if (c->capture_stream)
        cudaStreamDestroy(c->capture_stream);
    free(c->graph_key);
    if (c->h_small)
        cudaFreeHost(c->h_small);
    if (c->watch)
        cudaFreeHost(c->watch);
    (void)cudaGetLastError();
    memset(c, 0, sizeof *c);
}
