/* The `hybrid` GPU transport: per pulse and per pair of ranks, GPU-initiated where the peer's
 * memory is reachable by loads and stores, CPU-orchestrated MPI where it is not.
 *
 *   direct legs  as nvshmem-stream: pack kernel into symmetric staging, put-with-signal on the
 *                stream, a one-thread kernel that waits (bounded) for this PE's signal; forces
 *                back the same way into the owner's force buffer, then the accumulate kernel.
 *   staged legs  as mpi-staged (src/transports/gpu_staging.c): pack kernel, copy to pinned host
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
 * Signals and epochs (src/kernels/nvshmem_halo.h): only direct legs signal and wait. Each
 * direction's epoch is raised by the last wait of an exchange (bind computes last_wait from the
 * routes: the highest pulse with a direct receive leg for coordinates, the lowest with a direct
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
#include "transports/gpu_nvshmem.h"
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

/* Bind (collective, every rank healthy): the routes of the bound plan, agreed with each pulse's
 * peers, and the pinned host buffers of the staged legs. */
static halox_status_t halox__hyb_bind(halox_comm_t *comm)
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

/* The end of an exchange call. A failure leaves work (and maybe peers) behind: outstanding MPI
 * requests are abandoned, and NVSHMEM is not finalised collectively at exit. */
static halox_status_t halox__hyb_end(halox_comm_t *comm, halox_status_t st)
{
    halox__shm_t *m = halox__shm(comm);
    if (st == HALOX_OK)
        st = halox__shm_check(comm, NULL); /* a wait kernel of this exchange that gave up */
    if (st != HALOX_OK && m->g.failed) {
        halox__hst_abandon(&m->hs);
        halox__shm_poison();
    }
    return st;
}

/* What an exchange call works with. */
typedef struct halox__hyb_call {
    halox__shm_t *m;
    halox__hst_t *h;
    const halox__route_t *rt;
    const halox_plan_t *plan;
    const halox__gpu_plan_t *dp;
    int n;
    size_t esize; /* bytes per atom (0: HALOX_NVSHMEM_SIGNAL_ONLY, signals without atoms) */
    halox__shm_launch_t l;
    halox__hst_op_t op;
} halox__hyb_call_t;

/* The start of an exchange call in direction dir: a bound plan, the previous step's exchanges
 * complete (coordinates; bounded, and a kernel that gave up is reported here), the epochs of
 * the messages, and the staged legs' receives posted (coordinates come in over the receive
 * leg, forces over the send leg). */
static halox_status_t halox__hyb_begin(halox_comm_t *comm, int dir, halox__hyb_call_t *c)
{
    halox__shm_t *m = halox__shm(comm);
    const int coords = dir == HALOX__GPU_COORDS;
    halox_status_t st =
        halox__gpu_bound(comm, &m->g, coords ? "coordinate exchange" : "force exchange");
    if (st == HALOX_OK && coords)
        st = halox__shm_drain(comm, "before the next coordinate exchange");
    if (st != HALOX_OK)
        return st;
    c->m = m;
    c->h = &m->hs;
    c->rt = &m->route;
    c->plan = comm->plan;
    c->dp = &m->g.plan;
    c->n = c->dp->n_pulses;
    c->esize = m->signal_only ? 0 : halox__atom_bytes(comm->real, comm->stride, 1);
    c->l = halox__shm_launch_base(comm);
    c->op = (halox__hst_op_t){coords ? "coordinate exchange" : "force exchange",
                              halox__now() + comm->timeout_s};
    m->h_epoch[dir]++;
    m->step_of[dir][m->h_epoch[dir] % 64] = comm->step;
    halox__hst_clear(&m->hs);
    for (int k = 0; k < c->n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &c->plan->pulse[k];
        if ((coords ? m->route.recv[k] : m->route.send[k]) != HALOX__ROUTE_STAGED)
            continue;
        st = coords ? halox__hst_post(comm, &m->hs, HALOX__HST_RECV + k, 1,
                                      m->hs.h_recv + c->dp->recv_off[k],
                                      (size_t)p->recv_count * c->esize, p->recv_rank,
                                      HALOX__HST_TAG_COORDS + k, k, &c->op)
                    : halox__hst_post(comm, &m->hs, HALOX__HST_RECV + k, 1,
                                      m->hs.h_send + c->dp->buf_off[k],
                                      (size_t)p->send_count * c->esize, p->send_rank,
                                      HALOX__HST_TAG_FORCES + k, k, &c->op);
    }
    return st;
}

