/* The engine: set-up (with the choice of the back end, backend.h), the velocity-Verlet step
 * loop on the halo library, summary.
 *
 * One step s (from s-1), per rank:
 *   1.-5. the dynamics (step.c): kick, drift, rebuild or coordinate halo exchange, forces,
 *      force halo exchange, kick, NVT thermostat; a CUDA graph of 1.-5. on plain GPU steps
 *   6. thermo reductions on thermo steps; XYZ frames; at a rebuild boundary (the next step
 *      rebuilds): stop requests and checkpoints.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/md_internal.h"
#include "halox/status.h"

static const char *const md__timer_names[HALOX_MD_T_COUNT] = {
    "pair forces",      "halo coordinates", "halo forces", "integration",
    "neighbour search", "migration + plan", "other"};

const char *halox_md_timer_name(halox_md_timer_t t)
{
    return (int)t >= 0 && t < HALOX_MD_T_COUNT ? md__timer_names[t] : "unknown";
}

static const char *const md__rpart_names[HALOX_MD_R_COUNT] = {
    "drain", "to host", "migration", "plan", "upload + bind", "lists", "graph"};

const char *halox_md_rebuild_part_name(halox_md_rebuild_part_t p)
{
    return (int)p >= 0 && p < HALOX_MD_R_COUNT ? md__rpart_names[p] : "unknown";
}

static halox_status_t md__thermo_output(halox_md_t *md)
{
    halox_md_thermo_t rec;
    halox_status_t st = md__be_to_host(md, 0);
    if (st == HALOX_OK)
        st = md__thermo_compute(md, &rec);
    if (st == HALOX_OK)
        st = md__state_check(md, "the thermo output", 0, &rec);
    if (st == HALOX_OK)
        st = md__agree(md, md__record_thermo(md, &rec));
    return st;
}

/* The one place that picks the back end of the step: the CPU's, or (CUDA builds) the GPU's. */
static halox_status_t md__backend_select(halox_md_t *md, halox_md_device_t device)
{
    if (device != HALOX_MD_DEVICE_GPU) {
        md->be = &md__cpu_backend;
        return HALOX_OK;
    }
#ifdef HALOX_HAVE_CUDA
    return md__gpu_backend_create(md);
#else
    return halox_set_error(
        HALOX_ERR_UNAVAILABLE,
        "this build has no CUDA: the GPU engine is not available (--device cpu)");
#endif
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
        return halox_set_error(HALOX_ERR_INVALID_ARG, "halox_md_create: NULL argument");
    *md_p = NULL;
    double t_start = md__now();
    halox_md_t *md = calloc(1, sizeof *md);
    if (!md)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for the engine");
    md->cfg = *cfg;
    if (hooks)
        md->hooks = *hooks;
    md->comm = comm;
    md->rank = halox_comm_rank(comm);
    md->nranks = halox_comm_size(comm);
    md->checkpoint_step = -1;
    md->checked_step = LLONG_MIN;
    halox_plan_init(&md->plan);
    halox_status_t st = halox_md_config_check(cfg);
    if (st == HALOX_OK && halox_grid_size(&cfg->grid) != md->nranks)
        st = halox_set_error(HALOX_ERR_INVALID_ARG,
                             "grid %dx%dx%d has %d ranks but the %s transport runs %d: start as "
                             "many ranks as the grid has",
                             cfg->grid.n[0], cfg->grid.n[1], cfg->grid.n[2],
                             halox_grid_size(&cfg->grid), halox_comm_transport(comm), md->nranks);
    if (st == HALOX_OK && !cfg->restart_path && !sys)
        st = halox_set_error(HALOX_ERR_INVALID_ARG, "no system given and no checkpoint to restart");
    if (st == HALOX_OK)
        st = halox_atoms_init(&md->atoms, cfg->real, 3, 3 * halox_real_size(cfg->real));
    if (st == HALOX_OK) {
        if (cfg->restart_path)
            st = md__checkpoint_load(md, cfg->restart_path);
        else
            st = md__take_system(md, sys);
    }
    if (st == HALOX_OK)
        st = md__backend_select(md, halox_md_config_device(cfg));
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
        st = halox_set_error(HALOX_ERR_INVALID_ARG,
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
            st = md->be->forces(md, 0, 1);
        if (st == HALOX_OK) /* cfg.equilibrate: back at step 0, equilibrated */
            st = md__equilibrate(md);
        if (st == HALOX_OK)
            st = md__thermo_output(md);
        if (st == HALOX_OK && md->cfg.xyz_path)
            st = md__be_to_host(md, 1);
        if (st == HALOX_OK && md->cfg.xyz_path)
            st = md__state_check(md, "the trajectory frame", 0, NULL);
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
    for (int p = 0; p < HALOX_MD_R_COUNT; p++)
        md->rpart[p] = 0;
    for (int k = 0; k < 4; k++)
        md->rbudget[k] = 0;
    md->rebuilds = 0;
    md->device_rebuilds = 0;
    md->migrated = 0;
    md->max_hops = 0;
    md->setup_seconds = md__now() - t_start - md->eq_seconds;
    *md_p = md;
    return HALOX_OK;
}

long long halox_md_step(const halox_md_t *md) { return md->step; }
long long halox_md_natoms(const halox_md_t *md) { return md->natoms; }
halox_box_t halox_md_box(const halox_md_t *md) { return md->box; }
int halox_md_interrupted(const halox_md_t *md) { return md->interrupted; }

int halox_md_at_boundary(const halox_md_t *md)
{
    /* every multiple of K: without the rebuild check the next step rebuilds there anyway; with
     * it the step after a checkpoint rebuilds (md__rebuild_due), as a restart from it does */
    return md->force_rebuild || md->step % md->cfg.rebuild_every == 0;
}

halox_status_t halox_md_write_checkpoint(halox_md_t *md, const char *path)
{
    if (!path)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "checkpoint: no file name");
    if (!halox_md_at_boundary(md))
        return halox_set_error(HALOX_ERR_STATE,
                               "step %lld is not a rebuild boundary (a multiple of rebuild-every "
                               "%d): a restart from here would not continue bit-identically",
                               md->step, md->cfg.rebuild_every);
    halox_status_t st = md__be_to_host(md, 1);
    /* a blown-up state never replaces the last good checkpoint */
    if (st == HALOX_OK)
        st = md__state_check(md, "the checkpoint", 1, NULL);
    if (st == HALOX_OK)
        st = md__checkpoint_write(md, path);
    if (st == HALOX_OK) {
        md->checkpoints++;
        md->checkpoint_step = md->step;
        md->ckpt_rebuild = 1;
    }
    return st;
}

