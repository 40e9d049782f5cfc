/* The parts of a step on the GPU (gpu_internal.h; the order in gpu_backend.c): kick + drift,
 * forces with the halo exchanges on two streams, the second kick, the kinetic energy, velocity
 * scaling, and one repetition of the overlap probe over the same kernels.
 *
 * The first kick and drift of a step that does not rebuild run inside the home gather of its
 * forces (md__clusters_kick_gather: one pass over the home atoms instead of two).
 *
 * With nvshmem-inline (g->inl_on) the exchanges run inside these kernels instead of the
 * transport's calls: the home gather (with the kick and drift) stores the new positions into
 * the peers' halos and signals; the halo gather waits for ours (and completes the exchange);
 * the halo forces go straight to their owners and signal; the second kick (or, outside a step,
 * the kick that only gathers the forces) waits for the forces returned to us and adds them. */
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>

#include "platforms/cuda/md_kernels.h"

/* f = the slots' forces plus the returned ones (fnl, where the transport's force exchange added
 * them; inline: waited for and added inside the kick), slots and fnl cleared; v += h f when v. */
static cudaError_t md__gpu_take_forces(halox_md_t *md, float *v, float h)
{
    md_gpu_t *g = md__gpu(md);
    const int take = g->f_sent;
    g->f_sent = 0;
    return md__clusters_kick(&g->cl, v, g->f, !take && md->plan.n_pulses > 0 ? g->fnl : NULL, h,
                             take ? &g->inl : NULL, g->hi);
}

static halox_status_t md__gpu_kick_drift_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    g->mid_step = 1;
    if (!g->uploaded) {
        /* first step after a restart: the state (with the checkpoint's forces) is on the host,
         * and this step rebuilds, which uploads it */
        md__kick(md, 0.5 * md->cfg.dt);
        md__drift(md, md->cfg.dt);
        return HALOX_OK;
    }
    if (!g->capturing) {
        g->cur = (int)(g->step_no++ % MD_GPU_SLOTS);
        halox_status_t st = md__gpu_read_slot(md, g->cur);
        if (st != HALOX_OK)
            return st;
        g->in_step = 1;
    }
    md__gpu_record(g, EV_K0, g->hi);
    float dt = (float)md->cfg.dt;
    if (g->kd_exchange) {
        /* no rebuild: the forces' home gather comes next and kicks and drifts each atom on its
         * way (one pass over the home atoms instead of two; nvshmem-inline: it also stores the
         * halo into the peers) */
        g->kick_deferred = 1;
    } else {
        MD_CUDA(md__kernel_kick(g->v, g->f, NULL, g->x, g->n_home, 0.5f * dt, dt, g->hi));
    }
    md__gpu_record(g, EV_K1, g->hi);
    g->xv_fresh = 0;
    return HALOX_OK;
}

halox_status_t md__gpu_kick_drift(halox_md_t *md, int exchange)
{
    md__gpu(md)->kd_exchange = exchange;
    return md__gpu_ranged("halox: kick + drift", md__gpu_kick_drift_body, md);
}

/* The local (home-home) forces on stream s, timed by EV_L0/EV_L1, local_done after them. */
static cudaError_t md__gpu_local_forces(halox_md_t *md, cudaStream_t s, int want_energy)
{
    md_gpu_t *g = md__gpu(md);
    md__gpu_record(g, EV_L0, s);
    cudaError_t e =
        md__clusters_lj(&g->cl, 0, (float)md->rc2, md->eshift, want_energy ? g->energy : NULL, s);
    md__gpu_record(g, EV_L1, s);
    return e == cudaSuccess ? cudaEventRecord(g->local_done, s) : e;
}

/* The forces of the current positions, on either exchange path. The local (home-home) forces run
 * on their own low-priority stream, overlapping the exchange, where there is one (a plan with
 * pulses); without one (one rank: nothing to overlap) they follow the halo forces on hi. They
 * join hi only at the end: the force exchange reads and adds into fnl, which they do not touch,
 * so it overlaps them too. */

/* The start on either path: energy slots zeroed, the home positions into the cluster slots (the
 * list build did it on rebuild steps) after the step's first kick and drift when it was left to
 * this gather (inline_x: also stored into the peers' halos), the local forces started on lo. */
