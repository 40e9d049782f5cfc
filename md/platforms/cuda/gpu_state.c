/* The GPU back end's device state (gpu_internal.h): create and destroy, CUDA errors, device
 * arrays, the timers' CUDA events (a ring of event sets read a few steps later), bounded waits,
 * the device's positions, velocities and forces back to the host atoms. */
#include "halox/status.h"
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

halox_status_t md__gpu_error(halox_md_t *md, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return halox_set_error(e == cudaErrorMemoryAllocation ? HALOX_ERR_NO_MEMORY
                                                          : HALOX_ERR_INTERNAL,
                           "rank %d, step %lld: GPU engine: %s failed: %s", md->rank, md->step,
                           what, cudaGetErrorString(e));
}

halox_status_t md__dev_grow(halox_md_t *md, void **p, size_t bytes, size_t *have)
{
    if (*p && bytes <= *have)
        return HALOX_OK;
    if (*p)
        cudaFree(*p);
    *p = NULL;
    *have = 0;
    cudaError_t e = cudaMalloc(p, bytes > 0 ? bytes : 16);
    if (e != cudaSuccess) {
        *p = NULL;
        return md__gpu_error(md, e, "cudaMalloc");
    }
    *have = bytes;
    return HALOX_OK;
}

halox_status_t md__gpu_create(halox_md_t *md)
{
    if (md->atoms.real != HALOX_FLOAT)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "the GPU engine runs in single precision: use --precision float (or "
                               "--device cpu for double)");
    void *s = halox_comm_stream(md->comm);
    if (!s)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "the GPU engine needs a GPU transport (mpi-staged, nccl, "
                               "nvshmem-stream/pulse/fused), not '%s'",
                               halox_comm_transport(md->comm));
    /* HALOX_MD_INNER_BUFFER: the inner lists' buffer, by default 5 % of the cut-off */
    double inner = 0.05 * md->cfg.cutoff;
    halox_status_t est = halox_env_number("HALOX_MD_INNER_BUFFER", 0.0, 1e6, inner, &inner);
    if (est != HALOX_OK)
        return est;
    md_gpu_t *g = calloc(1, sizeof *g);
    if (!g)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for the GPU engine");
    g->inner_buffer = inner;
    md->be_state = g;
    /* HALOX_MD_DEVICE_REBUILD: rebuilds on the device (gpu_resident.c) */
    if ((est = halox_env_flag("HALOX_MD_DEVICE_REBUILD", 1, &g->resident)) != HALOX_OK)
        return est;
    /* the rebuilds are collective: every rank must take the same path */
    double on[2] = {g->resident, -g->resident};
    if ((est = halox_comm_allreduce_max(md->comm, on, 2)) != HALOX_OK)
        return est;
    if (on[0] != -on[1])
        return halox_set_error(
            HALOX_ERR_INVALID_ARG,
            "HALOX_MD_DEVICE_REBUILD differs between the ranks (rank %d has %d): "
            "set it alike for every rank (mpirun -x HALOX_MD_DEVICE_REBUILD)",
            md->rank, g->resident);
    /* HALOX_MD_INLINE: the exchange inside the step's kernels on nvshmem-inline (per rank, no
     * agreement: both ways run the same protocol, pulse by pulse) */
    if ((est = halox_env_flag("HALOX_MD_INLINE", 1, &g->inl_allowed)) != HALOX_OK)
        return est;
    /* HALOX_MD_ROW_CHUNK: entries of a non-local row per warp of the pair kernel, a multiple of
     * 32 (rounded up); 0: one warp per row */
    if ((est = halox_env_int("HALOX_MD_ROW_CHUNK", 0, 4096, 64, &g->row_chunk)) != HALOX_OK)
        return est;
    g->row_chunk = (g->row_chunk + 31) / 32 * 32;
    /* the local rows in chunks when they are fewer than MD_GPU_LOCAL_WARPS warps per SM
     * (md_cluster.h: loc_warps) */
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        sms = 0;
    (void)cudaGetLastError();
    g->loc_warps = sms * MD_GPU_LOCAL_WARPS;
    /* HALOX_MD_GRAPH_SPAN: the step's graph kept across rebuilds (gpu_graph.c) */
    if ((est = halox_env_number("HALOX_MD_GRAPH_SPAN", -1.0, 4.0, 0.05, &g->gspan)) != HALOX_OK)
        return est;
    if ((est = md__gpu_timeline_open(md)) != HALOX_OK)
        return est;
    g->ids_fresh = 1;
    g->hi = (cudaStream_t)s;
    /* every kernel of the engine that reads what a bind uploads runs on hi, or on lo behind an
     * event recorded on hi after it: binds need not wait for their uploads (one host wait fewer
     * per rebuild: docs/MD-DESIGN.md#rebuilds-on-the-device) */
    if ((est = halox_comm_set_stream_ordered(md->comm, 1)) != HALOX_OK)
        return est;
    int least = 0, greatest = 0;
    MD_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    MD_CUDA(cudaStreamCreateWithPriority(&g->lo, cudaStreamNonBlocking, least));
    MD_CUDA(cudaEventCreateWithFlags(&g->x_ready, cudaEventDisableTiming));
    MD_CUDA(cudaEventCreateWithFlags(&g->local_done, cudaEventDisableTiming));
    MD_CUDA(cudaEventCreateWithFlags(&g->speeds_ready, cudaEventDisableTiming));
    for (int k = 0; k < MD_GPU_SLOTS; k++)
        for (int j = 0; j < MD_GPU_EVENTS; j++)
            MD_CUDA(cudaEventCreate(&g->slot[k].ev[j]));
    MD_CUDA(cudaMalloc((void **)&g->energy, 5 * sizeof(double)));
    MD_CUDA(cudaMalloc((void **)&g->disp, 3 * sizeof(unsigned)));
    MD_CUDA(cudaMemsetAsync(g->disp, 0, 3 * sizeof(unsigned), g->hi));
    MD_CUDA(cudaMallocHost((void **)&g->h_energy, 5 * sizeof(double)));
    MD_CUDA(cudaHostAlloc((void **)&g->h_disp, sizeof(unsigned), cudaHostAllocMapped));
    MD_CUDA(cudaHostGetDevicePointer((void **)&g->h_disp_dev, g->h_disp, 0));
    for (int k = 0; k < 2; k++)
        MD_CUDA(cudaEventCreateWithFlags(&g->gdone[k], cudaEventDisableTiming));
    g->xv_fresh = g->f_fresh = 1; /* nothing on the device yet: the host is the truth */
    if (md->cfg.graph != HALOX_MD_GRAPH_OFF) {
        /* the transport decides: one that syncs with the host inside an exchange cannot be
         * captured (the check is collective in effect: every rank has the same transport) */
        halox_status_t gst = halox_comm_graph_mode(md->comm, 1);
        halox_comm_graph_mode(md->comm, 0);
        if (gst == HALOX_OK)
            g->graph = 1;
        else if (md->cfg.graph == HALOX_MD_GRAPH_ON)
            md__notice(md, "--graph: %s; running without graphs", halox_last_error());
    }
    return HALOX_OK;
}

