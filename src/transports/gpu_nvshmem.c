/* The GPU-initiated transports over NVSHMEM: nvshmem-stream, nvshmem-pulse, nvshmem-fused, hybrid.
 *
 *   nvshmem-stream  per pulse: pack kernel, put-with-signal on the stream, a one-thread kernel
 *                   that waits (bounded) for this PE's signal; forces the same way back, then
 *                   the accumulate kernel. The host only enqueues.
 *   nvshmem-pulse   per pulse one kernel: two-pass pack straight into the peer's halo (or put),
 *                   signal, wait for the own incoming pulse; forces likewise in reverse.
 *   nvshmem-fused   one kernel for all coordinate pulses, one for all force pulses: a grid row
 *                   per pulse, forwarded atoms wait only for the pulses that brought them, the
 *                   force chain runs in reverse inside the kernel.
 *   hybrid          nvshmem-stream's pulses to peers reachable by loads and stores, MPI through
 *                   the host to the others: its exchanges and routes are gpu_hybrid.c; it shares
 *                   this endpoint (set-up, symmetric memory, bind) through gpu_nvshmem.h.
 * Signal protocol, counters and kernels: src/kernels/nvshmem_halo.{h,cu}.
 *
 * Memory: peers store into this PE's x (halo ranges) and force buffers, so x and f must come
 * from halox_comm_device_alloc() (symmetric, same allocation order on every rank); the force
 * buffers, staging and signals are the endpoint's own symmetric memory, sized from the plan with
 * head-room (HALOX_NVSHMEM_HEADROOM) and regrown collectively at bind when any rank needs more.
 *
 * Set-up collectives run over the inner `mpi` endpoint (src/transports/gpu_endpoint.c);
 * NVSHMEM is initialised from the MPI job with a unique id from rank 0, once per process.
 *
 * Bounded waits: every wait inside a kernel gives up after the timeout and records pulse, peer
 * and exchange; the host checks a mapped flag before every coordinate exchange (and after graph
 * replays) and turns it into HALOX_ERR_TIMEOUT naming rank, step, pulse and peer. The host
 * itself runs at most one step ahead (events of the previous step, polled with a bound). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/env.h"
#include "core/util.h"
#include "kernels/nvshmem_halo.h"
#include "transports/gpu.h"
#include "transports/gpu_nvshmem.h"
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

static halox_status_t halox__shm_poll(halox_comm_t *comm) { return halox__shm_check(comm, NULL); }

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

static void halox__shm_fini(halox_comm_t *comm);

/* How many PEs share each GPU (host name + PCI bus id), the most of any GPU. */
static halox_status_t halox__shm_count_per_gpu(halox_comm_t *comm, int *most_p)
{
    halox__shm_t *m = halox__shm(comm);
    typedef struct {
        char host[64];
        char bus[32];
    } halox__who_t;
    halox__who_t me;
    memset(&me, 0, sizeof me);
    gethostname(me.host, sizeof me.host - 1);
    if (cudaDeviceGetPCIBusId(me.bus, sizeof me.bus - 1, m->g.device) != cudaSuccess) {
        (void)cudaGetLastError();
        snprintf(me.bus, sizeof me.bus, "device-%d", m->g.device);
    }
    halox__who_t *all = calloc((size_t)comm->size, sizeof *all);
    halox_status_t st = all ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "nvshmem: no memory");
    st = halox__agree(comm, st, "NVSHMEM endpoint creation");
    if (st != HALOX_OK) {
        free(all);
        return st;
    }
    st = halox__gpu_allgather(comm, &me, all, sizeof me);
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

