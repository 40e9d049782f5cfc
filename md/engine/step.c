/* One step's dynamics, what every platform's step shares (backend.h: the platform's step entry
 * calls these in this order):
 *
 * One step s (from s-1), per rank:
 *   1. v += dt/2 f; x += dt v                                  (home atoms)
 *   2. rebuild step (steps 1, 1 + K, 1 + 2K, ... for K = rebuild_every, so that the end of every
 *      multiple of K is a boundary where the next step rebuilds from the home atoms alone and a
 *      checkpoint can be written; with rebuild_check instead when an atom moved more than
 *      skin/2, K steps after the last rebuild, or after a checkpoint; always the first step
 *      after a restart; md__rebuild_due below): md__rebuild, which runs the platform's
 *      rebuild: migrate (wrap, move atoms to their owners, check the global count), order the
 *      home atoms, build the plan (fills the halo), bind, pair lists (zone rule); the host half
 *      of it (md__rebuild_migrate, md__rebuild_plan) is here
 *      otherwise: coordinate halo exchange
 *   3. f = 0 over home + halo; LJ over the list (energies on thermo steps only, md__thermo_step)
 *   4. force halo exchange (halo forces added to their owners)
 *   5. v += dt/2 f; NVT: stochastic velocity rescaling with the global kinetic energy
 *      (md__thermostat)
 * The halo distance is cutoff + skin (plan buffer = skin), so the lists stay valid between
 * rebuilds while no atom moves more than skin / 2. */
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

/* The engine's host atoms as the library's caller-owned arrays (halox_fixed_atoms_t): the
 * library never grows them; a call that lacks room fails with HALOX_ERR_NO_MEMORY on every rank,
 * the short ranks grow here (with head-room) and every rank calls again. */
static halox_status_t md__grow_host(halox_md_t *md, int need)
{
    if (need <= md->atoms.capacity && need <= md->zone_cap)
        return HALOX_OK;
    const int cap = need + need / 8 + 64;
    halox_status_t st = halox_atoms_reserve(&md->atoms, cap);
    if (st != HALOX_OK)
        return st;
    uint8_t *z = realloc(md->zone, (size_t)md->atoms.capacity);
    if (!z)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "rank %d: no memory for %d zones", md->rank,
                               md->atoms.capacity);
    md->zone = z;
    md->zone_cap = md->atoms.capacity;
    return HALOX_OK;
}

static halox_fixed_atoms_t md__fixed_view(halox_md_t *md)
{
    halox_fixed_atoms_t a = {0};
    a.x = md->atoms.x;
    a.id = md->atoms.id;
    a.zone = md->zone;
    a.extra = md->atoms.extra;
    a.extra_bytes = md->atoms.extra_bytes;
    a.n_home = md->atoms.n_home;
    a.capacity = md->atoms.capacity < md->zone_cap ? md->atoms.capacity : md->zone_cap;
    return a;
}

/* The migration (build: 0) or the plan build (1) on the engine's host arrays, grown while the
 * library says they are too small (each round is collective: every rank calls again). A GPU
 * transport's caller-owned calls take device arrays (the GPU engine's own rebuild,
 * gpu_resident.c): the host arrays of its first rebuild go through the host-array calls. */
static halox_status_t md__fixed_call(halox_md_t *md, int build)
{
    halox_transport_caps_t caps;
    if (halox_comm_caps(md->comm, &caps) == HALOX_OK && caps.on_gpu)
        return build ? halox_comm_build_plan(md->comm, &md->prm, &md->atoms, &md->plan)
                     : halox_comm_migrate(md->comm, &md->cfg.grid, &md->box, &md->atoms, md->natoms,
                                          md->step);
    halox_status_t st = md__grow_host(md, md->atoms.n_home > 0 ? md->atoms.n_home : 1);
    if (st != HALOX_OK) /* taken by the call below, on every rank alike (HALOX_OK would clear
                           a failure the caller deferred) */
        halox_comm_defer_failure(md->comm, st);
    for (int round = 0;; round++) {
        halox_fixed_atoms_t a = md__fixed_view(md);
        st = build ? halox_comm_build_plan_fixed(md->comm, &md->prm, &a, &md->plan)
                   : halox_comm_migrate_fixed(md->comm, &md->cfg.grid, &md->box, &a, md->natoms,
                                              md->step);
        if (st == HALOX_OK) {
            md->atoms.n_home = a.n_home;
            md->atoms.n_total = build ? a.n_total : a.n_home;
        }
        if (st != HALOX_ERR_NO_MEMORY || round == 8)
            return st;
        if ((st = md__grow_host(md, a.need)) != HALOX_OK)
            halox_comm_defer_failure(md->comm, st);
    }
}

/* The host half of a rebuild, first call: the blow-up check and the migration (wrap, atoms to
 * their owners, the global count checked). */