static halox_status_t md__gpu_forces_begin(halox_md_t *md, int coords, int want_energy,
                                           int inline_x, int overlap)
{
    md_gpu_t *g = md__gpu(md);
    const float dt = (float)md->cfg.dt;
    if (want_energy)
        MD_CUDA(cudaMemsetAsync(g->energy, 0, 4 * sizeof(double), g->hi));
    if (g->kick_deferred && !coords) /* (never: a deferred kick precedes a coordinate step) */
        MD_CUDA(md__kernel_kick(g->v, g->f, NULL, g->x, g->n_home, 0.5f * dt, dt, g->hi));
    if (coords) {
        const int kick = g->kick_deferred, take = kick && g->take_deferred;
        g->take_deferred = 0;
        MD_CUDA(md__clusters_kick_gather(&g->cl, kick ? g->v : NULL, g->f, g->x, g->zone, 0.5f * dt,
                                         dt, take, inline_x ? &g->inl : NULL, g->hi));
        if (g->cl.ncl == g->cl.ncl_home)
            g->gathers++; /* the step's displacements are final after the home part */
    }
    g->kick_deferred = 0;
    if (overlap) {
        MD_CUDA(cudaEventRecord(g->x_ready, g->hi));
        MD_CUDA(cudaStreamWaitEvent(g->lo, g->x_ready, 0));
        MD_CUDA(md__gpu_local_forces(md, g->lo, want_energy));
    }
    g->f_fresh = 0;
    md__gpu_record(g, EV_C0, g->hi);
    return HALOX_OK;
}

/* The halo positions into the cluster slots (inline: after waiting for them, also without halo
 * atoms, which completes the exchange), then the non-local forces (pairs with halo atoms). */
static halox_status_t md__gpu_forces_halo(halox_md_t *md, int coords, int want_energy, int inline_x)
{
    md_gpu_t *g = md__gpu(md);
    const int halo = g->cl.ncl > g->cl.ncl_home;
    /* the coordinate part ends with the transport's exchange, or inline with the wait inside
     * the halo gather */
    if (!inline_x)
        md__gpu_record(g, EV_C1, g->hi);
    if (coords && (halo || inline_x)) {
        MD_CUDA(md__clusters_gather(&g->cl, g->x, g->zone, 1, inline_x ? &g->inl : NULL, g->hi));
        g->gathers += halo;
    }
    if (inline_x)
        md__gpu_record(g, EV_C1, g->hi);
    MD_CUDA(md__clusters_lj(&g->cl, 1, (float)md->rc2, md->eshift,
                            want_energy ? g->energy + 2 : NULL, g->hi));
    md__gpu_record(g, EV_NL1, g->hi);
    md__gpu_record(g, EV_F0, g->hi);
    return HALOX_OK;
}

/* The end on either path: the local forces where they did not overlap, the join, the energies
 * read back (a host sync) into pe_local and vir_local with want_energy. */
static halox_status_t md__gpu_forces_end(halox_md_t *md, int want_energy, int overlap)
{
    md_gpu_t *g = md__gpu(md);
    md__gpu_record(g, EV_F1, g->hi);
    if (!overlap)
        MD_CUDA(md__gpu_local_forces(md, g->hi, want_energy));
    MD_CUDA(cudaStreamWaitEvent(g->hi, g->local_done, 0));
    if (want_energy) {
        MD_CUDA(cudaMemcpyAsync(g->h_energy, g->energy, 4 * sizeof(double), cudaMemcpyDeviceToHost,
                                g->hi));
        MD_CUDA(cudaStreamSynchronize(g->hi));
        md->pe_local = g->h_energy[0] + g->h_energy[2];
        md->vir_local = g->h_energy[1] + g->h_energy[3];
        md->have_energy = 1;
        md->energy_step = md->step;
    } else {
        md->have_energy = 0;
    }
    return HALOX_OK;
}

/* Forces with the transport's exchanges (halox_comm_coords, halox_comm_forces) on hi, or with
 * none (exchange 0: the overlap probe's "local" part, the same kernels on the same streams, so it
 * times exactly what the exchanges overlap with). A plan without pulses (one rank, periodic by
 * shifts) exchanges nothing: no calls. */
