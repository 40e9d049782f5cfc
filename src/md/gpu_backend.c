/* The GPU back end of the engine (backend.h; compiled in CUDA builds only): the state of a rank
 * lives on its GPU between rebuilds, the step is a chain of stream-ordered kernels and halo
 * exchanges.
 *
 * One step on the GPU (step.c calls these through the table, in the CPU engine's order):
 *   hi stream (the transport's, high priority): kick + drift (home atoms)       md__gpu_kick_drift
 *     [energy slots zeroed on thermo steps]; gather home positions (the gather also measures
 *     the displacements and decides the prunes on the device); event x_ready
 *   lo stream (low priority): wait x_ready; LOCAL forces (home-home pairs) -> fs; event local_done
 *   hi stream: coordinate halo exchange (not on rebuild steps, none without pulses); gather halo
 *     positions; NON-LOCAL forces (pairs with halo atoms, zone rule) -> fs; the halo slots of fs
 *     -> fnl; force halo exchange (adds into fnl of the owners); wait local_done  md__gpu_forces
 *   hi stream: kick: f = fs (+ fnl), fs and fnl zeroed, v += dt/2 f              md__gpu_kick
 * Nothing waits on the host inside a step except what the transport itself does (mpi-staged
 * synchronises its stream to stage through host memory), thermo steps (energies and velocities
 * are read back) and the NVT thermostat (one reduction). The rebuild decision reads, without
 * synchronising, what the gathers published (md__gpu_watch).
 *
 * Rebuild steps: one rank periodic by shifts in every dimension rebuilds on the device
 * (md__gpu_rebuild_local: wrap, blow-up check, cluster lists). Otherwise the home positions and
 * velocities come back to the host, the CPU engine migrates and builds the plan as usual, and
 * md__gpu_after_plan uploads positions (home + halo), velocities and zones, binds the device
 * arrays to the transport and rebuilds the cluster lists on the GPU.
 *
 * Timers: the device time of each part from CUDA events, read back a few steps later (a ring of
 * event sets, so the host never runs more than a few steps ahead); the local forces overlap the
 * halo exchange, so the parts may add up to more than the wall time. */
#include "core/env.h"
#include "core/util.h"
#include "md/backend.h"
#include "md/md_internal.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/md_cluster.h"
#include "kernels/md_kernels.h"
#include "transports/nvtx.h"

enum { MD_GPU_SLOTS = 4, MD_GPU_EVENTS = 10 };

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

typedef struct md_gpu_slot {
    cudaEvent_t ev[MD_GPU_EVENTS];
    int pending; /* recorded, not yet read */
} md_gpu_slot_t;

typedef struct md_gpu {
    cudaStream_t hi, lo;
    cudaEvent_t x_ready, local_done;
    float *x, *v, *f, *fnl;
    int cap_total, cap_home;
    uint8_t *zone;
    md_clusters_t cl;                    /* cluster pair lists (kernels/md_cluster.h) */
    int grown_seen;                      /* list growths already reported */
    long long gathers, gathers_at_build; /* final gathers enqueued: steps the watch covers */
    long long graph_gathers;             /* final gathers in the captured step */
    double inner_buffer;                 /* HALOX_MD_INNER_BUFFER */
    double *energy;                      /* [5]: local pe, vir; non-local pe, vir; kinetic */
    unsigned *disp;                      /* [1] */
    /* pinned host mirrors */
    double *h_energy;
    unsigned *h_disp;
    int n_home, n_total;
    int xv_fresh, f_fresh; /* the host atoms (x, v) / md->f hold the current device state */
    int in_step;
    int uploaded; /* the device holds a state (after the first upload) */
    /* --graph: the plain step as a CUDA graph, captured after each rebuild */
    int graph;             /* graphs on (the transport can be captured) */
    int capturing;         /* inside a capture: no timing events */
    cudaGraphExec_t gexec; /* NULL until captured (again after every rebuild) */
    /* after each of the last two launches: the host runs at most two graphs ahead, so the GPU
     * finds the next step queued when it finishes one (one ahead kept them in lockstep: the
     * launch latency idled the GPU between steps) */
    cudaEvent_t gdone[2];
    int gdone_live[2], gslot;
    long long graph_steps, graph_captures;
    long long step_no;
    md_gpu_slot_t slot[MD_GPU_SLOTS];
    int cur;
    cudaEvent_t ovl[2]; /* overlap probe: start and end of a repetition (created on first use) */
} md_gpu_t;

/* the back end's state in the engine */
static inline md_gpu_t *md__gpu(const halox_md_t *md) { return md->be_state; }

#define MD_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return md__gpu_error(md, e_, #call);                                                   \
    } while (0)

static halox_status_t md__gpu_error(halox_md_t *md, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return halox__error(e == cudaErrorMemoryAllocation ? HALOX_ERR_NO_MEMORY : HALOX_ERR_INTERNAL,
                        "rank %d, step %lld: GPU engine: %s failed: %s", md->rank, md->step, what,
                        cudaGetErrorString(e));
}