void md__gpu_destroy(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (!g)
        return;
    if (g->hi)
        cudaStreamSynchronize(g->hi);
    if (g->lo) {
        cudaStreamSynchronize(g->lo);
        cudaStreamDestroy(g->lo);
    }
    if (g->clock)
        cudaStreamDestroy(g->clock);
    for (int k = 0; k < 2; k++)
        if (g->drain_ev[k])
            cudaEventDestroy(g->drain_ev[k]);
    if (g->gexec)
        cudaGraphExecDestroy(g->gexec);
    if (g->gexec_k)
        cudaGraphExecDestroy(g->gexec_k);
    for (int k = 0; k < 2; k++)
        if (g->gdone[k])
            cudaEventDestroy(g->gdone[k]);
    if (g->x_ready)
        cudaEventDestroy(g->x_ready);
    if (g->local_done)
        cudaEventDestroy(g->local_done);
    if (g->speeds_ready)
        cudaEventDestroy(g->speeds_ready);
    for (int k = 0; k < 2; k++)
        if (g->ovl[k])
            cudaEventDestroy(g->ovl[k]);
    for (int k = 0; k < MD_GPU_SLOTS; k++)
        for (int j = 0; j < MD_GPU_EVENTS; j++)
            if (g->slot[k].ev[j])
                cudaEventDestroy(g->slot[k].ev[j]);
    md__gpu_timeline_end(md);
    md__clusters_free(&g->cl);
    /* collective (the transport's memory): every rank destroys its engine at the end of a run */
    if (g->x)
        halox_comm_device_free(md->comm, g->x);
    if (g->fnl)
        halox_comm_device_free(md->comm, g->fnl);
    void *dev[] = {g->v, g->f, g->zone, g->id, g->energy, g->disp, g->sort_tmp};
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++)
        if (dev[k])
            cudaFree(dev[k]);
    if (g->h_energy)
        cudaFreeHost(g->h_energy);
    if (g->h_disp)
        cudaFreeHost(g->h_disp);
    (void)cudaGetLastError();
    free(g);
    md->be_state = NULL;
}

