/* nvshmem-inline: the halo exchange inside the caller's kernels (halox/inline.h), on the NVSHMEM
 * endpoint (gpu_nvshmem.h). Its peers must all be reachable by loads and stores (one node); it
 * stores into them directly and raises their signals with system-scope atomics, so no NVSHMEM
 * device call runs in any of its kernels.
 *
 * Two ways to run the same protocol, which interoperate pulse by pulse (the same signals, the same
 * layouts: a rank may use one while its peer uses the other):
 *   - its own kernels (inline_halo.cu), behind halox_comm_coords / halox_comm_forces: every
 *     plan (forwarding, several pulses, float or double, stride 3 or 4);
 *   - the caller's kernels, with the view of halox_comm_inline_view (float, stride 3, plans
 *     without forwarded atoms); the caller reports them with halox_comm_inline_enqueued.
 * This file: init, bind (peer check, the view: the pulse table and every home atom's sends), the
 * exchange's order of kernels, the view and the bookkeeping. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/pack.h"
#include "transports/gpu/gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/nvshmem/inline_halo.h"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/registry.h"

/* blocks of a kernel that moves `atoms` atoms and never waits: about 2 elements per thread */
static int halox__inl_move_blocks(const halox_comm_t *comm, int atoms)
{
    long long b = ((long long)atoms * comm->stride + 511) / 512;
    return b < 1 ? 1 : b > 65535 ? 65535 : (int)b;
}

/* ---- its own exchange ----------------------------------------------------------------------- */

/* Coordinates, pulses in order: pack (stores and signal) as soon as the pulses whose atoms it
 * forwards were waited for; one wait for the pulses packed since the last wait, before such a
 * pulse and at the end (the last completes the exchange). */
static halox_status_t halox__inl_coords(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const halox_plan_t *plan = comm->plan;
    const int n = g->plan.n_pulses;
    const halox__shm_launch_t *l = &m->call;
    uint32_t pending = 0;
    cudaError_t e = cudaSuccess;
    for (int k = 0; k <= n && e == cudaSuccess; k++) {
        const uint32_t want = k < n ? g->plan.needs[k] : ~0u;
        if (pending & want) {
            if ((e = halox__inl_await(l, HALOX__GPU_COORDS, pending, k == n, g->stream)) !=
                cudaSuccess)
                break;
            for (int j = 0; j < k; j++)
                if ((pending >> j) & 1u) {
                    halox_status_t st = halox__gpu_record(comm, g, HALOX__GPU_COORDS, j);
                    if (st != HALOX_OK)
                        return st;
                }
            pending = 0;
        }
        if (k == n)
            break;
        e = halox__inl_pack(l, k, halox__inl_move_blocks(comm, plan->pulse[k].send_count),
                            g->stream);
        pending |= 1u << k;
    }
    return e == cudaSuccess ? HALOX_OK
                            : halox__shm_launch_error(comm, e, "nvshmem-inline coordinate kernel");
}

/* Forces, pulses descending: send; the takes (wait and add, descending: the reference's order)
 * of the pulses sent since the last takes, before a pulse whose received atoms later pulses
 * forward (their forces must be in first) and at the end (the last completes the exchange). */
static halox_status_t halox__inl_forces(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const halox_plan_t *plan = comm->plan;
    const int n = g->plan.n_pulses;
    const halox__shm_launch_t *l = &m->call;
    const int spin = halox__shm_max_blocks(m->pes_per_gpu);
    uint32_t pending = 0;
    cudaError_t e = cudaSuccess;
    for (int k = n - 1; k >= -1 && e == cudaSuccess; k--) {
        if (pending && (k < 0 || m->rows[k].feeds)) {
            for (int j = n - 1; j > k && e == cudaSuccess; j--) {
                if (!((pending >> j) & 1u))
                    continue;
                int b = halox__inl_move_blocks(comm, plan->pulse[j].send_count);
                b = b < spin ? b : spin; /* every block waits: all resident at once */
                const int last = k < 0 && (pending & ((1u << j) - 1u)) == 0;
                if ((e = halox__inl_take(l, j, last, b, g->stream)) == cudaSuccess) {
                    halox_status_t st = halox__gpu_record(comm, g, HALOX__GPU_FORCES, j);
                    if (st != HALOX_OK)
                        return st;
                }
            }
            pending = 0;
        }
        if (k < 0)
            break;
        e = halox__inl_send(l, k, halox__inl_move_blocks(comm, plan->pulse[k].recv_count),
                            g->stream);
        pending |= 1u << k;
    }
    return e == cudaSuccess ? HALOX_OK
                            : halox__shm_launch_error(comm, e, "nvshmem-inline force kernel");
}

static halox_status_t halox__inl_exchange_coords(halox_comm_t *comm)
{
    halox_status_t st = halox__shm_begin(comm, HALOX__GPU_COORDS);
    return st == HALOX_OK ? halox__inl_coords(comm) : st;
}

