/* The dynamics of one step and the rebuild, the same code for every back end (backend.h): the
 * engine's loop (engine.c) and the equilibration (equilibrate.c) run steps through here.
 *
 * One step s (from s-1), per rank:
 *   1. v += dt/2 f; x += dt v                                  (home atoms)
 *   2. rebuild step (steps 1, 1 + K, 1 + 2K, ... for K = rebuild_every, so that the end of every
 *      multiple of K is a boundary where the next step rebuilds from the home atoms alone and a
 *      checkpoint can be written; with rebuild_check instead when an atom moved more than
 *      skin/2, K steps after the last rebuild, or after a checkpoint; always the first step
 *      after a restart; engine.c md__rebuild_due):
 *        migrate (wrap, move atoms to their owners, check the global count), sort home atoms
 *        by cell, build the plan (fills the halo), bind, cell list + Verlet list (zone rule)
 *      otherwise: coordinate halo exchange
 *   3. f = 0 over home + halo; LJ over the list (energies on thermo steps only)
 *   4. force halo exchange (halo forces added to their owners)
 *   5. v += dt/2 f; NVT: stochastic velocity rescaling with the global kinetic energy
 * The halo distance is cutoff + skin (plan buffer = skin), so the lists stay valid between
 * rebuilds while no atom moves more than skin / 2. Where the parts run (host or GPU) is the back
 * end's: the GPU one does 2 to 4 in its forces entry and rebuilds one rank on the device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/backend.h"
#include "engine/md_internal.h"
#include "halox/status.h"

/* Periodic distance, in grid coordinates, from this rank to the owner of each home atom: how far
 * atoms travelled since the last rebuild. Counts the atoms that leave. */
static void md__migration_stats(halox_md_t *md)
{
    const halox_grid_t *g = &md->cfg.grid;
    int me[3];
    halox_grid_coords(g, md->rank, me);
    double lo[3], hi[3];
    halox_domain_bounds(g, &md->box, md->rank, lo, hi);
    long long leaving = 0;
    int hops = 0;
    for (int i = 0; i < md->atoms.n_home; i++) {
        /* most atoms stay inside the domain (as migration decides it): distance 0 */
        double p0 = md__atom_coord(&md->atoms, i, 0), p1 = md__atom_coord(&md->atoms, i, 1),
               p2 = md__atom_coord(&md->atoms, i, 2);
        if (p0 >= lo[0] && p0 < hi[0] && p1 >= lo[1] && p1 < hi[1] && p2 >= lo[2] && p2 < hi[2])
            continue;
        int away = 0;
        for (int d = 0; d < 3; d++) {
            double x = halox_wrap(md__atom_coord(&md->atoms, i, d), md->box.len[d]);
            int c = halox_owner_coord(g, &md->box, d, x);
            int dist = abs(c - me[d]);
            if (g->n[d] - dist < dist)
                dist = g->n[d] - dist;
            if (dist > hops)
                hops = dist;
            away |= dist > 0;
        }
        leaving += away;
    }
    md->migrated += leaving;
    if (hops > md->max_hops)
        md->max_hops = hops;
}

/* A blown-up system still has finite positions once wrapped into the box, so say it plainly:
 * an atom beyond the blow-up bound (md__speed_limit) makes the run meaningless. */
static halox_status_t md__check_speeds(halox_md_t *md)
{
    int id;
    const double v = sqrt(md__max_speed2(md, &id));
    if (v < md__speed_limit(md->box.len, md->cfg.dt))
        return HALOX_OK;
    char who[32];
    snprintf(who, sizeof who, "atom id %d", id);
    return md__blown_up(md, who, v, NULL);
}