static halox_status_t md__dev_grow(halox_md_t *md, void **p, size_t bytes, size_t *have)
{
    if (*p && bytes <= *have)
        return HALOX_OK;
    if (*p)
        cudaFree(*p);
    *p = NULL;
    *have = 0;
    cudaError_t e = cudaMalloc(p, bytes > 0 ? bytes : 16);
    if (e != cudaSuccess) {
        *p = NULL;
        return md__gpu_error(md, e, "cudaMalloc");
    }
    *have = bytes;
    return HALOX_OK;
}

static halox_status_t md__gpu_create(halox_md_t *md)
{
    if (md->atoms.real != HALOX_FLOAT)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "the GPU engine runs in single precision: use --precision float (or "
                            "--device cpu for double)");
    void *s = halox_comm_stream(md->comm);
    if (!s)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "the GPU engine needs a GPU transport (mpi-staged, nccl, "
                            "nvshmem-stream/pulse/fused), not '%s'",
                            halox_comm_transport(md->comm));
    /* HALOX_MD_INNER_BUFFER: the inner lists' buffer, by default 5 % of the cut-off */
    double inner = 0.05 * md->cfg.cutoff;
    halox_status_t est = halox__env_number("HALOX_MD_INNER_BUFFER", 0.0, 1e6, inner, &inner);
    if (est != HALOX_OK)
        return est;
    md_gpu_t *g = calloc(1, sizeof *g);
    if (!g)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for the GPU engine");
    g->inner_buffer = inner;
    md->be_state = g;
    g->hi = (cudaStream_t)s;
    int least = 0, greatest = 0;
    MD_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    MD_CUDA(cudaStreamCreateWithPriority(&g->lo, cudaStreamNonBlocking, least));
    MD_CUDA(cudaEventCreateWithFlags(&g->x_ready, cudaEventDisableTiming));
    MD_CUDA(cudaEventCreateWithFlags(&g->local_done, cudaEventDisableTiming));
    for (int k = 0; k < MD_GPU_SLOTS; k++)
        for (int j = 0; j < MD_GPU_EVENTS; j++)
            MD_CUDA(cudaEventCreate(&g->slot[k].ev[j]));
    MD_CUDA(cudaMalloc((void **)&g->energy, 5 * sizeof(double)));
    MD_CUDA(cudaMalloc((void **)&g->disp, sizeof(unsigned)));
    MD_CUDA(cudaMallocHost((void **)&g->h_energy, 5 * sizeof(double)));
    MD_CUDA(cudaMallocHost((void **)&g->h_disp, sizeof(unsigned)));
    for (int k = 0; k < 2; k++)
        MD_CUDA(cudaEventCreateWithFlags(&g->gdone[k], cudaEventDisableTiming));
    g->xv_fresh = g->f_fresh = 1; /* nothing on the device yet: the host is the truth */
    if (md->cfg.graph) {
        /* the transport decides: one that syncs with the host inside an exchange cannot be
         * captured (the check is collective in effect: every rank has the same transport) */
        halox_status_t gst = halox_comm_graph_mode(md->comm, 1);
        halox_comm_graph_mode(md->comm, 0);
        if (gst == HALOX_OK)
            g->graph = 1;
        else
            md__notice(md, "--graph: %s; running without graphs", halox_last_error());
    }
    return HALOX_OK;
}

static void md__gpu_destroy(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (!g)
        return;
    if (g->hi)
        cudaStreamSynchronize(g->hi);
    if (g->lo) {
        cudaStreamSynchronize(g->lo);
        cudaStreamDestroy(g->lo);
    }
    if (g->gexec)
        cudaGraphExecDestroy(g->gexec);
    for (int k = 0; k < 2; k++)
        if (g->gdone[k])
            cudaEventDestroy(g->gdone[k]);
    if (g->x_ready)
        cudaEventDestroy(g->x_ready);
    if (g->local_done)
        cudaEventDestroy(g->local_done);
    for (int k = 0; k < 2; k++)
        if (g->ovl[k])
            cudaEventDestroy(g->ovl[k]);
    for (int k = 0; k < MD_GPU_SLOTS; k++)
        for (int j = 0; j < MD_GPU_EVENTS; j++)
            if (g->slot[k].ev[j])
                cudaEventDestroy(g->slot[k].ev[j]);
    md_clusters_free(&g->cl);
    /* collective (the transport's memory): every rank destroys its engine at the end of a run */
    if (g->x)
        halox_comm_device_free(md->comm, g->x);
    if (g->fnl)
        halox_comm_device_free(md->comm, g->fnl);
    void *dev[] = {g->v, g->f, g->zone, g->energy, g->disp};
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++)
        if (dev[k])
            cudaFree(dev[k]);
    if (g->h_energy)
        cudaFreeHost(g->h_energy);
    if (g->h_disp)
        cudaFreeHost(g->h_disp);
    (void)cudaGetLastError();
    free(g);
    md->be_state = NULL;
}

