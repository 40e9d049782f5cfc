/* Rebuilds that stay on the device (HALOX_MD_DEVICE_REBUILD=1; gpu_internal.h), for any rank
 * count: the blow-up check from the largest speed, the migration and the plan build by the
 * library on the device arrays (halox_comm_migrate_fixed, halox_comm_build_plan_fixed: only
 * counts, the leavers' indices and records and the set-up messages cross to the host), then the
 * bind and the cluster lists as after a host plan build. Positions, velocities and ids stay on
 * the GPU; the host atoms follow only when asked (md__gpu_to_host: thermo, output, checkpoints).
 * The arrays cannot grow inside the library: when a rank's atoms do not fit, every rank grows
 * (the transport's memory collectively) keeping the home atoms, and the step is tried again. */
#include "halox/status.h"
#include "platforms/cuda/gpu_internal.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <string.h>

#include "platforms/cuda/md_kernels.h"

int md__gpu_resident_ok(const halox_md_t *md)
{
    const md_gpu_t *g = md__gpu(md);
    return g && g->resident && g->uploaded && g->id;
}

/* *p to at least `bytes` (cudaMalloc), the first `keep` bytes kept. */
static halox_status_t md__gpu_grow_keep(halox_md_t *md, void **p, size_t bytes, size_t keep)
{
    void *q = NULL;
    MD_CUDA(cudaMalloc(&q, bytes > 0 ? bytes : 16));
    if (*p && keep)
        MD_CUDA(cudaMemcpy(q, *p, keep, cudaMemcpyDeviceToDevice));
    if (*p)
        cudaFree(*p);
    *p = q;
    return HALOX_OK;
}

/* Room for `need_home` home atoms (velocities: this rank's) and `need_total` local atoms on
 * every rank (collective: x and fnl are the transport's memory, grown alike everywhere to the
 * largest need), keeping the home atoms' positions, velocities and ids. */
static halox_status_t md__gpu_grow(halox_md_t *md, int need_home, int need_total)
{
    md_gpu_t *g = md__gpu(md);
    const int nh = g->n_home;
    halox_status_t st = HALOX_OK;
    if (need_home > g->cap_home) {
        int cap = need_home + need_home / 5 + 64;
        st = md__gpu_grow_keep(md, (void **)&g->v, sizeof(float) * 3 * (size_t)cap,
                               sizeof(float) * 3 * (size_t)nh);
        if (st == HALOX_OK)
            g->cap_home = cap;
    }
    /* agreed first: what follows is collective on every rank or on none */
    if ((st = md__agree(md, st)) != HALOX_OK)
        return st;
    double most = need_total > need_home ? need_total : need_home;
    if ((st = halox_comm_allreduce_max(md->comm, &most, 1)) != HALOX_OK)
        return st;
    if ((int)most <= g->cap_total) /* the same on every rank: cap_total is */
        return HALOX_OK;
    const int cap = (int)most + (int)most / 5 + 64;
    const size_t b = sizeof(float) * 3 * (size_t)cap;
    /* the transport's memory: every rank, in the same order */
    void *x = NULL, *fnl = NULL;
    st = halox_comm_device_alloc(md->comm, b, &x);
    if (st == HALOX_OK)
        st = halox_comm_device_alloc(md->comm, b, &fnl);
    if (st == HALOX_OK && nh > 0 &&
        cudaMemcpy(x, g->x, sizeof(float) * 3 * (size_t)nh, cudaMemcpyDeviceToDevice) !=
            cudaSuccess)
        st = md__gpu_error(md, cudaGetLastError(), "keeping the positions");
    if (st == HALOX_OK) {
        halox_comm_device_free(md->comm, g->x);
        halox_comm_device_free(md->comm, g->fnl);
        g->x = x;
        g->fnl = fnl;
    } else {
        /* the same frees on every rank: none keeps a half-made pair */
        if (x)
            halox_comm_device_free(md->comm, x);
        if (fnl)
            halox_comm_device_free(md->comm, fnl);
    }
    if (st == HALOX_OK)
        st = md__gpu_grow_keep(md, (void **)&g->id, sizeof(int32_t) * (size_t)cap,
                               sizeof(int32_t) * (size_t)nh);
    if (st == HALOX_OK)
        st = md__gpu_grow_keep(md, (void **)&g->zone, (size_t)cap, 0);
    if (st == HALOX_OK)
        st = md__gpu_grow_keep(md, (void **)&g->f, b, 0);
    if (st == HALOX_OK)
        g->cap_total = cap;
    return md__agree(md, st);
}