/* Migration, sort, plan, bind, lists, and the coordinate exchange the force exchange needs. */
static halox_status_t md__rebuild_body(halox_md_t *md)
{
    const md_backend_t *be = md->be;
    if (be->local_rebuild_ok && be->local_rebuild_ok(md)) { /* on the device: no host */
        /* the queued steps are the steps' time, not the rebuild's: waited for first, untimed,
         * or (rebuild_queued) the rebuild runs behind them and reports their time as its drain */
        if (!be->rebuild_queued) {
            double td = md__now();
            halox_status_t ist = md__be_idle(md);
            if (ist != HALOX_OK)
                return ist;
            md->rpart[HALOX_MD_R_DRAIN] += md__now() - td;
        }
        double t = md__now(), mig = md->timer[HALOX_MD_T_MIGRATE];
        double drain = md->rpart[HALOX_MD_R_DRAIN];
        halox_status_t lst = be->rebuild_local(md); /* records its parts in md->rpart */
        drain = md->rpart[HALOX_MD_R_DRAIN] - drain;
        /* a device migration timed itself (HALOX_MD_T_MIGRATE), a drain the rebuild reported is
         * the steps': the rest is the lists' */
        md->timer[HALOX_MD_T_NEIGHBOUR] +=
            md__now() - t - (md->timer[HALOX_MD_T_MIGRATE] - mig) - drain;
        if (lst == HALOX_OK) {
            md->last_rebuild = md->step;
            md->rebuilds++;
            md->device_rebuilds++;
            md->force_rebuild = 0;
            md->ckpt_rebuild = 0;
        }
        return lst;
    }
    /* the steps still queued on the GPU are theirs, not the rebuild's: wait for them first */
    double td = md__now();
    halox_status_t st = md__be_idle(md);
    if (st != HALOX_OK)
        return st;
    double t0 = md__now();
    md->rpart[HALOX_MD_R_DRAIN] += t0 - td;
    /* the home atoms come back to the host: migration and plan as on the CPU */
    if ((st = md__be_to_host(md, 0)) != HALOX_OK)
        return st;
    double th = md__now();
    md->rpart[HALOX_MD_R_TO_HOST] += th - t0;
    /* a blown-up system stops every rank in the migration's first agreement (deferred there
     * instead of an agreement of its own) */
    const halox_status_t vst = md__check_speeds(md);
    if (vst == HALOX_OK)
        md__migration_stats(md);
    else
        halox_comm_defer_failure(md->comm, vst);
    st = halox_comm_migrate(md->comm, &md->cfg.grid, &md->box, &md->atoms, md->natoms, md->step);
    if (st != HALOX_OK)
        return st;
    double t1 = md__now();
    md->timer[HALOX_MD_T_MIGRATE] += t1 - t0;
    md->rpart[HALOX_MD_R_MIGRATE] += t1 - th;
    /* home atoms in cell order (the CPU lists read neighbours close in memory; the GPU's
     * per-atom kernels read runs) */
    /* local: a failure stops every rank in the plan build's first agreement */
    if (be->before_plan)
        halox_comm_defer_failure(md->comm, be->before_plan(md));
    double t2 = md__now();
    md->timer[HALOX_MD_T_NEIGHBOUR] += t2 - t1;
    md->rpart[HALOX_MD_R_LISTS] += t2 - t1;
    st = halox_comm_build_plan(md->comm, &md->prm, &md->atoms, &md->plan);
    if (st != HALOX_OK)
        return st;
    md->rpart[HALOX_MD_R_PLAN] += md__now() - t2;
    /* local: a failure stops every rank in the bind's agreement (after_plan binds) */
    halox_comm_defer_failure(md->comm, md__ensure_forces(md, md->atoms.n_total + 1));
    /* bind, lists (GPU: upload first; both record their parts); the plan build filled the
     * halo: no coordinate exchange on rebuild steps */
    st = be->after_plan(md, t2);
    if (st != HALOX_OK)
        return st;
    md->last_rebuild = md->step;
    md->rebuilds++;
    md->force_rebuild = 0;
    md->ckpt_rebuild = 0;
    return st;
}

/* md__rebuild_body with its budget: the library's collectives and GPU waits during it (and the
 * engine's own waits, counted while in_rebuild is set) */
halox_status_t md__rebuild(halox_md_t *md)
{
    halox_comm_stats_t a, b;
    halox_comm_get_stats(md->comm, &a);
    /* none left over from a rebuild that stopped before the call that takes it */
    halox_comm_defer_failure(md->comm, HALOX_OK);
    md->in_rebuild = 1;
    halox_status_t st = md__rebuild_body(md);
    md->in_rebuild = 0;
    halox_comm_get_stats(md->comm, &b);
    md->rbudget[0] += (double)(b.collectives - a.collectives);
    md->rbudget[1] += b.collective_seconds - a.collective_seconds;
    md->rbudget[2] += (double)(b.device_waits - a.device_waits);
    md->rbudget[3] += b.device_wait_seconds - a.device_wait_seconds;
    return st;
}

int md__thermo_step(const halox_md_t *md, long long s)
{
    return s % md->cfg.thermo_every == 0 || s == md->cfg.steps || s == md->first_step;
}

/* The dynamics of step s: kick, drift, (rebuild,) forces, kick, thermostat (also the
 * equilibration's, equilibrate.c). */
halox_status_t md__step_dynamics(halox_md_t *md, long long s, int rebuild)
{
    const halox_md_config_t *c = &md->cfg;
    const md_backend_t *be = md->be;
    halox_status_t st;

    double t0 = md__now();
    if ((st = be->kick_drift(md, !rebuild)) != HALOX_OK)
        return st;
    if (be->host_timers) /* the GPU's device timers come from CUDA events */
        md->timer[HALOX_MD_T_INTEGRATE] += md__now() - t0;
    /* the GPU engine watched in md__step instead */
    if (!rebuild && be->rebuild_check && (st = be->rebuild_check(md, &rebuild)) != HALOX_OK)
        return st;
    md->step = s;
    if (rebuild && (st = md__rebuild(md)) != HALOX_OK)
        return st;
    /* the coordinate exchange (not after a rebuild) is the back end's, with the forces */
    int thermo = md__thermo_step(md, s);
    if ((st = be->forces(md, !rebuild, thermo)) != HALOX_OK)
        return st;

    t0 = md__now();
    if ((st = be->kick(md)) != HALOX_OK)
        return st;
    if (c->ensemble == HALOX_MD_NVT) {
        double ke = 0;
        if ((st = be->kinetic(md, &ke)) != HALOX_OK)
            return st;
        if ((st = halox_comm_allreduce_sum(md->comm, &ke, 1)) != HALOX_OK)
            return st;
        double alpha =
            md__bussi_alpha(ke, 0.5 * md->dof * c->temp, md->dof, c->dt / c->tau, c->seed, s);
        if ((st = be->scale(md, alpha)) != HALOX_OK)
            return st;
    }
    if (be->host_timers)
        md->timer[HALOX_MD_T_INTEGRATE] += md__now() - t0;
    return HALOX_OK;
}