/* Add the device times of the finished step in slot k to the timers. */
static halox_status_t md__gpu_read_slot(halox_md_t *md, int k)
{
    md_gpu_slot_t *sl = &md__gpu(md)->slot[k];
    if (!sl->pending)
        return HALOX_OK;
    MD_CUDA(cudaEventSynchronize(sl->ev[EV_K2]));
    MD_CUDA(cudaEventSynchronize(sl->ev[EV_L1]));
    float ms[5] = {0};
    MD_CUDA(cudaEventElapsedTime(&ms[0], sl->ev[EV_K0], sl->ev[EV_K1]));
    MD_CUDA(cudaEventElapsedTime(&ms[1], sl->ev[EV_F1], sl->ev[EV_K2]));
    MD_CUDA(cudaEventElapsedTime(&ms[2], sl->ev[EV_C0], sl->ev[EV_C1]));
    MD_CUDA(cudaEventElapsedTime(&ms[3], sl->ev[EV_C1], sl->ev[EV_NL1]));
    MD_CUDA(cudaEventElapsedTime(&ms[4], sl->ev[EV_F0], sl->ev[EV_F1]));
    float loc = 0;
    MD_CUDA(cudaEventElapsedTime(&loc, sl->ev[EV_L0], sl->ev[EV_L1]));
    md->timer[HALOX_MD_T_INTEGRATE] += 1e-3 * ((double)ms[0] + (double)ms[1]);
    md->timer[HALOX_MD_T_COORDS] += 1e-3 * (double)ms[2];
    md->timer[HALOX_MD_T_PAIR] += 1e-3 * ((double)ms[3] + (double)loc);
    md->timer[HALOX_MD_T_FORCES] += 1e-3 * (double)ms[4];
    sl->pending = 0;
    return HALOX_OK;
}

static void md__gpu_record(md_gpu_t *g, int ev, cudaStream_t s)
{
    if (g->in_step)
        (void)cudaEventRecord(g->slot[g->cur].ev[ev], s);
}

static halox_status_t md__gpu_flush_timers(halox_md_t *md)
{
    for (int k = 0; k < MD_GPU_SLOTS; k++) {
        halox_status_t st = md__gpu_read_slot(md, k);
        if (st != HALOX_OK)
            return st;
    }
    return HALOX_OK;
}

/* Poll until the stream (ev NULL) or the event has completed, within the timeout: a peer that
 * never comes (an exchange stuck on the device) ends the run with an error, not a hang. */
static halox_status_t md__gpu_wait(halox_md_t *md, cudaStream_t s, cudaEvent_t ev, const char *what)
{
    double limit;
    halox_status_t st = halox__timeout(md->cfg.timeout_s, "halox-md", &limit);
    if (st != HALOX_OK)
        return st;
    const double deadline = halox__now() + limit;
    for (long polls = 0;; polls++) {
        cudaError_t e = ev ? cudaEventQuery(ev) : cudaStreamQuery(s);
        if (e == cudaSuccess)
            return HALOX_OK;
        if (e != cudaErrorNotReady)
            return md__gpu_error(md, e, what);
        if (halox__now() > deadline)
            return halox__error(HALOX_ERR_TIMEOUT,
                                "rank %d, step %lld: %s did not complete within %.0f s: a peer "
                                "rank is missing or stuck (with --graph the exchanges inside a "
                                "graph are not timed one by one: run without it to see the pulse "
                                "and peer)",
                                md->rank, md->step, what, limit);
        if (polls > 1000)
            sched_yield();
    }
}

static halox_status_t md__gpu_idle(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_wait(md, g->lo, NULL, "the GPU work of the steps so far");
    if (st == HALOX_OK)
        st = md__gpu_wait(md, g->hi, NULL, "the GPU work of the steps so far");
    if (st == HALOX_OK)
        g->gdone_live[0] = g->gdone_live[1] = 0;
    return st;
}

/* Bring the home positions and velocities (and with forces, the home forces f + fnl) to the
 * host atoms, when the device holds newer ones. */
