/* --graph on the GPU (gpu_internal.h): the plain step (kick + drift, forces with both exchanges,
 * kick) captured as a CUDA graph and launched, the host at most two launches ahead.
 *
 * Where the graph outlives rebuilds and no exchange runs (one rank, periodic by shifts), a
 * second graph holds MD_GPU_GRAPH_STEPS plain steps: the engine launches it when that many steps
 * ahead need nothing of the host (md__plain_steps: no energies, output, rebuild boundary but the
 * last) and the watch says the lists last them (md__gpu_watch's horizon), so the GPU runs them
 * back to back, without the gap between two launches. What bounds the count: the next thermo
 * step, frame, checkpoint boundary or rebuild; the watch's prediction, which grows with it
 * (a longer horizon rebuilds a little earlier); and the host's lead (two launches).
 *
 * A rebuild changes the counts, and may move arrays. With HALOX_MD_GRAPH_SPAN >= 0 the step
 * kernels read the counts on the device and their grids span the capture's counts plus that
 * head-room (md_clusters_span_t), so the graph outlives the rebuild when the new counts fit and
 * everything else it took as values is unchanged (md_gpu_graph_key_t); else it is captured again
 * (the executable updated where the exchange allows). Only where the exchange takes nothing of the
 * plan as values: no pulse (one rank, periodic by shifts), or nvshmem-inline, whose kernels read
 * the bound plan from device memory; the separate-kernel transports' captured exchanges take the
 * pulses' counts as launch arguments, so they are captured after every rebuild. */
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>
#include <string.h>

int md__gpu_graph_ready(const halox_md_t *md)
{
    return md__gpu(md) && md__gpu(md)->graph && md__gpu(md)->uploaded;
}

/* The launch before the last has completed, within the timeout: the host runs at most two steps
 * ahead and a peer that never comes ends the run with an error instead of a hang. */
static halox_status_t md__gpu_graph_wait(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    const int k = g->gslot;
    if (!g->gdone_live[k])
        return HALOX_OK;
    halox_status_t st =
        md__gpu_wait(md, NULL, g->gdone[k], "the CUDA graph of the step before the previous one");
    if (st == HALOX_OK)
        g->gdone_live[k] = 0;
    return st;
}

/* May a new capture update the executable (cudaGraphExecUpdate: the same kernels with new
 * arguments, no instantiation)? When there is one and the capture holds no
 * exchange, or one that owns nothing in the graph (NCCL's captured collectives own their plans
 * through the graph: moving an executable to another capture's arguments would leave it using
 * what that capture's graph frees). */
static int md__gpu_graph_updatable(const halox_md_t *md)
{
    const md_gpu_t *g = md__gpu(md);
    if (!g->gexec)
        return 0;
    if (md->plan.n_pulses == 0)
        return 1;
    halox_transport_caps_t caps;
    return halox_transport_caps(halox_comm_transport(md->comm), &caps) == HALOX_OK &&
           caps.graph_update;
}

/* The executable of a new capture: gexec updated to it when allowed and the kernels line up
 * (the launches of gexec have completed: a rebuild drains the stream before it), else a new
 * instantiation. */
static halox_status_t md__gpu_graph_exec(halox_md_t *md, cudaGraph_t graph, cudaGraphExec_t *exec)
{
    md_gpu_t *g = md__gpu(md);
    if (*exec && md__gpu_graph_updatable(md)) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(*exec, graph, &info) == cudaSuccess) {
            g->graph_updates++;
            return HALOX_OK;
        }
        (void)cudaGetLastError(); /* another shape (the plan's pulses changed): instantiate */
    }
    if (*exec)
        cudaGraphExecDestroy(*exec);
    *exec = NULL;
    cudaError_t e = cudaGraphInstantiate(exec, graph, 0);
    if (e != cudaSuccess) {
        *exec = NULL;
        return md__gpu_error(md, e, "cudaGraphInstantiate");
    }
    return HALOX_OK;
}

/* May the graph outlive rebuilds (see the top of the file)? */
static int md__gpu_graph_keepable(const halox_md_t *md)
{
    const md_gpu_t *g = md__gpu(md);
    return g->gspan >= 0 && (md->plan.n_pulses == 0 || g->inl_on);
}

int md__gpu_graph_multi(const halox_md_t *md)
{
    return md__gpu_graph_ready(md) && md->plan.n_pulses == 0 && md__gpu_graph_keepable(md);
}

static void md__gpu_graph_key(const halox_md_t *md, md_gpu_graph_key_t *k)
{
    const md_gpu_t *g = md__gpu(md);
    memset(k, 0, sizeof *k);
    md__clusters_step_key(&g->cl, &k->cl);
    const void *p[] = {g->x, g->v, g->f, g->fnl, g->zone, g->energy};
    memcpy(k->ptr, p, sizeof p);
    if (g->inl_on) {
        memcpy(&k->inl, &g->inl, sizeof k->inl); /* zeroed padding: halox_comm_inline_view */
        k->inl.n_home = 0;
    }
    const int iv[] = {md->plan.n_pulses, g->inl_on};
    memcpy(k->iv, iv, sizeof iv);
}

/* After a rebuild: does the graph still hold (the counts fit its spans, the key is unchanged)? */
static int md__gpu_graph_holds(const halox_md_t *md)
{
    const md_gpu_t *g = md__gpu(md);
    if (!g->gexec || !g->gkey_valid || !md__gpu_graph_keepable(md) ||
        !md__clusters_span_fits(&g->cl))
        return 0;
    md_gpu_graph_key_t now;
    md__gpu_graph_key(md, &now);
    return memcmp(&now, &g->gkey, sizeof now) == 0;
}

