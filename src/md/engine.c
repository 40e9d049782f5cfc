/* The engine: set-up, the velocity-Verlet step loop on the halo library, summary and gather.
 *
 * One step s (from s-1), per rank:
 *   1. v += dt/2 f; x += dt v                                  (home atoms)
 *   2. rebuild step (steps 1, 1 + K, 1 + 2K, ... for K = rebuild_every, so that the end of every
 *      multiple of K is a boundary where the next step rebuilds from the home atoms alone and a
 *      checkpoint can be written; also when an atom moved more than skin/2 with rebuild_check,
 *      and the first step after a restart):
 *        migrate (wrap, move atoms to their owners, check the global count), sort home atoms
 *        by cell, build the plan (fills the halo), bind, cell list + Verlet list (zone rule)
 *      otherwise: coordinate halo exchange
 *   3. f = 0 over home + halo; LJ over the list (energies on thermo steps only)
 *   4. force halo exchange (halo forces added to their owners)
 *   5. v += dt/2 f; NVT: stochastic velocity rescaling with the global kinetic energy
 *   6. thermo reductions on thermo steps; XYZ frames; at a rebuild boundary (the next step
 *      rebuilds): stop requests and checkpoints.
 * The halo distance is cutoff + skin (plan buffer = skin), so the lists stay valid between
 * rebuilds while no atom moves more than skin / 2.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "md/md_internal.h"

static const char *const md__timer_names[HALOX_MD_T_COUNT] = {
    "pair forces",      "halo coordinates", "halo forces", "integration",
    "neighbour search", "migration + plan", "other"};

const char *halox_md_timer_name(halox_md_timer_t t)
{
    return (int)t >= 0 && t < HALOX_MD_T_COUNT ? md__timer_names[t] : "unknown";
}

void md__notice(halox_md_t *md, const char *fmt, ...)
{
    if (md->rank != 0 || !md->hooks.notice)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    md->hooks.notice(md->hooks.user, text);
}

/* Agree on failure: every rank returns an error when any rank failed (its own when it failed;
 * otherwise HALOX_ERR_ABORTED naming the rank that failed), so no rank walks alone into a
 * collective. */
halox_status_t md__agree(halox_md_t *md, halox_status_t st)
{
    int P = md->nranks;
    int mine = (int)st;
    int small[64];
    int *all = P <= 64 ? small : malloc(sizeof(int) * (size_t)P);
    if (!all)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    halox_status_t cst = halox_comm_allgather(md->comm, &mine, all, sizeof mine);
    int bad = -1;
    if (cst == HALOX_OK)
        for (int r = 0; r < P; r++)
            if (all[r] != HALOX_OK) {
                bad = r;
                break;
            }
    halox_status_t other = bad >= 0 ? (halox_status_t)all[bad] : HALOX_OK;
    if (all != small)
        free(all);
    if (st != HALOX_OK)
        return st;
    if (cst != HALOX_OK)
        return cst;
    if (bad >= 0)
        return halox__error(HALOX_ERR_ABORTED, "rank %d stopped because rank %d failed (%s)",
                            md->rank, bad, halox_status_string(other));
    return HALOX_OK;
}

