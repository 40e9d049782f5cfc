/* The GPU back end's rebuilds (gpu_internal.h): after the host plan build the upload, the
 * transport's binding and the cluster lists; a one-rank run's rebuild on the device; the watch of
 * the lists that decides when to rebuild. */
#include "halox/status.h"
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "platforms/cuda/md_kernels.h"

/* The inner (pruned) list's buffer (md__gpu_create read it); none when it is not below the skin
 * (the outer buffer). */
static double md__gpu_inner_buffer(const halox_md_t *md)
{
    double b = md__gpu(md)->inner_buffer;
    return b > 0 && b < md->cfg.skin ? b : 0.0;
}

/* The local atoms' extent [lo, hi + halo), which is the periodic box in the plan's shift
 * dimensions: what the cluster sort bins. */
static void md__gpu_extent(const halox_md_t *md, float lo[3], float ext[3])
{
    const double rl = md->cfg.cutoff + md->cfg.skin;
    const int shifts = md->plan.shift_dims;
    for (int d = 0; d < 3; d++) {
        if ((shifts >> d) & 1) {
            lo[d] = (float)md->plan.lo[d];
            ext[d] = (float)md->plan.params.box.len[d];
        } else {
            lo[d] = (float)(md->plan.lo[d] - 1e-3 * rl);
            ext[d] = (float)(md->plan.hi[d] + md->plan.halo_dist + 2e-3 * rl - lo[d]);
        }
    }
}

/* Cluster pair lists over the local atoms' extent, launched on s (the host may do other work
 * until md__gpu_lists_end waits for them). */
halox_status_t md__gpu_lists_begin(halox_md_t *md, cudaStream_t s)
{
    md_gpu_t *g = md__gpu(md);
    const double rl = md->cfg.cutoff + md->cfg.skin;
    const int shifts = md->plan.shift_dims;
    float lo[3], ext[3];
    md__gpu_extent(md, lo, ext);
    const double inner = md__gpu_inner_buffer(md);
    md__clusters_set_prune(&g->cl, (float)md->cfg.cutoff,
                           inner > 0 ? (float)(md->cfg.cutoff + inner) : 0.0f);
    g->cl.chunk = g->row_chunk;
    g->cl.loc_warps = g->loc_warps;
    /* columns with an edge where the home atoms end and the halo begins (no slivers) */
    for (int d = 0; d < 3; d++)
        g->cl.edge[d] = ((shifts >> d) & 1) ? 0.0f : (float)(md->plan.hi[d] - lo[d]);
    md__gpu_timeline_build(md);
    MD_CUDA(md__clusters_build_begin(&g->cl, g->x, g->zone, g->n_home, g->n_total, lo, ext, md->rho,
                                     (float)rl, shifts, s));
    return HALOX_OK;
}

/* The lists launched by md__gpu_lists_begin on s, waited for (and built again with longer rows
 * until every row fits). */
halox_status_t md__gpu_lists_end(halox_md_t *md, cudaStream_t s)
{
    md_gpu_t *g = md__gpu(md);
    const double t = md__now(); /* mostly the wait for the build */
    cudaError_t e = md__clusters_build_end(&g->cl, g->x, g->zone, s);
    md__gpu_waited(md, t);
    MD_CUDA(e);
    g->gathers_at_build = g->gathers;
    if (g->cl.grown > g->grown_seen && g->grown_seen < 3)
        md__notice(md,
                   "GPU pair lists: rank %d grew its lists to %d local / %d non-local clusters "
                   "per cluster",
                   md->rank, g->cl.max_loc, g->cl.max_nl);
    g->grown_seen = g->cl.grown;
    return HALOX_OK;
}

halox_status_t md__gpu_lists(halox_md_t *md)
{
    halox_status_t st = md__gpu_lists_begin(md, md__gpu(md)->hi);
    return st == HALOX_OK ? md__gpu_lists_end(md, md__gpu(md)->hi) : st;
}

/* The cluster sort orders atoms by column and z within the rank's extent; atoms laid out in
 * that order make the slots of the next build follow the atoms almost in sequence, so the
 * gathers and the kick (per atom, through perm / slot_of) read and write runs of memory instead
 * of scattered rows (a random start leaves atoms in no spatial order, and those two kernels are
 * then latency-bound: docs/MD-DESIGN.md#atoms-in-cluster-order). A rebuild on the device takes the
 * last build's order, which costs one permutation and no sort (atoms move a fraction of a cluster
 * between builds); a rebuild through the host sorts there (md__gpu_before_plan). */
