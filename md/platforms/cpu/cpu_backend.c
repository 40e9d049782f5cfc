/* The CPU platform (backend.h), the engine's oracle: the state is the host atoms (positions,
 * velocities of the home atoms, forces over home + halo), every part runs on the host and is
 * timed with the host clock; the halo exchanges are the transport's calls on the host arrays
 * (threads, mpi).
 *
 *   step       velocity Verlet on the home atoms (integrate.c); with cfg.rebuild_check the
 *              largest displacement since the last list build, over all ranks, against skin / 2,
 *              after every drift (exact: one reduction)
 *   rebuild    the host half (step.c) with the home atoms sorted by cell (neighbour.c), so that
 *              neighbours sit close; bind the host arrays, reference positions, cell + Verlet
 *              lists
 *   forces     (coordinate exchange,) LJ over the list (lj.c), force exchange
 * Nothing is in flight between calls: sync has nothing to do. */
#include <stdlib.h>

#include "engine/backend.h"
#include "engine/md_internal.h"

static halox_status_t md__cpu_rebuild_check(halox_md_t *md, int *rebuild_p)
{
    if (!md->cfg.rebuild_check)
        return HALOX_OK;
    double d2 = md__max_displacement2(md);
    halox_status_t st = halox_comm_allreduce_max(md->comm, &d2, 1);
    if (st != HALOX_OK)
        return st;
    double half = 0.5 * md->cfg.skin;
    *rebuild_p = d2 > half * half;
    return HALOX_OK;
}

/* Migration and plan on the host, then bind the host arrays, the reference positions of the
 * displacement check, cell + Verlet lists. */
static halox_status_t md__cpu_rebuild(halox_md_t *md)
{
    halox_status_t st = md__rebuild_migrate(md, md__now());
    if (st != HALOX_OK)
        return st;
    double t2;
    const double t1 = md__now();
    if ((st = md__rebuild_plan(md, t1, md__sort_home(md), &t2)) != HALOX_OK)
        return st;
    double tb = md__now();
    st = halox_comm_bind(md->comm, &md->plan, md->atoms.x, md->f);
    if (st != HALOX_OK)
        return st;
    double t3 = md__now();
    md->timer[HALOX_MD_T_MIGRATE] += t3 - t2;
    md->rpart[HALOX_MD_R_BIND] += t3 - tb;
    md__save_reference(md);
    st = md__agree(md, md__nlist_build(md, md->cfg.cutoff + md->cfg.skin));
    if (st != HALOX_OK)
        return st;
    md->timer[HALOX_MD_T_NEIGHBOUR] += md__now() - t3;
    md->rpart[HALOX_MD_R_LISTS] += md__now() - t3;
    return st;
}

/* Forces of the current positions (halo coordinates exchanged first with coords), then the force
 * exchange. */
static halox_status_t md__cpu_forces(halox_md_t *md, int coords, int want_energy)
{
    if (coords) {
        double t = md__now();
        halox_status_t cst = halox_comm_coords(md->comm);
        md->timer[HALOX_MD_T_COORDS] += md__now() - t;
        if (cst != HALOX_OK)
            return cst;
    }
    double t0 = md__now();
    md__lj_forces(md, want_energy);
    double t1 = md__now();
    md->timer[HALOX_MD_T_PAIR] += t1 - t0;
    halox_status_t st = halox_comm_forces(md->comm);
    md->timer[HALOX_MD_T_FORCES] += md__now() - t1;
    return st;
}

static halox_status_t md__cpu_step(halox_md_t *md, long long s, int rebuild)
{
    const double dt = md->cfg.dt;
    double t0 = md__now();
    md__kick(md, 0.5 * dt);
    md__drift(md, dt);
    md->timer[HALOX_MD_T_INTEGRATE] += md__now() - t0;
    halox_status_t st;
    if (!rebuild && (st = md__cpu_rebuild_check(md, &rebuild)) != HALOX_OK)
        return st;
    md->step = s;
    if (rebuild && (st = md__rebuild(md)) != HALOX_OK)
        return st;
    /* the coordinate exchange only where no rebuild filled the halo */
    if ((st = md__cpu_forces(md, !rebuild, md__thermo_step(md, s))) != HALOX_OK)
        return st;
    t0 = md__now();
    md__kick(md, 0.5 * dt);
    st = md__thermostat(md, s);
    md->timer[HALOX_MD_T_INTEGRATE] += md__now() - t0;
    return st;
}

static halox_status_t md__cpu_kinetic(halox_md_t *md, double *ke_p)
{
    *ke_p = md__kinetic_local(md);
    return HALOX_OK;
}

static halox_status_t md__cpu_scale(halox_md_t *md, double alpha)
{
    md__scale_velocities(md, alpha);
    return HALOX_OK;
}

/* One repetition of the overlap probe: the host clock around the pieces of a step. */
static halox_status_t md__cpu_overlap_rep(halox_md_t *md, int kind, double *ms_p)
{
    double t0 = md__now();
    halox_status_t st = HALOX_OK;
    if (kind != MD_OVL_LOCAL)
        st = halox_comm_coords(md->comm);
    if (st == HALOX_OK && kind != MD_OVL_HALO)
        md__lj_forces(md, 0);
    if (st == HALOX_OK && kind != MD_OVL_LOCAL)
        st = halox_comm_forces(md->comm);
    *ms_p = 1e3 * (md__now() - t0);
    return st;
}

static halox_status_t md__cpu_sync(halox_md_t *md, int what)
{
    (void)md; /* the host atoms are the state */
    (void)what;
    return HALOX_OK;
}

static halox_status_t md__cpu_stats(halox_md_t *md, int summary, long long *stale_p)
{
    (void)md; /* the pair count is the list build's (md->nl.npairs) */
    (void)summary;
    *stale_p = -1; /* the displacement check is exact: no stale list is ever used */
    return HALOX_OK;
}

static void md__cpu_destroy(halox_md_t *md)
{
    md__nlist_free(&md->nl);
    free(md->x_ref);
    md->x_ref = NULL;
}

const md_backend_t md__cpu_backend = {
    .name = "cpu",
    .step = md__cpu_step,
    .rebuild = md__cpu_rebuild,
    .forces = md__cpu_forces,
    .kinetic = md__cpu_kinetic,
    .scale = md__cpu_scale,
    .sync = md__cpu_sync,
    .overlap_rep = md__cpu_overlap_rep,
    .stats = md__cpu_stats,
    .destroy = md__cpu_destroy,
};