/* the host rebuild's blow-up check, from the device's velocities, where no sort carries it: the
 * largest speed comes to the host on the exchange stream (md__gpu_speeds_verdict reads it once
 * the stream got past speeds_ready) */
static halox_status_t md__gpu_speeds_launch(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    MD_CUDA(cudaMemsetAsync(g->disp, 0, sizeof(unsigned), g->hi));
    MD_CUDA(md__kernel_max_v2(g->v, g->n_home, g->disp, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_disp, g->disp, sizeof(unsigned), cudaMemcpyDeviceToHost, g->hi));
    return HALOX_OK;
}

/* the verdict after the plan build (the wait for speeds_ready, recorded behind the largest v^2
 * at the rebuild's start, returns at once: the migration's waits came after it; not one for the
 * stream, whose plan kernels the lists follow without the host): a blown-up system whose
 * positions are still finite migrates as any other, the non-finite ones stop the migration with
 * their own message */
static halox_status_t md__gpu_speeds_verdict(halox_md_t *md)
{
    halox_status_t st = md__gpu_wait(md, NULL, md__gpu(md)->speeds_ready, "the blow-up check");
    return st == HALOX_OK ? md__gpu_speed_verdict(md) : st;
}

/* The migration (plan 0) or the plan build (plan 1) on the device arrays, grown and tried again
 * while some rank lacks room (every rank returns HALOX_ERR_NO_MEMORY alike). A failure of this
 * rank's work before it (pre) stops every rank in its first agreement, without a retry. */
static halox_status_t md__gpu_on_device(halox_md_t *md, int plan, halox_status_t pre)
{
    md_gpu_t *g = md__gpu(md);
    halox_status_t st = HALOX_OK;
    halox_comm_defer_failure(md->comm, pre); /* taken by the first try */
    for (int tries = 0; tries < 6; tries++) {
        halox_fixed_atoms_t a;
        memset(&a, 0, sizeof a);
        a.x = g->x;
        a.id = g->id;
        a.n_home = g->n_home;
        if (plan) {
            a.zone = g->zone;
            a.capacity = g->cap_total;
            a.async = 1; /* the maps and zones reach the host plan in the bind below */
            st = halox_comm_build_plan_fixed(md->comm, &md->prm, &a, &md->plan);
            if (st == HALOX_OK)
                g->n_total = a.n_total;
        } else {
            a.extra = g->v;
            a.extra_bytes = sizeof(float) * 3;
            a.async = 1; /* the plan build below, on the same stream, waits */
            a.capacity = g->cap_home < g->cap_total ? g->cap_home : g->cap_total;
            st = halox_comm_migrate_fixed(md->comm, &md->cfg.grid, &md->box, &a, md->natoms,
                                          md->step);
            g->n_home = a.n_home;
            if (st == HALOX_OK) {
                md->migrated += a.moved;
                md->max_hops = a.max_hops > md->max_hops ? a.max_hops : md->max_hops;
            }
        }
        if (st != HALOX_ERR_NO_MEMORY || pre != HALOX_OK)
            return st;
        /* the plan: later pulses may need more than the first short one said (head-room) */
        const int need = a.need > 0 ? a.need : 0;
        if ((st = plan ? md__gpu_grow(md, 0, need > 0 ? need + need / 4 + 64 : 0)
                       : md__gpu_grow(md, need, need)) != HALOX_OK)
            return st;
    }
    return st;
}