/* One step. */
static halox_status_t md__step(halox_md_t *md)
{
    const halox_md_config_t *c = &md->cfg;
    long long s = md->step + 1;
    int rebuild = md__rebuild_due(md, s);
    halox_status_t st;
    /* the platform's step: kick, drift, the rebuild (when due or when its displacement check
     * asks), forces with the exchanges, kick, thermostat */
    const int thermo = md__thermo_step(md, s);
    if ((st = md->be->step(md, s, rebuild)) != HALOX_OK)
        return st;

    /* the rest is "other": the summary counts it as loop time not spent in the named parts */
    if (thermo && (st = md__thermo_output(md)) != HALOX_OK)
        return st;
    if (c->xyz_path && ((c->xyz_every > 0 && s % c->xyz_every == 0) || s == c->steps)) {
        if ((st = md__be_to_host(md, 1)) != HALOX_OK)
            return st;
        if ((st = md__state_check(md, "the trajectory frame", 0, NULL)) != HALOX_OK)
            return st;
        if ((st = md__xyz_frame(md)) != HALOX_OK)
            return st;
    }

    /* rebuild boundary: stop requests and checkpoints */
    if (halox_md_at_boundary(md)) {
        int stop = 0;
        if (md->hooks.stop) {
            /* ranks that share a process (threads) share the flag: rank 0 reads it for them */
            halox_transport_caps_t caps;
            halox_transport_caps(halox_comm_transport(md->comm), &caps);
            int reader = md->rank == 0 || !caps.threads;
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
    md->until = last;
    double t0 = md__now();
    halox_status_t st = HALOX_OK;
    long long done = 0;
    while (md->step < last) {
        st = md__step(md);
        if (st != HALOX_OK)
            break;
        done++;
        if (md->rank == 0 && md->hooks.progress)
            md->hooks.progress(md->hooks.user, md->step, md->cfg.steps, md__now() - t0);
        if (md->interrupted)
            break;
    }
    if (st == HALOX_OK) /* the loop time includes the device's last steps */
        st = md__be_flush_timers(md);
    md->loop_seconds += md__now() - t0;
    md->loop_steps += done;
    md->have_summary = 0;
    return st;
}

halox_status_t halox_md_summary(halox_md_t *md, halox_md_summary_t *summary_p)
{
    halox_md_summary_t s;
    memset(&s, 0, sizeof s);
    enum { NT = HALOX_MD_T_COUNT };
    long long stale = -1;
    halox_status_t gst = md__agree(md, md->be->stats(md, 1, &stale));
    if (gst != HALOX_OK)
        return gst;
    if (stale >= 0)
        stale -= md->eq_stale;
    s.graph_steps = md->graph_steps; /* 0 without graphs */
    s.timed_steps = md->loop_steps - md->graph_steps;
    s.graph_captures = md->graph_captures;
    s.graph_launches = md->graph_launches;
    s.graph_kept = md->graph_kept;
    s.graph_updates = md->graph_updates;
    s.inline_steps = md->inline_steps;
    halox_comm_stats_t cs;
    halox_comm_get_stats(md->comm, &cs);
    enum { NR = HALOX_MD_R_COUNT };
    double sum[NT + 4 + NR + 4], mx[NT + 4];
    /* a graph's steps are timed only as a whole: the step's parts are those of the steps run
     * outside it (rebuilds, energies), scaled to all steps, a sample of the split */
    double tm[NT];
    memcpy(tm, md->timer, sizeof tm);
    const long long timed = md->loop_steps - md->graph_steps;
    if (md->graph_steps > 0 && timed > 0) {
        const int step_parts[] = {HALOX_MD_T_PAIR, HALOX_MD_T_COORDS, HALOX_MD_T_FORCES,
                                  HALOX_MD_T_INTEGRATE};
        for (size_t k = 0; k < sizeof step_parts / sizeof step_parts[0]; k++)
            tm[step_parts[k]] *= (double)md->loop_steps / (double)timed;
    }
    /* "other" is what the named parts leave of this rank's loop time (thermo, output,
     * checkpoints, checks, waiting), so the parts add up to the wall time */
    double named = 0;
    for (int t = 0; t < NT; t++)
        if (t != HALOX_MD_T_OTHER)
            named += tm[t];
    tm[HALOX_MD_T_OTHER] = md->loop_seconds > named ? md->loop_seconds - named : 0.0;
    for (int t = 0; t < NT; t++)
        sum[t] = mx[t] = tm[t];
    sum[NT] = (double)md->migrated;
    sum[NT + 1] = (double)(md->atoms.n_total - md->atoms.n_home);
    sum[NT + 2] = (double)md->nl.npairs;
    /* the run's, not the probe's or the equilibration's */
    sum[NT + 3] = (double)(cs.bytes_sent - md->ovl_bytes - md->eq_bytes);
    for (int p = 0; p < NR; p++)
        sum[NT + 4 + p] = md->rpart[p];
    for (int k = 0; k < 4; k++)
        sum[NT + 4 + NR + k] = md->rbudget[k];
    mx[NT] = md->max_hops;
    mx[NT + 1] = md->loop_seconds;
    mx[NT + 2] = (double)cs.device_bytes;
    mx[NT + 3] = (double)stale;
    halox_status_t st = halox_comm_allreduce_sum(md->comm, sum, NT + 4 + NR + 4);
    if (st == HALOX_OK)
        st = halox_comm_allreduce_max(md->comm, mx, NT + 4);
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
    s.device_rebuilds = md->device_rebuilds;
    for (int p = 0; p < NR; p++)
        s.rebuild_seconds[p] = sum[NT + 4 + p] / md->nranks;
    s.rebuild_collectives = sum[NT + 4 + NR] / md->nranks;
    s.rebuild_collective_seconds = sum[NT + 4 + NR + 1] / md->nranks;
    s.rebuild_waits = sum[NT + 4 + NR + 2] / md->nranks;
    s.rebuild_wait_seconds = sum[NT + 4 + NR + 3] / md->nranks;
    s.migrated = (long long)sum[NT];
    s.max_hops = (int)mx[NT];
    s.stale_steps = (long long)mx[NT + 3];
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
    /* the end of the run: its summary and JSON report this state */
    if (st == HALOX_OK)
        st = md__be_to_host(md, 0);
    if (st == HALOX_OK)
        st = md__state_check(md, "the end of the run", 0, NULL);
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
            return halox_set_error(HALOX_ERR_STATE,
                                   "no forces yet after the restart at step %lld: run a step first",
                                   md->step);
        /* recompute with the same list and positions: the same force bits as before */
        halox_status_t st = md->be->forces(md, 1, 1);
        if (st != HALOX_OK)
            return st;
    }
    halox_status_t gst = md__be_to_host(md, 0);
    if (gst != HALOX_OK)
        return gst;
    return md__thermo_compute(md, rec_p);
}

const halox_md_thermo_t *halox_md_thermo_records(const halox_md_t *md, int *count_p)
{
    if (count_p)
        *count_p = md->rank == 0 ? md->nrec : 0;
    return md->rank == 0 ? md->rec : NULL;
}

void halox_md_destroy(halox_md_t *md)
{
    if (!md)
        return;
    if (md->csv)
        fclose(md->csv);
    if (md->xyz)
        fclose(md->xyz);
    if (md->be) /* NULL: create failed before choosing one */
        md->be->destroy(md);
    halox_atoms_free(&md->atoms);
    free(md->zone);
    halox_plan_free(&md->plan);
    free(md->f);
    free(md->rec);
    free(md);
}