halox_status_t md__ensure_forces(halox_md_t *md, int n)
{
    if (n <= md->f_cap && md->f)
        return HALOX_OK;
    int cap = md->f_cap > 0 ? md->f_cap : 1024;
    while (cap < n)
        cap = cap > 0x3fffffff ? 0x7fffffff : 2 * cap;
    void *q = realloc(md->f, md__rs(md) * 3 * (size_t)cap);
    if (!q)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for %d forces", cap);
    md->f = q;
    md->f_cap = cap;
    return HALOX_OK;
}

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
        double p0 = halox__atom_coord(&md->atoms, i, 0), p1 = halox__atom_coord(&md->atoms, i, 1),
               p2 = halox__atom_coord(&md->atoms, i, 2);
        if (p0 >= lo[0] && p0 < hi[0] && p1 >= lo[1] && p1 < hi[1] && p2 >= lo[2] && p2 < hi[2])
            continue;
        int away = 0;
        for (int d = 0; d < 3; d++) {
            double x = halox_wrap(halox__atom_coord(&md->atoms, i, d), md->box.len[d]);
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
 * an atom that crosses half the box in one step makes the run meaningless. */
static halox_status_t md__check_speeds(halox_md_t *md)
{
    int id;
    double v2 = md__max_speed2(md, &id);
    double lmin = fmin(md->box.len[0], fmin(md->box.len[1], md->box.len[2]));
    if (!(sqrt(v2) * md->cfg.dt < 0.5 * lmin))
        return halox__error(HALOX_ERR_COORDINATE,
                            "step %lld: the system blew up: atom id %d moves %.3g per step, more "
                            "than half the box (%.3g): use a smaller time step, or start from a "
                            "configuration without overlaps",
                            md->step, id, sqrt(v2) * md->cfg.dt, 0.5 * lmin);
    return HALOX_OK;
}

/* Migration, sort, plan, bind, lists, and the coordinate exchange the force exchange needs. */
static halox_status_t md__rebuild(halox_md_t *md)
{
    if (md__gpu_local_rebuild_ok(md)) { /* one rank, no halo: nothing for the host to do */
        double t = halox__now();
        halox_status_t lst = md__gpu_rebuild_local(md);
        md->timer[HALOX_MD_T_NEIGHBOUR] += halox__now() - t;
        if (lst == HALOX_OK) {
            md->last_rebuild = md->step;
            md->rebuilds++;
            md->force_rebuild = 0;
        }
        return lst;
    }
    /* the steps still queued on the GPU are theirs, not the rebuild's: wait for them first */
    if (md->gpu) {
        halox_status_t gst = md__agree(md, md__gpu_idle(md));
        if (gst != HALOX_OK)
            return gst;
    }
    double t0 = halox__now();
    if (md->gpu) {
        /* the home atoms come back to the host: migration and plan as on the CPU */
        halox_status_t gst = md__agree(md, md__gpu_to_host(md, 0));
        if (gst != HALOX_OK)
            return gst;
    }
    halox_status_t cst = md__agree(md, md__check_speeds(md));
    if (cst != HALOX_OK)
        return cst;
    md__migration_stats(md);
    halox_status_t st =
        halox_comm_migrate(md->comm, &md->cfg.grid, &md->box, &md->atoms, md->natoms, md->step);
    if (st != HALOX_OK)
        return st;
    double t1 = halox__now();
    md->timer[HALOX_MD_T_MIGRATE] += t1 - t0;
    /* the CPU lists want home atoms in cell order; the GPU sorts them into clusters itself */
    st = md->gpu ? HALOX_OK : md__agree(md, md__sort_home(md));
    if (st != HALOX_OK)
        return st;
    double t2 = halox__now();
    md->timer[HALOX_MD_T_NEIGHBOUR] += t2 - t1;
    st = halox_comm_build_plan(md->comm, &md->prm, &md->atoms, &md->plan);
    if (st != HALOX_OK)
        return st;
    st = md__agree(md, md__ensure_forces(md, md->atoms.n_total + 1));
    if (st != HALOX_OK)
        return st;
    if (md->gpu) {
        /* upload, bind the device arrays, cell and pair lists on the GPU */
        st = md__agree(md, md__gpu_after_plan(md));
        md->timer[HALOX_MD_T_NEIGHBOUR] += halox__now() - t2;
        if (st == HALOX_OK) {
            md->last_rebuild = md->step;
            md->rebuilds++;
            md->force_rebuild = 0;
        }
        return st;
    }
    st = halox_comm_bind(md->comm, &md->plan, md->atoms.x, md->f);
    if (st != HALOX_OK)
        return st;
    double t3 = halox__now();
    md->timer[HALOX_MD_T_MIGRATE] += t3 - t2;
    md__save_reference(md);
    st = md__agree(md, md__nlist_build(md, md->cfg.cutoff + md->cfg.skin));
    if (st != HALOX_OK)
        return st;
    double t4 = halox__now();
    md->timer[HALOX_MD_T_NEIGHBOUR] += t4 - t3;
    (void)t4; /* the plan build filled the halo: no coordinate exchange on rebuild steps */
    md->last_rebuild = md->step;
    md->rebuilds++;
    md->force_rebuild = 0;
    return st;
}

/* Forces of the current positions (halo coordinates already current), then the force exchange. */
static halox_status_t md__forces(halox_md_t *md, int want_energy, int coords)
{
    if (md->gpu) /* coordinate exchange (unless the plan build just filled the halo) included */
        return md__gpu_forces(md, coords, want_energy);
    (void)coords;
    double t0 = halox__now();
    md__lj_forces(md, want_energy);
    double t1 = halox__now();
    md->timer[HALOX_MD_T_PAIR] += t1 - t0;
    halox_status_t st = halox_comm_forces(md->comm);
    md->timer[HALOX_MD_T_FORCES] += halox__now() - t1;
    return st;
}

static int md__thermo_step(const halox_md_t *md, long long s)
{
    return s % md->cfg.thermo_every == 0 || s == md->cfg.steps || s == md->first_step;
}

static halox_status_t md__thermo_output(halox_md_t *md)
{
    halox_md_thermo_t rec;
    halox_status_t st = md->gpu ? md__agree(md, md__gpu_to_host(md, 0)) : HALOX_OK;
    if (st == HALOX_OK)
        st = md__thermo_compute(md, &rec);
    if (st == HALOX_OK)
        st = md__agree(md, md__record_thermo(md, &rec));
    return st;
}

/* Take the atoms of the initial system that this rank owns, in id order. */
static halox_status_t md__take_system(halox_md_t *md, const halox_md_system_t *sys)
{
    halox_atoms_t *a = &md->atoms;
    /* a system made by the caller, not by halox_md_system_create: its box checked the same */
    halox_status_t bst = md__box_check(&md->cfg, sys->box.len, "the system's box");
    if (bst != HALOX_OK)
        return bst;
    md->box = sys->box;
    md->natoms = sys->natoms;
    int me = md->rank;
    const int float_mode = a->real == HALOX_FLOAT;
    int cap = 0, n = 0;
    for (long long i = 0; i < sys->natoms; i++) {
        double x[3];
        for (int d = 0; d < 3; d++) {
            double w = halox_wrap(sys->x[3 * i + d], sys->box.len[d]);
            if (float_mode) {
                w = (double)(float)w;
                if (w >= sys->box.len[d])
                    w = 0.0;
            }
            x[d] = w;
        }
        if (halox_owner_rank(&md->cfg.grid, &md->box, x) != me)
            continue;
        if (n + 1 > cap) {
            cap = cap ? 2 * cap : 1024;
            halox_status_t st = halox_atoms_reserve(a, cap);
            if (st != HALOX_OK)
                return st;
        }
        for (int d = 0; d < 3; d++) {
            halox_atoms_set(a, n, d, x[d]);
            if (float_mode)
                ((float *)a->extra)[3 * (size_t)n + d] = (float)sys->v[3 * i + d];
            else
                ((double *)a->extra)[3 * (size_t)n + d] = sys->v[3 * i + d];
        }
        a->id[n] = (int32_t)i;
        n++;
    }
    a->n_home = a->n_total = n;
    return md__ensure_forces(md, n + 1);
}

halox_status_t halox_md_create(const halox_md_config_t *cfg, halox_comm_t *comm,
                               const halox_md_system_t *sys, const halox_md_hooks_t *hooks,
                               halox_md_t **md_p)
{
    if (!cfg || !comm || !md_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "halox_md_create: NULL argument");
    *md_p = NULL;
    double t_start = halox__now();
    halox_md_t *md = calloc(1, sizeof *md);
    if (!md)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for the engine");
    md->cfg = *cfg;
    if (hooks)
        md->hooks = *hooks;
    md->comm = comm;
    md->rank = halox_comm_rank(comm);
    md->nranks = halox_comm_size(comm);
    md->checkpoint_step = -1;
    halox_plan_init(&md->plan);
    halox_status_t st = halox_md_config_check(cfg);
    if (st == HALOX_OK && halox_grid_size(&cfg->grid) != md->nranks)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "grid %dx%dx%d has %d ranks but the %s transport runs %d: start as "
                          "many ranks as the grid has",
                          cfg->grid.n[0], cfg->grid.n[1], cfg->grid.n[2],
                          halox_grid_size(&cfg->grid), halox_comm_transport(comm), md->nranks);
    if (st == HALOX_OK && !cfg->restart_path && !sys)
        st = halox__error(HALOX_ERR_INVALID_ARG, "no system given and no checkpoint to restart");
    if (st == HALOX_OK)
        st = halox_atoms_init(&md->atoms, cfg->real, 3, 3 * halox_real_size(cfg->real));
    if (st == HALOX_OK) {
        if (cfg->restart_path)
            st = md__checkpoint_load(md, cfg->restart_path);
        else
            st = md__take_system(md, sys);
    }
    if (st == HALOX_OK && halox_md_config_device(cfg) == HALOX_MD_DEVICE_GPU)
        st = md__gpu_create(md);
    st = md__agree(md, st);
    if (st != HALOX_OK) {
        halox_md_destroy(md);
        return st;
    }
    md->prm.grid = md->cfg.grid;
    md->prm.box = md->box;
    md->prm.cutoff = md->cfg.cutoff;
    md->prm.buffer = md->cfg.skin;
    /* periodic images by minimum-image shifts in the dimensions with one rank (no self-image
     * copies, no halo there; the lists wrap: neighbour.c), unless such an edge is too short for
     * the minimum image (at most twice cutoff + skin): then copies, as the planner requires. The
     * GPU engine's cluster lists wrap the same way (kernels/md_cluster.h). */
    md->prm.periodic_shifts = 1;
    for (int d = 0; d < 3; d++)
        if (md->prm.grid.n[d] == 1 && !(md->box.len[d] > 2.0 * (md->cfg.cutoff + md->cfg.skin)))
            md->prm.periodic_shifts = 0;
    st = halox_plan_check(&md->prm, NULL);
    if (st == HALOX_OK && !md->cfg.restart_path)
        md->first_step = 0;
    if (st == HALOX_OK && md->cfg.steps < md->step)
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "the checkpoint is at step %lld, after the last step %lld: give "
                          "--steps of at least %lld",
                          md->step, md->cfg.steps, md->step);
    if (st != HALOX_OK) {
        halox_md_destroy(md);
        return st;
    }
    md->first_step = md->step;
    md->volume = md->box.len[0] * md->box.len[1] * md->box.len[2];
    md->rho = (double)md->natoms / md->volume;
    md->dof = 3.0 * (double)md->natoms - 3.0;
    md->rc2 = md->cfg.cutoff * md->cfg.cutoff;
    double sr6 = 1.0 / (md->rc2 * md->rc2 * md->rc2);
    md->eshift = md->cfg.shift ? 4.0 * sr6 * (sr6 - 1.0) : 0.0;
    md->e_tail = md->cfg.tail ? halox_md_tail_energy(md->rho, md->cfg.cutoff) : 0.0;
    md->p_tail = md->cfg.tail ? halox_md_tail_pressure(md->rho, md->cfg.cutoff) : 0.0;
    if (md->cfg.checkpoint_every > 0)
        md->next_checkpoint = (md->step / md->cfg.checkpoint_every + 1) * md->cfg.checkpoint_every;
    st = md__agree(md, md__outputs_open(md));
    if (st == HALOX_OK && !md->cfg.restart_path) {
        /* step 0: distribute (migrate checks the count), plan, lists, forces, thermo */
        st = md__rebuild(md);
        if (st == HALOX_OK)
            st = md__forces(md, 1, 0);
        if (st == HALOX_OK) /* cfg.equilibrate: back at step 0, equilibrated */
            st = md__equilibrate(md);
        if (st == HALOX_OK)
            st = md__thermo_output(md);
        if (st == HALOX_OK && md->cfg.xyz_path && md->gpu)
            st = md__agree(md, md__gpu_to_host(md, 1));
        if (st == HALOX_OK && md->cfg.xyz_path)
            st = md__xyz_frame(md);
    } else if (st == HALOX_OK) {
        md->force_rebuild = 1;
        md__notice(md, "restarted from '%s' at step %lld", md->cfg.restart_path, md->step);
    }
    if (st != HALOX_OK) {
        halox_md_destroy(md);
        return st;
    }
    /* set-up time is not part of the step timers */
    for (int t = 0; t < HALOX_MD_T_COUNT; t++)
        md->timer[t] = 0;
    md->rebuilds = 0;
    md->migrated = 0;
    md->max_hops = 0;
    md->setup_seconds = halox__now() - t_start - md->eq_seconds;
    *md_p = md;
    return HALOX_OK;
}

