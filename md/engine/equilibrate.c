/* Equilibration before step 0 (halox_md_config_t.equilibrate).
 *
 * Why: a random start (HALOX_MD_RANDOM) is free of overlaps but far from equilibrium; at the
 * water-density preset's density 0.8 its NVE steps turn potential energy into heat, from T 1.2
 * to about 2.6 within 100 steps, so a benchmark of it would time a system far from its stated
 * state. These steps take the heat out while the structure relaxes, then the run starts there.
 *
 * How: the engine's own step (the platform's step entry, backend.h)
 * with the Bussi thermostat at cfg.temp and a short time constant, HALOX_MD_EQUILIBRATE_TAU_STEPS
 * steps, and the displacement check on (the first steps of a random start move atoms fast: the
 * lists stay valid whatever the rebuild interval). The steps are numbered 1 - N to 0, so the run
 * starts at step 0 where they end and the thermostat's noise streams, keyed by (seed, step), are
 * not those of the run's own NVT steps. At the end the velocities are scaled to exactly
 * cfg.temp, as a fresh start draws them. Nothing of it enters the run's statistics: create
 * zeroes the timers, rebuild and migration counts after it, the summary drops its halo bytes
 * and reports its steps and time apart, and no thermo record, frame or checkpoint is written
 * before step 0's. A restart never gets here: its state comes from the checkpoint. */
#include <limits.h>
#include <math.h>

#include "engine/backend.h"
#include "engine/md_internal.h"

halox_status_t md__equilibrate(halox_md_t *md)
{
    const int n = md->cfg.equilibrate;
    if (n <= 0 || md->cfg.restart_path)
        return HALOX_OK;
    const halox_md_config_t keep = md->cfg;
    halox_md_config_t *c = &md->cfg;
    c->ensemble = HALOX_MD_NVT;
    c->tau = HALOX_MD_EQUILIBRATE_TAU_STEPS * c->dt;
    c->rebuild_check = 1;
    /* energies on the last step only (step 0 is the run's first step, a thermo step) */
    c->thermo_every = INT_MAX;
    md__notice(md,
               "equilibrating: %d steps (%d to 0) of NVT at T %g, tau %g; not timed, not counted",
               n, 1 - n, c->temp, c->tau);
    const double t0 = md__now();
    halox_comm_stats_t cs0, cs1;
    halox_comm_get_stats(md->comm, &cs0);
    halox_status_t st = HALOX_OK;
    /* rebuilds on steps 1, 1 + K, ... as in a run: the first also takes the reference of the
     * displacement check, which the lists of step 0 (built without it) do not have */
    for (int k = 1; k <= n && st == HALOX_OK; k++)
        st = md->be->step(md, (long long)k - n, (k - 1) % c->rebuild_every == 0);
    /* the run starts at exactly T, as a fresh start does */
    double ke = 0;
    if (st == HALOX_OK)
        st = md__agree(md, md->be->kinetic(md, &ke));
    if (st == HALOX_OK)
        st = halox_comm_allreduce_sum(md->comm, &ke, 1);
    const double t_end = md->dof > 0 ? 2.0 * ke / md->dof : 0.0;
    if (st == HALOX_OK && ke > 0) {
        const double alpha = sqrt(0.5 * md->dof * keep.temp / ke);
        st = md->be->scale(md, alpha);
    }
    /* the GPU's step timers are read a few steps late: read them now, before create zeroes
     * them, or the run's first steps would count these */
    if (st == HALOX_OK)
        st = md__be_flush_timers(md);
    /* the run reports its own stale-list steps, not these (a random start moves atoms fast) */
    if (st == HALOX_OK)
        st = md->be->stats(md, 0, &md->eq_stale);
    st = md__agree(md, st);
    md->cfg = keep;
    halox_comm_get_stats(md->comm, &cs1);
    md->eq_bytes += cs1.bytes_sent - cs0.bytes_sent;
    md->eq_steps = n;
    md->eq_seconds = md__now() - t0;
    if (st == HALOX_OK)
        md__notice(md,
                   "equilibrated in %.3g s: T %.5g at its last step, velocities scaled to T %g; "
                   "the run starts at step 0",
                   md->eq_seconds, t_end, keep.temp);
    return st;
}