static halox_status_t md__gpu_forces_transport(halox_md_t *md, int coords, int want_energy,
                                               int exchange)
{
    md_gpu_t *g = md__gpu(md);
    const int pulses = md->plan.n_pulses > 0;
    halox_status_t st = md__gpu_forces_begin(md, coords, want_energy, 0, pulses);
    if (st != HALOX_OK)
        return st;
    if (coords && exchange && pulses) {
        nvtxRangePushA("halox: coordinate exchange");
        st = halox_comm_coords(md->comm);
        nvtxRangePop();
        if (st != HALOX_OK)
            return st;
    }
    if ((st = md__gpu_forces_halo(md, coords, want_energy, 0)) != HALOX_OK)
        return st;
    /* the halo atoms' forces into fnl, where the force exchange takes them to their owners */
    MD_CUDA(md__clusters_halo_forces(&g->cl, g->fnl, NULL, g->hi));
    if (exchange && pulses) {
        nvtxRangePushA("halox: force exchange");
        st = halox_comm_forces(md->comm);
        nvtxRangePop();
        if (st != HALOX_OK)
            return st;
    }
    return md__gpu_forces_end(md, want_energy, pulses);
}

/* Forces with nvshmem-inline's exchanges inside the kernels (the file's comment); a plan with
 * pulses. probe: the overlap probe's "both" part, whose returned forces are waited for on hi
 * before the join, as the other transports' halox_comm_forces waits for them; a step's kick
 * waits inside itself after the join instead, a kernel it runs anyway. */
static halox_status_t md__gpu_forces_inline(halox_md_t *md, int coords, int want_energy, int probe)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_forces_begin(md, coords, want_energy, coords, 1);
    if (st == HALOX_OK)
        st = md__gpu_forces_halo(md, coords, want_energy, coords);
    if (st != HALOX_OK)
        return st;
    /* the halo atoms' forces straight to their owners; the kick takes ours */
    nvtxRangePushA("halox: force exchange");
    cudaError_t e = md__clusters_halo_forces(&g->cl, g->fnl, &g->inl, g->hi);
    nvtxRangePop();
    MD_CUDA(e);
    g->f_sent = 1;
    if (g->capturing) {
        g->graph_inline = 1; /* a graph's replays are counted by halox_comm_graph_replayed */
    } else {
        if (g->mid_step && md->step > 0) /* the run's steps (the equilibration's are <= 0) */
            g->inline_steps++;
        if ((st = halox_comm_inline_enqueued(md->comm, coords)) != HALOX_OK)
            return st;
    }
    if (probe) {
        if ((st = halox_inline_launch_wait(&g->inl, 1, g->hi)) != HALOX_OK)
            return st;
        g->f_sent = 0;
    }
    return md__gpu_forces_end(md, want_energy, 1);
}

/* The forces of a step or outside one (g->inl_on: inline where the plan has pulses). */
static halox_status_t md__gpu_forces_step(halox_md_t *md, int coords, int want_energy)
{
    if (md__gpu(md)->inl_on && md->plan.n_pulses > 0)
        return md__gpu_forces_inline(md, coords, want_energy, 0);
    return md__gpu_forces_transport(md, coords, want_energy, 1);
}

halox_status_t md__gpu_forces(halox_md_t *md, int coords, int want_energy)
{
    nvtxRangePushA("halox: forces and halo exchanges");
    halox_status_t st = md__gpu_forces_step(md, coords, want_energy);
    nvtxRangePop();
    md_gpu_t *g = md__gpu(md);
    if (st == HALOX_OK && !g->mid_step) {
        /* no second kick follows (step 0, a recomputation for the thermo): the forces go to f
         * now, where the next step's first half kick reads them, and the slots are left clear
         * for that step's forces (which accumulate into them) */
        MD_CUDA(md__gpu_take_forces(md, NULL, 0.0f));
    }
    return st;
}

