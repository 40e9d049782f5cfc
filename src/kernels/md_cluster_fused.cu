/* The step's forces in one kernel (nvshmem-inline, a step that exchanges coordinates): the halo
 * gather (the peers' coordinates waited for), the non-local and the local rows, and the halo
 * atoms' forces stored into their owners, as units that the kernel's blocks claim from counters,
 * in the order of their dependencies:
 *   1. a chunk of the halo gather (128 slots), once every pulse's coordinates are here (checked,
 *      not waited for); the chunk that finishes last completes the exchange, decides the
 *      non-local prune and marks the halo ready;
 *   2. FZ_ROWS non-local rows, once the halo is ready;
 *   3. FZ_ROWS local rows (they need nothing of this step's exchange);
 *   4. a chunk of the halo forces (128 slots), once every non-local row is done; the last one
 *      signals the owners.
 * A block loops over these until none can be claimed. With separate kernels on two streams the
 * non-local work ran after both ranks' local work whenever ranks share a GPU (stream priorities
 * order one process's blocks, not two processes'); here it starts as soon as the halo is in.
 * Units are claimed per block: thread 0 picks while the block waits; a unit of rows is large
 * (FZ_ROWS) so that the picks' round trips to L2 stay a small part of the work.
 *
 * Waiting (co-residency, docs/NVSHMEM.md): only the first `workers` blocks to start
 * (at most the view's spin_blocks) ever wait; the others leave when nothing can be claimed. A
 * worker waits when nothing else is left: for the coordinates (the peers' home gathers, earlier
 * kernels of theirs: bounded by the exchange's timeout), for the halo chunks, or for the
 * non-local rows; these last two are claimed by blocks already running, which never wait once
 * they hold a unit, so every wait ends.
 *
 * Coherence: the halo slots' positions and boxes are written by the gather chunks and read by
 * the non-local rows of the same launch (through the read-only path); no block reads a halo
 * slot's line before the halo is ready, so no cache can hold a stale copy of it. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "halox/inline_device.cuh"
#include "kernels/md_cluster.h"
#include "kernels/md_cluster_gather.cuh"
#include "kernels/md_cluster_internal.cuh"
#include "kernels/md_cluster_row.cuh"
#include "kernels/md_reduce.cuh"
#include "kernels/md_timeline.cuh"

/* a gather or send chunk: one slot per thread of a block; a unit of rows: FZ_ROWS rows, each
 * warp of the block taking every CL_WARPS-th. Against separate kernels, 2 ranks on one H200
 * (45k / 180k atoms, bench/results/2026-12-03-h200/README.md, sixth session): 4 rows per claim
 * of a block +24 % / +63 % ms/step, one row per claim of a warp +77 % / +133 %, 16 rows per
 * claim of a block +111 % / +23 % (too few units at 45k) */
#define FZ_CHUNK CL_THREADS
#define FZ_ROWS  4

typedef struct cl_fz_args {
    cl_list_t loc, nl;
    unsigned units[CL_FZ_UNITS];
    unsigned workers;
    int s0, s1;              /* the halo slots */
    int halo;                /* halo clusters exist: the gather finishes the step's watch */
    int prune_loc, prune_nl; /* the lists have inner lists, pruned when decided */
    float thr_in2, thr_out2, rc2, bx, by, bz;
    double eshift;
    const int *perm;
    float *x; /* read only here (no kick) */
    const uint8_t *zone;
    float4 *xq;
    const float4 *ref;
    size_t nslots;
    float4 *bnow;
    float *fs;
    double *energy; /* local energy, virial, non-local energy, virial; or NULL */
    cl_state_t *st;
    md_clusters_watch_t *watch;
    md_timeline_t *tl;
} cl_fz_args_t;

/* Thread 0's view of the launch's progress, kept across its picks: each condition, once seen,
 * is acquired once (a relaxed load that saw it, then a fence) and not looked at again. Acquires
 * and fences are few on purpose: at GPU scope an acquire invalidates the SM's L1, where the rows'
 * j atoms are cached. */