static halox_status_t md__gpu_rebuild_resident_body(halox_md_t *md)
{
    md_gpu_t *g = md__gpu(md);
    g->gstale = g->gk_stale = 1; /* the arrays, sizes and plan the graphs captured change */
    const double t0 = md__now();
    /* the largest speed on its way to the host; the home atoms in the last build's cluster
     * order, then the migration (which keeps the order of those that stay) and the plan build
     * refer to that layout. No wait for the GPU before the migration's own. */
    int took = 0;
    /* the parts in NVTX ranges of their own: what a profiler (halox-hostprof, tools/hostprof)
     * times of the rebuild's host work */
    nvtxRangePushA("halox: rebuild: sort");
    halox_status_t st = md__gpu_sort_home(md, 1, &took);
    if (st == HALOX_OK && !took) /* no sort: the check on its own */
        st = md__gpu_speeds_launch(md);
    cudaError_t e = st == HALOX_OK ? cudaEventRecord(g->speeds_ready, g->hi) : cudaSuccess;
    if (e != cudaSuccess)
        st = md__gpu_error(md, e, "recording the blow-up check");
    nvtxRangePop();
    /* a failure there is agreed in the migration's first agreement (no agreement of its own) */
    nvtxRangePushA("halox: rebuild: migration");
    st = md__gpu_on_device(md, 0, st);
    nvtxRangePop();
    if (st != HALOX_OK)
        return st;
    const double t1 = md__now();
    md->timer[HALOX_MD_T_MIGRATE] += t1 - t0;
    md->rpart[HALOX_MD_R_MIGRATE] += t1 - t0;
    nvtxRangePushA("halox: rebuild: plan");
    st = md__gpu_on_device(md, 1, HALOX_OK);
    nvtxRangePop();
    if (st != HALOX_OK)
        return st;
    /* read after the plan build, whose waits came after speeds_ready; agreed in the bind's
     * agreement below (the plan build runs on any finite positions) */
    nvtxRangePushA("halox: rebuild: host arrays");
    const halox_status_t speeds = md__gpu_speeds_verdict(md);
    const double t2 = md__now();
    md->rpart[HALOX_MD_R_PLAN] += t2 - t1;
    /* the host atoms follow the device's layout; their contents come when asked */
    g->xv_fresh = 0;
    g->ids_fresh = 0;
    g->f_fresh = 0;
    st = speeds != HALOX_OK ? speeds : halox_atoms_reserve(&md->atoms, g->n_total + 1);
    if (st == HALOX_OK) {
        md->atoms.n_home = g->n_home;
        md->atoms.n_total = g->n_total;
        st = md__ensure_forces(md, g->n_total + 1);
    }
    /* a failure so far is agreed in the bind's agreement (no agreement of its own) */
    halox_comm_defer_failure(md->comm, st);
    /* the lists need the positions and zones the plan build placed, not the bind: they are built
     * on the lo stream while the host binds (the bind waits for the hi stream only), and waited
     * for after it, so that the bind's host time and the lists' GPU time overlap
     * (docs/MD-DESIGN.md#rebuilds-on-the-device) */
    nvtxRangePop();
    const double tl = md__now();
    nvtxRangePushA("halox: rebuild: lists launched");
    halox_status_t lst = HALOX_OK;
    if (st == HALOX_OK) {
        /* the force exchange adds the returned forces into fnl; the last kick of a step zeroes
         * it. A failure here is agreed with the lists' (every rank binds first) */
        cudaError_t e = cudaMemsetAsync(
            g->fnl, 0, sizeof(float) * 3 * (size_t)(g->n_total > 0 ? g->n_total : 1), g->hi);
        if (e == cudaSuccess)
            e = cudaEventRecord(g->x_ready, g->hi);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent(g->lo, g->x_ready, 0);
        lst = e == cudaSuccess ? md__gpu_lists_begin(md, g->lo)
                               : md__gpu_error(md, e, "clearing fnl before the lists");
    }
    nvtxRangePop();
    const double t3 = md__now();
    /* collective: every rank binds, whatever its lists did */
    nvtxRangePushA("halox: rebuild: bind");
    st = halox_comm_bind(md->comm, &md->plan, g->x, g->fnl);
    nvtxRangePop();
    if (st != HALOX_OK)
        return st;
    /* the view and the lists are this rank's own work: one agreement for both */
    st = md__gpu_inline_refresh(md);
    const double t4 = md__now();
    md->rpart[HALOX_MD_R_BIND] += (tl - t2) + (t4 - t3);
    if (st == HALOX_OK)
        st = lst;
    nvtxRangePushA("halox: rebuild: lists waited, agreed");
    if (st == HALOX_OK)
        st = md__gpu_lists_end(md, g->lo);
    st = md__agree(md, st);
    nvtxRangePop();
    md->rpart[HALOX_MD_R_LISTS] += (t3 - tl) + (md__now() - t4);
    return st;
}

halox_status_t md__gpu_rebuild_resident(halox_md_t *md)
{
    return md__gpu_ranged("halox: rebuild on the device (migration, plan, lists)",
                          md__gpu_rebuild_resident_body, md);
}
