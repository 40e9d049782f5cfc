/* The `hybrid` GPU transport: per pulse and per pair of ranks, GPU-initiated where the peer's
 * memory is reachable by loads and stores, CPU-orchestrated MPI where it is not.
 *
 *   direct legs  as nvshmem-stream: pack kernel into symmetric staging, put-with-signal on the
 *                stream, a one-thread kernel that waits (bounded) for this PE's signal; forces
 *                back the same way into the owner's force buffer, then the accumulate kernel.
 *   staged legs  as mpi-staged (src/transports/gpu/gpu_staging.c): pack kernel, copy to pinned host
 *                memory, stream synchronisation, MPI; the receiver copies into its halo (or its
 *                force buffer, then accumulates).
 *   self pulses  (a single rank in a dimension) local copies, as everywhere.
 * The routes are decided per pair at bind (src/core/route.h): direct when both ranks get a
 * load/store pointer to each other from NVSHMEM (nvshmem_ptr: same node, NVLink or PCIe peer
 * access) and neither declared the pair in HALOX_HYBRID_UNREACHABLE; both ranks vote and a leg
 * is direct only when both voted for it, so they always agree. A pair's pulses take the same
 * route in both directions, so a buffer's reuse across steps is protected by the same chain as
 * in nvshmem-stream (direct pairs) or mpi-staged (staged pairs).
 *
 * Order. Pulses run in plan order (forces in reverse) on the host and on the stream. A pulse that
 * forwards atoms of an earlier staged pulse first waits for that message and enqueues its copy
 * into the halo, so the pack (stream-ordered after it) sees the atoms; atoms of earlier direct
 * pulses are in once their wait kernels, earlier on the stream, have passed. The host blocks only
 * on MPI receives of earlier pulses and on the stream before a staged send, never on anything
 * that a later pulse of a peer produces, so no rank waits for a peer that waits for it.
 *
 * Signals and epochs (src/transports/nvshmem/nvshmem_halo.h): only direct legs signal and wait.
 * Each direction's epoch is raised by the last wait of an exchange (bind computes last_wait from
 * the routes: the highest pulse with a direct receive leg for coordinates, the lowest with a direct
 * send leg for forces); every direct leg signals once per exchange, also without atoms, so a
 * wait for epoch + 1 sees exactly this exchange. A rank with no direct leg never waits and never
 * needs its epoch. Staged legs send a message per pulse, also empty.
 *
 * Not capturable in CUDA graphs (the host synchronises and calls MPI inside an exchange). Every
 * wait is bounded: MPI and stream waits by the call's deadline (the stream's a little longer, so
 * that an in-kernel wait, which names pulse and peer, reports first), in-kernel waits by
 * HALOX_TIMEOUT_S. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/pack.h"
#include "transports/gpu/pulse_gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/registry.h"

/* Endpoint creation, after NVSHMEM's: the declaration and the MPI leg's communicator. Not
 * collective by itself: the caller agrees on the result. */
static halox_status_t halox__hyb_init(halox_comm_t *comm, const halox_comm_args_t *args)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__unreach_from_env(comm->size, &m->unreach);
    st = halox__agree(comm, st, "hybrid endpoint creation");
    if (st != HALOX_OK)
        return st;
    m->hs.check = halox__shm_check;
    m->hs.stream_grace = 0.5 * comm->timeout_s + 1.0;
    return halox__hst_init(comm, args, &m->hs);
}

/* Bind's own part (collective, every rank healthy): the routes of the bound plan, agreed with
 * each pulse's peers, and the pinned host buffers of the staged legs. */
