/* Internal to the GPU back end (md/platforms/cuda/gpu_*.c, CUDA builds only; the overview is in
 * gpu_backend.c): its state on the rank's GPU and the functions its files share. The files call
 * only those listed before them (no circles), as md_internal.h orders the engine:
 *   gpu_timeline.c HALOX_MD_TIMELINE: the step kernels' stamps of one list life to a file
 *   gpu_state.c    create and destroy, CUDA errors, device arrays, the timers' events, bounded
 *                  waits, the device state back to the host
 *   gpu_rebuild.c  after the host plan build (upload, bind, lists), the one-rank rebuild on the
 *                  device, the watch of the lists
 *   gpu_resident.c HALOX_MD_DEVICE_REBUILD: every rebuild on the device (migration and plan
 *                  build by the library on the device arrays, bind, lists)
 *   gpu_step.c     the parts of a step: kick + drift, forces with the halo exchanges, kick,
 *                  kinetic energy, velocity scaling, a repetition of the overlap probe
 *   gpu_graph.c    --graph: the plain step captured as a CUDA graph and launched
 *   gpu_backend.c  the table (backend.h), the summary's statistics */
#ifndef HALOX_MD_GPU_INTERNAL_H
#define HALOX_MD_GPU_INTERNAL_H

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/md_internal.h"
#include "halox/inline.h"
#include "platforms/cuda/md_cluster.h"

enum { MD_GPU_SLOTS = 4, MD_GPU_EVENTS = 10 };

/* Warps per SM the local pair kernel should have: fewer home clusters cut its rows into chunks
 * (md_cluster.h: loc_warps) */
#define MD_GPU_LOCAL_WARPS 64

/* Plain steps one launch of the multi-step graph runs (gpu_graph.c) */
#define MD_GPU_GRAPH_STEPS 8

/* event indices of one step's timing slot */
enum {
    EV_K0 = 0, /* before kick + drift */
    EV_K1,     /* after kick + drift */
    EV_C0,     /* before the coordinate exchange */
    EV_C1,     /* after it */
    EV_NL1,    /* after the non-local forces */
    EV_F0,     /* the local forces done: force exchange can start */
    EV_F1,     /* after the force exchange */
    EV_K2,     /* after the second kick */
    EV_L0,     /* lo stream: before the local forces */
    EV_L1      /* lo stream: after them */
};

/* What the step's graph took as values (gpu_graph.c): the lists' (md_clusters_step_key_t), the
 * engine's arrays, the inline view (its n_home, which no kernel reads, zeroed), the shape of the
 * step. Built zeroed and compared as bytes. */
typedef struct md_gpu_graph_key {
    md_clusters_step_key_t cl;
    const void *ptr[8];
    halox_inline_view_t inl;
    int iv[4];
} md_gpu_graph_key_t;

typedef struct md_gpu_slot {
    cudaEvent_t ev[MD_GPU_EVENTS];
    int pending; /* recorded, not yet read */
} md_gpu_slot_t;