long long halox_md_step(const halox_md_t *md) { return md->step; }
long long halox_md_natoms(const halox_md_t *md) { return md->natoms; }
halox_box_t halox_md_box(const halox_md_t *md) { return md->box; }
int halox_md_interrupted(const halox_md_t *md) { return md->interrupted; }

int halox_md_at_boundary(const halox_md_t *md)
{
    /* rebuilds happen at steps 1, 1 + K, 1 + 2K, ...: every multiple of K is a boundary */
    return md->force_rebuild || md->step % md->cfg.rebuild_every == 0;
}

halox_status_t halox_md_write_checkpoint(halox_md_t *md, const char *path)
{
    if (!path)
        return halox__error(HALOX_ERR_INVALID_ARG, "checkpoint: no file name");
    if (!halox_md_at_boundary(md))
        return halox__error(HALOX_ERR_STATE,
                            "step %lld is not a rebuild boundary (a multiple of rebuild-every "
                            "%d): a restart from here would not continue bit-identically",
                            md->step, md->cfg.rebuild_every);
    halox_status_t st = md->gpu ? md__agree(md, md__gpu_to_host(md, 1)) : HALOX_OK;
    if (st == HALOX_OK)
        st = md__checkpoint_write(md, path);
    if (st == HALOX_OK) {
        md->checkpoints++;
        md->checkpoint_step = md->step;
    }
    return st;
}