/* Add the device times of the finished step in slot k to the timers. */
halox_status_t md__gpu_read_slot(halox_md_t *md, int k)
{
    md_gpu_slot_t *sl = &md__gpu(md)->slot[k];
    if (!sl->pending)
        return HALOX_OK;
    MD_CUDA(cudaEventSynchronize(sl->ev[EV_K2]));
    MD_CUDA(cudaEventSynchronize(sl->ev[EV_L1]));
    float ms[5] = {0};
    MD_CUDA(cudaEventElapsedTime(&ms[0], sl->ev[EV_K0], sl->ev[EV_K1]));
    MD_CUDA(cudaEventElapsedTime(&ms[1], sl->ev[EV_F1], sl->ev[EV_K2]));
    MD_CUDA(cudaEventElapsedTime(&ms[2], sl->ev[EV_C0], sl->ev[EV_C1]));
    MD_CUDA(cudaEventElapsedTime(&ms[3], sl->ev[EV_C1], sl->ev[EV_NL1]));
    MD_CUDA(cudaEventElapsedTime(&ms[4], sl->ev[EV_F0], sl->ev[EV_F1]));
    float loc = 0;
    MD_CUDA(cudaEventElapsedTime(&loc, sl->ev[EV_L0], sl->ev[EV_L1]));
    md->timer[HALOX_MD_T_INTEGRATE] += 1e-3 * ((double)ms[0] + (double)ms[1]);
    md->timer[HALOX_MD_T_COORDS] += 1e-3 * (double)ms[2];
    md->timer[HALOX_MD_T_PAIR] += 1e-3 * ((double)ms[3] + (double)loc);
    md->timer[HALOX_MD_T_FORCES] += 1e-3 * (double)ms[4];
    sl->pending = 0;
    return HALOX_OK;
}

void md__gpu_record(md_gpu_t *g, int ev, cudaStream_t s)
{
    if (g->in_step)
        (void)cudaEventRecord(g->slot[g->cur].ev[ev], s);
}

halox_status_t md__gpu_flush_timers(halox_md_t *md)
{
    for (int k = 0; k < MD_GPU_SLOTS; k++) {
        halox_status_t st = md__gpu_read_slot(md, k);
        if (st != HALOX_OK)
            return st;
    }
    return HALOX_OK;
}

/* Poll until the stream (ev NULL) or the event has completed, within the timeout: a peer that
 * never comes (an exchange stuck on the device) ends the run with an error, not a hang. */
static halox_status_t md__gpu_poll(halox_md_t *md, cudaStream_t s, cudaEvent_t ev, const char *what)
{
    double limit;
    halox_status_t st = halox_timeout_resolve(md->cfg.timeout_s, &limit);
    if (st != HALOX_OK)
        return st;
    const double deadline = md__now() + limit;
    for (long polls = 0;; polls++) {
        cudaError_t e = ev ? cudaEventQuery(ev) : cudaStreamQuery(s);
        if (e == cudaSuccess)
            return HALOX_OK;
        if (e != cudaErrorNotReady)
            return md__gpu_error(md, e, what);
        if (md__now() > deadline)
            return halox_set_error(
                HALOX_ERR_TIMEOUT,
                "rank %d, step %lld: %s did not complete within %.0f s: a peer "
                "rank is missing or stuck (the exchanges inside a CUDA graph are "
                "not timed one by one: run with --no-graph to see the pulse and "
                "peer)",
                md->rank, md->step, what, limit);
        if (polls > 1000)
            sched_yield();
    }
}