/* Coordinates, pulses in order. */
static halox_status_t halox__hyb_coords_pulses(halox_comm_t *comm, halox__hyb_call_t *c)
{
    halox__shm_t *m = c->m;
    const halox__gpu_plan_t *dp = c->dp;
    const size_t esize = c->esize;
    char *x = comm->x;
    halox_status_t st = HALOX_OK;
    cudaError_t e = cudaSuccess;
    uint32_t landed = 0; /* staged receives copied into the halo */
    for (int k = 0; k <= c->n && st == HALOX_OK; k++) {
        /* the staged pulses whose atoms pulse k forwards are in the halo before it packs; after
         * the last pulse (k == c->n), every staged pulse */
        const uint32_t want = k < c->n ? dp->needs[k] : ~0u;
        for (int j = 0; j < k && st == HALOX_OK; j++) {
            if (!(want & (1u << j)) || (landed & (1u << j)) ||
                c->rt->recv[j] != HALOX__ROUTE_STAGED)
                continue;
            const halox_pulse_t *q = &c->plan->pulse[j];
            st = halox__hst_land(comm, c->h, j, x + (size_t)q->recv_offset * esize,
                                 c->h->h_recv + dp->recv_off[j], (size_t)q->recv_count * esize,
                                 &c->op, "copying received coordinates to the device");
            landed |= 1u << j;
        }
        if (k == c->n || st != HALOX_OK)
            break;
        const halox_pulse_t *p = &c->plan->pulse[k];
        const halox__shm_row_t *R = &m->rows[k];
        const size_t bytes = (size_t)p->send_count * esize;
        if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: pack straight into our own halo */
            if (bytes > 0 && (e = halox__gpu_pack(dp, c->plan, k, comm->real, comm->stride,
                                                  x + (size_t)p->recv_offset * esize, x,
                                                  m->g.stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "pack kernel (local copy)");
            st = halox__gpu_record(comm, &m->g, HALOX__GPU_COORDS, k);
            continue;
        }
        if (bytes > 0 && (e = halox__gpu_pack(dp, c->plan, k, comm->real, comm->stride, R->stage, x,
                                              m->g.stream)) != cudaSuccess)
            return halox__shm_launch_error(comm, e, "pack kernel");
        /* send leg: before this pulse's own wait is enqueued, so that a staged send's stream
         * synchronisation waits only for earlier pulses */
        if (c->rt->send[k] == HALOX__ROUTE_DIRECT) {
            if ((e = halox__shm_put_signal_on_stream(R->x_sym, R->stage, bytes, m->sig + k,
                                                     R->send_pe, m->g.stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "put-with-signal on the stream");
        } else {
            st = halox__hst_send(comm, c->h, k, R->stage, c->h->h_send + dp->buf_off[k], bytes,
                                 p->send_rank, HALOX__HST_TAG_COORDS + k, &c->op);
        }
        /* receive leg: a direct pulse's wait is on the stream; a staged one lands when a later
         * pulse forwards its atoms, or at the end */
        if (st == HALOX_OK && c->rt->recv[k] == HALOX__ROUTE_DIRECT) {
            c->l.bump = k == m->last_wait[0];
            if ((e = halox__shm_wait(&c->l, HALOX__GPU_COORDS, k, R->recv_pe, m->g.stream)) !=
                cudaSuccess)
                return halox__shm_launch_error(comm, e, "the signal wait kernel");
        }
        if (st == HALOX_OK)
            st = halox__gpu_record(comm, &m->g, HALOX__GPU_COORDS, k);
    }
    return st;
}

/* Forces, pulses in reverse order. */
static halox_status_t halox__hyb_forces_pulses(halox_comm_t *comm, halox__hyb_call_t *c)
{
    halox__shm_t *m = c->m;
    const halox__gpu_plan_t *dp = c->dp;
    const size_t esize = c->esize;
    char *f = comm->f;
    halox_status_t st = HALOX_OK;
    cudaError_t e = cudaSuccess;
    /* reverse order: pulse k's halo forces go back once the later pulses that forward its atoms
     * added theirs (earlier on the stream), and the returned forces are added in the reference's
     * order, so the sums are bit-identical */
    for (int k = c->n - 1; k >= 0 && st == HALOX_OK; k--) {
        const halox_pulse_t *p = &c->plan->pulse[k];
        const halox__shm_row_t *R = &m->rows[k];
        const size_t rbytes = (size_t)p->recv_count * esize, sbytes = (size_t)p->send_count * esize;
        if (halox__gpu_self(comm, p)) {
            /* a single rank in this dimension: add our own halo's forces straight from f */
            if (sbytes > 0 && (e = halox__gpu_add(dp, c->plan, k, comm->real, comm->stride, f,
                                                  f + (size_t)p->recv_offset * esize,
                                                  m->g.stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "force accumulation kernel (local)");
            st = halox__gpu_record(comm, &m->g, HALOX__GPU_FORCES, k);
            continue;
        }
        /* receive leg: the forces on the atoms we received go back to their owner */
        if (c->rt->recv[k] == HALOX__ROUTE_DIRECT) {
            if ((e = halox__shm_put_signal_on_stream(R->fb_sym, R->f_src, rbytes,
                                                     m->sig + HALOX_MAX_PULSES + k, R->recv_pe,
                                                     m->g.stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "put-with-signal on the stream");
        } else {
            st = halox__hst_send(comm, c->h, k, R->f_src, c->h->h_recv + dp->recv_off[k], rbytes,
                                 p->recv_rank, HALOX__HST_TAG_FORCES + k, &c->op);
        }
        /* send leg: the forces on the atoms we sent come back into our force buffer */
        if (st == HALOX_OK && c->rt->send[k] == HALOX__ROUTE_DIRECT) {
            c->l.bump = k == m->last_wait[1];
            if ((e = halox__shm_wait(&c->l, HALOX__GPU_FORCES, HALOX_MAX_PULSES + k, R->send_pe,
                                     m->g.stream)) != cudaSuccess)
                return halox__shm_launch_error(comm, e, "the signal wait kernel");
        } else if (st == HALOX_OK) {
            st = halox__hst_land(comm, c->h, k, R->fb_mine, c->h->h_send + dp->buf_off[k], sbytes,
                                 &c->op, "copying returned forces to the device");
        }
        if (st == HALOX_OK && sbytes > 0 &&
            (e = halox__gpu_add(dp, c->plan, k, comm->real, comm->stride, f, R->fb_mine,
                                m->g.stream)) != cudaSuccess)
            return halox__shm_launch_error(comm, e, "force accumulation kernel");
        if (st == HALOX_OK)
            st = halox__gpu_record(comm, &m->g, HALOX__GPU_FORCES, k);
    }
    return st;
}

/* One exchange call: its pulses, then every staged send complete. (Forces: the host buffers
 * were last used by the coordinate exchange, which completed them.) */
static halox_status_t halox__hyb_exchange(halox_comm_t *comm, int dir)
{
    halox__hyb_call_t c;
    halox_status_t st = halox__hyb_begin(comm, dir, &c);
    if (st == HALOX_OK)
        st = dir == HALOX__GPU_COORDS ? halox__hyb_coords_pulses(comm, &c)
                                      : halox__hyb_forces_pulses(comm, &c);
    if (st == HALOX_OK)
        st = halox__hst_wait(comm, &halox__shm(comm)->hs, HALOX__HST_SEND, c.n, &c.op);
    return halox__hyb_end(comm, st);
}

static halox_status_t halox__hyb_coords(halox_comm_t *comm)
{
    return halox__hyb_exchange(comm, HALOX__GPU_COORDS);
}

static halox_status_t halox__hyb_forces(halox_comm_t *comm)
{
    return halox__hyb_exchange(comm, HALOX__GPU_FORCES);
}

static halox_status_t halox__hyb_init_endpoint(halox_comm_t *comm, const halox_comm_args_t *args)
{
    halox_status_t st = halox__shm_init_mode(comm, args, HALOX__SHM_HYBRID, "hybrid");
    if (st != HALOX_OK)
        return st;
    halox__shm(comm)->bind_routes = halox__hyb_bind;
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
               halox__hyb_init_endpoint, 0, halox__hyb_coords, halox__hyb_forces);
