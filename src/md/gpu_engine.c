/* The GPU back end of the engine (CUDA builds): the state of a rank lives on its GPU between
 * rebuilds, the step is a chain of stream-ordered kernels and halo exchanges, and rebuild steps
 * reuse the CPU engine's migration, sort and plan build on host copies of the home atoms.
 *
 * One step on the GPU (engine.c calls these in the CPU engine's order):
 *   hi stream (the transport's, high priority): kick + drift (home atoms)       md__gpu_kick_drift
 *     [energy slots zeroed on thermo steps]; event x_ready
 *   lo stream (low priority): wait x_ready; LOCAL forces (home-home rows) -> f; event local_done
 *   hi stream: coordinate halo exchange (not on rebuild steps); NON-LOCAL forces (rows with halo
 *     atoms, zone rule) -> fnl (home rows) and f (halo rows); wait local_done; force halo exchange
 *     (adds the halo forces into f of the owners)                                md__gpu_forces
 *   hi stream: kick with f + fnl                                                 md__gpu_kick
 * Nothing waits on the host inside a step except what the transport itself does (mpi-staged
 * synchronises its stream to stage through host memory), thermo steps (energies and velocities
 * are read back) and the optional displacement check and NVT thermostat (one reduction each).
 *
 * Rebuild steps: the home positions and velocities come back to the host, the CPU engine
 * migrates, sorts and builds the plan as usual, and md__gpu_after_plan uploads positions (home +
 * halo), velocities and zones, binds the device arrays to the transport and rebuilds the cell
 * lists and pair lists on the GPU.
 *
 * Timers: the device time of each part from CUDA events, read back a few steps later (a ring of
 * event sets, so the host never runs more than a few steps ahead); the local forces overlap the
 * halo exchange, so the parts may add up to more than the wall time. */
#include "core/util.h"
#include "md/md_internal.h"

#ifdef HALOX_HAVE_CUDA

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/md_kernels.h"

enum { MD_GPU_SLOTS = 4, MD_GPU_EVENTS = 10 };

/* event indices of one step's timing slot */
enum {
    EV_K0 = 0, /* before kick + drift */
    EV_K1,     /* after kick + drift */
    EV_C0,     /* before the coordinate exchange */
    EV_C1,     /* after it */
    EV_NL1,    /* after the non-local forces */
    EV_F0,     /* the local forces done: force exchange can start */
    EV_F1,     /* after the force exchange */
    EV_K2,     /* after the second kick */
    EV_L0,     /* lo stream: before the local forces */
    EV_L1      /* lo stream: after them */
};

typedef struct md_gpu_slot {
    cudaEvent_t ev[MD_GPU_EVENTS];
    int pending; /* recorded, not yet read */
} md_gpu_slot_t;

struct md_gpu {
    cudaStream_t hi, lo;
    cudaEvent_t x_ready, local_done;
    float *x, *v, *f, *fnl, *xref;
    int cap_total, cap_home;
    uint8_t *zone;
    int *cell_of, *cell_atoms, *cell_start, *cursor;
    int cell_cap;
    int *nbr_loc, *cnt_loc, *nbr_nl, *cnt_nl;
    int max_loc, max_nl;            /* neighbours per row the lists hold */
    size_t loc_entries, nl_entries; /* allocated entries */
    int *need;                      /* [2] */
    double *energy;                 /* [5]: local pe, vir; non-local pe, vir; kinetic */
    unsigned *disp;                 /* [1] */
    /* pinned host mirrors */
    double *h_energy;
    int *h_need;
    unsigned *h_disp;
    int n_home, n_total;
    int xv_fresh, f_fresh; /* the host atoms (x, v) / md->f hold the current device state */
    int in_step;
    int uploaded; /* the device holds a state (after the first upload) */
    long long step_no;
    md_gpu_slot_t slot[MD_GPU_SLOTS];
    int cur;
    int overflow_notices;
};

#define MD_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return md__gpu_error(md, e_, #call);                                                   \
    } while (0)

