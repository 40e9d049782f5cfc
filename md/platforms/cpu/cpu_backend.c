/* The CPU back end of the step (backend.h): the state is the host atoms (positions, velocities
 * of the home atoms, forces over home + halo), every part runs on the host and is timed with the
 * host clock; the halo exchanges are the transport's calls on the host arrays (threads, mpi).
 *
 *   kick_drift, kick   velocity Verlet on the home atoms (integrate.c)
 *   rebuild_check      cfg.rebuild_check: the largest displacement since the last list build,
 *                      over all ranks, against skin / 2, every step (exact: one reduction)
 *   before_plan        home atoms sorted by cell (neighbour.c), so that neighbours sit close
 *   after_plan         bind the host arrays, reference positions, cell + Verlet lists
 *   forces             (coordinate exchange,) LJ over the list (lj.c), force exchange
 * Nothing is in flight between calls: no to_host, idle, timers to flush or state to free. */
#include "engine/backend.h"
#include "engine/md_internal.h"

static halox_status_t md__cpu_kick_drift(halox_md_t *md, int exchange)
{
    (void)exchange; /* the host exchanges with the transport's calls (forces) */
    md__kick(md, 0.5 * md->cfg.dt);
    md__drift(md, md->cfg.dt);
    return HALOX_OK;
}

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

static halox_status_t md__cpu_before_plan(halox_md_t *md)
{
    return md__sort_home(md); /* local: step.c defers a failure into the plan build */
}

static halox_status_t md__cpu_after_plan(halox_md_t *md, double t2)
{
    double tb = md__now();
    halox_status_t st = halox_comm_bind(md->comm, &md->plan, md->atoms.x, md->f);
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

static halox_status_t md__cpu_kick(halox_md_t *md)
{
    md__kick(md, 0.5 * md->cfg.dt);
    return HALOX_OK;
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

const md_backend_t md__cpu_backend = {
    .name = "cpu",
    .host_timers = 1,
    .kick_drift = md__cpu_kick_drift,
    .rebuild_check = md__cpu_rebuild_check,
    .before_plan = md__cpu_before_plan,
    .after_plan = md__cpu_after_plan,
    .forces = md__cpu_forces,
    .kick = md__cpu_kick,
    .kinetic = md__cpu_kinetic,
    .scale = md__cpu_scale,
    .overlap_rep = md__cpu_overlap_rep,
};
