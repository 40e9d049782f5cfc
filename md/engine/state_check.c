/* The physics check of the state before anything is written from it: thermo rows, trajectory
 * frames, checkpoints, and the end of the run (engine.c). The rebuild's speed check (step.c)
 * runs only at rebuilds, so a state that blew up since the last one would otherwise be written
 * as a result: a checkpoint over the last good one, a thermo row of a temperature no physics
 * reaches, a NaN state that the checkpoint reader refuses. The check reads what the output
 * brings to the host anyway (once per output, never per step) with the blow-up bound of the
 * rebuild's check (integrate.c): finite positions, velocities and (for checkpoints) forces, no
 * atom faster than the bound, none farther outside the box than the bound lets it travel since
 * the last rebuild, finite energies. Collective: every rank fails when one finds a fault. */
#include <math.h>
#include <stdio.h>

#include "engine/md_internal.h"
#include "halox/status.h"

/* This rank's home atoms. */
static halox_status_t md__state_local(halox_md_t *md, int forces, const char *what)
{
    static const char *const dim = "xyz";
    const halox_atoms_t *a = &md->atoms;
    const double *box = md->box.len;
    const double vmax = md__speed_limit(box, md->cfg.dt);
    const long long since = md->step - md->last_rebuild;
    const double out = md__outside_limit(box, since);
    for (int i = 0; i < a->n_home; i++) {
        const int id = a->id[i];
        double v2 = 0;
        for (int d = 0; d < 3; d++) {
            const size_t k = 3 * (size_t)i + (size_t)d;
            const double x = md__atom_coord(a, i, d), v = md__real_at(a->extra, a->real, k);
            const double f = forces ? md__real_at(md->f, a->real, k) : 0.0;
            if (!isfinite(x) || !isfinite(v) || !isfinite(f))
                return halox_set_error(HALOX_ERR_COORDINATE,
                                       "step %lld: the system blew up: atom id %d has a %s that is "
                                       "not a number (%c = %g), found before %s: nothing is "
                                       "written from this state; use a smaller time step (--dt), "
                                       "or start from a configuration without overlaps",
                                       md->step, id,
                                       !isfinite(x)   ? "position"
                                       : !isfinite(v) ? "velocity"
                                                      : "force",
                                       dim[d],
                                       !isfinite(x)   ? x
                                       : !isfinite(v) ? v
                                                      : f,
                                       what);
            if (!(x >= -out && x <= box[d] + out))
                return halox_set_error(
                    HALOX_ERR_COORDINATE,
                    "step %lld: the system blew up: atom id %d is at %c = %g, "
                    "more than %g outside the box (0 to %g): farther than an "
                    "atom moving at most half the box per step gets in the %lld "
                    "step(s) since the last rebuild, found before %s: nothing "
                    "is written from this state; use a smaller time step (--dt), "
                    "or start from a configuration without overlaps",
                    md->step, id, dim[d], x, out, box[d], since > 1 ? since : 1, what);
            v2 += v * v;
        }
        if (!(sqrt(v2) < vmax)) {
            char who[32];
            snprintf(who, sizeof who, "atom id %d", id);
            return md__blown_up(md, who, sqrt(v2), what);
        }
    }
    return HALOX_OK;
}

halox_status_t md__state_check(halox_md_t *md, const char *what, int forces,
                               const halox_md_thermo_t *rec)
{
    if (md->checked_step == md->step && (md->checked_forces || !forces))
        return HALOX_OK; /* this state passed already, before an earlier output of its step */
    halox_status_t st = md__state_local(md, forces, what);
    /* the same record on every rank (thermo.c reduces it) */
    if (st == HALOX_OK && rec &&
        !(isfinite(rec->temp) && isfinite(rec->pe) && isfinite(rec->ke) && isfinite(rec->press)))
        st = halox_set_error(HALOX_ERR_COORDINATE,
                             "step %lld: the system blew up: its energies are not finite (T %g, "
                             "PE/atom %g, pressure %g), found before %s: nothing is written from "
                             "this state; use a smaller time step (--dt), or start from a "
                             "configuration without overlaps",
                             md->step, rec->temp, rec->pe, rec->press, what);
    st = md__agree(md, st);
    if (st == HALOX_OK) {
        md->checked_forces = md->checked_step == md->step ? md->checked_forces || forces : forces;
        md->checked_step = md->step;
    }
    return st;
}