halox_status_t md__gpu_sort_home(halox_md_t *md, int with_speeds, int *took_p)
{
    md_gpu_t *g = md__gpu(md);
    const int n = g->n_home;
    if (took_p)
        *took_p = 0;
    if (n < 2 || g->cl.n_home != n || !g->cl.sorted)
        return HALOX_OK;
    size_t need = (sizeof(float) * 6 + sizeof(int32_t)) * (size_t)n;
    /* with head-room: the home count drifts up and down between rebuilds, and a cudaFree and
     * cudaMalloc here would cost a large part of a rebuild each time it grew
     * (docs/MD-DESIGN.md#rebuilds-on-the-device) */
    if (need > g->sort_tmp_bytes)
        need += need / 4 + 4096;
    halox_status_t st = md__dev_grow(md, &g->sort_tmp, need, &g->sort_tmp_bytes);
    if (st != HALOX_OK)
        return st;
    /* with_speeds: the blow-up check's largest v^2 read on the way into h_disp (the permute
     * reads every velocity anyway; a launch, a clear and a copy of its own would be three host
     * calls: docs/MD-DESIGN.md#rebuilds-on-the-device) */
    MD_CUDA(md__kernel_permute(g->cl.sorted, n, g->x, g->v, g->id, g->sort_tmp,
                               with_speeds ? g->disp + 1 : NULL, with_speeds ? g->h_disp_dev : NULL,
                               g->hi));
    if (took_p)
        *took_p = with_speeds;
    /* the host atoms follow the device's layout when asked (md__gpu_to_host) */
    g->xv_fresh = 0;
    g->ids_fresh = 0;
    g->f_fresh = 0;
    return HALOX_OK;
}

/* before a plan build through the host: the host atoms sorted by cell as the CPU engine's, so
 * the upload starts in a spatial order (local: step.c defers a failure into the plan build) */
halox_status_t md__gpu_before_plan(halox_md_t *md) { return md__sort_home(md); }

/* After the host plan build: upload, bind, lists. */
static halox_status_t md__gpu_after_plan_body(halox_md_t *md)
{
    const double tb = md__now();
    md_gpu_t *g = md__gpu(md);
    const int nh = md->atoms.n_home, n = md->atoms.n_total;
    halox_status_t st;
    /* x and f come from the transport (NVSHMEM: symmetric memory that peers store into), so
     * they grow collectively: every rank to the largest rank's need, together */
    double need = (double)n + 1;
    if ((st = halox_comm_allreduce_max(md->comm, &need, 1)) != HALOX_OK)
        return st;
    if ((int)need > g->cap_total) {
        int most = (int)need;
        int cap = most + most / 5 + 64;
        size_t have = 0, b = sizeof(float) * 3 * (size_t)cap;
        void **bufs[] = {(void **)&g->x, (void **)&g->fnl};
        for (int k = 0; k < 2; k++) {
            if (*bufs[k])
                halox_comm_device_free(md->comm, *bufs[k]);
            *bufs[k] = NULL;
            if ((st = halox_comm_device_alloc(md->comm, b, bufs[k])) != HALOX_OK)
                return st;
        }
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->f, b, &have)))
            return st;
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->zone, (size_t)cap, &have)))
            return st;
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->id, sizeof(int32_t) * (size_t)cap, &have)))
            return st;
        g->cap_total = cap;
    }
    if (nh + 1 > g->cap_home) {
        int cap = nh + 1 + nh / 5 + 64;
        size_t have = 0, b = sizeof(float) * 3 * (size_t)cap;
        if ((st = md__dev_grow(md, (void **)&g->v, b, &have)))
            return st;
        g->cap_home = cap;
    }
    g->n_home = nh;
    g->n_total = n;
    g->gstale = g->gk_stale = 1; /* the arrays, sizes and plan the graphs captured change */
    MD_CUDA(cudaStreamSynchronize(g->lo));
    MD_CUDA(cudaMemcpyAsync(g->x, md->atoms.x, sizeof(float) * 3 * (size_t)n,
                            cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->v, md->atoms.extra, sizeof(float) * 3 * (size_t)nh,
                            cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->zone, md->plan.zone, (size_t)n, cudaMemcpyHostToDevice, g->hi));
    /* the ids too: a rebuild on the device (gpu_resident.c) migrates them with the atoms */
    MD_CUDA(cudaMemcpyAsync(g->id, md->atoms.id, sizeof(int32_t) * (size_t)n,
                            cudaMemcpyHostToDevice, g->hi));
    /* the force exchange adds the returned forces into fnl; the last kick of a step zeroes it */
    MD_CUDA(cudaMemsetAsync(g->fnl, 0, sizeof(float) * 3 * (size_t)(n > 0 ? n : 1), g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    g->xv_fresh = 1;
    g->ids_fresh = 1;
    g->uploaded = 1;
    if ((st = halox_comm_bind(md->comm, &md->plan, g->x, g->fnl)) != HALOX_OK)
        return st;
    if ((st = md__agree(md, md__gpu_inline_refresh(md))) != HALOX_OK)
        return st;
    const double tl = md__now();
    md->rpart[HALOX_MD_R_BIND] += tl - tb;
    st = md__gpu_lists(md);
    md->rpart[HALOX_MD_R_LISTS] += md__now() - tl;
    return st;
}

/* One rank, periodic by shifts in every dimension (no pulse, no halo): a rebuild changes no
 * owner and no plan, so it stays on the device. */
int md__gpu_local_rebuild_ok(const halox_md_t *md)
{
    return md__gpu(md) && md__gpu(md)->uploaded && md->nranks == 1 && md->plan.n_pulses == 0 &&
           md->plan.shift_dims == 7 && md__gpu(md)->n_total == md__gpu(md)->n_home;
}

halox_status_t md__gpu_drain_mark(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    if (!g->clock)
        MD_CUDA(cudaStreamCreateWithFlags(&g->clock, cudaStreamNonBlocking));
    for (int k = 0; k < 2; k++)
        if (!g->drain_ev[k])
            MD_CUDA(cudaEventCreate(&g->drain_ev[k]));
    MD_CUDA(cudaEventRecord(g->drain_ev[0], g->clock)); /* nothing before it: now */
    MD_CUDA(cudaEventRecord(g->drain_ev[1], g->hi));    /* the queued steps done */
    return HALOX_OK;
}

double md__gpu_drain_read(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    float ms = 0;
    if (!g->drain_ev[0] ||
        cudaEventElapsedTime(&ms, g->drain_ev[0], g->drain_ev[1]) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0.0;
    }
    return ms > 0 ? 1e-3 * (double)ms : 0.0; /* hi idle: its event may precede the clock's */
}

/* The rebuild of a one-rank run on the device: positions wrapped into the box, the blow-up check
 * of the host rebuild (an atom faster than half the box per step) from the largest speed, the
 * home atoms in cluster order (md__gpu_sort_home), the cluster lists (whose gathers watch the
 * displacements); the host copies go stale as after any step. */
static halox_status_t md__gpu_rebuild_local_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    float len[3];
    for (int d = 0; d < 3; d++)
        len[d] = (float)md->box.len[d];
    g->gstale = g->gk_stale = 1; /* the arrays, sizes and plan the graphs captured change */
    MD_CUDA(cudaMemsetAsync(g->disp, 0, sizeof(unsigned), g->hi));
    MD_CUDA(md__kernel_wrap(g->x, g->v, g->n_home, len, g->disp, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_disp, g->disp, sizeof(unsigned), cudaMemcpyDeviceToHost, g->hi));
    g->xv_fresh = 0;
    const double tl = md__now();
    halox_status_t st = md__gpu_sort_home(md, 0, NULL);
    if (st == HALOX_OK)
        st = md__gpu_lists(md); /* synchronises hi: h_disp is there */
    /* the wrap and the blow-up check ride along: one rank has nothing else to rebuild */
    md->rpart[HALOX_MD_R_LISTS] += md__now() - tl;
    if (st != HALOX_OK)
        return st;
    return md__gpu_speed_verdict(md);
}