static halox_status_t halox__shm_init_mode(halox_comm_t *comm, const halox_comm_args_t *args,
                                           int mode, const char *name)
{
    halox__shm_t *m = calloc(1, sizeof *m);
    if (!m)
        return halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory for the endpoint", name);
    comm->impl = m;
    m->mode = mode;
    m->hs.comm = MPI_COMM_NULL; /* hybrid's MPI leg, created last */
    m->g.device = -1;           /* nothing to wait for until halox__gpu_init sets it */
    int put = 0, signal_only = 0, tma = 0;
    halox_status_t st = halox__env_flag("HALOX_NVSHMEM_PUT", &put);
    if (st == HALOX_OK)
        st = halox__env_flag("HALOX_NVSHMEM_SIGNAL_ONLY", &signal_only);
    if (st == HALOX_OK)
        st = halox__env_flag("HALOX_NVSHMEM_TMA", &tma);
    if (st == HALOX_OK)
        st = halox__env_number("HALOX_NVSHMEM_HEADROOM", 1.0, 16.0, 1.25, &m->headroom);
    if (st == HALOX_OK)
        st = halox__env_int("HALOX_NVSHMEM_BLOCKS", 0, 1 << 16, 0, &m->blocks_wanted);
    m->use_put = put;
    m->signal_only = signal_only;
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
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaMalloc((void **)&m->d_rows, sizeof m->rows)) != cudaSuccess)
        m->d_rows = NULL;
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaHostAlloc((void **)&m->h_flag, sizeof(int), cudaHostAllocMapped)) != cudaSuccess)
        m->h_flag = NULL;
    if (st == HALOX_OK && e == cudaSuccess &&
        (e = cudaHostGetDevicePointer((void **)&m->d_flag, m->h_flag, 0)) != cudaSuccess)
        m->d_flag = NULL;
    if (st == HALOX_OK && e != cudaSuccess)
        st = halox__gpu_cuda_error(comm, &m->g, e, "allocating the NVSHMEM endpoint's state",
                                   HALOX_ERR_UNAVAILABLE, 0);
    if (m->h_flag)
        *m->h_flag = 0;
    st = halox__agree(comm, st, "NVSHMEM endpoint creation");
    if (st == HALOX_OK && mode == HALOX__SHM_HYBRID)
        st = halox__agree(comm, halox__hyb_init(comm, args), "hybrid endpoint creation");
    if (st != HALOX_OK)
        goto fail;
    return HALOX_OK;

fail:
    halox__shm_fini(comm);
    return st;
}

static void halox__shm_fini(halox_comm_t *comm)
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
    if (st == HALOX_OK) {
        halox__shm_free(m->stage);
        halox__shm_free(m->fbuf);
        halox__shm_free(m->sig);
        if (m->state)
            cudaFree(m->state);
        if (m->d_rows)
            cudaFree(m->d_rows);
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
static halox_status_t halox__shm_init_hybrid(halox_comm_t *comm, const halox_comm_args_t *args)
{
    return halox__shm_init_mode(comm, args, HALOX__SHM_HYBRID, "hybrid");
}

/* ---- symmetric memory --------------------------------------------------------------------- */

/* Collective symmetric allocation of the largest rank's `bytes`. */
static halox_status_t halox__shm_sym_alloc(halox_comm_t *comm, size_t bytes, void **ptr_p,
                                           const char *what)
{
    halox__shm_t *m = halox__shm(comm);
    *ptr_p = NULL;
    size_t *all = malloc(sizeof(size_t) * (size_t)comm->size);
    halox_status_t st =
        all ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", m->g.name);
    st = halox__agree(comm, st, what);
    if (st != HALOX_OK) {
        free(all);
        return st;
    }
    st = halox__gpu_allgather(comm, &bytes, all, sizeof bytes);
    size_t most = 0;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        most = all[r] > most ? all[r] : most;
    free(all);
    if (st != HALOX_OK)
        return st;
    most = (most + 255) / 256 * 256;
    /* a heap size the user set is a limit (NVSHMEM itself would grow past it); the same
     * decision on every rank: the bytes in use are equal everywhere */
    int user = 0;
    size_t heap = halox__shm_heap_size(&user);
    void *p = user && halox__shm_in_use() + most > heap ? NULL : halox__shm_malloc(most);
    if (!p) {
        st = halox__error(HALOX_ERR_NO_MEMORY,
                          "%s: rank %d: %s: the symmetric heap has no room for %zu more bytes "
                          "(%.1f MiB, with %zu bytes in use; NVSHMEM_SYMMETRIC_SIZE is %zu "
                          "bytes%s): set NVSHMEM_SYMMETRIC_SIZE to at least %zu (what is in use "
                          "plus this request plus head-room for regrowth)",
                          m->g.name, comm->rank, what, most, most / 1048576.0, halox__shm_in_use(),
                          heap, user ? ", set by the user" : ", NVSHMEM's default",
                          halox__shm_in_use() + 2 * most + ((size_t)64 << 20));
    }
    st = halox__agree(comm, st, what);
    if (st != HALOX_OK) {
        /* a rank that got memory keeps it: nvshmem_free is collective and the others have none */
        return st;
    }
    *ptr_p = p;
    return HALOX_OK;
}

static halox_status_t halox__shm_dalloc(halox_comm_t *comm, size_t bytes, void **ptr_p)
{
    halox__shm_t *m = halox__shm(comm);
    *ptr_p = NULL;
    halox_status_t st = halox__gpu_usable(comm, &m->g, "device_alloc");
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, &m->g);
    if (st == HALOX_OK && m->n_alloc == HALOX__SHM_MAX_ALLOCS)
        st = halox__error(HALOX_ERR_NO_MEMORY,
                          "%s: device_alloc: more than %d live allocations: free some", m->g.name,
                          HALOX__SHM_MAX_ALLOCS);
    st = halox__agree(comm, st, "device_alloc");
    if (st != HALOX_OK)
        return st;
    void *p = NULL;
    st = halox__shm_sym_alloc(comm, bytes, &p, "device_alloc");
    if (st != HALOX_OK)
        return st;
    m->alloc[m->n_alloc].p = p;
    m->alloc[m->n_alloc].bytes = bytes;
    m->n_alloc++;
    *ptr_p = p;
    return HALOX_OK;
}

