/* The GPU back end of the engine (backend.h; compiled in CUDA builds only): the state of a rank
 * lives on its GPU between rebuilds, the step is a chain of stream-ordered kernels and halo
 * exchanges. This file fills the table; the parts are in gpu_state.c, gpu_rebuild.c, gpu_step.c
 * and gpu_graph.c (gpu_internal.h says which holds what).
 *
 * One step on the GPU (step.c calls these through the table, in the CPU engine's order):
 *   hi stream (the transport's, high priority): kick + drift (home atoms)       md__gpu_kick_drift
 *     [energy slots zeroed on thermo steps]; gather home positions (the gather also measures
 *     the displacements and decides the prunes on the device; on a step without rebuild it does
 *     the kick and drift itself, md__gpu_kick_drift only leaving it to it); event x_ready
 *   lo stream (low priority): wait x_ready; LOCAL forces (home-home pairs) -> fs; event local_done
 *   hi stream: coordinate halo exchange (not on rebuild steps, none without pulses); gather halo
 *     positions; NON-LOCAL forces (pairs with halo atoms, zone rule) -> fs; the halo slots of fs
 *     -> fnl; force halo exchange (adds into fnl of the owners); wait local_done  md__gpu_forces
 *   hi stream: kick: f = fs (+ fnl), fs and fnl zeroed, v += dt/2 f              md__gpu_kick
 * On nvshmem-inline both exchanges run inside these kernels (gpu_step.c says how).
 * Nothing waits on the host inside a step except what the transport itself does (mpi-staged
 * synchronises its stream to stage through host memory), thermo steps (energies and velocities
 * are read back) and the NVT thermostat (one reduction). The rebuild decision reads, without
 * synchronising, what the gathers published (md__gpu_watch).
 *
 * Rebuild steps: one rank periodic by shifts in every dimension rebuilds on the device
 * (md__gpu_rebuild_local: wrap, blow-up check, cluster lists); with HALOX_MD_DEVICE_REBUILD every
 * rebuild after the first does (md__gpu_rebuild_resident: the library's migration and plan build
 * on the device arrays, bind, lists). Otherwise the home positions and
 * velocities come back to the host, the CPU engine migrates and builds the plan as usual, and
 * md__gpu_after_plan uploads positions (home + halo), velocities and zones, binds the device
 * arrays to the transport and rebuilds the cluster lists on the GPU.
 *
 * Timers: the device time of each part from CUDA events, read back a few steps later (a ring of
 * event sets, so the host never runs more than a few steps ahead); the local forces overlap the
 * halo exchange, so the parts may add up to more than the wall time. */
#include "engine/backend.h"
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>

/* Pairs in the lists (cluster pairs x 64 atom pairs, each pair listed twice) and the pending
 * timers, for the summary. */
static halox_status_t md__gpu_stats(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_flush_timers(md);
    if (st != HALOX_OK)
        return st;
    long long loc = 0, nl = 0, loc_in = 0, nl_in = 0;
    MD_CUDA(md__clusters_entries(&g->cl, &loc, &nl, &loc_in, &nl_in));
    md->graph_steps = g->graph_steps;
    md->graph_captures = g->graph_captures;
    md->graph_kept = g->graph_kept;
    md->graph_updates = g->graph_updates;
    md->inline_steps = g->inline_steps;
    /* half lists: each cluster pair once, 64 atom pairs each (the outer lists) */
    md->nl.npairs = (size_t)((loc + nl) * MD_CLUSTER_SIZE * MD_CLUSTER_SIZE);
    /* steps on outgrown lists: in the summary (stale_steps) */
    const volatile md_clusters_watch_t *w = g->cl.watch;
    if (md->rank == 0 && w)
        md__notice(md,
                   "GPU pair lists (rank 0): %lld outer + %lld inner cluster pairs, %lld + %lld "
                   "prunes over %lld steps, %lld rebuilds",
                   loc + nl, loc_in + nl_in, w->prunes[0], w->prunes[1], w->steps, md->rebuilds);
    return HALOX_OK;
}

/* What the gathers counted (kernels/md_cluster_watch.cu), once the enqueued steps have run. */
static halox_status_t md__gpu_stale_steps(halox_md_t *md, long long *n_p)
{
    md_gpu_t *g = md__gpu(md);
    *n_p = 0;
    halox_status_t st = md__gpu_idle(md);
    if (st == HALOX_OK && g->cl.watch)
        *n_p = ((const volatile md_clusters_watch_t *)g->cl.watch)->exceeded;
    return st;
}

/* Rebuilds without the host: one rank periodic by shifts (the plan cannot change), or any run
 * with HALOX_MD_DEVICE_REBUILD once the device holds the state (gpu_resident.c). */
static int md__gpu_device_rebuild_ok(const halox_md_t *md)
{
    return md__gpu_local_rebuild_ok(md) || md__gpu_resident_ok(md);
}

/* Enqueued behind the steps still queued (md__rebuild does not wait for them first): its first
 * launches are issued while the GPU finishes those steps (2 ranks sharing an H200 at 45k: the
 * wait took 0.15 ms before ~80 us of launches). The steps' remaining time, on the GPU's clock, is
 * reported as the rebuild's drain and taken out of the part whose first wait absorbed it: the
 * lists on one rank, the migration otherwise. A failure to mark the clock waits as before. */
static halox_status_t md__gpu_device_rebuild(halox_md_t *md)
{
    const int local = md__gpu_local_rebuild_ok(md);
    const int part = local ? HALOX_MD_R_LISTS : HALOX_MD_R_MIGRATE;
    const double p0 = md->rpart[part];
    int marked = md__gpu_drain_mark(md) == HALOX_OK;
    if (!marked) {
        const double t = md__now();
        halox_status_t st = md__gpu_idle(md);
        if (st != HALOX_OK)
            return st;
        md->rpart[HALOX_MD_R_DRAIN] += md__now() - t;
    }
    halox_status_t st = local ? md__gpu_rebuild_local(md) : md__gpu_rebuild_resident(md);
    if (st == HALOX_OK && marked) {
        double d = md__gpu_drain_read(md);
        const double in_part = md->rpart[part] - p0;
        d = d < in_part ? d : in_part;
        md->rpart[HALOX_MD_R_DRAIN] += d;
        md->rpart[part] -= d;
        if (!local)
            md->timer[HALOX_MD_T_MIGRATE] -= d;
    }
    return st;
}

static const md_backend_t md__gpu_backend = {
    .name = "gpu",
    .host_timers = 0, /* CUDA events (md__gpu_read_slot) */
    .kick_drift = md__gpu_kick_drift,
    .watch = md__gpu_watch,
    .local_rebuild_ok = md__gpu_device_rebuild_ok,
    .rebuild_local = md__gpu_device_rebuild,
    .rebuild_queued = 1,
    .before_plan = md__gpu_before_plan,
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
    .stale_steps = md__gpu_stale_steps,
    .destroy = md__gpu_destroy,
};

halox_status_t md__gpu_backend_create(halox_md_t *md)
{
    md->be = &md__gpu_backend; /* before anything is made: halox_md_destroy frees it */
    return md__gpu_create(md);
}
