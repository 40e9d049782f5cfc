/* The GPU platform of the engine (backend.h; compiled in CUDA builds only): the state of a rank
 * lives on its GPU between rebuilds, the step is a chain of stream-ordered kernels and halo
 * exchanges. This file fills the table; the parts are in gpu_state.c, gpu_rebuild.c, gpu_step.c
 * and gpu_graph.c (gpu_internal.h says which holds what).
 *
 * One step on the GPU (md__gpu_step below; the CPU engine's order):
 *   hi stream (the transport's, high priority): kick + drift (home atoms)       md__gpu_kick_drift
 *     [energy slots zeroed on thermo steps]; gather home positions (the gather also measures
 *     the displacements the force kernels decide their prunes by; on a step without rebuild it
 *     does the kick and drift itself, md__gpu_kick_drift only leaving it to it); event x_ready
 *   lo stream (low priority): wait x_ready; LOCAL forces (home-home pairs) -> fs; event local_done
 *   hi stream: coordinate halo exchange (not on rebuild steps, none without pulses); gather halo
 *     positions; NON-LOCAL forces (pairs with halo atoms, zone rule) -> fs; the halo slots of fs
 *     -> fnl; force halo exchange (adds into fnl of the owners); wait local_done  md__gpu_forces
 *   hi stream: kick: f = fs (+ fnl), fs and fnl zeroed, v += dt/2 f; the step's prunes counted,
 *     the watch published                                                        md__gpu_kick
 * On nvshmem-inline both exchanges run inside these kernels (gpu_step.c says how).
 * Nothing waits on the host inside a step except what the transport itself does (mpi-staged
 * synchronises its stream to stage through host memory), thermo steps (energies and velocities
 * are read back) and the NVT thermostat (one reduction). The rebuild decision reads, without
 * synchronising, what the kick published (md__gpu_watch). With --graph a plain step is one
 * launch of the captured graph of these parts (gpu_graph.c).
 *
 * Rebuild steps (md__gpu_rebuild below): one rank periodic by shifts in every dimension
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

/* The step (backend.h). With cfg.rebuild_check the rebuild is decided before the drift, from the
 * displacements the device published (md__gpu_watch: no host synchronisation per step); without
 * it the lists live rebuild-every steps, as on the CPU. --graph: a step that needs nothing from
 * the host (no rebuild, no energies, no velocity scaling) is the captured graph. */
static halox_status_t md__gpu_step(halox_md_t *md, long long s, int rebuild)
{
    const halox_md_config_t *c = &md->cfg;
    md_gpu_t *g = md__gpu(md);
    halox_status_t st;
    if (g->ahead > 0) { /* enqueued by the last multi-step launch (gpu_graph.c) */
        if (rebuild)
            return halox_set_error(HALOX_ERR_INTERNAL,
                                   "step %lld rebuilds inside a multi-step graph launch", s);
        g->ahead--;
        md->step = s;
        return HALOX_OK;
    }
    /* the next MD_GPU_GRAPH_STEPS steps as one launch where they need nothing of the host and
     * the lists last them (the same decision on every rank: the watch agrees) */
    const int multi = !rebuild && md__gpu_graph_multi(md) &&
                      md__plain_steps(md, s, MD_GPU_GRAPH_STEPS) == MD_GPU_GRAPH_STEPS;
    int far = multi;
    if (!rebuild && c->rebuild_check &&
        (st = md__gpu_watch(md, multi ? MD_GPU_GRAPH_STEPS : 1, &rebuild, &far)) != HALOX_OK)
        return st;
    const int thermo = md__thermo_step(md, s);
    if (!rebuild && !thermo && c->ensemble == HALOX_MD_NVE && md__gpu_graph_ready(md)) {
        const int k = multi && far ? MD_GPU_GRAPH_STEPS : 1;
        md->step = s;
        if ((st = md__gpu_graph_step(md, k)) != HALOX_OK)
            return st;
        g->ahead = k - 1;
        return HALOX_OK;
    }
    if ((st = md__gpu_kick_drift(md, !rebuild)) != HALOX_OK)
        return st;
    md->step = s;
    if (rebuild && (st = md__rebuild(md)) != HALOX_OK)
        return st;
    /* the coordinate exchange only where no rebuild filled the halo */
    if ((st = md__gpu_forces(md, !rebuild, thermo)) != HALOX_OK)
        return st;
    if ((st = md__gpu_kick(md)) != HALOX_OK)
        return st;
    return md__thermostat(md, s);
}

