/* The exchanges of nvshmem-stream, nvshmem-pulse and nvshmem-fused, and their tables (the
 * endpoint: gpu_nvshmem.c; memory and bind: gpu_nvshmem_bind.c; hybrid: gpu_hybrid.c). */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "core/pack.h"
#include "kernels/nvshmem_halo.h"
#include "transports/gpu.h"
#include "transports/gpu_nvshmem.h"
#include "transports/registry.h"

static halox_status_t halox__shm_init_stream(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_mode(comm, args, HALOX__SHM_STREAM, "nvshmem-stream");
}
static halox_status_t halox__shm_init_pulse(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_mode(comm, args, HALOX__SHM_PULSE, "nvshmem-pulse");
}
static halox_status_t halox__shm_init_fused(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_mode(comm, args, HALOX__SHM_FUSED, "nvshmem-fused");
}

static halox_status_t halox__shm_exchange_coords(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    halox_status_t st = halox__gpu_bound(comm, g, "coordinate exchange");
    /* the previous step's exchanges are complete (bounded): the host runs at most one step
     * ahead, and a kernel that gave up is reported here. Not while a graph is captured. */
    if (st == HALOX_OK && !comm->graph_mode)
        st = halox__shm_drain(comm, "before the next coordinate exchange");
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    halox__shm_launch_t l = halox__shm_launch_base(comm);
    cudaError_t e = cudaSuccess;
    m->h_epoch[0]++;
    m->step_of[0][m->h_epoch[0] % 64] = comm->step;
    if (m->mode == HALOX__SHM_FUSED && n > 0) {
        l.first = 0;
        l.count = n;
        l.bump = 1;
        if ((e = halox__shm_coords(&l, g->stream)) != cudaSuccess)
            return halox__shm_launch_error(comm, e, "the fused coordinate kernel");
        return halox__gpu_record(comm, g, HALOX__GPU_COORDS, n - 1);
    }
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        const halox__shm_row_t *R = &m->rows[k];
        if (m->mode == HALOX__SHM_PULSE) {
            l.first = k;
            l.count = 1;
            l.bump = k == n - 1;
            if ((e = halox__shm_coords(&l, g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "a pulse's coordinate kernel");
        } else if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: pack straight into our own halo */
            if (!m->signal_only &&
                (e = halox__gpu_pack(dp, plan, k, comm->real, comm->stride,
                                     (char *)comm->x + (size_t)p->recv_offset * esize, comm->x,
                                     g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "pack kernel (local copy)");
        } else {
            const size_t bytes = m->signal_only ? 0 : (size_t)p->send_count * esize;
            if (bytes > 0 && (e = halox__gpu_pack(dp, plan, k, comm->real, comm->stride, R->stage,
                                                  comm->x, g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "pack kernel");
            if ((e = halox__shm_put_signal_on_stream(R->x_sym, R->stage, bytes, m->sig + k,
                                                     R->send_pe, g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "put-with-signal on the stream");
            l.bump = k == m->last_wait[0];
            if ((e = halox__shm_wait(&l, HALOX__GPU_COORDS, k, R->recv_pe, g->stream)) !=
                cudaSuccess)
                return halox__shm_launch_error(comm, e, "the signal wait kernel");
        }
        st = halox__gpu_record(comm, g, HALOX__GPU_COORDS, k);
    }
    return st;
}

static halox_status_t halox__shm_exchange_forces(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    halox_status_t st = halox__gpu_bound(comm, g, "force exchange");
    if (st != HALOX_OK)
        return st;
    const halox_plan_t *plan = comm->plan;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    halox__shm_launch_t l = halox__shm_launch_base(comm);
    cudaError_t e = cudaSuccess;
    m->h_epoch[1]++;
    m->step_of[1][m->h_epoch[1] % 64] = comm->step;
    if (m->mode == HALOX__SHM_FUSED && n > 0) {
        l.first = n - 1;
        l.count = n;
        l.bump = 1;
        if ((e = halox__shm_forces(&l, g->stream)) != cudaSuccess)
            return halox__shm_launch_error(comm, e, "the fused force kernel");
        return halox__gpu_record(comm, g, HALOX__GPU_FORCES, 0);
    }
    for (int k = n - 1; k >= 0 && st == HALOX_OK; k--) {
        const halox_pulse_t *p = &plan->pulse[k];
        const halox__shm_row_t *R = &m->rows[k];
        if (m->mode == HALOX__SHM_PULSE) {
            l.first = k;
            l.count = 1;
            l.bump = k == 0;
            if ((e = halox__shm_forces(&l, g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "a pulse's force kernel");
        } else if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: add our own halo's forces straight from f */
            if (!m->signal_only &&
                (e = halox__gpu_add(dp, plan, k, comm->real, comm->stride, comm->f,
                                    (char *)comm->f + (size_t)p->recv_offset * esize, g->stream)) !=
                    cudaSuccess)
                return halox__shm_launch_error(comm, e, "force accumulation kernel (local)");
        } else {
            const size_t bytes = m->signal_only ? 0 : (size_t)p->recv_count * esize;
            if ((e = halox__shm_put_signal_on_stream(R->fb_sym, R->f_src, bytes,
                                                     m->sig + HALOX_MAX_PULSES + k, R->recv_pe,
                                                     g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "put-with-signal on the stream");
            l.bump = k == m->last_wait[1];
            if ((e = halox__shm_wait(&l, HALOX__GPU_FORCES, HALOX_MAX_PULSES + k, R->send_pe,
                                     g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "the signal wait kernel");
            if (!m->signal_only && p->send_count > 0 &&
                (e = halox__gpu_add(dp, plan, k, comm->real, comm->stride, comm->f, R->fb_mine,
                                    g->stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "force accumulation kernel");
        }
        st = halox__gpu_record(comm, g, HALOX__GPU_FORCES, k);
    }
    return st;
}

HALOX__SHM_OPS(halox__nvshmem_stream_ops, "nvshmem-stream",
               "GPU-initiated: pack kernel, NVSHMEM put-with-signal and signal wait on the stream, "
               "per pulse (host only enqueues)",
               halox__shm_init_stream, 1, halox__shm_exchange_coords, halox__shm_exchange_forces);
HALOX__SHM_OPS(halox__nvshmem_pulse_ops, "nvshmem-pulse",
               "GPU-initiated: one kernel per pulse packs straight into the peer (NVLink stores, "
               "else put), signals and waits for its own pulse",
               halox__shm_init_pulse, 1, halox__shm_exchange_coords, halox__shm_exchange_forces);
HALOX__SHM_OPS(halox__nvshmem_fused_ops, "nvshmem-fused",
               "GPU-initiated: one kernel for all coordinate pulses and one for all force pulses "
               "(per-pulse signals, two-pass packing, reverse force chain)",
               halox__shm_init_fused, 1, halox__shm_exchange_coords, halox__shm_exchange_forces);
