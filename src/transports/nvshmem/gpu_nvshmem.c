/* The GPU-initiated transports over NVSHMEM: nvshmem-stream, nvshmem-pulse, nvshmem-fused, hybrid.
 * This file: the endpoint's set-up and end, failure checks, launch parameters; memory and bind
 * in gpu_nvshmem_bind.c, the first three's exchanges and tables in gpu_nvshmem_exchange.c.
 *
 *   nvshmem-stream  per pulse: pack kernel, put-with-signal on the stream, a one-thread kernel
 *                   that waits (bounded) for this PE's signal; forces the same way back, then
 *                   the accumulate kernel. The host only enqueues.
 *   nvshmem-pulse   per pulse one kernel: two-pass pack straight into the peer's halo (or put),
 *                   signal, wait for the own incoming pulse; forces likewise in reverse.
 *   nvshmem-fused   one kernel for all coordinate pulses, one for all force pulses: a grid row
 *                   per pulse, forwarded atoms wait only for the pulses that brought them, the
 *                   force chain runs in reverse inside the kernel.
 *   nvshmem-inline  the exchange inside the caller's kernels (halox/inline.h), its own
 *                   stream-ordered kernels for halox_comm_coords / forces: gpu_nvshmem_inline.c.
 *   hybrid          nvshmem-stream's pulses to peers reachable by loads and stores, MPI through
 *                   the host to the others: its exchanges and routes are gpu_hybrid.c; it shares
 *                   this endpoint (set-up, symmetric memory, bind) through gpu_nvshmem.h.
 * Signal protocol, counters and kernels: nvshmem_halo.{h,cu} beside this file.
 *
 * Memory: peers store into this PE's x (halo ranges) and force buffers, so x and f must come
 * from halox_comm_device_alloc() (symmetric, same allocation order on every rank); the force
 * buffers, staging and signals are the endpoint's own symmetric memory, sized from the plan with
 * head-room (HALOX_NVSHMEM_HEADROOM) and regrown collectively at bind when any rank needs more.
 *
 * Set-up collectives run over the inner `mpi` endpoint (src/transports/gpu/gpu_endpoint.c);
 * NVSHMEM is initialised from the MPI job with a unique id from rank 0, once per process.
 *
 * Bounded waits: every wait inside a kernel gives up after the timeout and records pulse, peer
 * and exchange; the host checks a mapped flag before every coordinate exchange (and after graph
 * replays) and turns it into HALOX_ERR_TIMEOUT naming rank, step, pulse and peer. The host
 * itself runs at most one step ahead (events of the previous step, polled with a bound). */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "halox/env.h"
#include "transports/gpu/gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/registry.h"

static const char *halox__shm_dir_name(int dir) { return dir ? "forces" : "coordinates"; }

