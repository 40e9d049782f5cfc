/* The GPU platform of the engine (backend.h; compiled in CUDA builds only): the state of a rank
 * lives on its GPU between rebuilds, the step is a chain of stream-ordered kernels and halo
 * exchanges. This file fills the table; the parts are in gpu_state.c, gpu_rebuild.c, gpu_step.c
 * and gpu_graph.c (gpu_internal.h says which holds what).
 *
 * One step on the GPU (md__gpu_step, gpu_step.c; the CPU engine's order):
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
 * synchronising, what the gathers published (md__gpu_watch). With --graph a plain step is one
 * launch of the captured graph of these parts (gpu_graph.c).
 *
 * Rebuild steps (md__gpu_rebuild, gpu_rebuild.c): one rank periodic by shifts in every dimension
 * rebuilds on the device (md__gpu_rebuild_local: wrap, blow-up check, cluster lists); with
 * HALOX_MD_DEVICE_REBUILD every rebuild after the first does (md__gpu_rebuild_resident: the
 * library's migration and plan build on the device arrays, bind, lists). Otherwise the home
 * positions and velocities come back to the host, the CPU engine migrates and builds the plan as
 * usual, and md__gpu_after_plan uploads positions (home + halo), velocities and zones, binds the
 * device arrays to the transport and rebuilds the cluster lists on the GPU.
 *
 * Timers: the device time of each part from CUDA events, read back a few steps later (a ring of
 * event sets, so the host never runs more than a few steps ahead); the local forces overlap the
 * halo exchange, so the parts may add up to more than the wall time. */
#include "engine/backend.h"
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>

/* The timers of the steps in flight, everything enqueued run, the state on the host. */
static halox_status_t md__gpu_sync(halox_md_t *md, int what)
{
    halox_status_t st = HALOX_OK;
    if (what & MD_SYNC_TIMERS)
        st = md__gpu_flush_timers(md);
    if (st == HALOX_OK && (what & MD_SYNC_STATE))
        st = md__gpu_to_host(md, (what & MD_SYNC_FORCES) != 0); /* waits for the queue too */
    else if (st == HALOX_OK && (what & MD_SYNC_IDLE))
        st = md__gpu_idle(md);
    return st;
}

/* The steps on outgrown lists, counted by the gathers (md_cluster_watch.cu) once the enqueued
 * steps have run; for the summary also the pairs in the lists (cluster pairs x 64 atom pairs) and
 * the pending timers. */
static halox_status_t md__gpu_stats(halox_md_t *md, int summary, long long *stale_p)
{
    md_gpu_t *g = md__gpu(md);
    *stale_p = 0;
    halox_status_t st = summary ? md__gpu_flush_timers(md) : HALOX_OK;
    if (st == HALOX_OK)
        st = md__gpu_idle(md);
    if (st != HALOX_OK)
        return st;
    const volatile md_clusters_watch_t *w = g->cl.watch;
    if (w)
        *stale_p = w->exceeded;
    if (!summary)
        return HALOX_OK;
    long long loc = 0, nl = 0, loc_in = 0, nl_in = 0;
    MD_CUDA(md__clusters_entries(&g->cl, &loc, &nl, &loc_in, &nl_in));
    md->graph_steps = g->graph_steps;
    md->graph_captures = g->graph_captures;
    md->graph_kept = g->graph_kept;
    md->graph_updates = g->graph_updates;
    md->inline_steps = g->inline_steps;
    /* half lists: each cluster pair once, 64 atom pairs each (the outer lists) */
    md->nl.npairs = (size_t)((loc + nl) * MD_CLUSTER_SIZE * MD_CLUSTER_SIZE);
    if (md->rank == 0 && w)
        md__notice(md,
                   "GPU pair lists (rank 0): %lld outer + %lld inner cluster pairs, %lld + %lld "
                   "prunes over %lld steps, %lld rebuilds",
                   loc + nl, loc_in + nl_in, w->prunes[0], w->prunes[1], w->steps, md->rebuilds);
    return HALOX_OK;
}

static const md_backend_t md__gpu_backend = {
    .name = "gpu",
    .step = md__gpu_step,
    .rebuild = md__gpu_rebuild,
    .forces = md__gpu_forces,
    .kinetic = md__gpu_kinetic,
    .scale = md__gpu_scale,
    .sync = md__gpu_sync,
    .overlap_rep = md__gpu_overlap_rep,
    .stats = md__gpu_stats,
    .destroy = md__gpu_destroy,
};

halox_status_t md__gpu_backend_create(halox_md_t *md)
{
    md->be = &md__gpu_backend; /* before anything is made: halox_md_destroy frees it */
    return md__gpu_create(md);
}