/* Rebuilds without the host: one rank periodic by shifts (the plan cannot change), or any run
 * with HALOX_MD_DEVICE_REBUILD once the device holds the state (gpu_resident.c). */
static int md__gpu_device_rebuild_ok(const halox_md_t *md)
{
    return md__gpu_local_rebuild_ok(md) || md__gpu_resident_ok(md);
}

/* Enqueued behind the steps still queued (no wait for them first): its first launches are issued
 * while the GPU finishes those steps. The steps' remaining time, on the GPU's clock, is reported
 * as the rebuild's drain and taken out of the part whose first wait absorbed it: the lists on one
 * rank, the migration otherwise. A failure to mark the clock waits as the host path does. */
static halox_status_t md__gpu_device_rebuild(halox_md_t *md)
{
    const double t = md__now(), mig = md->timer[HALOX_MD_T_MIGRATE];
    const double drain0 = md->rpart[HALOX_MD_R_DRAIN];
    const int local = md__gpu_local_rebuild_ok(md);
    const int part = local ? HALOX_MD_R_LISTS : HALOX_MD_R_MIGRATE;
    const double p0 = md->rpart[part];
    int marked = md__gpu_drain_mark(md) == HALOX_OK;
    if (!marked) {
        const double td = md__now();
        halox_status_t st = md__gpu_idle(md);
        if (st != HALOX_OK)
            return st;
        md->rpart[HALOX_MD_R_DRAIN] += md__now() - td;
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
    /* a device migration timed itself (HALOX_MD_T_MIGRATE), the drain is the steps': the rest
     * is the lists' */
    md->timer[HALOX_MD_T_NEIGHBOUR] += md__now() - t - (md->timer[HALOX_MD_T_MIGRATE] - mig) -
                                       (md->rpart[HALOX_MD_R_DRAIN] - drain0);
    if (st == HALOX_OK)
        md->device_rebuilds++;
    return st;
}

/* The rebuild (backend.h): on the device where it can stay there, else through the host: the
 * steps still queued waited for first (theirs, not the rebuild's), the home atoms back to the
 * host, migration and plan as on the CPU, then upload, bind and lists (md__gpu_after_plan). */
static halox_status_t md__gpu_rebuild(halox_md_t *md)
{
    if (md__gpu_device_rebuild_ok(md))
        return md__gpu_device_rebuild(md);
    const double td = md__now();
    halox_status_t st = md__agree(md, md__gpu_idle(md));
    if (st != HALOX_OK)
        return st;
    const double t0 = md__now();
    md->rpart[HALOX_MD_R_DRAIN] += t0 - td;
    if ((st = md__agree(md, md__gpu_to_host(md, 0))) != HALOX_OK)
        return st;
    md->rpart[HALOX_MD_R_TO_HOST] += md__now() - t0;
    if ((st = md__rebuild_migrate(md, t0)) != HALOX_OK)
        return st;
    double t2;
    const double t1 = md__now();
    if ((st = md__rebuild_plan(md, t1, md__gpu_before_plan(md), &t2)) != HALOX_OK)
        return st;
    /* upload, bind, lists (agreed), timed as the host waits for them */
    st = md__agree(md, md__gpu_after_plan(md));
    md->timer[HALOX_MD_T_NEIGHBOUR] += md__now() - t2;
    return st;
}

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
    md->graph_launches = g->graph_launches;
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