typedef struct md_gpu {
    cudaStream_t hi, lo;
    cudaEvent_t x_ready, local_done;
    cudaEvent_t speeds_ready; /* a device rebuild's largest v^2 is in h_disp */
    float *x, *v, *f, *fnl;
    int cap_total, cap_home;
    uint8_t *zone;
    int32_t *id;      /* cap_total ids (home and halo), for the rebuilds on the device */
    int resident;     /* HALOX_MD_DEVICE_REBUILD: rebuilds stay on the device */
    int ids_fresh;    /* the host atoms' ids (and n_home) are the device's */
    md_clusters_t cl; /* cluster pair lists (kernels/md_cluster.h) */
    int grown_seen;   /* list growths already reported */
    long long gathers, gathers_at_build; /* final gathers enqueued: steps the watch covers */
    long long graph_gathers;             /* final gathers in the captured step */
    double inner_buffer;                 /* HALOX_MD_INNER_BUFFER */
    int row_chunk;                       /* HALOX_MD_ROW_CHUNK: non-local entries per warp */
    int loc_warps;                       /* the local pair kernel's warps at least (md_cluster.h) */
    void *sort_tmp;                      /* md__gpu_sort_home's scratch */
    size_t sort_tmp_bytes;
    double *energy; /* [5]: local pe, vir; non-local pe, vir; kinetic */
    /* [3]: the largest v^2 of a wrap or of md__kernel_max_v2; the pair the sort's permute
     * keeps (zero between launches) */
    unsigned *disp;
    /* pinned host mirrors; h_disp mapped for the device too (h_disp_dev: the permute's copy) */
    double *h_energy;
    unsigned *h_disp, *h_disp_dev;
    int n_home, n_total;
    int xv_fresh, f_fresh; /* the host atoms (x, v) / md->f hold the current device state */
    int in_step;
    /* between a step's first half kick and its second: the forces being computed feed the
     * second kick; outside (step 0, a recomputation for the thermo) md__gpu_forces gathers them
     * into f itself, which the next step's first half kick reads */
    int mid_step;
    int uploaded; /* the device holds a state (after the first upload) */
    /* --graph: the plain step as a CUDA graph, captured after each rebuild */
    int graph;             /* graphs on (the transport can be captured) */
    int capturing;         /* inside a capture: no timing events */
    cudaGraphExec_t gexec; /* NULL until captured (again after every rebuild) */
    int gstale; /* a rebuild changed what gexec captured: capture again before a launch */
    /* MD_GPU_GRAPH_STEPS plain steps captured as one graph (gpu_graph.c), with the gathers
     * they count; ahead: steps of its last launch the engine has not reached yet */
    cudaGraphExec_t gexec_k;
    int gk_stale, ahead;
    long long graph_gathers_k;
    long long graph_updates; /* captures that updated gexec instead of instantiating */
    /* HALOX_MD_GRAPH_SPAN (>= 0): the step kernels read the build's counts on the device and span
     * the counts of the capture's build plus this head-room (md_clusters_span_t), so a rebuild
     * whose counts fit and whose arrays and values are those gkey holds keeps gexec (counted in
     * graph_kept) where the exchange allows (gpu_graph.c) */
    double gspan;
    md_gpu_graph_key_t gkey;
    int gkey_valid;
    long long graph_kept;
    /* after each of the last two launches: the host runs at most two graphs ahead, so the GPU
     * finds the next step queued when it finishes one (one ahead kept them in lockstep: the
     * launch latency idled the GPU between steps) */
    cudaEvent_t gdone[2];
    int gdone_live[2], gslot;
    long long graph_steps, graph_captures, graph_launches;
    long long step_no;
    md_gpu_slot_t slot[MD_GPU_SLOTS];
    int cur;
    cudaEvent_t ovl[2]; /* overlap probe: start and end of a repetition (created on first use) */
    /* a device rebuild's drain on the GPU's clock (md__gpu_drain_mark): an event on an idle stream
     * of its own when the rebuild starts, one behind the steps queued on hi (created on first
     * use) */
    cudaStream_t clock;
    cudaEvent_t drain_ev[2];
    /* nvshmem-inline (halox/inline.h): the exchange inside the step's kernels. inl_on: the bound
     * plan has a view and HALOX_MD_INLINE allows it: the kick stores the halo into the peers,
     * the halo gather waits for ours, the halo forces go straight to their owners, the next
     * kick waits for and adds what came back. f_sent: this step's halo forces went out inside a
     * kernel (the returned ones still to be taken). */
    halox_inline_view_t inl;
    int inl_allowed; /* HALOX_MD_INLINE (default 1) */
    int inl_on, inl_noted;
    int f_sent;
    int kd_exchange;        /* the kick + drift being enqueued precedes a coordinate exchange */
    int kick_deferred;      /* that kick + drift is left to the home gather of the forces */
    int take_deferred;      /* so is the force kick of the step before (md__gpu_kick_deferred) */
    int graph_inline;       /* the captured step exchanges inside its kernels */
    long long inline_steps; /* steps (mid_step) that did, graph replays included */
    /* HALOX_MD_TIMELINE (gpu_timeline.c): the files' prefix ("" off), builds seen, written */
    char tl_path[512];
    int tl_builds, tl_written;
} md_gpu_t;

/* the back end's state in the engine */
static inline md_gpu_t *md__gpu(const halox_md_t *md) { return md->be_state; }

/* a failed CUDA call returns, from a function with `md` in scope, md__gpu_error's status */
#define MD_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return md__gpu_error(md, e_, #call);                                                   \
    } while (0)

/* gpu_timeline.c */
/* HALOX_MD_TIMELINE set: the kernel timeline on (md_gpu_t.tl_path); before the first build. */
halox_status_t md__gpu_timeline_open(halox_md_t *md);
/* Before every list build: the 4th writes the life of the 3rd list's stamps. */
void md__gpu_timeline_build(halox_md_t *md);
/* At the end, before the lists are freed: the last life's stamps when none was written. */
void md__gpu_timeline_end(halox_md_t *md);

/* gpu_state.c */
/* A failed CUDA call as an error naming rank, step and the call (out of memory as
 * HALOX_ERR_NO_MEMORY); clears the CUDA error state. */
halox_status_t md__gpu_error(halox_md_t *md, cudaError_t e, const char *what);
/* cudaMalloc *p to at least `bytes` (*have: what it holds), contents not kept. */
halox_status_t md__dev_grow(halox_md_t *md, void **p, size_t bytes, size_t *have);
halox_status_t md__gpu_create(halox_md_t *md);
void md__gpu_destroy(halox_md_t *md);
halox_status_t md__gpu_read_slot(halox_md_t *md, int k);
void md__gpu_record(md_gpu_t *g, int ev, cudaStream_t s);
halox_status_t md__gpu_flush_timers(halox_md_t *md);
halox_status_t md__gpu_wait(halox_md_t *md, cudaStream_t s, cudaEvent_t ev, const char *what);
/* A host wait for the GPU since `since` (md__now()), counted in a rebuild's budget while one
 * runs. */
