/* --graph on the GPU (gpu_internal.h): the plain step (kick + drift, forces with both exchanges,
 * kick) captured as a CUDA graph and launched, the host at most two launches ahead.
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
static halox_status_t md__gpu_graph_exec(halox_md_t *md, cudaGraph_t graph)
{
    md_gpu_t *g = md__gpu(md);
    if (md__gpu_graph_updatable(md)) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(g->gexec, graph, &info) == cudaSuccess) {
            g->graph_updates++;
            return HALOX_OK;
        }
        (void)cudaGetLastError(); /* another shape (the plan's pulses changed): instantiate */
    }
    if (g->gexec)
        cudaGraphExecDestroy(g->gexec);
    g->gexec = NULL;
    cudaError_t e = cudaGraphInstantiate(&g->gexec, graph, 0);
    if (e != cudaSuccess) {
        g->gexec = NULL;
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

/* Capture kick + drift, forces (with both exchanges) and kick of a plain step on the hi stream
 * (the lo stream joins through the x_ready / local_done events), without timing events; timed as
 * a part of the rebuild before it (HALOX_MD_R_GRAPH). */
static halox_status_t md__gpu_graph_capture(halox_md_t *md)
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
        st = md__gpu_kick_drift(md, 1);
        if (st == HALOX_OK)
            st = md__gpu_forces(md, 1, 0);
        if (st == HALOX_OK)
            st = md__gpu_kick(md);
        cudaGraph_t graph = NULL;
        e = cudaStreamEndCapture(g->hi, &graph); /* always: ends a failed capture too */
        if (st == HALOX_OK && e != cudaSuccess)
            st = md__gpu_error(md, e, "cudaStreamEndCapture");
        if (st == HALOX_OK)
            st = md__gpu_graph_exec(md, graph);
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

static halox_status_t md__gpu_graph_step_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = md__gpu_graph_wait(md);
    if (st != HALOX_OK)
        return st;
    if (g->gstale && md__gpu_graph_holds(md)) {
        g->gstale = 0; /* the rebuild kept what the graph holds: no capture */
        g->graph_kept++;
    }
    if (!g->gexec || g->gstale) {
        /* the capture counted this step's exchanges; its gathers run only when launched */
        const long long before = g->gathers;
        st = md__gpu_graph_capture(md);
        g->graph_gathers = g->gathers - before;
        g->gathers = before;
    } else {
        st = halox_comm_graph_replayed(md->comm);
    }
    if (st != HALOX_OK)
        return st;
    MD_CUDA(cudaGraphLaunch(g->gexec, g->hi));
    g->gathers += g->graph_gathers;
    MD_CUDA(cudaEventRecord(g->gdone[g->gslot], g->hi));
    g->gdone_live[g->gslot] = 1;
    g->gslot ^= 1;
    g->xv_fresh = 0;
    g->f_fresh = 0;
    md->have_energy = 0;
    g->graph_steps++;
    g->inline_steps += g->graph_inline;
    return HALOX_OK;
}

halox_status_t md__gpu_graph_step(halox_md_t *md)
{
    return md__gpu_ranged("halox: graph step", md__gpu_graph_step_body, md);
}