static halox_status_t md__gpu_to_host(halox_md_t *md, int forces)
{
    md_gpu_t *g = md__gpu(md);
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    if (!g->xv_fresh || (forces && !g->f_fresh)) {
        halox_status_t st = md__gpu_idle(md);
        if (st != HALOX_OK)
            return st;
    }
    if (!g->xv_fresh) {
        MD_CUDA(cudaMemcpy(md->atoms.x, g->x, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        MD_CUDA(cudaMemcpy(md->atoms.extra, g->v, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        g->xv_fresh = 1;
    }
    if (forces && !g->f_fresh && md->f) {
        /* the last kick gathered every contribution (local, non-local, returned) into f */
        MD_CUDA(cudaMemcpy(md->f, g->f, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        g->f_fresh = 1;
    }
    return HALOX_OK;
}

/* The inner (pruned) list's buffer (md__gpu_create read it); none when it is not below the skin
 * (the outer buffer). */
static double md__gpu_inner_buffer(const halox_md_t *md)
{
    double b = md__gpu(md)->inner_buffer;
    return b > 0 && b < md->cfg.skin ? b : 0.0;
}

/* Cluster pair lists over the local atoms' extent [lo, hi + halo), which is the periodic box in
 * the plan's shift dimensions. */
static halox_status_t md__gpu_lists(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    const double rl = md->cfg.cutoff + md->cfg.skin;
    const int shifts = md->plan.shift_dims;
    float lo[3], ext[3];
    for (int d = 0; d < 3; d++) {
        if ((shifts >> d) & 1) {
            lo[d] = (float)md->plan.lo[d];
            ext[d] = (float)md->plan.params.box.len[d];
        } else {
            lo[d] = (float)(md->plan.lo[d] - 1e-3 * rl);
            ext[d] = (float)(md->plan.hi[d] + md->plan.halo_dist + 2e-3 * rl - lo[d]);
        }
    }
    const double inner = md__gpu_inner_buffer(md);
    md_clusters_set_prune(&g->cl, (float)md->cfg.cutoff,
                          inner > 0 ? (float)(md->cfg.cutoff + inner) : 0.0f);
    MD_CUDA(md_clusters_build(&g->cl, g->x, g->zone, g->n_home, g->n_total, lo, ext, md->rho,
                              (float)rl, shifts, g->hi));
    g->gathers_at_build = g->gathers;
    if (g->cl.grown > g->grown_seen && g->grown_seen < 3)
        md__notice(md,
                   "GPU pair lists: rank %d grew its lists to %d local / %d non-local clusters "
                   "per cluster",
                   md->rank, g->cl.max_loc, g->cl.max_nl);
    g->grown_seen = g->cl.grown;
    return HALOX_OK;
}

/* After the host plan build: upload, bind, lists. */
static halox_status_t md__gpu_after_plan_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    const int nh = md->atoms.n_home, n = md->atoms.n_total;
    halox_status_t st;
    /* x and f come from the transport (NVSHMEM: symmetric memory that peers store into), so
     * they grow collectively: every rank to the largest rank's need, together */
    double need = (double)n + 1;
    if ((st = halox_comm_allreduce_max(md->comm, &need, 1)) != HALOX_OK)
        return st;
    if ((int)need > g->cap_total) {
        int most = (int)need;
        int cap = most + most / 5 + 64;
        size_t have = 0, b = sizeof(float) * 3 * (size_t)cap;
        void **bufs[] = {(void **)&g->x, (void **)&g->fnl};
        for (int k = 0; k < 2; k++) {
            if (*bufs[k])
                halox_comm_device_free(md->comm, *bufs[k]);
            *bufs[k] = NULL;
            if ((st = halox_comm_device_alloc(md->comm, b, bufs[k])) != HALOX_OK)
                return st;
        }
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->f, b, &have)))
            return st;
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->zone, (size_t)cap, &have)))
            return st;
        g->cap_total = cap;
    }
    if (nh + 1 > g->cap_home) {
        int cap = nh + 1 + nh / 5 + 64;
        size_t have = 0, b = sizeof(float) * 3 * (size_t)cap;
        if ((st = md__dev_grow(md, (void **)&g->v, b, &have)))
            return st;
        g->cap_home = cap;
    }
    g->n_home = nh;
    g->n_total = n;
    if (g->gexec) { /* the arrays, sizes and plan it captured are gone */
        cudaGraphExecDestroy(g->gexec);
        g->gexec = NULL;
    }
    MD_CUDA(cudaStreamSynchronize(g->lo));
    MD_CUDA(cudaMemcpyAsync(g->x, md->atoms.x, sizeof(float) * 3 * (size_t)n,
                            cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->v, md->atoms.extra, sizeof(float) * 3 * (size_t)nh,
                            cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->zone, md->plan.zone, (size_t)n, cudaMemcpyHostToDevice, g->hi));
    /* the force exchange adds the returned forces into fnl; the last kick of a step zeroes it */
    MD_CUDA(cudaMemsetAsync(g->fnl, 0, sizeof(float) * 3 * (size_t)(n > 0 ? n : 1), g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    g->xv_fresh = 1;
    g->uploaded = 1;
    if ((st = halox_comm_bind(md->comm, &md->plan, g->x, g->fnl)) != HALOX_OK)
        return st;
    return md__gpu_lists(md);
}

/* One rank, periodic by shifts in every dimension (no pulse, no halo): a rebuild changes no
 * owner and no plan, so it stays on the device. */
static int md__gpu_local_rebuild_ok(const halox_md_t *md)
{
    return md__gpu(md) && md__gpu(md)->uploaded && md->nranks == 1 && md->plan.n_pulses == 0 &&
           md->plan.shift_dims == 7 && md__gpu(md)->n_total == md__gpu(md)->n_home;
}

/* The rebuild of a one-rank run on the device: positions wrapped into the box, the blow-up check
 * of the host rebuild (an atom faster than half the box per step) from the largest speed, the
 * cluster lists (whose gathers watch the displacements); the home atoms keep their order (no
 * migration, no sort: the clusters sort themselves), the host copies go stale as after any step. */
static halox_status_t md__gpu_rebuild_local_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    float len[3];
    for (int d = 0; d < 3; d++)
        len[d] = (float)md->box.len[d];
    if (g->gexec) { /* the captured sizes (clusters, rows) change with the lists */
        cudaGraphExecDestroy(g->gexec);
        g->gexec = NULL;
    }
    MD_CUDA(cudaMemsetAsync(g->disp, 0, sizeof(unsigned), g->hi));
    MD_CUDA(md_kernel_wrap(g->x, g->v, g->n_home, len, g->disp, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_disp, g->disp, sizeof(unsigned), cudaMemcpyDeviceToHost, g->hi));
    g->xv_fresh = 0;
    halox_status_t st = md__gpu_lists(md); /* synchronises hi: h_disp is there */
    if (st != HALOX_OK)
        return st;
    float v2;
    memcpy(&v2, g->h_disp, sizeof v2);
    double lmin = fmin(md->box.len[0], fmin(md->box.len[1], md->box.len[2]));
    if (!(sqrt((double)v2) * md->cfg.dt < 0.5 * lmin))
        return halox__error(HALOX_ERR_COORDINATE,
                            "step %lld: the system blew up: an atom moves %.3g per step, more "
                            "than half the box (%.3g): use a smaller time step, or start from a "
                            "configuration without overlaps",
                            md->step, sqrt((double)v2) * md->cfg.dt, 0.5 * lmin);
    return HALOX_OK;
}

