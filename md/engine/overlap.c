/* The overlap probe (cfg.overlap_probe; halox-bench overlap, halox-md --overlap-probe): how much
 * of the halo exchange a step hides behind its force work.
 *
 * After the run's last step (the system set up, the plan bound, the halo current) it times R
 * repetitions, on the same ranks, of three kinds of work:
 *   local: the step's force work without any exchange (GPU: the local pair forces on the low-
 *          priority stream and the non-local ones on the high-priority stream; CPU: the pairs);
 *   halo:  halox_comm_coords() + halox_comm_forces() alone;
 *   both:  the step's real sequence (GPU: the exchanges overlap the local forces; CPU: coordinate
 *          exchange, pairs, force exchange, one after the other).
 * Each timed piece follows a host barrier; the three kinds take turns within a repetition, so a
 * machine that slows down during the probe slows all three alike. Per kind the summary reports
 * the median over the repetitions of the slowest rank, and overlap % = 100 (halo + local - both)
 * / halo. Each back end times its own pieces (backend.h: overlap_rep; the CPU's with the host
 * clock, the GPU's between CUDA events). The CPU engine does not overlap: expect about 0, or
 * below (each piece pays the barrier and cold caches on its own).
 *
 * Repeating these pieces leaves wrong forces behind (a lone force exchange adds the halo rows into
 * the home rows once more), so the probe ends with one more "both": the forces recomputed as the
 * step computed them (same lists, positions and summation order: the same bits), and puts back
 * the energies of the last step and the byte count, so what follows (JSON, gather, thermo) sees
 * the run as it was without the probe. */
#include <stdlib.h>
#include <string.h>

#include "engine/backend.h"
#include "engine/md_internal.h"
#include "halox/status.h"

enum { MD_OVL_WARMUP = 2 };

static halox_status_t md__overlap_rep(halox_md_t *md, int kind, double *ms_p)
{
    halox_status_t st = halox_comm_barrier(md->comm);
    if (st != HALOX_OK)
        return st;
    return md->be->overlap_rep(md, kind, ms_p); /* the back end's pieces and clock */
}

static int md__cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0], v[stride], ... (n values); sorts scratch. */
static double md__median(const double *v, int n, int stride, double *scratch)
{
    for (int i = 0; i < n; i++)
        scratch[i] = v[(size_t)i * (size_t)stride];
    qsort(scratch, (size_t)n, sizeof *scratch, md__cmp_double);
    return n % 2 ? scratch[n / 2] : 0.5 * (scratch[n / 2 - 1] + scratch[n / 2]);
}

halox_status_t md__overlap_probe(halox_md_t *md)
{
    const int R = md->cfg.overlap_probe;
    if (R <= 0)
        return HALOX_OK;
    if (md->force_rebuild) { /* a restart that ran no step: no plan, lists or forces yet */
        md__notice(md, "overlap probe skipped: no step ran after the restart at step %lld",
                   md->step);
        return HALOX_OK;
    }
    /* the steps still queued on the GPU (graphs included) are not part of the probe */
    halox_status_t st = md__be_idle(md);
    if (st != HALOX_OK)
        return st;
    /* t[MD_OVL_KINDS * r + kind]: this rank's ms, then the slowest rank's */
    double *t = malloc(sizeof(double) * MD_OVL_KINDS * (size_t)R);
    double *scratch = malloc(sizeof(double) * (size_t)R);
    st = md__agree(md, t && scratch ? HALOX_OK
                                    : halox_set_error(HALOX_ERR_NO_MEMORY,
                                                      "no memory for %d overlap repetitions", R));
    const int have_energy = md->have_energy;
    const long long energy_step = md->energy_step;
    const double pe = md->pe_local, vir = md->vir_local;
    halox_comm_stats_t cs0;
    halox_comm_get_stats(md->comm, &cs0);
    double ms = 0;
    for (int r = -MD_OVL_WARMUP; r < R && st == HALOX_OK; r++)
        for (int k = 0; k < MD_OVL_KINDS && st == HALOX_OK; k++) {
            st = md__overlap_rep(md, k, &ms);
            if (r >= 0)
                t[MD_OVL_KINDS * r + k] = ms;
        }
    /* the forces of the last step again, then its energies (want_energy = 0 cleared them) */
    if (st == HALOX_OK)
        st = md__overlap_rep(md, MD_OVL_BOTH, &ms);
    md->have_energy = have_energy;
    md->energy_step = energy_step;
    md->pe_local = pe;
    md->vir_local = vir;
    halox_comm_stats_t cs1;
    halox_comm_get_stats(md->comm, &cs1);
    md->ovl_bytes += cs1.bytes_sent - cs0.bytes_sent;
    st = md__agree(md, st);
    /* the slowest rank of each repetition and kind */
    if (st == HALOX_OK)
        st = halox_comm_allreduce_max(md->comm, t, MD_OVL_KINDS * R);
    if (st == HALOX_OK) {
        md->ovl_reps = R;
        for (int k = 0; k < MD_OVL_KINDS; k++)
            md->ovl_ms[k] = md__median(t + k, R, MD_OVL_KINDS, scratch);
    }
    free(t);
    free(scratch);
    return st;
}