/* The dynamics of step s: kick, drift, (rebuild,) forces, kick, thermostat (also the
 * equilibration's, equilibrate.c). */
halox_status_t md__step_dynamics(halox_md_t *md, long long s, int rebuild)
{
    const halox_md_config_t *c = &md->cfg;
    halox_status_t st;

    double t0 = halox__now();
    if (md->gpu) { /* device timers from CUDA events */
        if ((st = md__gpu_kick_drift(md)) != HALOX_OK)
            return st;
    } else {
        md__kick(md, 0.5 * c->dt);
        md__drift(md, c->dt);
        double t1 = halox__now();
        md->timer[HALOX_MD_T_INTEGRATE] += t1 - t0;
    }
    if (!rebuild && c->rebuild_check && !md->gpu) { /* the GPU engine watched in md__step */
        double d2 = md__max_displacement2(md);
        st = halox_comm_allreduce_max(md->comm, &d2, 1);
        if (st != HALOX_OK)
            return st;
        double half = 0.5 * c->skin;
        rebuild = d2 > half * half;
    }
    md->step = s;
    if (rebuild) {
        st = md__rebuild(md);
    } else if (!md->gpu) { /* the GPU engine exchanges coordinates in md__forces */
        double t = halox__now();
        st = halox_comm_coords(md->comm);
        md->timer[HALOX_MD_T_COORDS] += halox__now() - t;
    }
    if (st != HALOX_OK)
        return st;
    int thermo = md__thermo_step(md, s);
    if ((st = md__forces(md, thermo, !rebuild)) != HALOX_OK)
        return st;

    t0 = halox__now();
    if (md->gpu && (st = md__gpu_kick(md)) != HALOX_OK)
        return st;
    if (!md->gpu)
        md__kick(md, 0.5 * c->dt);
    if (c->ensemble == HALOX_MD_NVT) {
        double ke = 0;
        if (md->gpu && (st = md__gpu_kinetic(md, &ke)) != HALOX_OK)
            return st;
        if (!md->gpu)
            ke = md__kinetic_local(md);
        if ((st = halox_comm_allreduce_sum(md->comm, &ke, 1)) != HALOX_OK)
            return st;
        double alpha =
            md__bussi_alpha(ke, 0.5 * md->dof * c->temp, md->dof, c->dt / c->tau, c->seed, s);
        if (md->gpu && (st = md__gpu_scale(md, alpha)) != HALOX_OK)
            return st;
        if (!md->gpu)
            md__scale_velocities(md, alpha);
    }
    if (!md->gpu)
        md->timer[HALOX_MD_T_INTEGRATE] += halox__now() - t0;
    return HALOX_OK;
}