static halox_status_t md__gpu_rebuild_local(halox_md_t *md)
{
    halox__nvtx_push("halox: rebuild on the GPU");
    halox_status_t st = md__gpu_rebuild_local_body(md);
    halox__nvtx_pop();
    return st;
}

static halox_status_t md__gpu_after_plan(halox_md_t *md)
{
    halox__nvtx_push("halox: upload, bind, pair lists");
    halox_status_t st = md__gpu_after_plan_body(md);
    halox__nvtx_pop();
    return st;
}

static halox_status_t md__gpu_kick_drift_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (!g->uploaded) {
        /* first step after a restart: the state (with the checkpoint's forces) is on the host,
         * and this step rebuilds, which uploads it */
        md__kick(md, 0.5 * md->cfg.dt);
        md__drift(md, md->cfg.dt);
        return HALOX_OK;
    }
    if (!g->capturing) {
        g->cur = (int)(g->step_no++ % MD_GPU_SLOTS);
        halox_status_t st = md__gpu_read_slot(md, g->cur);
        if (st != HALOX_OK)
            return st;
        g->in_step = 1;
    }
    md__gpu_record(g, EV_K0, g->hi);
    float dt = (float)md->cfg.dt;
    MD_CUDA(md_kernel_kick(g->v, g->f, NULL, g->x, g->n_home, 0.5f * dt, dt, g->hi));
    md__gpu_record(g, EV_K1, g->hi);
    g->xv_fresh = 0;
    return HALOX_OK;
}

static halox_status_t md__gpu_kick_drift(halox_md_t *md)
{
    halox__nvtx_push("halox: kick + drift");
    halox_status_t st = md__gpu_kick_drift_body(md);
    halox__nvtx_pop();
    return st;
}

/* Forces of the current positions: local on lo, (coordinate exchange,) non-local, force
 * exchange on hi. With want_energy the energies are read back (host sync) into pe_local and
 * vir_local. exchange = 0 leaves both exchanges out (the overlap probe's "local" part: the same
 * kernels on the same streams, so it times exactly what the exchanges overlap with). */