static halox_status_t halox__shm_dfree(halox_comm_t *comm, void *ptr)
{
    halox__shm_t *m = halox__shm(comm);
    if (!ptr)
        return HALOX_OK;
    int i = 0;
    while (i < m->n_alloc && m->alloc[i].p != ptr)
        i++;
    if (i == m->n_alloc)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s: device_free: %p does not come from this endpoint's device_alloc",
                            m->g.name, ptr);
    m->alloc[i] = m->alloc[--m->n_alloc];
    /* nvshmem_free is collective: only when every rank is healthy (a bounded agreement), else
     * it would wait for a peer that is gone; the memory is leaked then */
    halox_status_t st = m->g.failed ? HALOX_ERR_STATE : halox__gpu_set_device(comm, &m->g);
    if (st == HALOX_OK)
        st = halox__gpu_stream_wait(comm, &m->g, halox__now() + comm->timeout_s, halox__shm_check,
                                    NULL, "device_free");
    st = halox__agree(comm, st, "device_free");
    if (st != HALOX_OK) {
        halox__shm_poison();
        return st;
    }
    halox__shm_free(ptr);
    return HALOX_OK;
}

/* The allocation index of p (from device_alloc) with at least `bytes`, or -1. */
static int halox__shm_alloc_of(const halox__shm_t *m, const void *p, size_t bytes)
{
    for (int i = 0; i < m->n_alloc; i++)
        if (m->alloc[i].p == p && m->alloc[i].bytes >= bytes)
            return i;
    return -1;
}

/* ---- bind ---------------------------------------------------------------------------------- */