static halox_status_t md__gpu_kick_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    /* f = the slots' forces (+ what the force exchange returned, when the plan has pulses: other
     * ranks hold images of our atoms), then v += dt/2 f */
    MD_CUDA(md__gpu_take_forces(md, g->v, 0.5f * (float)md->cfg.dt));
    md__gpu_record(g, EV_K2, g->hi);
    if (g->in_step)
        g->slot[g->cur].pending = 1;
    g->in_step = 0;
    g->mid_step = 0;
    g->xv_fresh = 0;
    return HALOX_OK;
}

halox_status_t md__gpu_kick(halox_md_t *md)
{
    return md__gpu_ranged("halox: kick", md__gpu_kick_body, md);
}

/* The step's end without its kernel: the next step's home gather takes the forces and kicks
 * (md__clusters_kick_gather with take: one kernel for the two kicks, the drift and the gather).
 * Only where nothing comes back from other ranks and the next step gathers (a plain step of a
 * multi-step capture: gpu_graph.c). */
halox_status_t md__gpu_kick_deferred(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (md->plan.n_pulses > 0 || g->f_sent || !g->capturing)
        return halox_set_error(HALOX_ERR_INTERNAL,
                               "a force kick left to the next gather outside a one-rank capture");
    g->take_deferred = 1;
    g->in_step = 0;
    g->mid_step = 0;
    g->xv_fresh = 0;
    return HALOX_OK;
}

halox_status_t md__gpu_kinetic(halox_md_t *md, double *ke_p)
{
    md_gpu_t *g = md__gpu(md);
    MD_CUDA(cudaMemsetAsync(g->energy + 4, 0, sizeof(double), g->hi));
    MD_CUDA(md__kernel_kinetic(g->v, g->n_home, g->energy + 4, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_energy + 4, g->energy + 4, sizeof(double), cudaMemcpyDeviceToHost,
                            g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    *ke_p = g->h_energy[4];
    return HALOX_OK;
}

halox_status_t md__gpu_scale(halox_md_t *md, double alpha)
{
    md_gpu_t *g = md__gpu(md);
    MD_CUDA(md__kernel_scale(g->v, g->n_home, (float)alpha, g->hi));
    g->xv_fresh = 0;
    return HALOX_OK;
}

/* One repetition of the overlap probe (overlap.c) on the current state, between two events on
 * the hi stream: the lo stream starts after the first (it waits for x_ready, recorded after it)
 * and joins hi before the second (local_done), so the span covers both streams. Waited for here,
 * so the host barrier before the next repetition lines the ranks up on the device too. */
halox_status_t md__gpu_overlap_rep(halox_md_t *md, int kind, double *ms_p)
{
    md_gpu_t *g = md__gpu(md);
    *ms_p = 0;
    for (int k = 0; k < 2; k++)
        if (!g->ovl[k])
            MD_CUDA(cudaEventCreate(&g->ovl[k]));
    MD_CUDA(cudaEventRecord(g->ovl[0], g->hi));
    nvtxRangePushA("halox: overlap probe");
    halox_status_t st;
    if (kind == MD_OVL_HALO) {
        st = halox_comm_coords(md->comm);
        if (st == HALOX_OK)
            st = halox_comm_forces(md->comm);
    } else if (kind == MD_OVL_BOTH && g->inl_on && md->plan.n_pulses > 0) {
        st = md__gpu_forces_inline(md, 1, 0, 1);
    } else {
        st = md__gpu_forces_transport(md, 1, 0, kind == MD_OVL_BOTH);
    }
    nvtxRangePop();
    if (st != HALOX_OK)
        return st;
    MD_CUDA(cudaEventRecord(g->ovl[1], g->hi));
    /* the repetitions' forces feed no kick: clear them, and what the exchange returned */
    MD_CUDA(md__clusters_clear_forces(&g->cl, g->hi));
    MD_CUDA(cudaMemsetAsync(g->fnl, 0,
                            sizeof(float) * 3 * (size_t)(g->n_total > 0 ? g->n_total : 1), g->hi));
    st = md__gpu_wait(md, NULL, g->ovl[1], "a repetition of the overlap probe");
    if (st != HALOX_OK)
        return st;
    float ms = 0;
    MD_CUDA(cudaEventElapsedTime(&ms, g->ovl[0], g->ovl[1]));
    *ms_p = (double)ms;
    return HALOX_OK;
}