halox_status_t md__gpu_rebuild_local(halox_md_t *md)
{
    return md__gpu_ranged("halox: rebuild on the GPU", md__gpu_rebuild_local_body, md);
}

halox_status_t md__gpu_after_plan(halox_md_t *md)
{
    return md__gpu_ranged("halox: upload, bind, pair lists", md__gpu_after_plan_body, md);
}

/* Will the outer lists expire before the host looks again? The device published, with the count
 * of steps it finished, the largest displacement since the build and the largest of one step;
 * the host is `lag` steps ahead of that. Rebuild when the displacement, grown by 1.5 times the
 * last step's for every step not yet seen and the next one, reaches half the skin; the lists
 * last `horizon` steps more when it stays short of that over the next horizon steps too. Ranks
 * agree (a rebuild is collective). The device also counts the steps where the list was exceeded
 * (md__gpu_stats reports them): this check is what keeps that count at zero. */
halox_status_t md__gpu_watch(halox_md_t *md, int horizon, int *rebuild_p, int *far_p)
{
    md_gpu_t *g = md__gpu(md);
    /* expiring now; expiring within the horizon (until a step since the build is read: one
     * step at a time) */
    double v[2] = {0, 1};
    md_clusters_watch_t w;
    if (g->cl.watch && g->uploaded && md__clusters_watch_read(g->cl.watch, &w)) {
        /* the device's count from its low bits: it trails the gathers enqueued by a few */
        const long long lag = (long long)(unsigned)((unsigned)g->gathers - w.steps_lo);
        const long long dev = g->gathers - lag;
        if (dev > g->gathers_at_build) {
            const double d = sqrt((double)w.build_d2), one = sqrt((double)w.step_d2);
            const double half = 0.5 * md->cfg.skin;
            v[0] = d + 1.5 * (double)(lag + 1) * one >= half;
            v[1] = horizon > 1 && d + 1.5 * (double)(lag + horizon) * one >= half;
        }
    }
    if (md->nranks > 1) {
        halox_status_t st = halox_comm_allreduce_max(md->comm, v, 2);
        if (st != HALOX_OK)
            return st;
    }
    *rebuild_p = v[0] > 0;
    *far_p = v[1] == 0;
    return HALOX_OK;
}