static halox_status_t md__gpu_error(halox_md_t *md, cudaError_t e, const char *what)
{
    (void)cudaGetLastError();
    return halox__error(e == cudaErrorMemoryAllocation ? HALOX_ERR_NO_MEMORY : HALOX_ERR_INTERNAL,
                        "rank %d, step %lld: GPU engine: %s failed: %s", md->rank, md->step, what,
                        cudaGetErrorString(e));
}

static halox_status_t md__dev_grow(halox_md_t *md, void **p, size_t bytes, size_t *have)
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
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "the GPU engine runs in single precision: use --precision float (or "
                            "--device cpu for double)");
    void *s = halox_comm_stream(md->comm);
    if (!s)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "the GPU engine needs a GPU transport (mpi-staged, nccl), not '%s'",
                            halox_comm_transport(md->comm));
    md_gpu_t *g = calloc(1, sizeof *g);
    if (!g)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for the GPU engine");
    md->gpu = g;
    g->hi = (cudaStream_t)s;
    int least = 0, greatest = 0;
    MD_CUDA(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    MD_CUDA(cudaStreamCreateWithPriority(&g->lo, cudaStreamNonBlocking, least));
    MD_CUDA(cudaEventCreateWithFlags(&g->x_ready, cudaEventDisableTiming));
    MD_CUDA(cudaEventCreateWithFlags(&g->local_done, cudaEventDisableTiming));
    for (int k = 0; k < MD_GPU_SLOTS; k++)
        for (int j = 0; j < MD_GPU_EVENTS; j++)
            MD_CUDA(cudaEventCreate(&g->slot[k].ev[j]));
    MD_CUDA(cudaMalloc((void **)&g->need, 2 * sizeof(int)));
    MD_CUDA(cudaMalloc((void **)&g->energy, 5 * sizeof(double)));
    MD_CUDA(cudaMalloc((void **)&g->disp, sizeof(unsigned)));
    MD_CUDA(cudaMallocHost((void **)&g->h_energy, 5 * sizeof(double)));
    MD_CUDA(cudaMallocHost((void **)&g->h_need, 2 * sizeof(int)));
    MD_CUDA(cudaMallocHost((void **)&g->h_disp, sizeof(unsigned)));
    g->xv_fresh = g->f_fresh = 1; /* nothing on the device yet: the host is the truth */
    return HALOX_OK;
}

void md__gpu_destroy(halox_md_t *md)
{
    md_gpu_t *g = md->gpu;
    if (!g)
        return;
    if (g->hi)
        cudaStreamSynchronize(g->hi);
    if (g->lo) {
        cudaStreamSynchronize(g->lo);
        cudaStreamDestroy(g->lo);
    }
    if (g->x_ready)
        cudaEventDestroy(g->x_ready);
    if (g->local_done)
        cudaEventDestroy(g->local_done);
    for (int k = 0; k < MD_GPU_SLOTS; k++)
        for (int j = 0; j < MD_GPU_EVENTS; j++)
            if (g->slot[k].ev[j])
                cudaEventDestroy(g->slot[k].ev[j]);
    void *dev[] = {g->x,       g->v,          g->f,          g->fnl,    g->xref,    g->zone,
                   g->cell_of, g->cell_atoms, g->cell_start, g->cursor, g->nbr_loc, g->cnt_loc,
                   g->nbr_nl,  g->cnt_nl,     g->need,       g->energy, g->disp};
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++)
        if (dev[k])
            cudaFree(dev[k]);
    if (g->h_energy)
        cudaFreeHost(g->h_energy);
    if (g->h_need)
        cudaFreeHost(g->h_need);
    if (g->h_disp)
        cudaFreeHost(g->h_disp);
    (void)cudaGetLastError();
    free(g);
    md->gpu = NULL;
}