static halox_status_t halox__hyb_routes(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    const halox_plan_t *plan = comm->plan;
    const int n = plan->n_pulses;
    uint8_t mine[HALOX_MAX_PULSES] = {0}, from_send[HALOX_MAX_PULSES] = {0},
            from_recv[HALOX_MAX_PULSES] = {0};
    /* this rank's votes: NVSHMEM gives a load/store pointer to the peer (its signals, like all
     * symmetric memory of that PE), and the pair is not declared unreachable */
    uint8_t *reach = calloc((size_t)comm->size, 1);
    halox_status_t st =
        reach ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "%s: bind: no memory", m->g.name);
    for (int r = 0; r < comm->size && reach; r++)
        reach[r] = halox__shm_ptr(m->sig, m->pe_of[r]) != NULL;
    if (reach)
        halox__route_votes(plan, &m->unreach, reach, mine);
    free(reach);
    st = halox__agree(comm, st, "bind");
    /* the votes of each pulse's peers on the legs we share: ours go to send_rank and recv_rank's
     * come in, then the other way round (every rank does the same calls in the same order) */
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        st = halox__gpu_sendrecv(comm, p->send_rank, &mine[k], 1, p->recv_rank, &from_recv[k], 1);
        if (st == HALOX_OK)
            st = halox__gpu_sendrecv(comm, p->recv_rank, &mine[k], 1, p->send_rank, &from_send[k],
                                     1);
    }
    if (st == HALOX_OK) {
        halox__route_decide(plan, mine, from_send, from_recv, &m->route);
        if (m->route.n_staged > 0)
            st = halox__hst_bind(comm, &m->hs, m->g.plan.send_bytes, m->g.plan.recv_bytes);
    }
    return halox__agree(comm, st, "bind");
}

/* Bind: NVSHMEM's, with the routes between its halves: which legs go direct (their signals: the
 * pulse table) and which through MPI. */
static halox_status_t halox__hyb_bind(halox_comm_t *comm, halox_status_t st0)
{
    long long *all = NULL;
    halox_status_t st = halox__shm_bind_head(comm, st0, &all);
    if (st == HALOX_OK)
        st = halox__hyb_routes(comm);
    st = halox__shm_bind_table(comm, st, all);
    return halox__shm_bind_end(comm, st);
}

/* An exchange call: the pulses walked on the stream (pulse_gpu.h), each pulse's parts per route:
 * direct ones as nvshmem-stream's (gpu_nvshmem_exchange.c), staged ones through gpu_staging.c.
 *
 * The start of the call, after the shared start (halox__shm_begin: bound, drained, launch
 * parameters and epochs): the deadline of its MPI waits, and the staged legs' receives posted
 * (coordinates come in over the receive leg, forces over the send leg). */
static halox_status_t halox__hyb_open(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    const int coords = dir == HALOX__GPU_COORDS;
    m->hs.op = (halox__hst_op_t){halox__pulse_gpu_op(dir), halox__now() + comm->timeout_s};
    uint32_t staged = 0;
    for (int k = 0; k < m->g.plan.n_pulses; k++)
        if ((coords ? m->route.recv[k] : m->route.send[k]) == HALOX__ROUTE_STAGED)
            staged |= 1u << k;
    return halox__hst_open(comm, &m->hs, dir, staged, &m->hs.op);
}

/* Coordinates: the send leg before this pulse's own wait is enqueued, so that a staged send's
 * stream synchronisation waits only for earlier pulses; the receive leg's wait is on the stream
 * (direct), or the pulse lands when a later pulse forwards its atoms, or at the end (staged). */
static halox_status_t halox__hyb_send(halox_comm_t *comm, int k)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = m->route.send[k] == HALOX__ROUTE_DIRECT
                            ? halox__shm_put(comm, HALOX__GPU_COORDS, k)
                            : halox__hst_pulse_send(comm, &m->hs, HALOX__GPU_COORDS, k,
                                                    m->rows[k].stage, &m->hs.op);
    if (st == HALOX_OK && m->route.recv[k] == HALOX__ROUTE_DIRECT)
        st = halox__shm_await(comm, HALOX__GPU_COORDS, k);
    return st;
}

static halox_status_t halox__hyb_land(halox_comm_t *comm, int j)
{
    halox__shm_t *m = halox__shm(comm);
    if (m->route.recv[j] != HALOX__ROUTE_STAGED)
        return HALOX_OK; /* direct: in once its wait kernel, earlier on the stream, passed */
    return halox__hst_pulse_land(comm, &m->hs, HALOX__GPU_COORDS, j, NULL, &m->hs.op);
}

/* Forces: the receive leg returns the forces on the atoms we received to their owner, the send
 * leg brings those on the atoms we sent into our force buffer. */
