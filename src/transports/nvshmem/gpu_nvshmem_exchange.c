/* The exchanges of nvshmem-stream, nvshmem-pulse and nvshmem-fused, and their tables (the
 * endpoint: gpu_nvshmem.c; memory and bind: gpu_nvshmem_bind.c; hybrid: gpu_hybrid.c). */
#define _POSIX_C_SOURCE 200809L

#include "core/pack.h"
#include "transports/gpu/gpu.h"
#include "transports/gpu/pulse_gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/registry.h"

/* ---- the start of every exchange call ------------------------------------------------------ */

/* The call's launch parameters and the epoch of its messages. */
static void halox__shm_open(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    m->call = halox__shm_launch_base(comm);
    m->h_epoch[dir]++;
    m->step_of[dir][m->h_epoch[dir] % 64] = comm->step;
}

halox_status_t halox__shm_begin(halox_comm_t *comm, int dir)
{
    halox_status_t st = halox__gpu_bound(comm, halox__gpu(comm), halox__pulse_gpu_op(dir));
    if (st == HALOX_OK && halox__pulse_gpu_drains(comm, dir))
        st = halox__shm_drain(comm, "before the next coordinate exchange");
    if (st == HALOX_OK)
        halox__shm_open(comm, dir);
    return st;
}

/* ---- nvshmem-stream: a pulse's put and wait on the stream ------------------------------------ */

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

/* The transport's part of pulse k in the walk (pulse_gpu.h): coordinates, the put into the
 * receiver's halo, then the wait for our own incoming pulse; forces, the put into the owner's
 * force buffer, then the wait for those of our sent atoms. */
static halox_status_t halox__shm_stream_part(halox_comm_t *comm, int dir, int k)
{
    halox_status_t st = halox__shm_put(comm, dir, k);
    return st == HALOX_OK ? halox__shm_await(comm, dir, k) : st;
}

/* The pulses walked on the stream, packed into the symmetric staging (coordinates) and added
 * from this PE's force buffer (forces); an event per pulse. */
static halox_status_t halox__shm_stream(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__shm_begin(comm, dir);
    if (st != HALOX_OK)
        return st;
    halox__pulse_gpu_cursor_t c;
    halox__pulse_gpu_start(&c, dir, HALOX__PULSE_GPU_EVENTS,
                           dir == HALOX__GPU_COORDS ? m->stage : m->fbuf);
    while (st == HALOX_OK && halox__pulse_gpu_next(comm, &c, &st))
        st = halox__shm_stream_part(comm, dir, c.k);
    return c.e != cudaSuccess ? halox__shm_launch_error(comm, c.e, c.what) : st;
}

HALOX__PULSE_GPU_EXCHANGES(halox__shm_stream)

/* ---- nvshmem-pulse and nvshmem-fused: their own kernels run whole pulses -------------------- */

/* nvshmem-pulse: one kernel per pulse, in the pulse order of the direction; the last raises the
 * epoch. */
static halox_status_t halox__shm_pulse(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__shm_begin(comm, dir);
    if (st != HALOX_OK)
        return st;
    halox__gpu_t *g = &m->g;
    const int n = g->plan.n_pulses, coords = dir == HALOX__GPU_COORDS;
    halox__shm_launch_t *l = &m->call;
    for (int i = 0; i < n && st == HALOX_OK; i++) {
        const int k = coords ? i : n - 1 - i;
        l->first = k;
        l->count = 1;
        l->bump = i == n - 1;
        cudaError_t e = coords ? halox__shm_coords(l, g->stream) : halox__shm_forces(l, g->stream);
        if (e != cudaSuccess)
            return halox__shm_launch_error(
                comm, e, coords ? "a pulse's coordinate kernel" : "a pulse's force kernel");
        st = halox__gpu_record(comm, g, dir, k);
    }
    return st;
}

HALOX__PULSE_GPU_EXCHANGES(halox__shm_pulse)

/* nvshmem-fused: one kernel for all pulses of the direction (a grid row per pulse), which raises
 * the epoch; its event is the last pulse's of the direction. */
static halox_status_t halox__shm_fused(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__shm_begin(comm, dir);
    if (st != HALOX_OK || m->g.plan.n_pulses == 0)
        return st;
    halox__gpu_t *g = &m->g;
    const int n = g->plan.n_pulses, coords = dir == HALOX__GPU_COORDS;
    halox__shm_launch_t *l = &m->call;
    l->first = coords ? 0 : n - 1;
    l->count = n;
    l->bump = 1;
    cudaError_t e = coords ? halox__shm_coords(l, g->stream) : halox__shm_forces(l, g->stream);
    if (e != cudaSuccess)
        return halox__shm_launch_error(
            comm, e, coords ? "the fused coordinate kernel" : "the fused force kernel");
    return halox__gpu_record(comm, g, dir, coords ? n - 1 : 0);
}

HALOX__PULSE_GPU_EXCHANGES(halox__shm_fused)

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

HALOX__SHM_OPS(halox__nvshmem_stream_ops, "nvshmem-stream",
               "GPU-initiated: pack kernel, NVSHMEM put-with-signal and signal wait on the stream, "
               "per pulse (host only enqueues)",
               halox__shm_init_stream, halox__shm_bind, halox__shm_stream_coords,
               halox__shm_stream_forces, 1, NULL);
HALOX__SHM_OPS(halox__nvshmem_pulse_ops, "nvshmem-pulse",
               "GPU-initiated: one kernel per pulse packs straight into the peer (NVLink stores, "
               "else put), signals and waits for its own pulse",
               halox__shm_init_pulse, halox__shm_bind, halox__shm_pulse_coords,
               halox__shm_pulse_forces, 1, NULL);
HALOX__SHM_OPS(halox__nvshmem_fused_ops, "nvshmem-fused",
               "GPU-initiated: one kernel for all coordinate pulses and one for all force pulses "
               "(per-pulse signals, two-pass packing, reverse force chain)",
               halox__shm_init_fused, halox__shm_bind, halox__shm_fused_coords,
               halox__shm_fused_forces, 1, halox__shm_fields_in_kernel);