/* Add the device times of the finished step in slot k to the timers. */
static halox_status_t md__gpu_read_slot(halox_md_t *md, int k)
{
    md_gpu_slot_t *sl = &md->gpu->slot[k];
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

static void md__gpu_record(md_gpu_t *g, int ev, cudaStream_t s)
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

/* Bring the home positions and velocities (and with forces, the home forces f + fnl) to the
 * host atoms, when the device holds newer ones. */
halox_status_t md__gpu_to_host(halox_md_t *md, int forces)
{
    md_gpu_t *g = md->gpu;
    size_t n3 = 3 * (size_t)md->atoms.n_home;
    if (!g->xv_fresh || (forces && !g->f_fresh)) {
        MD_CUDA(cudaStreamSynchronize(g->lo));
        MD_CUDA(cudaStreamSynchronize(g->hi));
    }
    if (!g->xv_fresh) {
        MD_CUDA(cudaMemcpy(md->atoms.x, g->x, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        MD_CUDA(cudaMemcpy(md->atoms.extra, g->v, sizeof(float) * n3, cudaMemcpyDeviceToHost));
        g->xv_fresh = 1;
    }
    if (forces && !g->f_fresh && md->f) {
        float *f = md->f;
        float *tmp = malloc(sizeof(float) * (n3 > 0 ? n3 : 1));
        if (!tmp)
            return halox__error(HALOX_ERR_NO_MEMORY, "no memory for %zu forces", n3);
        cudaError_t e = cudaMemcpy(f, g->f, sizeof(float) * n3, cudaMemcpyDeviceToHost);
        if (e == cudaSuccess)
            e = cudaMemcpy(tmp, g->fnl, sizeof(float) * n3, cudaMemcpyDeviceToHost);
        if (e == cudaSuccess)
            for (size_t k = 0; k < n3; k++)
                f[k] += tmp[k];
        free(tmp);
        if (e != cudaSuccess)
            return md__gpu_error(md, e, "cudaMemcpy (forces)");
        g->f_fresh = 1;
    }
    return HALOX_OK;
}

/* Cell grid over the local atoms' extent [lo, hi + halo) with cells >= rl / 2 wide and about
 * at most 2 n + 64 cells. */
static void md__gpu_cell_grid(const halox_md_t *md, double rl, int n, md_cell_grid_t *cg)
{
    double lo[3], ext[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = md->plan.lo[d] - 1e-3 * rl;
        ext[d] = md->plan.hi[d] + md->plan.halo_dist + 2e-3 * rl - lo[d];
    }
    double w = 0.5 * rl;
    int m[3];
    for (;;) {
        double cells = 1;
        for (int d = 0; d < 3; d++) {
            double k = floor(ext[d] / w);
            m[d] = k < 1 ? 1 : (k > 1024 ? 1024 : (int)k);
            cells *= m[d];
        }
        if (cells <= 2.0 * n + 64 || w > 4 * rl)
            break;
        w *= 1.25;
    }
    for (int d = 0; d < 3; d++) {
        cg->lo[d] = (float)lo[d];
        cg->inv_w[d] = (float)(m[d] / ext[d]);
        cg->m[d] = m[d];
    }
    /* every cell is at least w >= rl / 2 wide: two cells reach rl */
    cg->reach = (int)ceil(rl / w - 1e-9);
    if (cg->reach < 1)
        cg->reach = 1;
}

static halox_status_t md__gpu_lists(halox_md_t *md)
{
    md_gpu_t *g = md->gpu;
    const int nh = g->n_home, n = g->n_total;
    const double rl = md->cfg.cutoff + md->cfg.skin;
    md_cell_grid_t cg;
    md__gpu_cell_grid(md, rl, n, &cg);
    int ncell = cg.m[0] * cg.m[1] * cg.m[2];
    halox_status_t st;
    size_t have;
    if (ncell + 1 > g->cell_cap) {
        int cap = ncell + 1 + ncell / 4;
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->cell_start, sizeof(int) * (size_t)cap, &have)))
            return st;
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->cursor, sizeof(int) * (size_t)cap, &have)))
            return st;
        g->cell_cap = cap;
    }
    if (g->max_loc == 0) {
        /* full rows: 4/3 pi rl^3 rho neighbours on average, with room for fluctuations */
        double mean = 4.0 / 3.0 * MD_PI * rl * rl * rl * md->rho;
        g->max_loc = g->max_nl = (int)(1.25 * mean + 32);
    }
    MD_CUDA(
        md_kernel_bin(g->x, n, &cg, g->cell_of, g->cell_start, g->cursor, g->cell_atoms, g->hi));
    for (int attempt = 0; attempt < 3; attempt++) {
        size_t want_loc = (size_t)g->max_loc * (size_t)(nh > 0 ? nh : 1);
        size_t want_nl = (size_t)g->max_nl * (size_t)(n > 0 ? n : 1);
        have = g->loc_entries * sizeof(int);
        if ((st = md__dev_grow(md, (void **)&g->nbr_loc, want_loc * sizeof(int), &have)))
            return st;
        g->loc_entries = have / sizeof(int);
        have = g->nl_entries * sizeof(int);
        if ((st = md__dev_grow(md, (void **)&g->nbr_nl, want_nl * sizeof(int), &have)))
            return st;
        g->nl_entries = have / sizeof(int);
        MD_CUDA(cudaMemsetAsync(g->need, 0, 2 * sizeof(int), g->hi));
        MD_CUDA(md_kernel_pairlist(g->x, g->zone, nh, n, &cg, g->cell_of, g->cell_start,
                                   g->cell_atoms, (float)(rl * rl), g->nbr_loc, g->cnt_loc,
                                   g->max_loc, g->nbr_nl, g->cnt_nl, g->max_nl, g->need, g->hi));
        MD_CUDA(
            cudaMemcpyAsync(g->h_need, g->need, 2 * sizeof(int), cudaMemcpyDeviceToHost, g->hi));
        MD_CUDA(cudaStreamSynchronize(g->hi));
        if (g->h_need[0] <= g->max_loc && g->h_need[1] <= g->max_nl)
            return HALOX_OK;
        /* a row did not fit: grow the lists (with head-room) and build them again */
        if (g->h_need[0] > g->max_loc)
            g->max_loc = g->h_need[0] + g->h_need[0] / 5 + 16;
        if (g->h_need[1] > g->max_nl)
            g->max_nl = g->h_need[1] + g->h_need[1] / 5 + 16;
        if (g->overflow_notices++ < 3)
            md__notice(md,
                       "GPU pair lists: rank %d has up to %d local / %d non-local neighbours per "
                       "atom within %.3g; growing the lists to %d / %d per atom",
                       md->rank, g->h_need[0], g->h_need[1], rl, g->max_loc, g->max_nl);
    }
    return halox__error(HALOX_ERR_INTERNAL,
                        "rank %d, step %lld: GPU pair lists still overflow after growing them "
                        "(%d local / %d non-local neighbours per atom): is the system collapsing?",
                        md->rank, md->step, g->h_need[0], g->h_need[1]);
}