/* A kernel gave up waiting: read its record and say what happened. */
halox_status_t halox__shm_check(halox_comm_t *comm, void *ctx)
{
    (void)ctx;
    halox__shm_t *m = halox__shm(comm);
    if (!m->h_flag || !*(volatile int *)m->h_flag)
        return HALOX_OK;
    halox__shm_fail_t f;
    memset(&f, 0, sizeof f);
    cudaError_t e = cudaMemcpy(&f, &m->state->fail, sizeof f, cudaMemcpyDeviceToHost);
    (void)cudaGetLastError();
    const int peer_rank = f.peer >= 0 && f.peer < m->n_pes ? m->rank_of[f.peer] : -1;
    const int d = f.dir ? 1 : 0;
    /* the step of that exchange, when the host enqueued it itself (graph replays: the last) */
    const long long step = f.epoch > 0 && f.epoch <= m->h_epoch[d] && m->h_epoch[d] - f.epoch < 64
                               ? m->step_of[d][f.epoch % 64]
                               : comm->step;
    halox__shm_poison();
    if (e != cudaSuccess || f.code == 0) {
        halox__error(HALOX_ERR_TIMEOUT,
                     "%s: rank %d: a halo kernel gave up waiting for a peer (step %lld); its "
                     "record could not be read (%s); this endpoint is unusable now (end the job)",
                     m->g.name, comm->rank, comm->step, cudaGetErrorString(e));
    } else if (f.dir == HALOX__SHM_DIR_MSG) {
        /* a rebuild message's kernel (nvshmem_msg.cu): epoch is the signal value it waited for */
        const int ack = f.pulse == HALOX__SHM_MSG_ACK;
        halox__error(HALOX_ERR_TIMEOUT,
                     "%s: rank %d timed out after %.3g s waiting for rank %d (PE %d) %s of the "
                     "device rebuild at step %lld (its signal stands at %llu, %llu wanted): that "
                     "rank is missing from the rebuild, stopped, or makes different calls; check "
                     "that every rank rebuilds at the same steps, or raise HALOX_TIMEOUT_S if it "
                     "is only slow; this endpoint is unusable now (end the job)",
                     m->g.name, comm->rank, comm->timeout_s, peer_rank, f.peer,
                     ack ? "to take an earlier message out of its mailbox"
                         : "to deliver its message",
                     comm->step, f.seen, f.epoch);
    } else if (f.peer < 0) {
        halox__error(HALOX_ERR_TIMEOUT,
                     "%s: rank %d timed out after %.3g s in the %s exchange of step %lld "
                     "(exchange %llu since bind), pulse %d: waiting for this rank's own "
                     "accumulation of pulse %d, which waits for a peer that did not signal; "
                     "raise HALOX_TIMEOUT_S if a peer is only slow; this endpoint is unusable "
                     "now (end the job)",
                     m->g.name, comm->rank, comm->timeout_s, halox__shm_dir_name(f.dir), step,
                     f.epoch, f.pulse, f.pulse);
    } else {
        halox__error(HALOX_ERR_TIMEOUT,
                     "%s: rank %d timed out after %.3g s waiting for the %s of pulse %d from "
                     "rank %d (PE %d) in the exchange of step %lld (exchange %llu since bind; its "
                     "signal stands at %llu): that rank is missing from the exchange, stopped, "
                     "or makes different exchange calls; check that every rank makes the same "
                     "calls in the same order, or raise HALOX_TIMEOUT_S if it is only slow; this "
                     "endpoint is unusable now (end the job)",
                     m->g.name, comm->rank, comm->timeout_s, halox__shm_dir_name(f.dir), f.pulse,
                     peer_rank, f.peer, step, f.epoch, f.seen);
    }
    halox__gpu_fail(&m->g);
    return HALOX_ERR_TIMEOUT;
}

halox_status_t halox__shm_poll(halox_comm_t *comm) { return halox__shm_check(comm, NULL); }

/* Wait for the exchanges enqueued so far (the previous step's). The host bound is longer than the
 * kernels' own, so that their record (which names pulse and peer) is what reports a timeout. */
halox_status_t halox__shm_drain(halox_comm_t *comm, const char *why)
{
    halox__shm_t *m = halox__shm(comm);
    const double deadline = halox__now() + 1.5 * comm->timeout_s + 1.0;
    for (int dir = HALOX__GPU_COORDS; dir <= HALOX__GPU_FORCES; dir++) {
        int k = -1;
        halox_status_t st =
            halox__gpu_events_wait(comm, &m->g, dir, deadline, halox__shm_check, NULL, &k);
        if (st == HALOX_OK)
            continue;
        if (st == HALOX_ERR_TIMEOUT && !m->g.failed) {
            halox__shm_poison();
            halox__error(HALOX_ERR_TIMEOUT,
                         "%s: rank %d: the %s exchange of step %lld (pulse %d) did not complete "
                         "within %.3g s (%s), and no halo kernel reported a timeout: a kernel of "
                         "the caller on this GPU may hang; this endpoint is unusable now (end the "
                         "job)",
                         m->g.name, comm->rank, halox__shm_dir_name(dir), m->g.ev_step[dir], k,
                         1.5 * comm->timeout_s + 1.0, why);
            halox__gpu_fail(&m->g);
        }
        return st;
    }
    return halox__shm_check(comm, NULL);
}