halox_status_t md__gpu_wait(halox_md_t *md, cudaStream_t s, cudaEvent_t ev, const char *what)
{
    const double t = md__now();
    halox_status_t st = md__gpu_poll(md, s, ev, what);
    md__gpu_waited(md, t);
    return st;
}

void md__gpu_waited(halox_md_t *md, double since)
{
    if (md->in_rebuild) { /* the rebuild's budget (md__rebuild) */
        md->rbudget[2] += 1;
        md->rbudget[3] += md__now() - since;
    }
}

halox_status_t md__gpu_idle(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_wait(md, g->lo, NULL, "the GPU work of the steps so far");
    if (st == HALOX_OK)
        st = md__gpu_wait(md, g->hi, NULL, "the GPU work of the steps so far");
    if (st == HALOX_OK)
        g->gdone_live[0] = g->gdone_live[1] = 0;
    return st;
}

halox_status_t md__gpu_speed_verdict(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    float v2;
    memcpy(&v2, g->h_disp, sizeof v2);
    const double v = sqrt((double)v2);
    if (v < md__speed_limit(md->box.len, md->cfg.dt))
        return HALOX_OK;
    char who[48];
    snprintf(who, sizeof who, "an atom on rank %d", md->rank);
    return md__blown_up(md, who, v, NULL);
}

/* Bring the home positions and velocities (and with forces, the home forces f + fnl) to the
 * host atoms, when the device holds newer ones. */
halox_status_t md__gpu_to_host(halox_md_t *md, int forces)
{
    md_gpu_t *g = md__gpu(md);
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    if (!g->xv_fresh || (forces && !g->f_fresh)) {
        halox_status_t st = md__gpu_idle(md);
        if (st != HALOX_OK)
            return st;
    }
    if (!g->ids_fresh) {
        /* a rebuild on the device moved atoms between ranks: their ids come back too */
        halox_status_t st = halox_atoms_reserve(&md->atoms, md->atoms.n_total + 1);
        if (st != HALOX_OK)
            return st;
        MD_CUDA(cudaMemcpy(md->atoms.id, g->id, sizeof(int32_t) * (size_t)md->atoms.n_home,
                           cudaMemcpyDeviceToHost));
        g->ids_fresh = 1;
    }
    if (!g->xv_fresh) {
        MD_CUDA(cudaMemcpy(md->atoms.x, g->x, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        MD_CUDA(cudaMemcpy(md->atoms.extra, g->v, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        g->xv_fresh = 1;
    }
    if (forces && !g->f_fresh && md->f) {
        /* the last kick gathered every contribution (local, non-local, returned) into f */
        MD_CUDA(cudaMemcpy(md->f, g->f, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        g->f_fresh = 1;
    }
    return HALOX_OK;
}

halox_status_t md__gpu_inline_refresh(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    g->inl_on = 0;
    g->f_sent = 0;
    if (!g->inl_allowed || md->plan.n_pulses == 0)
        return HALOX_OK;
    halox_transport_caps_t caps;
    if (halox_transport_caps(halox_comm_transport(md->comm), &caps) != HALOX_OK ||
        !caps.inline_kernels)
        return HALOX_OK;
    halox_status_t st = halox_comm_inline_view(md->comm, &g->inl);
    if (st == HALOX_OK) {
        g->inl_on = 1;
        return HALOX_OK;
    }
    if (st != HALOX_ERR_UNAVAILABLE)
        return st;
    /* a plan the kernels cannot serve (forwarded atoms): the transport's own exchange kernels */
    if (!g->inl_noted && md->rank == 0)
        md__notice(md, "%s; this run exchanges with the transport's own kernels",
                   halox_last_error());
    g->inl_noted = 1;
    return HALOX_OK;
}