static halox_status_t halox__inl_exchange_forces(halox_comm_t *comm)
{
    halox_status_t st = halox__shm_begin(comm, HALOX__GPU_FORCES);
    return st == HALOX_OK ? halox__inl_forces(comm) : st;
}

/* ---- init, bind ------------------------------------------------------------------------------ */

static halox_status_t halox__inl_init(halox_comm_t *comm, const halox_comm_args_t *args)
{
    halox_status_t st = halox__shm_init_mode(comm, args, HALOX__SHM_INLINE, "nvshmem-inline");
    if (st != HALOX_OK)
        return st;
    halox__shm_t *m = halox__shm(comm);
    if (m->use_put) {
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "nvshmem-inline: rank %d: HALOX_NVSHMEM_PUT=1 asks for puts, but this "
                          "transport only stores into peers: unset it, or use nvshmem-fused (which "
                          "puts when it is set)",
                          comm->rank);
    }
    st = halox__agree(comm, st, "nvshmem-inline endpoint creation");
    if (st != HALOX_OK)
        halox__shm_fini(comm);
    return st;
}

/* Why the bound plan has no view for kernels of the caller ("" when it has one). */
static void halox__inl_why_not(halox_comm_t *comm, char *why, size_t len)
{
    halox__shm_t *m = halox__shm(comm);
    const halox__gpu_plan_t *dp = &m->g.plan;
    why[0] = '\0';
    if (m->g.no_atoms == 2) { /* the caller's kernels would signal into emptied ones */
        snprintf(why, len,
                 "HALOX_NVSHMEM_SIGNAL_ONLY=2 (the launch floor) empties the transport's own "
                 "kernels, which then exchange for every rank");
        return;
    }
    if (comm->real != HALOX_FLOAT || comm->stride != 3) {
        snprintf(why, len,
                 "the view serves float coordinates with stride 3 (this endpoint: %s, "
                 "stride %d)",
                 comm->real == HALOX_DOUBLE ? "double" : "float", comm->stride);
        return;
    }
    for (int k = 0; k < dp->n_pulses; k++)
        if (dp->home_prefix[k] < comm->plan->pulse[k].send_count) {
            snprintf(why, len,
                     "pulse %d forwards atoms received by an earlier pulse (a decomposition in "
                     "more than one dimension, or several pulses in one): such plans exchange "
                     "with halox_comm_coords / halox_comm_forces",
                     k);
            return;
        }
}

/* The view of the bound plan: the pulse table and every home atom's sends on the device. */
static halox_status_t halox__inl_bind_view(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses, nh = plan->n_home;
    m->inl_ok = 0;
    halox__inl_why_not(comm, m->inl_why, sizeof m->inl_why);
    if (m->inl_why[0])
        return HALOX_OK;
    halox_inline_pulse_t pulses[HALOX_MAX_PULSES];
    const int *maps[HALOX_MAX_PULSES];
    int counts[HALOX_MAX_PULSES];
    long long sends = 0;
    memset(pulses, 0, sizeof pulses);
    for (int k = 0; k < n; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        const halox__shm_row_t *R = &m->rows[k];
        halox_inline_pulse_t *P = &pulses[k];
        P->dim = p->dim;
        P->shift = (float)p->shift;
        P->send_count = p->send_count;
        P->recv_offset = p->recv_offset;
        P->recv_count = p->recv_count;
        P->send_pe = R->send_pe;
        P->recv_pe = R->recv_pe;
        P->x_peer = R->x_peer;
        P->sig_x_peer = (unsigned long long *)R->sig_x_peer;
        P->f_peer = R->fb_peer;
        P->sig_f_peer = (unsigned long long *)R->sig_f_peer;
        P->f_back = R->fb_mine;
        maps[k] = R->map;
        counts[k] = p->send_count;
        sends += p->send_count;
    }
    halox_status_t st = HALOX_OK;
    void *p0 = m->inl_pulses, *p1 = m->inl_start, *p2 = m->inl_send, *p3 = m->inl_scratch;
    void *p4 = m->inl_scan;
    st = halox__gpu_scratch(comm, g, &p0, &m->inl_cap[0], sizeof pulses, 0, "bind: inline view");
    if (st == HALOX_OK)
        st = halox__gpu_scratch(comm, g, &p1, &m->inl_cap[1], sizeof(int) * ((size_t)nh + 1), 0,
                                "bind: inline view");
    if (st == HALOX_OK)
        st = halox__gpu_scratch(comm, g, &p2, &m->inl_cap[2],
                                sizeof(halox_inline_send_t) * (size_t)(sends > 0 ? sends : 1), 0,
                                "bind: inline view");
    if (st == HALOX_OK)
        st = halox__gpu_scratch(comm, g, &p3, &m->inl_cap[3],
                                sizeof(int) * halox__inl_sends_scratch(nh), 0, "bind: inline view");
    if (st == HALOX_OK) /* the scan's own: zero when new, then left ready by every scan */
        st = halox__gpu_scratch_zeroed(comm, g, &p4, &m->inl_cap[4],
                                       sizeof(int) * halox__inl_sends_scan_scratch(nh),
                                       "bind: inline view");
    m->inl_pulses = p0;
    m->inl_start = p1;
    m->inl_send = p2;
    m->inl_scratch = p3;
    m->inl_scan = p4;
    if (st != HALOX_OK)
        return st;
    /* on the stream, before any kernel that reads the view (a copy from pageable memory has
     * taken the table when it returns): no synchronisation */
    cudaError_t e =
        cudaMemcpyAsync(m->inl_pulses, pulses, sizeof pulses, cudaMemcpyHostToDevice, g->stream);
    if (e == cudaSuccess)
        e = halox__inl_sends(nh, n, maps, counts, m->inl_start, m->inl_send, m->inl_scratch,
                             m->inl_scan, g->stream);
    if (e != cudaSuccess)
        return halox__gpu_cuda_error(comm, g, e, "building the inline view", HALOX_ERR_COMM, 1);
    halox_inline_view_t *v = &m->inl_view;
    memset(v, 0, sizeof *v);
    v->n_pulses = n;
    v->pulse = m->inl_pulses;
    v->n_home = nh;
    v->send_start = m->inl_start;
    v->send = m->inl_send;
    v->sig = (unsigned long long *)m->sig;
    v->epoch = m->state->epoch;
    v->ticket = m->state->ticket;
    v->abort = &m->state->abort;
    v->fail = &m->state->fail;
    v->host_flag = m->d_flag;
    v->timeout_ns = (long long)(comm->timeout_s * 1e9);
    v->spin_blocks = halox__shm_max_blocks(m->pes_per_gpu);
    v->no_atoms = g->no_atoms;
    m->inl_ok = 1;
    return HALOX_OK;
}