/* ---- life cycle ------------------------------------------------------------------------- */

/* How many PEs share each GPU (host name + PCI bus id), the most of any GPU. */
static halox_status_t halox__shm_count_per_gpu(halox_comm_t *comm, int *most_p)
{
    halox__gpu_who_t *all = NULL;
    halox_status_t st = halox__gpu_who(comm, "nvshmem", "NVSHMEM endpoint creation", &all);
    int most = 1;
    for (int a = 0; a < comm->size && st == HALOX_OK; a++) {
        int n = 0;
        for (int b = 0; b < comm->size; b++)
            n += strcmp(all[a].host, all[b].host) == 0 && strcmp(all[a].bus, all[b].bus) == 0;
        most = n > most ? n : most;
    }
    free(all);
    *most_p = most;
    return st;
}

halox_status_t halox__shm_init_mode(halox_comm_t *comm, const halox_comm_args_t *args, int mode,
                                    const char *name)
{
    halox__shm_t *m = calloc(1, sizeof *m);
    if (!m)
        return halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory for the endpoint", name);
    comm->impl = m;
    m->mode = mode;
    m->hs.comm = MPI_COMM_NULL; /* hybrid's MPI leg, created last */
    m->g.device = -1;           /* nothing to wait for until halox__gpu_init sets it */
    int put = 0, signal_only = 0, tma = 0;
    halox_status_t st = halox_env_flag("HALOX_NVSHMEM_PUT", 0, &put);
    if (st == HALOX_OK)
        st = halox_env_int("HALOX_NVSHMEM_SIGNAL_ONLY", 0, 2, 0, &signal_only);
    /* 2 empties halox's own exchange kernels; nvshmem-stream and hybrid signal (also) through
     * NVSHMEM's stream calls, which nothing here can empty */
    if (st == HALOX_OK && signal_only == 2 &&
        (mode == HALOX__SHM_STREAM || mode == HALOX__SHM_HYBRID))
        st = halox__error(HALOX_ERR_UNAVAILABLE,
                          "%s: HALOX_NVSHMEM_SIGNAL_ONLY=2 (the launch floor: halox's exchange "
                          "kernels launched empty) applies to nvshmem-pulse, nvshmem-fused and "
                          "nvshmem-inline; %s signals through NVSHMEM's stream calls: use 1 (the "
                          "signal floor) or unset it",
                          name, name);
    if (st == HALOX_OK)
        st = halox_env_flag("HALOX_NVSHMEM_TMA", 0, &tma);
    if (st == HALOX_OK)
        st = halox_env_number("HALOX_NVSHMEM_HEADROOM", 1.0, 16.0, 1.25, &m->headroom);
    if (st == HALOX_OK)
        st = halox_env_int("HALOX_NVSHMEM_BLOCKS", 0, 1 << 16, 0, &m->blocks_wanted);
    if (st == HALOX_OK)
        st = halox_env_int("HALOX_NVSHMEM_DIRECT_MESSAGES", 0, 2, 2, &m->msg_direct);
    m->msg_verdict = -1; /* agreed at the first message (gpu_nvshmem_msg.c) */
    m->use_put = put;
    m->g.no_atoms = signal_only;
    m->use_tma = tma;
    if (st == HALOX_OK)
        st = halox__gpu_init(comm, args, &m->g, name);
    if (st == HALOX_OK)
        st = halox__shm_count_per_gpu(comm, &m->pes_per_gpu);
    if (st != HALOX_OK)
        goto fail;

    /* the unique id from rank 0 to everyone (only the first endpoint of a process uses it) */
    const size_t idn = halox__shm_uid_size();
    char *id = calloc(1, idn), *ids = calloc((size_t)comm->size, idn);
    if (!id || !ids)
        st = halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", name);
    else if (comm->rank == 0 && halox__shm_uid(id) != 0)
        st = halox__error(HALOX_ERR_COMM, "%s: nvshmemx_get_uniqueid failed on rank 0", name);
    st = halox__agree(comm, st, "NVSHMEM endpoint creation");
    if (st == HALOX_OK)
        st = halox__gpu_allgather(comm, id, ids, idn);
    if (st == HALOX_OK) {
        char why[512] = "";
        if (halox__shm_init(comm->rank, comm->size, ids, why, sizeof why) != 0)
            st = halox__error(HALOX_ERR_UNAVAILABLE,
                              "%s: rank %d: NVSHMEM %s did not initialise: %s", name, comm->rank,
                              halox__shm_version(), why);
    }
    free(id);
    free(ids);
    st = halox__agree(comm, st, "NVSHMEM initialisation");
    if (st != HALOX_OK)
        goto fail;

    /* which PE each rank is (the first endpoint's PE set may be numbered differently) */
    m->n_pes = halox__shm_n_pes();
    m->pe_of = malloc(sizeof(int) * (size_t)comm->size);
    m->rank_of = malloc(sizeof(int) * (size_t)m->n_pes);
    st = m->pe_of && m->rank_of ? HALOX_OK
                                : halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", name);
    st = halox__agree(comm, st, "NVSHMEM endpoint creation");
    if (st != HALOX_OK)
        goto fail;
    int me = halox__shm_my_pe();
    st = halox__gpu_allgather(comm, &me, m->pe_of, sizeof me);
    for (int p = 0; p < m->n_pes; p++)
        m->rank_of[p] = -1;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        if (m->pe_of[r] >= 0 && m->pe_of[r] < m->n_pes)
            m->rank_of[m->pe_of[r]] = r;
    if (st != HALOX_OK)
        goto fail;

    /* signals (symmetric, collective), device state, rows, the mapped failure flag */
    m->sig = halox__shm_malloc(sizeof(uint64_t) * 2 * HALOX_MAX_PULSES);
    cudaError_t e = cudaSuccess;
    if (!m->sig)
        st = halox__error(HALOX_ERR_NO_MEMORY,
                          "%s: rank %d: no symmetric memory for %zu bytes of signals: raise "
                          "NVSHMEM_SYMMETRIC_SIZE",
                          name, comm->rank, sizeof(uint64_t) * 2 * HALOX_MAX_PULSES);
    if (st == HALOX_OK && (e = cudaMalloc((void **)&m->state, sizeof *m->state)) != cudaSuccess)
        m->state = NULL;
    /* zeroed now, not only at bind: the rebuild's message kernels wait with it before the first
     * bind (their abort and failure record) */
    if (st == HALOX_OK && e == cudaSuccess)
        e = cudaMemset(m->state, 0, sizeof *m->state);
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaMalloc((void **)&m->d_rows, sizeof m->rows)) != cudaSuccess)
        m->d_rows = NULL;
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaHostAlloc((void **)&m->h_flag, sizeof(int), cudaHostAllocMapped)) != cudaSuccess)
        m->h_flag = NULL;
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaHostGetDevicePointer((void **)&m->d_flag, m->h_flag, 0)) != cudaSuccess)
        m->d_flag = NULL;
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaEventCreateWithFlags(&m->mbox_read, cudaEventDisableTiming)) != cudaSuccess)
        m->mbox_read = NULL;
    if (st == HALOX_OK && e != cudaSuccess)
        st = halox__gpu_cuda_error(comm, &m->g, e, "allocating the NVSHMEM endpoint's state",
                                   HALOX_ERR_UNAVAILABLE, 0);
    if (m->h_flag)
        *m->h_flag = 0;
    st = halox__agree(comm, st, "NVSHMEM endpoint creation");
    if (st != HALOX_OK)
        goto fail;
    m->g.dsendrecv = halox__shm_dsendrecv;
    m->g.dalltoallv = halox__shm_dalltoallv;
    m->g.check = halox__shm_check;
    return HALOX_OK;

