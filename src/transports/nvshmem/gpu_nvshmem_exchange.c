/* The exchanges of nvshmem-stream, nvshmem-pulse and nvshmem-fused, and their tables (the
 * endpoint: gpu_nvshmem.c; memory and bind: gpu_nvshmem_bind.c; hybrid: gpu_hybrid.c). */
#define _POSIX_C_SOURCE 200809L

#include "core/pack.h"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/gpu/gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/gpu/pulse_gpu.h"
#include "transports/registry.h"

/* ---- nvshmem-stream: the leg of the pulse driver (pulse_gpu.c) ------------------------------ */

halox_status_t halox__shm_put(halox_comm_t *comm, int dir, int k)
{
    halox__shm_t *m = halox__shm(comm);
    const halox_pulse_t *p = &comm->plan->pulse[k];
    const halox__shm_row_t *R = &m->rows[k];
    const size_t esize = m->g.no_atoms ? 0 : halox__atom_bytes(comm->real, comm->stride, 1);
    cudaError_t e =
        dir == HALOX__GPU_COORDS
            ? halox__shm_put_signal_on_stream(R->x_sym, R->stage, (size_t)p->send_count * esize,
                                              m->sig + k, R->send_pe, m->g.stream)
            : halox__shm_put_signal_on_stream(R->fb_sym, R->f_src, (size_t)p->recv_count * esize,
                                              m->sig + HALOX_MAX_PULSES + k, R->recv_pe,
                                              m->g.stream);
    return e == cudaSuccess ? HALOX_OK
                            : halox__shm_launch_error(comm, e, "put-with-signal on the stream");
}

halox_status_t halox__shm_await(halox_comm_t *comm, int dir, int k)
{
    halox__shm_t *m = halox__shm(comm);
    halox__shm_launch_t *l = &m->call;
    const halox__shm_row_t *R = &m->rows[k];
    l->bump = k == m->last_wait[dir];
    cudaError_t e =
        dir == HALOX__GPU_COORDS
            ? halox__shm_wait(l, HALOX__GPU_COORDS, k, R->recv_pe, m->g.stream)
            : halox__shm_wait(l, HALOX__GPU_FORCES, HALOX_MAX_PULSES + k, R->send_pe, m->g.stream);
    return e == cudaSuccess ? HALOX_OK : halox__shm_launch_error(comm, e, "the signal wait kernel");
}

halox_status_t halox__shm_open(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    m->call = halox__shm_launch_base(comm);
    m->h_epoch[dir]++;
    m->step_of[dir][m->h_epoch[dir] % 64] = comm->step;
    return HALOX_OK;
}

void *halox__shm_slot(halox_comm_t *comm, int dir, int k)
{
    const halox__shm_row_t *R = &halox__shm(comm)->rows[k];
    return dir == HALOX__GPU_COORDS ? R->stage : R->fb_mine;
}

/* Coordinates: the put into the receiver's halo, then the wait for our own incoming pulse. */
static halox_status_t halox__shm_send(halox_comm_t *comm, int k)
{
    halox_status_t st = halox__shm_put(comm, HALOX__GPU_COORDS, k);
    return st == HALOX_OK ? halox__shm_await(comm, HALOX__GPU_COORDS, k) : st;
}

/* Forces: the put into the owner's force buffer, then the wait for those of our sent atoms. */
static halox_status_t halox__shm_swap(halox_comm_t *comm, int k)
{
    halox_status_t st = halox__shm_put(comm, HALOX__GPU_FORCES, k);
    return st == HALOX_OK ? halox__shm_await(comm, HALOX__GPU_FORCES, k) : st;
}

static const halox__pulse_gpu_leg_t halox__shm_stream_leg = {
    .events = 1,
    .drain = halox__shm_drain,
    .open = halox__shm_open,
    .slot = halox__shm_slot,
    .send = halox__shm_send,
    .swap = halox__shm_swap,
    .fail = halox__shm_launch_error,
};

/* ---- nvshmem-pulse and nvshmem-fused: their own kernels run whole pulses -------------------- */

/* Per pulse one kernel (nvshmem-pulse), or one for all pulses (nvshmem-fused), in the pulse order
 * of the direction; the last kernel raises the epoch. */
static halox_status_t halox__shm_kernels(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const int n = g->plan.n_pulses, coords = dir == HALOX__GPU_COORDS;
    halox__shm_launch_t *l = &m->call;
    halox_status_t st = HALOX_OK;
    cudaError_t e = cudaSuccess;
    if (m->mode == HALOX__SHM_FUSED && n > 0) {
        l->first = coords ? 0 : n - 1;
        l->count = n;
        l->bump = 1;
        if ((e = coords ? halox__shm_coords(l, g->stream) : halox__shm_forces(l, g->stream)) !=
            cudaSuccess)
            return halox__shm_launch_error(
                comm, e, coords ? "the fused coordinate kernel" : "the fused force kernel");
        return halox__gpu_record(comm, g, dir, coords ? n - 1 : 0);
    }
    for (int i = 0; i < n && st == HALOX_OK; i++) {
        const int k = coords ? i : n - 1 - i;
        l->first = k;
        l->count = 1;
        l->bump = i == n - 1;
        if ((e = coords ? halox__shm_coords(l, g->stream) : halox__shm_forces(l, g->stream)) !=
            cudaSuccess)
            return halox__shm_launch_error(
                comm, e, coords ? "a pulse's coordinate kernel" : "a pulse's force kernel");
        st = halox__gpu_record(comm, g, dir, k);
    }
    return st;
}

static const halox__pulse_gpu_leg_t halox__shm_kernel_leg = {
    .drain = halox__shm_drain,
    .open = halox__shm_open,
    .pulses = halox__shm_kernels,
    .fail = halox__shm_launch_error,
};

/* Endpoint creation for a mode (gpu_nvshmem.c), then its leg of the pulse driver. */
static halox_status_t halox__shm_init_leg(halox_comm_t *comm, const halox_comm_args_t *args,
                                          int mode, const char *name,
                                          const halox__pulse_gpu_leg_t *leg)
{
    halox_status_t st = halox__shm_init_mode(comm, args, mode, name);
    if (st == HALOX_OK)
        halox__shm(comm)->g.leg = leg;
    return st;
}

static halox_status_t halox__shm_init_stream(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_leg(comm, args, HALOX__SHM_STREAM, "nvshmem-stream",
                               &halox__shm_stream_leg);
}
static halox_status_t halox__shm_init_pulse(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_leg(comm, args, HALOX__SHM_PULSE, "nvshmem-pulse",
                               &halox__shm_kernel_leg);
}
static halox_status_t halox__shm_init_fused(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_leg(comm, args, HALOX__SHM_FUSED, "nvshmem-fused",
                               &halox__shm_kernel_leg);
}

HALOX__SHM_OPS(halox__nvshmem_stream_ops, "nvshmem-stream",
               "GPU-initiated: pack kernel, NVSHMEM put-with-signal and signal wait on the stream, "
               "per pulse (host only enqueues)",
               halox__shm_init_stream, 1);
HALOX__SHM_OPS(halox__nvshmem_pulse_ops, "nvshmem-pulse",
               "GPU-initiated: one kernel per pulse packs straight into the peer (NVLink stores, "
               "else put), signals and waits for its own pulse",
               halox__shm_init_pulse, 1);
HALOX__SHM_OPS(halox__nvshmem_fused_ops, "nvshmem-fused",
               "GPU-initiated: one kernel for all coordinate pulses and one for all force pulses "
               "(per-pulse signals, two-pass packing, reverse force chain)",
               halox__shm_init_fused, 1);