/* After the host plan build: upload, bind, lists. */
halox_status_t md__gpu_after_plan(halox_md_t *md)
{
    md_gpu_t *g = md->gpu;
    const int nh = md->atoms.n_home, n = md->atoms.n_total;
    halox_status_t st;
    if (n + 1 > g->cap_total) {
        int cap = n + 1 + n / 5 + 64;
        size_t have = 0, b = sizeof(float) * 3 * (size_t)cap;
        void **bufs[] = {(void **)&g->x, (void **)&g->f, (void **)&g->fnl};
        for (int k = 0; k < 3; k++) {
            have = 0;
            if ((st = md__dev_grow(md, bufs[k], b, &have)))
                return st;
        }
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->zone, (size_t)cap, &have)))
            return st;
        void **ibufs[] = {(void **)&g->cell_of, (void **)&g->cell_atoms, (void **)&g->cnt_nl,
                          (void **)&g->cnt_loc};
        for (int k = 0; k < 4; k++) {
            have = 0;
            if ((st = md__dev_grow(md, ibufs[k], sizeof(int) * (size_t)cap, &have)))
                return st;
        }
        g->cap_total = cap;
    }
    if (nh + 1 > g->cap_home) {
        int cap = nh + 1 + nh / 5 + 64;
        size_t have = 0, b = sizeof(float) * 3 * (size_t)cap;
        if ((st = md__dev_grow(md, (void **)&g->v, b, &have)))
            return st;
        have = 0;
        if ((st = md__dev_grow(md, (void **)&g->xref, b, &have)))
            return st;
        g->cap_home = cap;
    }
    g->n_home = nh;
    g->n_total = n;
    MD_CUDA(cudaStreamSynchronize(g->lo));
    MD_CUDA(cudaMemcpyAsync(g->x, md->atoms.x, sizeof(float) * 3 * (size_t)n,
                            cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->v, md->atoms.extra, sizeof(float) * 3 * (size_t)nh,
                            cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->zone, md->plan.zone, (size_t)n, cudaMemcpyHostToDevice, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->xref, g->x, sizeof(float) * 3 * (size_t)nh, cudaMemcpyDeviceToDevice,
                            g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    g->xv_fresh = 1;
    g->uploaded = 1;
    if ((st = halox_comm_bind(md->comm, &md->plan, g->x, g->f)) != HALOX_OK)
        return st;
    return md__gpu_lists(md);
}

halox_status_t md__gpu_kick_drift(halox_md_t *md)
{
    md_gpu_t *g = md->gpu;
    if (!g->uploaded) {
        /* first step after a restart: the state (with the checkpoint's forces) is on the host,
         * and this step rebuilds, which uploads it */
        md__kick(md, 0.5 * md->cfg.dt);
        md__drift(md, md->cfg.dt);
        return HALOX_OK;
    }
    g->cur = (int)(g->step_no++ % MD_GPU_SLOTS);
    halox_status_t st = md__gpu_read_slot(md, g->cur);
    if (st != HALOX_OK)
        return st;
    g->in_step = 1;
    md__gpu_record(g, EV_K0, g->hi);
    float dt = (float)md->cfg.dt;
    MD_CUDA(md_kernel_kick(g->v, g->f, g->fnl, g->x, g->n_home, 0.5f * dt, dt, g->hi));
    md__gpu_record(g, EV_K1, g->hi);
    g->xv_fresh = 0;
    return HALOX_OK;
}

/* Forces of the current positions: local on lo, (coordinate exchange,) non-local, force
 * exchange on hi. With want_energy the energies are read back (host sync) into pe_local and
 * vir_local. */
halox_status_t md__gpu_forces(halox_md_t *md, int coords, int want_energy)
{
    md_gpu_t *g = md->gpu;
    const int nh = g->n_home, n = g->n_total;
    const float rc2 = (float)md->rc2;
    if (want_energy)
        MD_CUDA(cudaMemsetAsync(g->energy, 0, 4 * sizeof(double), g->hi));
    MD_CUDA(cudaEventRecord(g->x_ready, g->hi));
    MD_CUDA(cudaStreamWaitEvent(g->lo, g->x_ready, 0));
    md__gpu_record(g, EV_L0, g->lo);
    MD_CUDA(md_kernel_lj(g->x, g->nbr_loc, g->cnt_loc, nh, nh, rc2, md->eshift, g->f, g->f,
                         want_energy ? g->energy : NULL, g->lo));
    md__gpu_record(g, EV_L1, g->lo);
    MD_CUDA(cudaEventRecord(g->local_done, g->lo));
    g->f_fresh = 0;
    md__gpu_record(g, EV_C0, g->hi);
    halox_status_t st = HALOX_OK;
    if (coords && (st = halox_comm_coords(md->comm)) != HALOX_OK)
        return st;
    md__gpu_record(g, EV_C1, g->hi);
    MD_CUDA(md_kernel_lj(g->x, g->nbr_nl, g->cnt_nl, n, nh, rc2, md->eshift, g->fnl, g->f,
                         want_energy ? g->energy + 2 : NULL, g->hi));
    md__gpu_record(g, EV_NL1, g->hi);
    MD_CUDA(cudaStreamWaitEvent(g->hi, g->local_done, 0));
    md__gpu_record(g, EV_F0, g->hi);
    if ((st = halox_comm_forces(md->comm)) != HALOX_OK)
        return st;
    md__gpu_record(g, EV_F1, g->hi);
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

halox_status_t md__gpu_kick(halox_md_t *md)
{
    md_gpu_t *g = md->gpu;
    MD_CUDA(
        md_kernel_kick(g->v, g->f, g->fnl, g->x, g->n_home, 0.5f * (float)md->cfg.dt, 0.0f, g->hi));
    md__gpu_record(g, EV_K2, g->hi);
    if (g->in_step)
        g->slot[g->cur].pending = 1;
    g->in_step = 0;
    g->xv_fresh = 0;
    return HALOX_OK;
}

halox_status_t md__gpu_kinetic(halox_md_t *md, double *ke_p)
{
    md_gpu_t *g = md->gpu;
    MD_CUDA(cudaMemsetAsync(g->energy + 4, 0, sizeof(double), g->hi));
    MD_CUDA(md_kernel_kinetic(g->v, g->n_home, g->energy + 4, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_energy + 4, g->energy + 4, sizeof(double), cudaMemcpyDeviceToHost,
                            g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    *ke_p = g->h_energy[4];
    return HALOX_OK;
}

halox_status_t md__gpu_scale(halox_md_t *md, double alpha)
{
    md_gpu_t *g = md->gpu;
    MD_CUDA(md_kernel_scale(g->v, g->n_home, (float)alpha, g->hi));
    g->xv_fresh = 0;
    return HALOX_OK;
}

halox_status_t md__gpu_max_disp2(halox_md_t *md, double *d2_p)
{
    md_gpu_t *g = md->gpu;
    MD_CUDA(cudaMemsetAsync(g->disp, 0, sizeof(unsigned), g->hi));
    MD_CUDA(md_kernel_max_disp2(g->x, g->xref, g->n_home, g->disp, g->hi));
    MD_CUDA(cudaMemcpyAsync(g->h_disp, g->disp, sizeof(unsigned), cudaMemcpyDeviceToHost, g->hi));
    MD_CUDA(cudaStreamSynchronize(g->hi));
    float d2;
    memcpy(&d2, g->h_disp, sizeof d2);
    *d2_p = (double)d2;
    return HALOX_OK;
}

/* Pairs in the lists (each listed twice in full rows) and the pending timers, for the summary. */
halox_status_t md__gpu_stats(halox_md_t *md)
{
    md_gpu_t *g = md->gpu;
    halox_status_t st = md__gpu_flush_timers(md);
    if (st != HALOX_OK)
        return st;
    int n = g->n_total, nh = g->n_home;
    int *c = malloc(sizeof(int) * (size_t)(n + nh + 1));
    if (!c)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for list statistics");
    cudaError_t e = cudaMemcpy(c, g->cnt_nl, sizeof(int) * (size_t)n, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess)
        e = cudaMemcpy(c + n, g->cnt_loc, sizeof(int) * (size_t)nh, cudaMemcpyDeviceToHost);
    long long s = 0;
    for (int k = 0; e == cudaSuccess && k < n + nh; k++)
        s += c[k];
    free(c);
    if (e != cudaSuccess)
        return md__gpu_error(md, e, "cudaMemcpy (list counts)");
    md->nl.npairs = (size_t)(s / 2);
    return HALOX_OK;
}

#else /* no CUDA: the engine never creates a GPU back end; these only say so */

halox_status_t md__gpu_create(halox_md_t *md)
{
    (void)md;
    return halox__error(HALOX_ERR_UNAVAILABLE,
                        "this build has no CUDA: the GPU engine is not available (--device cpu)");
}
void md__gpu_destroy(halox_md_t *md) { (void)md; }
halox_status_t md__gpu_flush_timers(halox_md_t *md)
{
    (void)md;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_to_host(halox_md_t *md, int forces)
{
    (void)md;
    (void)forces;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_after_plan(halox_md_t *md)
{
    (void)md;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_kick_drift(halox_md_t *md)
{
    (void)md;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_forces(halox_md_t *md, int coords, int want_energy)
{
    (void)md;
    (void)coords;
    (void)want_energy;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_kick(halox_md_t *md)
{
    (void)md;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_kinetic(halox_md_t *md, double *ke_p)
{
    (void)md;
    *ke_p = 0;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_scale(halox_md_t *md, double alpha)
{
    (void)md;
    (void)alpha;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_max_disp2(halox_md_t *md, double *d2_p)
{
    (void)md;
    *d2_p = 0;
    return HALOX_ERR_UNAVAILABLE;
}
halox_status_t md__gpu_stats(halox_md_t *md)
{
    (void)md;
    return HALOX_ERR_UNAVAILABLE;
}

#endif