/* One step. */
static halox_status_t md__step(halox_md_t *md)
{
    const halox_md_config_t *c = &md->cfg;
    long long s = md->step + 1;
    int rebuild = md->force_rebuild || (s - 1) % c->rebuild_every == 0;
    halox_status_t st;
    /* GPU engine: rebuild before the lists expire, from the displacements the device published
     * (also what rebuild-check asks for there: no host synchronisation per step) */
    if (!rebuild && md->gpu && (st = md__gpu_watch(md, &rebuild)) != HALOX_OK)
        return st;
    /* --graph: a step that needs nothing from the host (no rebuild, no energies, no
     * displacement check, no velocity scaling) is the captured graph */
    const int thermo = md__thermo_step(md, s);
    int plain =
        !rebuild && (md->gpu || !c->rebuild_check) && c->ensemble == HALOX_MD_NVE && !thermo;
    if (plain && md__gpu_graph_ready(md)) {
        md->step = s;
        st = md__gpu_graph_step(md);
    } else {
        st = md__step_dynamics(md, s, rebuild);
    }
    if (st != HALOX_OK)
        return st;

    /* the rest is "other": the summary counts it as loop time not spent in the named parts */
    if (thermo && (st = md__thermo_output(md)) != HALOX_OK)
        return st;
    if (c->xyz_path && ((c->xyz_every > 0 && s % c->xyz_every == 0) || s == c->steps)) {
        if (md->gpu && (st = md__agree(md, md__gpu_to_host(md, 1))) != HALOX_OK)
            return st;
        if ((st = md__xyz_frame(md)) != HALOX_OK)
            return st;
    }

    /* rebuild boundary: stop requests and checkpoints */
    if (halox_md_at_boundary(md)) {
        int stop = 0;
        if (md->hooks.stop) {
            /* ranks that share a process (threads) share the flag: rank 0 reads it for them */
            int reader = md->rank == 0 || strcmp(halox_comm_transport(md->comm), "threads") != 0;
            double v = reader && md->hooks.stop(md->hooks.user) ? 1.0 : 0.0;
            if ((st = halox_comm_allreduce_max(md->comm, &v, 1)) != HALOX_OK)
                return st;
            stop = v > 0;
        }
        int due = c->checkpoint_path && c->checkpoint_every > 0 && s >= md->next_checkpoint;
        int last = s == c->steps;
        if (c->checkpoint_path && (due || stop || last)) {
            if ((st = halox_md_write_checkpoint(md, c->checkpoint_path)) != HALOX_OK)
                return st;
            if (c->checkpoint_every > 0)
                md->next_checkpoint = (s / c->checkpoint_every + 1) * c->checkpoint_every;
            md__notice(md, "checkpoint written to '%s' at step %lld", c->checkpoint_path, s);
        }
        if (stop) {
            md->interrupted = 1;
            if (c->checkpoint_path)
                md__notice(md, "stopped on request at step %lld; continue with --restart %s", s,
                           c->checkpoint_path);
            else
                md__notice(md,
                           "stopped on request at step %lld (no --checkpoint: the state was "
                           "not saved)",
                           s);
        }
    } else if (c->checkpoint_path && s == c->steps) {
        md__notice(md,
                   "no final checkpoint: step %lld is not a rebuild boundary (make --steps a "
                   "multiple of --rebuild-every %d)",
                   s, c->rebuild_every);
    }
    return HALOX_OK;
}

