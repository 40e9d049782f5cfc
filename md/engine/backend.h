/* Internal: the engine's platforms (OpenMM's shape). The loop (engine.c), the equilibration
 * (equilibrate.c), the overlap probe (overlap.c), the gather (gather.c) and the summary reach the
 * parts of a step that depend on where the state lives through this table only, and never ask
 * which platform runs:
 *   platforms/cpu/   the oracle: the state is the host atoms, every entry runs on the host
 *   platforms/cuda/  the GPU engine (CUDA builds only): the state lives on the rank's GPU between
 *                    rebuilds, the entries enqueue kernels and exchanges on its streams; graphs,
 *                    the deferred kick, device rebuilds and the in-kernel exchange are its own
 * halox_md_create picks one (md__backend_select, engine.c). Every platform fills every entry.
 * The pieces that every platform's step shares (md__rebuild and its host half, the NVT
 * thermostat, md__thermo_step) live in step.c, below the table. */
#ifndef HALOX_MD_BACKEND_H
#define HALOX_MD_BACKEND_H

#include "engine/md_internal.h"

/* what md_backend_t.sync brings up to date (or-ed) */
enum {
    MD_SYNC_IDLE = 1,   /* nothing left in flight */
    MD_SYNC_STATE = 2,  /* the home positions and velocities in the host atoms (and idle) */
    MD_SYNC_FORCES = 4, /* with STATE: and the forces in md->f */
    MD_SYNC_TIMERS = 8  /* the timers of steps still in flight into md->timer */
};

struct md_backend {
    const char *name;
    /* The dynamics of step s: v += dt/2 f, x += dt v; the rebuild (md__rebuild) when `rebuild`
     * is set, or when the platform's own displacement check asks for one; forces of the new
     * positions with the halo exchanges (energies on thermo steps, md__thermo_step); v += dt/2 f;
     * the NVT thermostat (md__thermostat). Sets md->step = s before the rebuild. Times its parts
     * into md->timer. No output, stop request or checkpoint. */
    halox_status_t (*step)(halox_md_t *md, long long s, int rebuild);
    /* The rebuild at md->step (called by md__rebuild, which keeps its budget and counters):
     * migration, plan build (fills the halo), bind, pair lists; collective. */
    halox_status_t (*rebuild)(halox_md_t *md);
    /* Forces of the current positions outside a step (step 0, a recomputation for the thermo):
     * with coords the coordinate exchange first, then the force exchange; energies and virial
     * into pe_local, vir_local with want_energy. The same bits as the step computed. */
    halox_status_t (*forces)(halox_md_t *md, int coords, int want_energy);
    /* kinetic energy of the home atoms (this rank's); the velocities scaled by alpha */
    halox_status_t (*kinetic)(halox_md_t *md, double *ke_p);
    halox_status_t (*scale)(halox_md_t *md, double alpha);
    /* bring the host up to date: MD_SYNC_* or-ed */
    halox_status_t (*sync)(halox_md_t *md, int what);
    /* one repetition of the overlap probe of kind MD_OVL_* (overlap.c), in ms, on the
     * platform's clock */
    halox_status_t (*overlap_rep)(halox_md_t *md, int kind, double *ms_p);
    /* Steps so far (equilibration included) that ran on lists some atom had outgrown (moved more
     * than half the buffer since their build: pairs may have been missed) into *stale_p, -1 when
     * the platform's check is exact; waits for the work enqueued. With summary: also the pairs in
     * the lists (md->nl.npairs) and the platform's counters for the summary. */
    halox_status_t (*stats)(halox_md_t *md, int summary, long long *stale_p);
    /* free the platform's state */
    void (*destroy)(halox_md_t *md);
};

/* platforms/cpu/cpu_backend.c */
extern const md_backend_t md__cpu_backend;

#ifdef HALOX_HAVE_CUDA
/* platforms/cuda/gpu_backend.c: set md->be to the GPU platform (also on failure, so that
 * halox_md_destroy frees what it made) and its state. */
halox_status_t md__gpu_backend_create(halox_md_t *md);
#endif

/* The host atoms current, with forces: and md->f (agreed: every rank fails when one did). */
static inline halox_status_t md__be_to_host(halox_md_t *md, int forces)
{
    return md__agree(md, md->be->sync(md, MD_SYNC_STATE | (forces ? MD_SYNC_FORCES : 0)));
}

/* Nothing in flight (agreed). */
static inline halox_status_t md__be_idle(halox_md_t *md)
{
    return md__agree(md, md->be->sync(md, MD_SYNC_IDLE));
}

/* The timers of the steps in flight counted. */
static inline halox_status_t md__be_flush_timers(halox_md_t *md)
{
    return md->be->sync(md, MD_SYNC_TIMERS);
}

/* step.c: the pieces every platform's step and rebuild share */
/* NVT (cfg.ensemble): stochastic velocity rescaling of step s with the global kinetic energy
 * (collective); nothing in NVE. */
halox_status_t md__thermostat(halox_md_t *md, long long s);
/* The host half of a rebuild, in two calls around the platform's ordering of the home atoms:
 * md__rebuild_migrate (blow-up check, migration; t0: when the platform began the rebuild on the
 * host, for the timers) and md__rebuild_plan (the ordering's status `sorted`, local, deferred
 * into the plan build; t1: when the ordering began; the plan build; *t2_p: when it began, for
 * the bind's timers). The platform binds and builds its lists after them. */
halox_status_t md__rebuild_migrate(halox_md_t *md, double t0);
halox_status_t md__rebuild_plan(halox_md_t *md, double t1, halox_status_t sorted, double *t2_p);

#endif