static halox_status_t halox__shm_bind(halox_comm_t *comm)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    const halox_plan_t *plan = comm->plan;
    const size_t esize = halox__atom_bytes(comm->real, comm->stride, 1);
    halox_status_t st = halox__gpu_usable(comm, g, "bind");
    if (st == HALOX_OK)
        st = halox__gpu_set_device(comm, g);
    if (st == HALOX_OK && g->bound) /* the earlier plan's exchanges may still run */
        st = halox__shm_drain(comm, "bind");
    /* x and f: symmetric, from device_alloc, the same allocation on every rank (peers compute
     * addresses in them from their own), large enough for the whole plan */
    int which[2] = {halox__shm_alloc_of(m, comm->x, (size_t)plan->n_total * esize),
                    halox__shm_alloc_of(m, comm->f, (size_t)plan->n_total * esize)};
    if (st == HALOX_OK && (which[0] < 0 || which[1] < 0))
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "%s: rank %d: bind: %s must come from halox_comm_device_alloc() on this "
                          "endpoint (symmetric memory that peers can write), with room for the "
                          "plan's %d atoms (%zu bytes)",
                          g->name, comm->rank, which[0] < 0 ? "x" : "f", plan->n_total,
                          (size_t)plan->n_total * esize);
    /* zero the signals and counters while every stream is idle: no peer signals before this
     * bind's agreement below, and every signal of earlier exchanges was waited for */
    if (st == HALOX_OK) {
        cudaError_t e = cudaMemsetAsync(m->state, 0, sizeof *m->state, g->stream);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(m->sig, 0, sizeof(uint64_t) * 2 * HALOX_MAX_PULSES, g->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(g->stream); /* idle already: returns at once */
        if (e != cudaSuccess)
            st = halox__gpu_cuda_error(comm, g, e, "resetting the signals", HALOX_ERR_COMM, 1);
    }
    st = halox__agree(comm, st, "bind");
    if (st != HALOX_OK)
        return st;
    /* every rank binds the same allocations */
    int all[2 * 64];
    int *allw = comm->size <= 64 ? all : malloc(sizeof(int) * 2 * (size_t)comm->size);
    st = allw ? halox__gpu_allgather(comm, which, allw, sizeof which)
              : halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", g->name);
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        if (allw[2 * r] != which[0] || allw[2 * r + 1] != which[1])
            st = halox__error(HALOX_ERR_INVALID_ARG,
                              "%s: bind: rank %d binds device_alloc allocations #%d/#%d as x/f "
                              "but rank %d binds #%d/#%d: every rank must bind the arrays of "
                              "the same collective allocations",
                              g->name, r, allw[2 * r], allw[2 * r + 1], comm->rank, which[0],
                              which[1]);
    if (allw != all)
        free(allw);
    st = halox__agree(comm, st, "bind");
    if (st != HALOX_OK)
        return st;

    /* device plan (maps, offsets), agreement, counts checked with the peers */
    if ((st = halox__gpu_bind(comm, g)) != HALOX_OK)
        return st;
    g->bound = 0;
    const halox__gpu_plan_t *dp = &g->plan;
    const int n = dp->n_pulses;

    /* symmetric force buffers and staging: regrown collectively when any rank needs more
     * (buf_cap is the same on every rank, so every rank takes the same decision) */
    size_t need = dp->send_bytes, most = 0;
    size_t *needs = malloc(sizeof(size_t) * (size_t)comm->size);
    st = needs ? halox__gpu_allgather(comm, &need, needs, sizeof need)
               : halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", g->name);
    for (int r = 0; r < comm->size && st == HALOX_OK; r++)
        most = needs[r] > most ? needs[r] : most;
    free(needs);
    st = halox__agree(comm, st, "bind");
    if (st != HALOX_OK)
        return st;
    if (!m->fbuf || most > m->buf_cap) {
        halox__shm_free(m->stage);
        halox__shm_free(m->fbuf);
        m->stage = m->fbuf = NULL;
        m->buf_cap = 0;
        size_t cap = (size_t)((double)most * m->headroom) + 256;
        void *a = NULL, *b = NULL;
        st = halox__shm_sym_alloc(comm, cap, &a, "bind: force buffers");
        if (st == HALOX_OK)
            st = halox__shm_sym_alloc(comm, cap, &b, "bind: staging buffers");
        if (st != HALOX_OK)
            return st;
        m->fbuf = a;
        m->stage = b;
        m->buf_cap = cap;
    }
    /* the library does not print: callers read it from halox_comm_get_stats() */
    comm->stats.device_bytes = (long long)halox__shm_in_use();
    /* hybrid: which legs go direct (signals, below) and which through MPI */
    if (m->mode == HALOX__SHM_HYBRID && (st = halox__hyb_bind(comm)) != HALOX_OK)
        return st;

    /* where this rank's stores land at its peers: their halo offsets and force-buffer slots */
    typedef struct {
        long long recv_off[HALOX_MAX_PULSES];
        long long buf_off[HALOX_MAX_PULSES];
    } halox__ofs_t;
    halox__ofs_t mine;
    memset(&mine, 0, sizeof mine);
    for (int k = 0; k < n; k++) {
        mine.recv_off[k] = plan->pulse[k].recv_offset;
        mine.buf_off[k] = (long long)dp->buf_off[k];
    }
    halox__ofs_t *ofs = malloc(sizeof *ofs * (size_t)comm->size);
    st = ofs ? halox__gpu_allgather(comm, &mine, ofs, sizeof mine)
             : halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", g->name);
    memset(m->rows, 0, sizeof m->rows);
    int maxc = 1;
    m->last_wait[0] = m->last_wait[1] = -1;
    for (int k = 0; k < n && st == HALOX_OK; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        halox__shm_row_t *R = &m->rows[k];
        const int sp = m->pe_of[p->send_rank], rp = m->pe_of[p->recv_rank];
        R->pulse = k;
        R->dim = p->dim;
        R->shift = p->shift;
        R->send_count = p->send_count;
        R->recv_count = p->recv_count;
        R->home_prefix = p->dep_offset;
        R->needs = p->dep_mask;
        for (int j = k + 1; j < n; j++)
            R->feeds |= (plan->pulse[j].dep_mask >> k) & 1u;
        R->send_pe = sp;
        R->recv_pe = rp;
        R->map = dp->d_index + dp->index_off[k];
        R->x_sym = (char *)comm->x + (size_t)ofs[p->send_rank].recv_off[k] * esize;
        R->x_peer = m->use_put ? NULL : halox__shm_ptr(R->x_sym, sp);
        R->stage = m->stage + dp->buf_off[k];
        R->f_src = (char *)comm->f + (size_t)p->recv_offset * esize;
        R->fb_sym = m->fbuf + ofs[p->recv_rank].buf_off[k];
        R->fb_peer = m->use_put ? NULL : halox__shm_ptr(R->fb_sym, rp);
        R->fb_mine = m->fbuf + dp->buf_off[k];
        R->sig_x_peer = m->use_put ? NULL : halox__shm_ptr(m->sig + k, sp);
        R->sig_f_peer = m->use_put ? NULL : halox__shm_ptr(m->sig + HALOX_MAX_PULSES + k, rp);
        maxc = p->send_count > maxc ? p->send_count : maxc;
        maxc = p->recv_count > maxc ? p->recv_count : maxc;
        /* the pulses that wait for a signal: every exchanging pulse, except hybrid's staged
         * legs (coordinates arrive over the receive leg, forces over the send leg) */
        const int hyb = m->mode == HALOX__SHM_HYBRID;
        if (hyb ? m->route.recv[k] == HALOX__ROUTE_DIRECT : !halox__gpu_self(comm, p))
            m->last_wait[0] = k;
        if ((hyb ? m->route.send[k] == HALOX__ROUTE_DIRECT : !halox__gpu_self(comm, p)) &&
            m->last_wait[1] < 0)
            m->last_wait[1] = k; /* forces go down: the lowest pulse waits last */
    }
    free(ofs);
    if (st == HALOX_OK) {
        cudaError_t e =
            cudaMemcpyAsync(m->d_rows, m->rows, sizeof m->rows, cudaMemcpyHostToDevice, g->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(g->stream);
        if (e != cudaSuccess)
            st = halox__gpu_cuda_error(comm, g, e, "uploading the pulse table", HALOX_ERR_COMM, 1);
    }
    /* blocks per row: about 2 elements per thread (measured, 2 x H200: 45k atoms 51 us with 23
     * blocks per row, 41 us with 88; 3M 351 us with 8, 71 us with 88), bounded so that every
     * block of a launch is resident at once (spinning blocks must never wait for blocks that
     * cannot start) */
    const int rows = m->mode == HALOX__SHM_FUSED ? (n > 0 ? n : 1) : 1;
    int cap = halox__shm_max_blocks(m->pes_per_gpu) / rows;
    cap = cap > 0 ? cap : 1;
    int bpr = (int)(((long long)maxc * comm->stride + 511) / 512);
    const int want = m->blocks_wanted; /* tuning: a fixed count */
    if (want > 0)
        bpr = want;
    m->blocks_per_row = bpr < 1 ? 1 : bpr > cap ? cap : bpr;
    st = halox__agree(comm, st, "bind");
    m->h_epoch[0] = m->h_epoch[1] = 0;
    if (st == HALOX_OK)
        g->bound = 1;
    return st;
}

/* ---- halo exchange ------------------------------------------------------------------------ */

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
    l.signal_only = m->signal_only;
    l.tma = m->use_tma;
    return l;
}