typedef struct cl_fz_seen {
    int ready;    /* the halo is in the slots and its prune decided */
    int nl_done;  /* every non-local row is done (their forces in the slots) */
    unsigned out; /* bit k: no unit of kind k is left to claim */
} cl_fz_seen_t;

/* One unit of kind k, or ~0u when none is left (then remembered). */
__device__ static __forceinline__ unsigned cl_fz_claim(cl_fused_t *fz, const unsigned *U, int k,
                                                       cl_fz_seen_t *seen)
{
    if ((seen->out >> k) & 1u)
        return ~0u;
    if (*(volatile unsigned *)&fz->claim[k] < U[k]) {
        const unsigned t = atomicAdd(&fz->claim[k], 1u);
        if (t < U[k])
            return t;
    }
    seen->out |= 1u << k;
    return ~0u;
}

__device__ static __forceinline__ int cl_fz_ready(cl_fused_t *fz, cl_fz_seen_t *seen)
{
    if (!seen->ready && *(volatile int *)&fz->ready) {
        __threadfence();
        seen->ready = 1;
    }
    return seen->ready;
}

__device__ static __forceinline__ int cl_fz_nl_done(cl_fused_t *fz, unsigned n, cl_fz_seen_t *seen)
{
    if (!seen->nl_done && *(volatile unsigned *)&fz->done[CL_FZ_NONLOCAL] >= n) {
        __threadfence();
        seen->nl_done = 1;
    }
    return seen->nl_done;
}

/* Thread 0: the next unit (its kind, or -1: none for this block) into *unit; a gather chunk
 * also gets whether its coordinates came (*ok) and the exchange's number (*epoch). */
__device__ static int cl_fz_pick(const cl_fz_args_t *A, const halox_inline_view_t *inl, int worker,
                                 cl_fz_seen_t *seen, unsigned *unit, int *ok,
                                 unsigned long long *epoch)
{
    cl_fused_t *fz = &A->st->fz;
    const unsigned *U = A->units;
    for (;;) {
        unsigned long long e = 0;
        unsigned t;
        if (!((seen->out >> CL_FZ_GATHER) & 1u) && halox_inline_arrived(inl, 0, &e) &&
            (t = cl_fz_claim(fz, U, CL_FZ_GATHER, seen)) != ~0u) {
            __threadfence_system(); /* the coordinates acquired (halox_inline_arrived) */
            *unit = t, *ok = 1, *epoch = e;
            return CL_FZ_GATHER;
        }
        if (cl_fz_ready(fz, seen) && (t = cl_fz_claim(fz, U, CL_FZ_NONLOCAL, seen)) != ~0u) {
            *unit = t;
            return CL_FZ_NONLOCAL;
        }
        if ((t = cl_fz_claim(fz, U, CL_FZ_LOCAL, seen)) != ~0u) {
            *unit = t;
            return CL_FZ_LOCAL;
        }
        if (cl_fz_nl_done(fz, U[CL_FZ_NONLOCAL], seen) &&
            (t = cl_fz_claim(fz, U, CL_FZ_SEND, seen)) != ~0u) {
            *unit = t;
            return CL_FZ_SEND;
        }
        if (!worker)
            return -1;
        /* a worker waits for what is left (the file's comment) */
        if (!((seen->out >> CL_FZ_GATHER) & 1u)) {
            /* the coordinates of THIS launch's exchange: once its chunks are all claimed the
             * exchange may be complete, and the next one's would never come before our forces
             * leave; so the claims are watched with the signals, not waited past */
            const long long t0 = halox_inline_now_ns();
            for (;;) {
                if (*(volatile unsigned *)&fz->claim[CL_FZ_GATHER] >= U[CL_FZ_GATHER]) {
                    seen->out |= 1u << CL_FZ_GATHER;
                    break;
                }
                /* -1: gave up (timed out, or another wait of this rank did): the chunk reads
                 * nothing, the host reports the timeout */
                const int got = halox_inline_poll(inl, 0, &e, t0);
                if (got != 0) {
                    if ((t = cl_fz_claim(fz, U, CL_FZ_GATHER, seen)) == ~0u)
                        break;
                    if (got > 0)
                        __threadfence_system(); /* the coordinates acquired */
                    *unit = t, *ok = got > 0, *epoch = e;
                    return CL_FZ_GATHER;
                }
                __nanosleep(64);
            }
        } else if (!((seen->out >> CL_FZ_NONLOCAL) & 1u)) {
            while (!cl_fz_ready(fz, seen))
                __nanosleep(64);
        } else if (!((seen->out >> CL_FZ_SEND) & 1u)) {
            while (!cl_fz_nl_done(fz, U[CL_FZ_NONLOCAL], seen))
                __nanosleep(64);
        } else {
            return -1;
        }
    }
}