halox_status_t halox_md_run_until(halox_md_t *md, long long last)
{
    if (last > md->cfg.steps)
        last = md->cfg.steps;
    md->interrupted = 0;
    double t0 = halox__now();
    halox_status_t st = HALOX_OK;
    long long done = 0;
    while (md->step < last) {
        st = md__step(md);
        if (st != HALOX_OK)
            break;
        done++;
        if (md->rank == 0 && md->hooks.progress)
            md->hooks.progress(md->hooks.user, md->step, md->cfg.steps, halox__now() - t0);
        if (md->interrupted)
            break;
    }
    if (md->gpu && st == HALOX_OK) /* the loop time includes the device's last steps */
        st = md__gpu_flush_timers(md);
    md->loop_seconds += halox__now() - t0;
    md->loop_steps += done;
    md->have_summary = 0;
    return st;
}

halox_status_t halox_md_summary(halox_md_t *md, halox_md_summary_t *summary_p)
{
    halox_md_summary_t s;
    memset(&s, 0, sizeof s);
    enum { NT = HALOX_MD_T_COUNT };
    if (md->gpu) {
        halox_status_t gst = md__agree(md, md__gpu_stats(md));
        if (gst != HALOX_OK)
            return gst;
        s.graph_steps = md->graph_steps;
    }
    halox_comm_stats_t cs;
    halox_comm_get_stats(md->comm, &cs);
    double sum[NT + 4], mx[NT + 3];
    /* "other" is what the named parts leave of this rank's loop time (thermo, output,
     * checkpoints, checks, waiting), so the parts add up to the wall time */
    double named = 0;
    for (int t = 0; t < NT; t++)
        if (t != HALOX_MD_T_OTHER)
            named += md->timer[t];
    md->timer[HALOX_MD_T_OTHER] = md->loop_seconds > named ? md->loop_seconds - named : 0.0;
    for (int t = 0; t < NT; t++)
        sum[t] = mx[t] = md->timer[t];
    sum[NT] = (double)md->migrated;
    sum[NT + 1] = (double)(md->atoms.n_total - md->atoms.n_home);
    sum[NT + 2] = (double)md->nl.npairs;
    /* the run's, not the probe's or the equilibration's */
    sum[NT + 3] = (double)(cs.bytes_sent - md->ovl_bytes - md->eq_bytes);
    mx[NT] = md->max_hops;
    mx[NT + 1] = md->loop_seconds;
    mx[NT + 2] = (double)cs.device_bytes;
    halox_status_t st = halox_comm_allreduce_sum(md->comm, sum, NT + 4);
    if (st == HALOX_OK)
        st = halox_comm_allreduce_max(md->comm, mx, NT + 3);
    if (st != HALOX_OK)
        return st;
    s.natoms = md->natoms;
    s.nranks = md->nranks;
    s.grid = md->cfg.grid;
    snprintf(s.transport, sizeof s.transport, "%s", halox_comm_transport(md->comm));
    s.real = md->cfg.real;
    s.first_step = md->first_step;
    s.last_step = md->step;
    s.steps = md->loop_steps;
    s.setup_seconds = md->setup_seconds;
    s.equilibrate_steps = md->eq_steps;
    s.equilibrate_seconds = md->eq_seconds;
    s.loop_seconds = mx[NT + 1];
    s.ms_per_step = s.steps > 0 ? 1e3 * s.loop_seconds / (double)s.steps : 0.0;
    s.steps_per_second = s.loop_seconds > 0 ? (double)s.steps / s.loop_seconds : 0.0;
    s.fs_per_step = md->cfg.fs_per_step;
    s.ns_per_day = s.fs_per_step > 0 ? s.steps_per_second * 86400.0 * s.fs_per_step * 1e-6 : 0.0;
    for (int t = 0; t < NT; t++) {
        s.timer_seconds[t] = sum[t] / md->nranks;
        s.timer_max_seconds[t] = mx[t];
    }
    /* the mean parts against the reported wall time (the slowest rank's): "other" takes what
     * they leave (also the wait for the slowest rank), "concurrent" what they exceed it by
     * because they ran side by side, so the split always adds up to ms_per_step */
    double named_mean = 0;
    for (int t = 0; t < NT; t++)
        if (t != HALOX_MD_T_OTHER)
            named_mean += s.timer_seconds[t];
    s.timer_seconds[HALOX_MD_T_OTHER] =
        s.loop_seconds > named_mean ? s.loop_seconds - named_mean : 0.0;
    s.concurrent_seconds = named_mean > s.loop_seconds ? named_mean - s.loop_seconds : 0.0;
    s.rebuilds = md->rebuilds;
    s.migrated = (long long)sum[NT];
    s.max_hops = (int)mx[NT];
    s.halo_atoms = sum[NT + 1] / md->nranks;
    s.pairs = sum[NT + 2];
    s.halo_bytes = (long long)sum[NT + 3];
    s.device_bytes = (long long)mx[NT + 2];
    s.interrupted = md->interrupted;
    s.checkpoints = md->checkpoints;
    s.checkpoint_step = md->checkpoint_step;
    s.overlap_reps = md->ovl_reps;
    if (md->ovl_reps > 0) {
        const double loc = md->ovl_ms[MD_OVL_LOCAL], halo = md->ovl_ms[MD_OVL_HALO],
                     both = md->ovl_ms[MD_OVL_BOTH];
        s.overlap_local_ms = loc;
        s.overlap_halo_ms = halo;
        s.overlap_both_ms = both;
        s.overlap_percent = halo > 0 ? 100.0 * (halo + loc - both) / halo : NAN;
    }
    md->summary = s;
    md->have_summary = 1;
    if (summary_p)
        *summary_p = s;
    return HALOX_OK;
}