halox_status_t halox__shm_launch_error(halox_comm_t *comm, cudaError_t e, const char *what)
{
    halox__shm_t *m = halox__shm(comm);
    halox__shm_poison();
    return halox__gpu_cuda_error(comm, &m->g, e, what, HALOX_ERR_COMM, 1);
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

#define HALOX__SHM_OPS(var, nm, desc, initfn, capt, coordsfn, forcesfn)                            \
    const halox_transport_ops_t var = {                                                            \
        .name = nm,                                                                                \
        .description = desc,                                                                       \
        .on_gpu = 1,                                                                               \
        .capturable = capt,                                                                        \
        .symmetric = 1,                                                                            \
        .init = initfn,                                                                            \
        .fini = halox__shm_fini,                                                                   \
        .sendrecv = halox__gpu_sendrecv,                                                           \
        .alltoallv = halox__gpu_alltoallv,                                                         \
        .allgather = halox__gpu_allgather,                                                         \
        .barrier = halox__gpu_barrier,                                                             \
        .bind = halox__shm_bind,                                                                   \
        .coords = coordsfn,                                                                        \
        .forces = forcesfn,                                                                        \
        .dalloc = halox__shm_dalloc,                                                               \
        .dfree = halox__shm_dfree,                                                                 \
        .poll = halox__shm_poll,                                                                   \
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
/* not capturable: staged legs synchronise with the host and call MPI inside every exchange (a
 * job whose pairs are all direct is nvshmem-stream: use that, or nvshmem-fused, for graphs) */
HALOX__SHM_OPS(halox__hybrid_ops, "hybrid",
               "per pulse, GPU-initiated put-with-signal on the stream to peers reachable by loads "
               "and stores, MPI through pinned host memory to the others (and to pairs in "
               "HALOX_HYBRID_UNREACHABLE)",
               halox__shm_init_hybrid, 0, halox__hyb_coords, halox__hyb_forces);