static halox_status_t halox__inl_bind(halox_comm_t *comm, halox_status_t st0)
{
    halox_status_t st = halox__shm_bind_begin(comm, st0);
    halox__shm_t *m = halox__shm(comm);
    const halox_plan_t *plan = comm->plan;
    for (int k = 0; k < m->g.plan.n_pulses && st == HALOX_OK; k++) {
        const halox__shm_row_t *R = &m->rows[k];
        if (!R->x_peer || !R->sig_x_peer || !R->fb_peer || !R->sig_f_peer)
            st = halox__error(HALOX_ERR_UNAVAILABLE,
                              "nvshmem-inline: rank %d: pulse %d: rank %d or rank %d cannot be "
                              "reached by loads and stores (another node, or GPUs without peer "
                              "access): this transport stores into its peers; use nvshmem-fused "
                              "or hybrid",
                              comm->rank, k, plan->pulse[k].send_rank, plan->pulse[k].recv_rank);
    }
    if (st == HALOX_OK)
        st = halox__inl_bind_view(comm);
    /* the view's uploads waited for with the rest, in the bind's one last agreement */
    return halox__shm_bind_end(comm, st);
}

/* ---- the view, the bookkeeping ----------------------------------------------------------- */

static halox_status_t halox__inl_view(halox_comm_t *comm, halox_inline_view_t *view)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__gpu_usable(comm, &m->g, "inline_view");
    if (st != HALOX_OK)
        return st;
    if (!m->inl_ok)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "nvshmem-inline: rank %d: the bound plan has no in-kernel view: %s",
                            comm->rank, m->inl_why);
    *view = m->inl_view;
    return HALOX_OK;
}

static halox_status_t halox__inl_enqueued(halox_comm_t *comm, int coords)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__gpu_usable(comm, &m->g, "inline_enqueued");
    if (st != HALOX_OK)
        return st;
    /* the exchanges' numbers and steps, for the messages of a wait that gives up */
    for (int dir = coords ? HALOX__GPU_COORDS : HALOX__GPU_FORCES; dir <= HALOX__GPU_FORCES;
         dir++) {
        m->h_epoch[dir]++;
        m->step_of[dir][m->h_epoch[dir] % 64] = comm->step;
    }
    return halox__shm_check(comm, NULL);
}

const halox_transport_ops_t halox__nvshmem_inline_ops = {
    .name = "nvshmem-inline",
    .description = "GPU-initiated inside the caller's kernels: the integration stores the halo "
                   "into the peers and signals, the force kernels wait in-kernel and return the "
                   "halo forces from their epilogue (one node; own kernels otherwise)",
    HALOX__GPU_OPS_SHARED,
    .capturable = 1,
    .graph_updatable = 1,
    .symmetric = 1,
    .init = halox__inl_init,
    .fini = halox__shm_fini,
    .bind = halox__inl_bind,
    .coords = halox__inl_exchange_coords,
    .forces = halox__inl_exchange_forces,
    .dalloc = halox__shm_dalloc,
    .dfree = halox__shm_dfree,
    .poll = halox__shm_poll,
    .inline_view = halox__inl_view,
    .inline_enqueued = halox__inl_enqueued,
};