halox_status_t halox_md_run(halox_md_t *md)
{
    halox_status_t st = halox_md_run_until(md, md->cfg.steps);
    if (st != HALOX_OK)
        return st;
    /* after the last step, before the summary that reports it; a stopped run skips it */
    if (md->cfg.overlap_probe > 0 && !md->interrupted && (st = md__overlap_probe(md)) != HALOX_OK)
        return st;
    st = halox_md_summary(md, NULL);
    if (st != HALOX_OK)
        return st;
    md->finished = 1;
    halox_status_t wst = HALOX_OK;
    if (md->rank == 0 && md->cfg.json_path)
        wst = md__json_write(md, md->cfg.json_path);
    /* the CSV and XYZ files end here too: a failed close is a failed write */
    if (md->rank == 0) {
        halox_status_t cst = md__outputs_close(md);
        if (wst == HALOX_OK)
            wst = cst;
    }
    return md__agree(md, wst);
}

halox_status_t halox_md_thermo_now(halox_md_t *md, halox_md_thermo_t *rec_p)
{
    if (!md->have_energy || md->energy_step != md->step) {
        if (md->force_rebuild)
            return halox__error(HALOX_ERR_STATE,
                                "no forces yet after the restart at step %lld: run a step first",
                                md->step);
        /* recompute with the same list and positions: the same force bits as before */
        halox_status_t st = md->gpu ? HALOX_OK : halox_comm_coords(md->comm);
        if (st == HALOX_OK)
            st = md__forces(md, 1, 1);
        if (st != HALOX_OK)
            return st;
    }
    if (md->gpu) {
        halox_status_t gst = md__agree(md, md__gpu_to_host(md, 0));
        if (gst != HALOX_OK)
            return gst;
    }
    return md__thermo_compute(md, rec_p);
}