halox_status_t md__rebuild_migrate(halox_md_t *md, double t0)
{
    const double th = md__now();
    /* a blown-up system stops every rank in the migration's first agreement (deferred there
     * instead of an agreement of its own) */
    const halox_status_t vst = md__check_speeds(md);
    if (vst == HALOX_OK)
        md__migration_stats(md);
    else
        halox_comm_defer_failure(md->comm, vst);
    halox_status_t st = md__fixed_call(md, 0);
    if (st != HALOX_OK)
        return st;
    const double t1 = md__now();
    md->timer[HALOX_MD_T_MIGRATE] += t1 - t0;
    md->rpart[HALOX_MD_R_MIGRATE] += t1 - th;
    return HALOX_OK;
}

/* Second call: the platform ordered the home atoms (CPU: by cell, so that the lists read
 * neighbours close in memory; GPU: so that the per-atom kernels read runs); the plan build. */
halox_status_t md__rebuild_plan(halox_md_t *md, double t1, halox_status_t sorted, double *t2_p)
{
    /* local: a failure stops every rank in the plan build's first agreement */
    halox_comm_defer_failure(md->comm, sorted);
    const double t2 = md__now();
    *t2_p = t2;
    md->timer[HALOX_MD_T_NEIGHBOUR] += t2 - t1;
    md->rpart[HALOX_MD_R_LISTS] += t2 - t1;
    halox_status_t st = md__fixed_call(md, 1);
    if (st != HALOX_OK)
        return st;
    md->rpart[HALOX_MD_R_PLAN] += md__now() - t2;
    /* local: a failure stops every rank in the bind's agreement (the platform binds next) */
    halox_comm_defer_failure(md->comm, md__ensure_forces(md, md->atoms.n_total + 1));
    return HALOX_OK;
}

/* The platform's rebuild with its budget: the library's collectives and GPU waits during it (and
 * the engine's own waits, counted while in_rebuild is set). */
halox_status_t md__rebuild(halox_md_t *md)
{
    halox_comm_stats_t a, b;
    halox_comm_get_stats(md->comm, &a);
    /* none left over from a rebuild that stopped before the call that takes it */
    halox_comm_defer_failure(md->comm, HALOX_OK);
    md->in_rebuild = 1;
    halox_status_t st = md->be->rebuild(md);
    md->in_rebuild = 0;
    halox_comm_get_stats(md->comm, &b);
    md->rbudget[0] += (double)(b.collectives - a.collectives);
    md->rbudget[1] += b.collective_seconds - a.collective_seconds;
    md->rbudget[2] += (double)(b.device_waits - a.device_waits);
    md->rbudget[3] += b.device_wait_seconds - a.device_wait_seconds;
    if (st == HALOX_OK) {
        md->last_rebuild = md->step;
        md->rebuilds++;
        md->force_rebuild = 0;
        md->ckpt_rebuild = 0;
    }
    return st;
}

int md__thermo_step(const halox_md_t *md, long long s)
{
    return s % md->cfg.thermo_every == 0 || s == md->cfg.steps || s == md->first_step;
}

/* Whether step s rebuilds. Without the check, at steps 1, 1 + K, 1 + 2K, ... (the step after
 * every boundary). With it, when the check says, K steps after the last rebuild, or right after
 * a checkpoint: fixed steps 1 + kK would cut every list the check keeps K/2 to K steps to K/2
 * on average, and a restart only needs the rebuild after its own checkpoint. */
int md__rebuild_due(const halox_md_t *md, long long s)
{
    const halox_md_config_t *c = &md->cfg;
    if (md->force_rebuild || md->ckpt_rebuild)
        return 1;
    if (!c->rebuild_check)
        return (s - 1) % c->rebuild_every == 0;
    return s - md->last_rebuild >= c->rebuild_every;
}

int md__plain_steps(const halox_md_t *md, long long s, int kmax)
{
    const halox_md_config_t *c = &md->cfg;
    if (c->ensemble != HALOX_MD_NVE)
        return 0;
    int k = 0;
    while (k < kmax) {
        const long long t = s + k;
        if (t > md->until || md__rebuild_due(md, t) || md__thermo_step(md, t) ||
            (c->xyz_path && ((c->xyz_every > 0 && t % c->xyz_every == 0) || t == c->steps)))
            break;
        k++;
        if (t % c->rebuild_every == 0)
            break;
    }
    return k;
}

halox_status_t md__thermostat(halox_md_t *md, long long s)
{
    const halox_md_config_t *c = &md->cfg;
    if (c->ensemble != HALOX_MD_NVT)
        return HALOX_OK;
    double ke = 0;
    halox_status_t st = md->be->kinetic(md, &ke);
    if (st == HALOX_OK)
        st = halox_comm_allreduce_sum(md->comm, &ke, 1);
    if (st != HALOX_OK)
        return st;
    const double alpha =
        md__bussi_alpha(ke, 0.5 * md->dof * c->temp, md->dof, c->dt / c->tau, c->seed, s);
    return md->be->scale(md, alpha);
}