static halox_status_t md__gpu_forces_body(halox_md_t *md, int coords, int want_energy, int exchange)
{
    md_gpu_t *g = md__gpu(md);
    const float rc2 = (float)md->rc2;
    if (want_energy)
        MD_CUDA(cudaMemsetAsync(g->energy, 0, 4 * sizeof(double), g->hi));
    /* the home positions into the cluster slots (the list build did it on rebuild steps) */
    const int halo = g->cl.ncl > g->cl.ncl_home;
    if (coords) {
        MD_CUDA(md_clusters_gather(&g->cl, g->x, g->zone, 0, g->hi));
        if (!halo)
            g->gathers++; /* the step's displacements are final after the home part */
    }
    MD_CUDA(cudaEventRecord(g->x_ready, g->hi));
    MD_CUDA(cudaStreamWaitEvent(g->lo, g->x_ready, 0));
    md__gpu_record(g, EV_L0, g->lo);
    MD_CUDA(md_clusters_lj(&g->cl, 0, rc2, md->eshift, want_energy ? g->energy : NULL, g->lo));
    md__gpu_record(g, EV_L1, g->lo);
    MD_CUDA(cudaEventRecord(g->local_done, g->lo));
    g->f_fresh = 0;
    md__gpu_record(g, EV_C0, g->hi);
    halox_status_t st = HALOX_OK;
    halox__nvtx_push("halox: coordinate exchange");
    /* a plan without pulses (one rank, periodic by shifts) exchanges nothing: no calls */
    const int pulses = md->plan.n_pulses > 0;
    if (coords && exchange && pulses && (st = halox_comm_coords(md->comm)) != HALOX_OK) {
        halox__nvtx_pop();
        return st;
    }
    halox__nvtx_pop();
    md__gpu_record(g, EV_C1, g->hi);
    if (coords && halo) { /* the new halo positions into the cluster slots */
        MD_CUDA(md_clusters_gather(&g->cl, g->x, g->zone, 1, g->hi));
        g->gathers++;
    }
    MD_CUDA(md_clusters_lj(&g->cl, 1, rc2, md->eshift, want_energy ? g->energy + 2 : NULL, g->hi));
    /* the halo atoms' forces into fnl, where the force exchange takes them to their owners */
    MD_CUDA(md_clusters_halo_forces(&g->cl, g->fnl, g->hi));
    md__gpu_record(g, EV_NL1, g->hi);
    md__gpu_record(g, EV_F0, g->hi);
    halox__nvtx_push("halox: force exchange");
    st = exchange && pulses ? halox_comm_forces(md->comm) : HALOX_OK;
    halox__nvtx_pop();
    if (st != HALOX_OK)
        return st;
    md__gpu_record(g, EV_F1, g->hi);
    /* the local forces join only here: the force exchange reads and adds into fnl, which they
     * do not touch, so it overlaps them too */
    MD_CUDA(cudaStreamWaitEvent(g->hi, g->local_done, 0));
    if (want_energy) {
        MD_CUDA(cudaMemcpyAsync(g->h_energy, g->energy, 4 * sizeof(double), cudaMemcpyDeviceToHost,
                                g->hi));
        MD_CUDA(cudaStreamSynchronize(g->hi));
        md->pe_local = g->h_energy[0] + g->h_energy[2];
        md->vir_local = g->h_energy[1] + g->h_energy[3];
        md->have_energy = 1;
        md->energy_step = md->step;
    } else {
        md->have_energy = 0;
    }
    return HALOX_OK;
}

static halox_status_t md__gpu_forces(halox_md_t *md, int coords, int want_energy)
{
    halox__nvtx_push("halox: forces and halo exchanges");
    halox_status_t st = md__gpu_forces_body(md, coords, want_energy, 1);
    halox__nvtx_pop();
    return st;
}

static halox_status_t md__gpu_kick_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    /* f = the slots' forces (+ what the force exchange returned into fnl, when the plan has
     * pulses: other ranks hold images of our atoms), then v += dt/2 f */
    MD_CUDA(md_clusters_kick(&g->cl, g->v, g->f, md->plan.n_pulses > 0 ? g->fnl : NULL,
                             0.5f * (float)md->cfg.dt, g->hi));
    md__gpu_record(g, EV_K2, g->hi);
    if (g->in_step)
        g->slot[g->cur].pending = 1;
    g->in_step = 0;
    g->xv_fresh = 0;
    return HALOX_OK;
}

static halox_status_t md__gpu_kick(halox_md_t *md)
{
    halox__nvtx_push("halox: kick");
    halox_status_t st = md__gpu_kick_body(md);
    halox__nvtx_pop();
    return st;
}