/* Capture kick + drift, forces (with both exchanges) and kick of k plain steps on the hi stream
 * (the lo stream joins through the x_ready / local_done events), without timing events, into
 * *exec; timed as a part of the rebuild before it (HALOX_MD_R_GRAPH). */
static halox_status_t md__gpu_graph_capture(halox_md_t *md, int k, cudaGraphExec_t *exec)
{
    const double t0 = md__now();
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = halox_comm_graph_mode(md->comm, 1);
    if (st != HALOX_OK)
        return st;
    g->capturing = 1;
    g->graph_inline = 0;
    g->gkey_valid = 0;
    /* spans over this build's counts when the graph may outlive rebuilds, else the counts */
    const int keep = md__gpu_graph_keepable(md);
    md__clusters_set_span(&g->cl, keep ? g->gspan : -1.0);
    cudaError_t e = cudaStreamBeginCapture(g->hi, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        st = md__gpu_error(md, e, "cudaStreamBeginCapture");
    } else {
        /* the steps alternate the device's sets of maxima, and each force kick but the last
         * runs inside the next step's home gather (md__gpu_kick_deferred: one kernel fewer a
         * step); the set of the one-step graph and of uncaptured steps is 0 */
        for (int i = 0; i < k && st == HALOX_OK; i++) {
            g->cl.buf = i & 1;
            st = md__gpu_kick_drift(md, 1);
            if (st == HALOX_OK)
                st = md__gpu_forces(md, 1, 0);
            if (st == HALOX_OK)
                st = i + 1 < k ? md__gpu_kick_deferred(md) : md__gpu_kick(md);
        }
        g->cl.buf = 0;
        g->take_deferred = 0;
        cudaGraph_t graph = NULL;
        e = cudaStreamEndCapture(g->hi, &graph); /* always: ends a failed capture too */
        if (st == HALOX_OK && e != cudaSuccess)
            st = md__gpu_error(md, e, "cudaStreamEndCapture");
        if (st == HALOX_OK)
            st = md__gpu_graph_exec(md, graph, exec);
        if (graph)
            cudaGraphDestroy(graph);
    }
    g->capturing = 0;
    halox_comm_graph_mode(md->comm, 0);
    if (st == HALOX_OK) {
        g->graph_captures++;
        g->gstale = 0;
        md__gpu_graph_key(md, &g->gkey);
        g->gkey_valid = keep;
    }
    md->rpart[HALOX_MD_R_GRAPH] += md__now() - t0;
    return st;
}

/* Capture the graph of k steps into *exec; the gathers it counts into *gathers. */
static halox_status_t md__gpu_graph_capture_counted(halox_md_t *md, int k, cudaGraphExec_t *exec,
                                                    long long *gathers)
{
    md_gpu_t *g = md__gpu(md);
    /* the capture counted these steps' exchanges; its gathers run only when launched */
    const long long before = g->gathers;
    halox_status_t st = md__gpu_graph_capture(md, k, exec);
    *gathers = g->gathers - before;
    g->gathers = before;
    return st;
}

/* A launch of the one-step graph, or with k > 1 of the multi-step one. A rebuild that changed
 * what they hold captures both again, one after the other: they then take the same spans and
 * key (a capture at a later build would give the other graph's spans new values). */
static halox_status_t md__gpu_graph_launch(halox_md_t *md, int k)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_graph_wait(md);
    if (st != HALOX_OK)
        return st;
    const int multi = md__gpu_graph_multi(md);
    if ((g->gstale || (multi && g->gk_stale)) && md__gpu_graph_holds(md) &&
        (!multi || g->gexec_k)) {
        g->gstale = g->gk_stale = 0; /* the rebuild kept what the graphs hold: no capture */
        g->graph_kept++;
    }
    if (!g->gexec || g->gstale || (multi && (!g->gexec_k || g->gk_stale))) {
        st = md__gpu_graph_capture_counted(md, 1, &g->gexec, &g->graph_gathers);
        if (st == HALOX_OK && multi)
            st = md__gpu_graph_capture_counted(md, MD_GPU_GRAPH_STEPS, &g->gexec_k,
                                               &g->graph_gathers_k);
        if (st != HALOX_OK)
            return st;
        g->gk_stale = !multi;
    } else {
        for (int i = 0; i < k && st == HALOX_OK; i++)
            st = halox_comm_graph_replayed(md->comm);
        if (st != HALOX_OK)
            return st;
    }
    cudaGraphExec_t exec = k > 1 ? g->gexec_k : g->gexec;
    MD_CUDA(cudaGraphLaunch(exec, g->hi));
    g->gathers += k > 1 ? g->graph_gathers_k : g->graph_gathers;
    MD_CUDA(cudaEventRecord(g->gdone[g->gslot], g->hi));
    g->gdone_live[g->gslot] = 1;
    g->gslot ^= 1;
    g->xv_fresh = 0;
    g->f_fresh = 0;
    md->have_energy = 0;
    g->graph_steps += k;
    g->graph_launches++;
    g->inline_steps += (long long)k * g->graph_inline;
    return HALOX_OK;
}

static halox_status_t md__gpu_graph_step_one(halox_md_t *md) { return md__gpu_graph_launch(md, 1); }

static halox_status_t md__gpu_graph_step_many(halox_md_t *md)
{
    return md__gpu_graph_launch(md, MD_GPU_GRAPH_STEPS);
}

halox_status_t md__gpu_graph_step(halox_md_t *md, int k)
{
    return k > 1 ? md__gpu_ranged("halox: multi-step graph", md__gpu_graph_step_many, md)
                 : md__gpu_ranged("halox: graph step", md__gpu_graph_step_one, md);
}