fail:
    halox__shm_fini(comm);
    return st;
}

void halox__shm_fini(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    if (!m)
        return;
    int idle = 0;
    if (!m->g.failed && m->g.stream && halox__gpu_set_device(comm, &m->g) == HALOX_OK)
        idle = halox__shm_drain(comm, "endpoint destruction") == HALOX_OK &&
               halox__gpu_stream_wait(comm, &m->g, halox__now() + comm->timeout_s, halox__shm_check,
                                      NULL, "endpoint destruction") == HALOX_OK;
    /* symmetric frees are collective: only when every rank is healthy (else they would wait
     * for a peer that is gone); memory a failed exchange may touch is leaked */
    halox_status_t st = idle ? HALOX_OK : HALOX_ERR_STATE;
    if (m->g.inner)
        st = halox__agree(comm, st, "NVSHMEM endpoint destruction");
    halox__shm_msg_fini(m, st == HALOX_OK);
    if (st == HALOX_OK) {
        halox__shm_free(m->stage);
        halox__shm_free(m->fbuf);
        for (int i = 0; i < HALOX_MAX_FIELDS; i++)
            halox__shm_free(m->frbuf[i]);
        halox__shm_free(m->sig);
        if (m->state)
            cudaFree(m->state);
        if (m->d_rows)
            cudaFree(m->d_rows);
        void *inl[] = {m->inl_pulses, m->inl_start, m->inl_send, m->inl_scratch, m->inl_scan};
        for (int i = 0; i < 5; i++)
            if (inl[i])
                cudaFree(inl[i]);
    } else {
        halox__shm_poison();
    }
    if (m->h_flag && idle)
        cudaFreeHost(m->h_flag);
    (void)cudaGetLastError();
    free(m->pe_of);
    free(m->rank_of);
    halox__gpu_fini(comm, &m->g);
    halox__hst_fini(&m->hs, !idle); /* hybrid: pinned buffers only once nothing uses them */
    free(m);
    comm->impl = NULL;
}