static halox_status_t halox__hyb_swap(halox_comm_t *comm, int k)
{
    halox__shm_t *m = halox__shm(comm);
    const halox__shm_row_t *R = &m->rows[k];
    halox_status_t st =
        m->route.recv[k] == HALOX__ROUTE_DIRECT
            ? halox__shm_put(comm, HALOX__GPU_FORCES, k)
            : halox__hst_pulse_send(comm, &m->hs, HALOX__GPU_FORCES, k, R->f_src, &m->hs.op);
    if (st == HALOX_OK)
        st = m->route.send[k] == HALOX__ROUTE_DIRECT
                 ? halox__shm_await(comm, HALOX__GPU_FORCES, k)
                 : halox__hst_pulse_land(comm, &m->hs, HALOX__GPU_FORCES, k, R->fb_mine, &m->hs.op);
    return st;
}

/* The end of the call: every staged send complete (forces: the host buffers were last used by
 * the coordinate exchange, which completed them). A failure leaves work (and maybe peers)
 * behind: outstanding MPI requests are abandoned, and NVSHMEM is not finalised collectively at
 * exit. */
static halox_status_t halox__hyb_close(halox_comm_t *comm, halox_status_t st)
{
    halox__shm_t *m = halox__shm(comm);
    if (st == HALOX_OK)
        st = halox__hst_wait(comm, &m->hs, HALOX__HST_SEND, m->g.plan.n_pulses, &m->hs.op);
    if (st == HALOX_OK)
        st = halox__shm_check(comm, NULL); /* a wait kernel of this exchange that gave up */
    if (st != HALOX_OK && m->g.failed) {
        halox__hst_abandon(&m->hs);
        halox__shm_poison();
    }
    return st;
}

/* Pulses in plan order (forces in reverse) on the host and on the stream, packed into the
 * symmetric staging (coordinates) and added from this PE's force buffer (forces); an event per
 * pulse; hybrid is never captured, so every coordinate exchange drains first. */
static halox_status_t halox__hyb_exchange(halox_comm_t *comm, int dir)
{
    halox__shm_t *m = halox__shm(comm);
    halox_status_t st = halox__shm_begin(comm, dir);
    if (!m)
        return st; /* not created: refused above */
    if (st == HALOX_OK)
        st = halox__hyb_open(comm, dir);
    halox__pulse_gpu_cursor_t c;
    halox__pulse_gpu_start(&c, dir, HALOX__PULSE_GPU_EVENTS | HALOX__PULSE_GPU_LANDS,
                           dir == HALOX__GPU_COORDS ? m->stage : m->fbuf);
    while (st == HALOX_OK && halox__pulse_gpu_next(comm, &c, &st))
        st = c.part == HALOX__PULSE_GPU_SEND   ? halox__hyb_send(comm, c.k)
             : c.part == HALOX__PULSE_GPU_LAND ? halox__hyb_land(comm, c.k)
                                               : halox__hyb_swap(comm, c.k);
    if (c.e != cudaSuccess)
        st = halox__shm_launch_error(comm, c.e, c.what);
    return halox__hyb_close(comm, st);
}

HALOX__PULSE_GPU_EXCHANGES(halox__hyb_exchange)

static halox_status_t halox__hyb_init_endpoint(halox_comm_t *comm, const halox_comm_args_t *args)
{
    halox_status_t st = halox__shm_init_mode(comm, args, HALOX__SHM_HYBRID, "hybrid");
    if (st != HALOX_OK)
        return st;
    st = halox__agree(comm, halox__hyb_init(comm, args), "hybrid endpoint creation");
    if (st != HALOX_OK)
        halox__shm_fini(comm);
    return st;
}

/* not capturable: staged legs synchronise with the host and call MPI inside every exchange (a
 * job whose pairs are all direct is nvshmem-stream: use that, or nvshmem-fused, for graphs) */
HALOX__SHM_OPS(halox__hybrid_ops, "hybrid",
               "per pulse, GPU-initiated put-with-signal on the stream to peers reachable by loads "
               "and stores, MPI through pinned host memory to the others (and to pairs in "
               "HALOX_HYBRID_UNREACHABLE)",
               halox__hyb_init_endpoint, halox__hyb_bind, halox__hyb_exchange_coords,
               halox__hyb_exchange_forces, 0, NULL);