static halox_status_t md__gpu_kinetic(halox_md_t *md, double *ke_p)
{
    md_gpu_t *g = md__gpu(md);
    MD_CUDA(cudaMemsetAsync(g->energy + 4, 0, sizeof(double), g->hi));
    MD_CUDA(md_kernel_kinetic(g->v, g->n_home, g->energy + 4, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_energy + 4, g->energy + 4, sizeof(double), cudaMemcpyDeviceToHost,
                            g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    *ke_p = g->h_energy[4];
    return HALOX_OK;
}

static halox_status_t md__gpu_scale(halox_md_t *md, double alpha)
{
    md_gpu_t *g = md__gpu(md);
    MD_CUDA(md_kernel_scale(g->v, g->n_home, (float)alpha, g->hi));
    g->xv_fresh = 0;
    return HALOX_OK;
}

/* Will the outer lists expire before the host looks again? The device published, with the count
 * of steps it finished, the largest displacement since the build and the largest of one step;
 * the host is `lag` steps ahead of that. Rebuild when the displacement, grown by 1.5 times the
 * last step's for every step not yet seen and the next one, reaches half the skin. Ranks agree (a
 * rebuild is collective). The device also counts the steps where the list was exceeded
 * (md__gpu_stats reports them): this check is what keeps that count at zero. */
static halox_status_t md__gpu_watch(halox_md_t *md, int *rebuild_p)
{
    md_gpu_t *g = md__gpu(md);
    int expiring = 0;
    const volatile md_clusters_watch_t *w = g->cl.watch;
    if (w && g->uploaded) {
        const long long dev = w->steps;
        if (dev > g->gathers_at_build) {
            const double d = sqrt((double)w->build_d2), one = sqrt((double)w->step_d2);
            const long long lag = g->gathers - dev;
            expiring = d + 1.5 * (double)(lag + 1) * one >= 0.5 * md->cfg.skin;
        }
    }
    if (md->nranks > 1) {
        double v = expiring;
        halox_status_t st = halox_comm_allreduce_max(md->comm, &v, 1);
        if (st != HALOX_OK)
            return st;
        expiring = v > 0;
    }
    *rebuild_p = expiring;
    return HALOX_OK;
}

static int md__gpu_graph_ready(const halox_md_t *md)
{
    return md__gpu(md) && md__gpu(md)->graph && md__gpu(md)->uploaded;
}

/* The launch before the last has completed, within the timeout: the host runs at most two steps
 * ahead and a peer that never comes ends the run with an error instead of a hang. */
static halox_status_t md__gpu_graph_wait(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    const int k = g->gslot;
    if (!g->gdone_live[k])
        return HALOX_OK;
    halox_status_t st =
        md__gpu_wait(md, NULL, g->gdone[k], "the CUDA graph of the step before the previous one");
    if (st == HALOX_OK)
        g->gdone_live[k] = 0;
    return st;
}

/* Capture kick + drift, forces (with both exchanges) and kick of a plain step on the hi stream
 * (the lo stream joins through the x_ready / local_done events), without timing events. */
static halox_status_t md__gpu_graph_capture(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = halox_comm_graph_mode(md->comm, 1);
    if (st != HALOX_OK)
        return st;
    g->capturing = 1;
    cudaError_t e = cudaStreamBeginCapture(g->hi, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        st = md__gpu_error(md, e, "cudaStreamBeginCapture");
    } else {
        st = md__gpu_kick_drift(md);
        if (st == HALOX_OK)
            st = md__gpu_forces(md, 1, 0);
        if (st == HALOX_OK)
            st = md__gpu_kick(md);
        cudaGraph_t graph = NULL;
        e = cudaStreamEndCapture(g->hi, &graph); /* always: ends a failed capture too */
        if (st == HALOX_OK && e != cudaSuccess)
            st = md__gpu_error(md, e, "cudaStreamEndCapture");
        if (st == HALOX_OK && (e = cudaGraphInstantiate(&g->gexec, graph, 0)) != cudaSuccess) {
            g->gexec = NULL;
            st = md__gpu_error(md, e, "cudaGraphInstantiate");
        }
        if (graph)
            cudaGraphDestroy(graph);
    }
    g->capturing = 0;
    halox_comm_graph_mode(md->comm, 0);
    if (st == HALOX_OK)
        g->graph_captures++;
    return st;
}

static halox_status_t md__gpu_graph_step_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_graph_wait(md);
    if (st != HALOX_OK)
        return st;
    if (!g->gexec) {
        /* the capture counted this step's exchanges; its gathers run only when launched */
        const long long before = g->gathers;
        st = md__gpu_graph_capture(md);
        g->graph_gathers = g->gathers - before;
        g->gathers = before;
    } else {
        st = halox_comm_graph_replayed(md->comm);
    }
    if (st != HALOX_OK)
        return st;
    MD_CUDA(cudaGraphLaunch(g->gexec, g->hi));
    g->gathers += g->graph_gathers;
    MD_CUDA(cudaEventRecord(g->gdone[g->gslot], g->hi));
    g->gdone_live[g->gslot] = 1;
    g->gslot ^= 1;
    g->xv_fresh = 0;
    g->f_fresh = 0;
    md->have_energy = 0;
    g->graph_steps++;
    return HALOX_OK;
}

static halox_status_t md__gpu_graph_step(halox_md_t *md)
{
    halox__nvtx_push("halox: graph step");
    halox_status_t st = md__gpu_graph_step_body(md);
    halox__nvtx_pop();
    return st;
}

/* One repetition of the overlap probe (overlap.c) on the current state, between two events on
 * the hi stream: the lo stream starts after the first (it waits for x_ready, recorded after it)
 * and joins hi before the second (local_done), so the span covers both streams. Waited for here,
 * so the host barrier before the next repetition lines the ranks up on the device too. */
static halox_status_t md__gpu_overlap_rep(halox_md_t *md, int kind, double *ms_p)
{
    md_gpu_t *g = md__gpu(md);
    *ms_p = 0;
    for (int k = 0; k < 2; k++)
        if (!g->ovl[k])
            MD_CUDA(cudaEventCreate(&g->ovl[k]));
    MD_CUDA(cudaEventRecord(g->ovl[0], g->hi));
    halox__nvtx_push("halox: overlap probe");
    halox_status_t st;
    if (kind == MD_OVL_HALO) {
        st = halox_comm_coords(md->comm);
        if (st == HALOX_OK)
            st = halox_comm_forces(md->comm);
    } else {
        st = md__gpu_forces_body(md, 1, 0, kind == MD_OVL_BOTH);
    }
    halox__nvtx_pop();
    if (st != HALOX_OK)
        return st;
    MD_CUDA(cudaEventRecord(g->ovl[1], g->hi));
    /* the repetitions' forces feed no kick: clear them, and what the exchange returned */
    MD_CUDA(md_clusters_clear_forces(&g->cl, g->hi));
    MD_CUDA(cudaMemsetAsync(g->fnl, 0,
                            sizeof(float) * 3 * (size_t)(g->n_total > 0 ? g->n_total : 1), g->hi));
    st = md__gpu_wait(md, NULL, g->ovl[1], "a repetition of the overlap probe");
    if (st != HALOX_OK)
        return st;
    float ms = 0;
    MD_CUDA(cudaEventElapsedTime(&ms, g->ovl[0], g->ovl[1]));
    *ms_p = (double)ms;
    return HALOX_OK;
}

/* Pairs in the lists (cluster pairs x 64 atom pairs, each pair listed twice) and the pending
 * timers, for the summary. */
static halox_status_t md__gpu_stats(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_flush_timers(md);
    if (st != HALOX_OK)
        return st;
    long long loc = 0, nl = 0, loc_in = 0, nl_in = 0;
    MD_CUDA(md_clusters_entries(&g->cl, &loc, &nl, &loc_in, &nl_in));
    md->graph_steps = g->graph_steps;
    /* half lists: each cluster pair once, 64 atom pairs each (the outer lists) */
    md->nl.npairs = (size_t)((loc + nl) * MD_CLUSTER_SIZE * MD_CLUSTER_SIZE);
    const volatile md_clusters_watch_t *w = g->cl.watch;
    if (w && w->exceeded > 0)
        md__notice(md,
                   "rank %d: in %lld step(s) an atom had moved more than half the skin (%g) since "
                   "the last list build, so pairs may have been missed: use a larger --skin, a "
                   "smaller --rebuild-every or --rebuild-check",
                   md->rank, w->exceeded, md->cfg.skin);
    if (md->rank == 0 && w)
        md__notice(md,
                   "GPU pair lists (rank 0): %lld outer + %lld inner cluster pairs, %lld + %lld "
                   "prunes over %lld steps, %lld rebuilds",
                   loc + nl, loc_in + nl_in, w->prunes[0], w->prunes[1], w->steps, md->rebuilds);
    return HALOX_OK;
}

/* the host rebuild's hook after the plan build: upload, bind, lists (agreed), timed as the host
 * waits for them */
static halox_status_t md__gpu_after_plan_hook(halox_md_t *md, double t_plan)
{
    halox_status_t st = md__agree(md, md__gpu_after_plan(md));
    md->timer[HALOX_MD_T_NEIGHBOUR] += halox__now() - t_plan;
    return st;
}

static const md_backend_t md__gpu_backend = {
    .name = "gpu",
    .host_timers = 0, /* CUDA events (md__gpu_read_slot) */
    .kick_drift = md__gpu_kick_drift,
    .watch = md__gpu_watch,
    .local_rebuild_ok = md__gpu_local_rebuild_ok,
    .rebuild_local = md__gpu_rebuild_local,
    .after_plan = md__gpu_after_plan_hook,
    .forces = md__gpu_forces,
    .kick = md__gpu_kick,
    .kinetic = md__gpu_kinetic,
    .scale = md__gpu_scale,
    .graph_ready = md__gpu_graph_ready,
    .graph_step = md__gpu_graph_step,
    .to_host = md__gpu_to_host,
    .idle = md__gpu_idle,
    .overlap_rep = md__gpu_overlap_rep,
    .flush_timers = md__gpu_flush_timers,
    .stats = md__gpu_stats,
    .destroy = md__gpu_destroy,
};

halox_status_t md__gpu_backend_create(halox_md_t *md)
{
    md->be = &md__gpu_backend; /* before anything is made: halox_md_destroy frees it */
    return md__gpu_create(md);
}