/* ---- kernel launches ------------------------------------------------------------------------ */

halox__shm_launch_t halox__shm_launch_base(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__shm_launch_t l;
    memset(&l, 0, sizeof l);
    l.rows = m->d_rows;
    l.n_pulses = m->g.plan.n_pulses;
    l.blocks_per_row = m->blocks_per_row;
    l.real_double = comm->real == HALOX_DOUBLE;
    l.stride = comm->stride;
    l.x = comm->x;
    l.f = comm->f;
    l.sig = m->sig;
    l.state = m->state;
    l.host_flag = m->d_flag;
    l.timeout_ns = (long long)(comm->timeout_s * 1e9);
    l.use_put = m->use_put;
    l.signal_only = m->g.no_atoms;
    l.tma = m->use_tma;
    if (comm->fwd_in_kernel) { /* nvshmem-fused: the bound forward fields with the atoms */
        l.n_fields = comm->n_bound_fwd;
        for (int i = 0; i < comm->n_bound_fwd; i++) {
            l.fd_src[i] = comm->bound_fwd[i].data;
            l.fd_row[i] = (unsigned)(halox_type_size(comm->bound_fwd[i].type) *
                                     (size_t)comm->bound_fwd[i].count);
        }
    }
    if (comm->rev_in_kernel) { /* nvshmem-fused: the bound reverse fields with the forces */
        l.n_rfields = comm->n_bound_rev;
        for (int i = 0; i < comm->n_bound_rev; i++) {
            const halox_field_t *f = &comm->bound_rev[i];
            l.fr_data[i] = f->data;
            l.fr_row[i] = (unsigned)(halox_type_size(f->type) * (size_t)f->count);
            l.fr_type[i] = (int)f->type;
            l.fr_count[i] = f->count;
        }
    }
    return l;
}

halox_status_t halox__shm_launch_error(halox_comm_t *comm, cudaError_t e, const char *what)
{
    halox__shm_t *m = halox__shm(comm);
    halox__shm_poison();
    return halox__gpu_cuda_error(comm, &m->g, e, what, HALOX_ERR_COMM, 1);
}