/* Halo gather chunk u (the whole block); ok = 0: the coordinates did not come (nothing read). */
__device__ static void cl_fz_gather(const cl_fz_args_t &A, const halox_inline_view_t *inl,
                                    unsigned u, int ok, unsigned long long e, int tn)
{
    cl_fused_t *fz = &A.st->fz;
    cl_tl_unit(A.tl, MD_TL_HALO_GATHER, tn, 0);
    cl_kick_drift_t none = {NULL, NULL, 0.0f, 0.0f};
    float m[4];
    cl_gather_slot(A.s0 + (int)u * FZ_CHUNK + (int)threadIdx.x, A.s1, A.s0, ok, A.perm, A.x, A.zone,
                   A.xq, A.ref, A.nslots, A.bnow, none, NULL, m);
    cl_gather_block_max(m, A.st);
    if (threadIdx.x != 0)
        return;
    __threadfence();
    if (atomicAdd(&fz->done[CL_FZ_GATHER], 1u) == A.units[CL_FZ_GATHER] - 1) {
        __threadfence(); /* every chunk's slots and maxima */
        if (ok)          /* every chunk has read the coordinates: the exchange is complete */
            halox_inline_complete(inl, 0, e);
        if (A.halo) /* the home gather finished the local list's part */
            cl_gather_finish(A.st, A.watch, 0, 1, 1, A.thr_in2, A.thr_out2);
        __threadfence();
        *(volatile int *)&fz->ready = 1;
    }
    cl_tl_unit(A.tl, MD_TL_HALO_GATHER, tn, 1);
}

/* Rows FZ_ROWS u .. FZ_ROWS (u + 1) - 1 of list L (which: 0 local, 1 non-local), the block's
 * warps taking every CL_WARPS-th. */
template <int ENERGY, int ZONES, int MASKS>
__device__ static void cl_fz_rows(const cl_fz_args_t &A, const cl_list_t &L, int which, unsigned u,
                                  float4 *si, int *sel, double &e, double &w)
{
    const int prune =
        (which ? A.prune_nl : A.prune_loc) ? *(volatile const int *)&A.st->prune[which] : 0;
    if (prune && u == 0 && threadIdx.x == 0)
        A.st->valid[which] = 1; /* read by the next gather, after this kernel */
    for (int r = (int)(threadIdx.x >> 5); r < FZ_ROWS; r += CL_WARPS) {
        const int row = (int)u * FZ_ROWS + r;
        if (row < L.nrows) /* uniform over the warp */
            cl_row<ENERGY, ZONES, MASKS>(L, row, prune, A.xq, A.bnow, A.rc2, A.bx, A.by, A.bz,
                                         A.eshift, A.fs, si, sel, e, w);
    }
}

/* Halo force chunk u (the whole block): each slot's force to its atom's owner, the slot zeroed;
 * the last chunk signals the owners. */
