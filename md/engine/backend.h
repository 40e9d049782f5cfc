/* Internal: the engine's back ends. The step (step.c), the loop (engine.c), the overlap probe
 * (overlap.c), the equilibration (equilibrate.c) and the gather (gather.c) call the parts of a
 * step that depend on where the state lives through this table only:
 *   cpu_backend.c  the CPU engine: the state is the host atoms, every entry runs on the host
 *   gpu_backend.c  the GPU engine (CUDA builds only; its parts in gpu_*.c): the state lives on
 *                  the rank's GPU between rebuilds, the entries enqueue kernels and exchanges on
 *                  its streams
 * halox_md_create picks one (md__backend_select, engine.c). Entries that a back end does not
 * need are NULL; the inline helpers below are what the engine calls for those. */
#ifndef HALOX_MD_BACKEND_H
#define HALOX_MD_BACKEND_H

#include "engine/md_internal.h"

struct md_backend {
    const char *name;
    /* the engine times the integration (both kicks, drift, thermostat) with the host clock; the
     * GPU back end times its parts with CUDA events instead */
    int host_timers;
    /* step part 1: v += dt/2 f, x += dt v (home atoms); exchange: the step's coordinate exchange
     * follows (not a rebuild step), which a back end exchanging inside its kernels starts here */
    halox_status_t (*kick_drift)(halox_md_t *md, int exchange);
    /* before a step that would not rebuild: rebuild now? From what the device published (the
     * GPU's watch of its lists; collective). NULL: none (CPU) */
    halox_status_t (*watch)(halox_md_t *md, int *rebuild_p);
    /* after the drift of a step that does not rebuild: the exact displacement check of
     * cfg.rebuild_check (collective); leaves *rebuild_p alone when off. NULL: none (GPU, whose
     * watch stands for it) */
    halox_status_t (*rebuild_check)(halox_md_t *md, int *rebuild_p);
    /* the rebuild without the host (GPU: on the device, when local_rebuild_ok says so: one rank
     * whose plan cannot change, or HALOX_MD_DEVICE_REBUILD; the same answer on every rank).
     * NULL: always on the host */
    int (*local_rebuild_ok)(const halox_md_t *md);
    halox_status_t (*rebuild_local)(halox_md_t *md);
    /* 1: rebuild_local is enqueued behind the work still queued instead of waiting for it first,
     * and reports that work's remaining time in md->rpart[HALOX_MD_R_DRAIN], taken out of the
     * part (and timer) whose first wait absorbed it */
    int rebuild_queued;
    /* host rebuild, between migration and the plan build (CPU: sort home atoms by cell; local,
     * not agreed: a failure is deferred into the plan build, halox_comm_defer_failure) and after
     * it (bind, lists; agreed inside, a failure deferred before it taken by its bind; t_plan: the
     * host clock when the plan build began, for the timers). before_plan NULL: nothing */
    halox_status_t (*before_plan)(halox_md_t *md);
    halox_status_t (*after_plan)(halox_md_t *md, double t_plan);
    /* steps 2-4: with coords the coordinate exchange first (none on rebuild steps: the plan build
     * filled the halo), forces of the current positions (energies and virial into pe_local,
     * vir_local with want_energy), then the force exchange */
    halox_status_t (*forces)(halox_md_t *md, int coords, int want_energy);
    /* step part 5: v += dt/2 f */
    halox_status_t (*kick)(halox_md_t *md);
    /* kinetic energy of the home atoms (this rank's) and the velocities scaled by alpha */
    halox_status_t (*kinetic)(halox_md_t *md, double *ke_p);
    halox_status_t (*scale)(halox_md_t *md, double alpha);
    /* --graph: can this plain step (no rebuild, no energies, no velocity scaling) run as the
     * captured graph, and run it (kick, drift, forces, kick; captured first if needed). NULL:
     * no graphs */
    int (*graph_ready)(const halox_md_t *md);
    halox_status_t (*graph_step)(halox_md_t *md);
    /* the home positions and velocities (with forces: and forces) back into the host atoms, and
     * wait until everything enqueued has run. NULL: the host atoms are the state */
    halox_status_t (*to_host)(halox_md_t *md, int forces);
    halox_status_t (*idle)(halox_md_t *md);
    /* one repetition of the overlap probe of kind MD_OVL_* (overlap.c), in ms */
    halox_status_t (*overlap_rep)(halox_md_t *md, int kind, double *ms_p);
    /* the timers of steps still in flight into md->timer (end of a loop, of the equilibration),
     * and that plus the list statistics for the summary. NULL: the timers are current */
    halox_status_t (*flush_timers)(halox_md_t *md);
    halox_status_t (*stats)(halox_md_t *md);
    /* steps so far (equilibration included) that ran on lists some atom had outgrown: it had
     * moved more than half the buffer since their build, so pairs may have been missed (waits
     * for the work enqueued). NULL: not counted (the CPU engine's rebuild check is exact) */
    halox_status_t (*stale_steps)(halox_md_t *md, long long *n_p);
    /* free the back end's state (NULL: none) */
    void (*destroy)(halox_md_t *md);
};

/* cpu_backend.c */
extern const md_backend_t md__cpu_backend;

#ifdef HALOX_HAVE_CUDA
/* gpu_backend.c: set md->be to the GPU back end (also on failure, so that halox_md_destroy frees
 * what it made) and its state. */
halox_status_t md__gpu_backend_create(halox_md_t *md);
#endif

/* The host atoms current (agreed: every rank fails when one did). */
static inline halox_status_t md__be_to_host(halox_md_t *md, int forces)
{
    return md->be->to_host ? md__agree(md, md->be->to_host(md, forces)) : HALOX_OK;
}

/* Nothing in flight (agreed). */
static inline halox_status_t md__be_idle(halox_md_t *md)
{
    return md->be->idle ? md__agree(md, md->be->idle(md)) : HALOX_OK;
}

static inline halox_status_t md__be_flush_timers(halox_md_t *md)
{
    return md->be->flush_timers ? md->be->flush_timers(md) : HALOX_OK;
}

#endif
