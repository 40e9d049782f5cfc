/* Thermodynamic output: reduction of (KE of the home atoms, PE, virial) over the ranks in rank
 * order (every rank gets the same bits), and the record LAMMPS would print:
 *   temp  = 2 KE / Nf with Nf = 3N - 3
 *   pe    = PE / N (+ tail correction per atom)
 *   ke    = KE / N, etotal = pe + ke
 *   press = (Nf T + W) / (3 V) = (2 KE + W) / (3 V) (+ tail correction)
 * Reductions happen only on thermo steps (and every step for the NVT thermostat). */
#include <stdlib.h>

#include "engine/md_internal.h"
#include "halox/status.h"

halox_status_t md__thermo_compute(halox_md_t *md, halox_md_thermo_t *rec)
{
    if (!md->have_energy || md->energy_step != md->step)
        return halox_set_error(HALOX_ERR_STATE,
                               "thermo at step %lld: energies were not computed for this step",
                               md->step);
    double v[3] = {md__kinetic_local(md), md->pe_local, md->vir_local};
    halox_status_t st = halox_comm_allreduce_sum(md->comm, v, 3);
    if (st != HALOX_OK)
        return st;
    double n = (double)md->natoms;
    rec->step = md->step;
    rec->time = (double)md->step * md->cfg.dt;
    rec->temp = md->dof > 0 ? 2.0 * v[0] / md->dof : 0.0;
    rec->ke = v[0] / n;
    rec->pe = v[1] / n + md->e_tail;
    rec->etotal = rec->pe + rec->ke;
    rec->press = (2.0 * v[0] + v[2]) / (3.0 * md->volume) + md->p_tail;
    return HALOX_OK;
}

/* Keep the record (rank 0), write its CSV row and hand it to the hook. */
halox_status_t md__record_thermo(halox_md_t *md, const halox_md_thermo_t *rec)
{
    if (md->rank != 0)
        return HALOX_OK;
    if (md->nrec == md->rec_cap) {
        int cap = md->rec_cap ? 2 * md->rec_cap : 64;
        halox_md_thermo_t *q = realloc(md->rec, sizeof *q * (size_t)cap);
        if (!q)
            return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for thermo records");
        md->rec = q;
        md->rec_cap = cap;
    }
    md->rec[md->nrec++] = *rec;
    if (md->hooks.thermo)
        md->hooks.thermo(md->hooks.user, rec);
    return md__csv_row(md, rec);
}