__device__ static void cl_fz_send(const cl_fz_args_t &A, const halox_inline_view_t *inl, unsigned u,
                                  int tn)
{
    cl_tl_unit(A.tl, MD_TL_HALO_FORCES, tn, 0);
    const int s = A.s0 + (int)u * FZ_CHUNK + (int)threadIdx.x;
    if (s < A.s1) {
        const int a = A.perm[s];
        if (a >= 0) {
            float *p = A.fs + 3 * (size_t)s;
            halox_inline_put_f(inl, a, p[0], p[1], p[2]);
            p[0] = p[1] = p[2] = 0.0f;
        }
    }
    __syncthreads();
    if (threadIdx.x != 0)
        return;
    __threadfence_system(); /* the block's stores into the owners, before the signal */
    if (atomicAdd(&A.st->fz.done[CL_FZ_SEND], 1u) == A.units[CL_FZ_SEND] - 1)
        halox_inline_signal(inl, 1);
    cl_tl_unit(A.tl, MD_TL_HALO_FORCES, tn, 1);
}

template <int ENERGY, int MASKS>
static __global__ void __launch_bounds__(CL_THREADS)
    cl_fused(cl_fz_args_t A, halox_inline_view_t inl)
{
    __shared__ float4 si[CL_WARPS][MD_CLUSTER_SIZE];
    __shared__ int sel[CL_WARPS][32];
    __shared__ int s_kind, s_ok;
    __shared__ unsigned s_unit;
    __shared__ unsigned long long s_epoch;
    cl_fused_t *fz = &A.st->fz;
    const int warp = threadIdx.x >> 5;
    /* the launch's number: only the last block to leave raises it */
    const unsigned ln = *(volatile unsigned *)&fz->launches;
    const int tn = A.tl && ln < MD_TL_LAUNCHES ? (int)ln : -1;
    int worker = 0;
    cl_fz_seen_t seen = {0, 0, 0u}; /* thread 0's */
    if (threadIdx.x == 0)
        worker = atomicAdd(&fz->blocks, 1u) < A.workers;
    double e[2] = {0, 0}, w[2] = {0, 0}; /* local, non-local */
    for (;;) {
        if (threadIdx.x == 0) {
            unsigned u = 0;
            int ok = 1;
            unsigned long long ep = 0;
            s_kind = cl_fz_pick(&A, &inl, worker, &seen, &u, &ok, &ep);
            s_unit = u, s_ok = ok, s_epoch = ep;
        }
        __syncthreads();
        const int kind = s_kind;
        const unsigned u = s_unit;
        if (kind < 0)
            break;
        if (kind == CL_FZ_GATHER) {
            cl_fz_gather(A, &inl, u, s_ok, s_epoch, tn);
        } else if (kind == CL_FZ_SEND) {
            cl_fz_send(A, &inl, u, tn);
        } else {
            const int nl = kind == CL_FZ_NONLOCAL;
            const int tk = nl ? MD_TL_NONLOCAL : MD_TL_LOCAL;
            cl_tl_unit(A.tl, tk, tn, 0);
            /* home-home pairs never meet the zone rule: the local rows skip it */
            if (nl)
                cl_fz_rows<ENERGY, 1, MASKS>(A, A.nl, 1, u, si[warp], sel[warp], e[1], w[1]);
            else
                cl_fz_rows<ENERGY, 0, MASKS>(A, A.loc, 0, u, si[warp], sel[warp], e[0], w[0]);
            __syncthreads(); /* the unit's rows all done before it counts */
            if (threadIdx.x == 0 && nl) {
                __threadfence();
                atomicAdd(&fz->done[CL_FZ_NONLOCAL], 1u);
            }
            cl_tl_unit(A.tl, tk, tn, 1);
        }
        __syncthreads(); /* the unit's shared memory and s_* read before the next pick */
    }
    if (ENERGY) { /* each pair once */
        md__block_add(e[0], &A.energy[0]);
        md__block_add(w[0], &A.energy[1]);
        md__block_add(e[1], &A.energy[2]);
        md__block_add(w[1], &A.energy[3]);
    }
    if (threadIdx.x != 0)
        return;
    __threadfence();
    if (atomicAdd(&fz->exits, 1u) == gridDim.x - 1) { /* the last block: counters for the next */
        fz->blocks = 0;
        for (int k = 0; k < CL_FZ_UNITS; k++)
            fz->claim[k] = fz->done[k] = 0;
        fz->ready = 0;
        fz->launches = ln + 1;
        __threadfence();
        *(volatile unsigned *)&fz->exits = 0;
    }
}