void md__gpu_waited(halox_md_t *md, double since);
halox_status_t md__gpu_idle(halox_md_t *md);
halox_status_t md__gpu_to_host(halox_md_t *md, int forces);
/* The blow-up check of a rebuild on the device: the largest v^2 the device left in h_disp (as
 * float bits, read already) against half the box per step. */
halox_status_t md__gpu_speed_verdict(halox_md_t *md);

/* After every bind: the transport's view for the exchange inside the step's kernels, when the
 * plan has one (g->inl_on); otherwise the step exchanges with the transport's calls (and says
 * once why, when the transport is nvshmem-inline). */
halox_status_t md__gpu_inline_refresh(halox_md_t *md);

/* gpu_rebuild.c */
/* Cluster pair lists over the local atoms' extent (the plan built, the arrays uploaded): on hi,
 * waited for; or launched on a stream (begin) and waited for later (end), so that the host can
 * bind meanwhile. */
halox_status_t md__gpu_lists(halox_md_t *md);
halox_status_t md__gpu_lists_begin(halox_md_t *md, cudaStream_t s);
halox_status_t md__gpu_lists_end(halox_md_t *md, cudaStream_t s);
/* The home atoms (positions, velocities, ids) laid out in the order of the last
 * build's slots (the atoms the lists were built for), before a plan refers to their indices; the
 * host copies go stale. with_speeds: the rebuild's blow-up check rides along (the largest v^2
 * into h_disp, read after the wait for speeds_ready); *took_p (may be NULL) says whether it did,
 * which it does not where nothing is sorted. md__gpu_before_plan: the host atoms sorted by cell (a
 * host rebuild). */
halox_status_t md__gpu_sort_home(halox_md_t *md, int with_speeds, int *took_p);
halox_status_t md__gpu_before_plan(halox_md_t *md);
int md__gpu_local_rebuild_ok(const halox_md_t *md);
/* A device rebuild does not wait for the steps still queued before it starts: it is enqueued
 * behind them on hi. md__gpu_drain_mark (at its start) records the GPU's clock now and behind
 * those steps; after the rebuild, md__gpu_drain_read gives the time they still took (seconds, on
 * the GPU's clock; 0 when unknown), which the rebuild's first wait absorbed. */
halox_status_t md__gpu_drain_mark(halox_md_t *md);
double md__gpu_drain_read(halox_md_t *md);
halox_status_t md__gpu_rebuild_local(halox_md_t *md);
/* After the host plan build: upload, bind, cluster lists. */
halox_status_t md__gpu_after_plan(halox_md_t *md);
/* Collective: *rebuild_p, the lists expire before the host looks again; with horizon > 1,
 * *far_p, they last `horizon` steps more (else 0). */
halox_status_t md__gpu_watch(halox_md_t *md, int horizon, int *rebuild_p, int *far_p);

/* gpu_resident.c */
/* A rebuild can stay on the device: HALOX_MD_DEVICE_REBUILD and the device holds the state. */
int md__gpu_resident_ok(const halox_md_t *md);
/* Blow-up check, migration, plan build, bind and lists on the device (collective). */
halox_status_t md__gpu_rebuild_resident(halox_md_t *md);

/* gpu_step.c */
halox_status_t md__gpu_kick_drift(halox_md_t *md, int exchange);
halox_status_t md__gpu_forces(halox_md_t *md, int coords, int want_energy);
halox_status_t md__gpu_kick(halox_md_t *md);
/* The force kick left to the next step's home gather (one rank, inside a multi-step capture). */
halox_status_t md__gpu_kick_deferred(halox_md_t *md);
halox_status_t md__gpu_kinetic(halox_md_t *md, double *ke_p);
halox_status_t md__gpu_scale(halox_md_t *md, double alpha);
halox_status_t md__gpu_overlap_rep(halox_md_t *md, int kind, double *ms_p);

/* gpu_graph.c */
int md__gpu_graph_ready(const halox_md_t *md);
/* May the next steps run as one multi-step launch (md__gpu_graph_step with k > 1)? */
int md__gpu_graph_multi(const halox_md_t *md);
/* The plain step, or with k = MD_GPU_GRAPH_STEPS that many, as one graph launch. */
halox_status_t md__gpu_graph_step(halox_md_t *md, int k);

/* fn(md) inside an NVTX range called `name` (what profilers show of a step's parts). */
static inline halox_status_t md__gpu_ranged(const char *name, halox_status_t (*fn)(halox_md_t *),
                                            halox_md_t *md)
{
    nvtxRangePushA(name);
    halox_status_t st = fn(md);
    nvtxRangePop();
    return st;
}

#endif