const halox_md_thermo_t *halox_md_thermo_records(const halox_md_t *md, int *count_p)
{
    if (count_p)
        *count_p = md->rank == 0 ? md->nrec : 0;
    return md->rank == 0 ? md->rec : NULL;
}

halox_status_t halox_md_gather(halox_md_t *md, double *x, double *v, double *f, int root)
{
    enum { W = 10 };
    if (md->gpu) {
        halox_status_t gst = md__agree(md, md__gpu_to_host(md, 1));
        if (gst != HALOX_OK)
            return gst;
    }
    int n = md->atoms.n_home;
    long long N = md->natoms;
    double *send = malloc(sizeof(double) * W * (size_t)(n > 0 ? n : 1));
    double *recv = NULL;
    halox_status_t st = HALOX_OK;
    if (!send)
        st = halox__error(HALOX_ERR_NO_MEMORY, "gather: no memory");
    if (md->rank == root) {
        recv = malloc(sizeof(double) * W * (size_t)(N > 0 ? N : 1));
        if (!recv)
            st = halox__error(HALOX_ERR_NO_MEMORY, "gather: no memory for %lld atoms", N);
    }
    st = md__agree(md, st);
    if (st != HALOX_OK) {
        free(send);
        free(recv);
        return st;
    }
    const int float_mode = md->atoms.real == HALOX_FLOAT;
    for (int i = 0; i < n; i++) {
        double *o = send + (size_t)W * i;
        o[0] = (double)md->atoms.id[i];
        for (int d = 0; d < 3; d++) {
            double w = halox_wrap(halox_atoms_get(&md->atoms, i, d), md->box.len[d]);
            if (float_mode) {
                w = (double)(float)w;
                if (w >= md->box.len[d])
                    w = 0.0;
            }
            o[1 + d] = w;
            size_t k = 3 * (size_t)i + d;
            o[4 + d] =
                float_mode ? (double)((float *)md->atoms.extra)[k] : ((double *)md->atoms.extra)[k];
            o[7 + d] =
                md->f ? (float_mode ? (double)((float *)md->f)[k] : ((double *)md->f)[k]) : 0.0;
        }
    }
    size_t *counts = md->rank == root ? calloc((size_t)md->nranks, sizeof(size_t)) : NULL;
    st = md__agree(md, md->rank == root && !counts
                           ? halox__error(HALOX_ERR_NO_MEMORY, "gather: no memory")
                           : HALOX_OK);
    if (st == HALOX_OK)
        st = halox_comm_gatherv(md->comm, send, sizeof(double) * W * (size_t)n, recv,
                                sizeof(double) * W * (size_t)(N > 0 ? N : 1), counts, root);
    free(send);
    if (st == HALOX_OK && md->rank == root) {
        size_t total = 0;
        for (int r = 0; r < md->nranks; r++)
            total += counts[r];
        long long got = (long long)(total / (sizeof(double) * W));
        unsigned char *seen = calloc((size_t)(N > 0 ? N : 1), 1);
        if (!seen)
            st = halox__error(HALOX_ERR_NO_MEMORY, "gather: no memory");
        else if (got != N)
            st = halox__error(HALOX_ERR_ATOM_COUNT,
                              "step %lld: the ranks hold %lld atoms, the system has %lld: atoms "
                              "were lost or duplicated",
                              md->step, got, N);
        for (long long k = 0; k < N && st == HALOX_OK; k++) {
            const double *o = recv + (size_t)W * k;
            long long id = (long long)o[0];
            if (id < 0 || id >= N || seen[id]) {
                st = halox__error(HALOX_ERR_ATOM_COUNT,
                                  "step %lld: atom id %lld is %s: atoms were lost or duplicated",
                                  md->step, id, id < 0 || id >= N ? "out of range" : "duplicated");
                break;
            }
            seen[id] = 1;
            for (int d = 0; d < 3; d++) {
                if (x)
                    x[3 * id + d] = o[1 + d];
                if (v)
                    v[3 * id + d] = o[4 + d];
                if (f)
                    f[3 * id + d] = o[7 + d];
            }
        }
        free(seen);
    }
    free(counts);
    free(recv);
    return md__agree(md, st);
}

void halox_md_destroy(halox_md_t *md)
{
    if (!md)
        return;
    if (md->csv)
        fclose(md->csv);
    if (md->xyz)
        fclose(md->xyz);
    md__gpu_destroy(md);
    halox_atoms_free(&md->atoms);
    halox_plan_free(&md->plan);
    md__nlist_free(&md->nl);
    free(md->f);
    free(md->x_ref);
    free(md->rec);
    free(md);
}