extern "C" cudaError_t halox__md_clusters_forces_fused(const md_clusters_t *c, const float *x,
                                                       const uint8_t *zone, float rc2,
                                                       double eshift, double *energy,
                                                       const halox_inline_view_t *inl,
                                                       cudaStream_t stream)
{
    cl_fz_args_t A;
    memset(&A, 0, sizeof A);
    int mloc, mnl;
    A.loc = cl_list_of(c, 0, &mloc);
    A.nl = cl_list_of(c, 1, &mnl);
    /* both lists have masks or neither (md_cluster.h); without them only the tests run */
    const int masks = mloc == mnl ? mloc : MD_CLUSTER_MASKS_TEST;
    A.halo = c->ncl > c->ncl_home;
    A.s0 = c->ncl_home * MD_CLUSTER_SIZE;
    A.s1 = c->ncl * MD_CLUSTER_SIZE;
    /* at least one chunk each: the exchange is waited for and completed, and every pulse is
     * signalled, also without halo atoms */
    const unsigned chunks = (unsigned)cl_blocks(A.s1 - A.s0, FZ_CHUNK);
    A.units[CL_FZ_GATHER] = A.units[CL_FZ_SEND] = chunks;
    A.units[CL_FZ_NONLOCAL] = A.halo ? (unsigned)cl_blocks(c->ncl, FZ_ROWS) : 0u;
    A.units[CL_FZ_LOCAL] = c->ncl_home > 0 ? (unsigned)cl_blocks(c->ncl_home, FZ_ROWS) : 0u;
    /* a block per unit (blocks that find nothing left leave at once) */
    unsigned grid = 0;
    for (int k = 0; k < CL_FZ_UNITS; k++)
        grid += A.units[k];
    A.workers = inl->spin_blocks < 1 ? 1u : (unsigned)inl->spin_blocks;
    if (A.workers > grid)
        A.workers = grid;
    A.prune_loc = A.prune_nl = cl_pruning(c);
    const float rin = cl_pruning(c) ? c->rl_in : c->rl;
    A.thr_in2 = cl_half2(rin, c->rc);
    A.thr_out2 = cl_half2(c->rl, c->rc);
    A.rc2 = rc2;
    A.bx = c->box[0], A.by = c->box[1], A.bz = c->box[2];
    A.eshift = eshift;
    A.perm = c->perm;
    A.x = (float *)x;
    A.zone = zone;
    A.xq = (float4 *)c->xq;
    A.ref = (const float4 *)c->ref;
    A.nslots = (size_t)c->ncl * MD_CLUSTER_SIZE;
    A.bnow = A.prune_nl ? (float4 *)c->bnow : NULL; /* read by prunes only */
    A.fs = c->fs;
    A.energy = energy;
    A.st = (cl_state_t *)c->state;
    A.watch = c->watch;
    A.tl = c->tl;
#define CL_FZ(E, M) cl_fused<E, M><<<grid, CL_THREADS, 0, stream>>>(A, *inl)
#define CL_FZ_M(E)                                                                                 \
    do {                                                                                           \
        if (masks == MD_CLUSTER_MASKS_SKIP)                                                        \
            CL_FZ(E, MD_CLUSTER_MASKS_SKIP);                                                       \
        else if (masks == MD_CLUSTER_MASKS_BITS)                                                   \
            CL_FZ(E, MD_CLUSTER_MASKS_BITS);                                                       \
        else                                                                                       \
            CL_FZ(E, MD_CLUSTER_MASKS_TEST);                                                       \
    } while (0)
    if (energy)
        CL_FZ_M(1);
    else
        CL_FZ_M(0);
#undef CL_FZ_M
#undef CL_FZ
    return cudaGetLastError();
}
