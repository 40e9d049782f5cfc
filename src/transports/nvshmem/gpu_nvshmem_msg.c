/* The device rebuild's messages from device memory to device memory (gpu_nvshmem.h): the plan
 * build's set-up messages (plan_device.c's sendrecv) and the migrating atoms (migrate_device.c's
 * all-to-all). The host path copies them to pinned memory, waits, sends them through MPI and
 * copies them up again, waits that dominate a rebuild's set-up messages
 * (docs/NVSHMEM.md#the-rebuilds-messages). Here each rank copies its blocks into its receivers'
 * symmetric mailboxes through their load/store pointers.
 *
 * Every rank makes the same calls (both are collective), in the same order. The first call agrees
 * once whether every rank reaches every rank by stores (all copy, or none ever does: *used 0, the
 * host path), and whether the message kernels run them (HALOX_NVSHMEM_DIRECT_MESSAGES=2, at most
 * HALOX__SHM_MSG_MAX ranks). The mailbox has two halves used in turn (message n in half n % 2),
 * slots of the same size on every rank; the callers pass the largest block of any rank (`most`,
 * from the counts they exchanged before), so every rank grows the mailbox alike when a block does
 * not fit, without asking.
 *
 * With the message kernels (nvshmem_msg.cu) a message costs the host two launches and nothing
 * else: the send kernel waits on the GPU until each receiver acknowledged message n - 2 (the half
 * is free), copies into the slots and raises the receivers' arrival signals; the receive kernel
 * waits for those, copies out and acknowledges to every rank. A stopped peer ends those waits
 * after the endpoint's timeout, named (halox__shm_check, which the stores' waits call).
 *
 * Without them (1) a message costs one host agreement: each rank copies its blocks, waits for
 * its stream and agrees; then each receiver copies its blocks out on its stream. A half is
 * written again two messages later, only after its owner's copy out of it completed: each rank
 * waits for its last copy out before it enters a message's agreement, and a writer of message
 * n + 2 has passed the agreement of message n + 1. A rank that fails or stops is seen at the
 * agreement, bounded as every host collective is. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/transport.h"
#include "transports/gpu/gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/nvshmem/nvshmem_halo.h"

/* whether this rank's loads and stores reach rank r's symmetric memory */
static int halox__msg_reaches(const halox__shm_t *m, const halox_comm_t *comm, int r)
{
    return r >= 0 && r < comm->size && m->pe_of[r] >= 0 &&
           halox__shm_ptr(m->sig, m->pe_of[r]) != NULL;
}

/* the last copy out of this rank's mailbox completed (bounded) */
static halox_status_t halox__msg_read_wait(halox_comm_t *comm, halox__shm_t *m)
{
    const double until = halox__now() + comm->timeout_s;
    for (long polls = 0; m->mbox_pending; polls++) {
        cudaError_t e = cudaEventQuery(m->mbox_read);
        if (e == cudaSuccess)
            m->mbox_pending = 0;
        else if (e != cudaErrorNotReady)
            return halox__gpu_cuda_error(comm, &m->g, e, "a rebuild message's copy out",
                                         HALOX_ERR_COMM, 1);
        else if (halox__now() > until)
            return halox__error(HALOX_ERR_TIMEOUT,
                                "%s: rank %d: the copy out of the last rebuild message did not "
                                "complete within %.3g s: the GPU is stuck behind other work; "
                                "raise HALOX_TIMEOUT_S if it is only slow",
                                m->g.name, comm->rank, comm->timeout_s);
        else
            halox__gpu_backoff(polls);
    }
    return HALOX_OK;
}

/* The mailboxes grown to two halves of `half` bytes on every rank (collective; the old ones are
 * idle: every copy into them landed before the last agreement, every copy out completed before
 * it). */
static halox_status_t halox__msg_grow(halox_comm_t *comm, halox__shm_t *m, size_t half)
{
    if (2 * half <= m->mbox_cap)
        return HALOX_OK;
    if (m->mbox)
        halox__shm_free(m->mbox);
    m->mbox = NULL;
    m->mbox_cap = 0;
    const size_t want = (half + half / 4 + 4096 + 255) / 256 * 256;
    void *p = NULL;
    halox_status_t st = halox__shm_sym_alloc(comm, 2 * want, &p, "the rebuild's mailbox");
    if (st != HALOX_OK)
        return st;
    m->mbox = p;
    m->mbox_cap = 2 * want;
    return HALOX_OK;
}

/* Whether the messages go device to device, agreed at the first call: every rank reaches every
 * rank by stores and wants to (HALOX_NVSHMEM_DIRECT_MESSAGES; hybrid keeps the host path: it may
 * be told to treat reachable peers as unreachable); and whether every rank runs them by the
 * message kernels, whose signals are allocated and zeroed here before an agreement that no rank
 * passes before every rank's zeroes are in. A failure before it fails every rank here. */
static halox_status_t halox__msg_verdict(halox_comm_t *comm, halox__shm_t *m, const char *what,
                                         halox_status_t st)
{
    int reach = st == HALOX_OK && m->msg_direct && !m->use_put && m->mode != HALOX__SHM_HYBRID;
    for (int r = 0; r < comm->size && reach; r++)
        reach = halox__msg_reaches(m, comm, r);
    const int kernels = m->msg_direct == 2 && comm->size <= HALOX__SHM_MSG_MAX;
    long long msg[3] = {0, reach, kernels};
    long long *all = malloc(sizeof msg * (size_t)comm->size);
    if (!all && st == HALOX_OK)
        st = halox__error(HALOX_ERR_NO_MEMORY, "%s: %s: no memory", m->g.name, what);
    st = halox__agree_gather(comm, st, what, msg, 3, all);
    int every = 1, every_k = 1;
    for (int r = 0; r < comm->size && st == HALOX_OK; r++) {
        every &= all[3 * (size_t)r + 1] != 0;
        every_k &= all[3 * (size_t)r + 2] != 0;
    }
    free(all);
    if (st != HALOX_OK)
        return st;
    if (every && every_k) { /* the same on every rank */
        void *p = NULL;
        st = halox__shm_sym_alloc(comm, sizeof *m->msync, &p, "the rebuild messages' signals");
        if (st != HALOX_OK)
            return st;
        m->msync = p;
        cudaError_t e = cudaMemsetAsync(m->msync, 0, sizeof *m->msync, m->g.stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(m->g.stream);
        st = halox__agree(comm,
                          e == cudaSuccess
                              ? HALOX_OK
                              : halox__gpu_cuda_error(comm, &m->g, e, what, HALOX_ERR_COMM, 1),
                          what);
        if (st != HALOX_OK)
            return st;
    }
    m->msg_kernels = every && every_k;
    m->msg_verdict = every;
    return HALOX_OK;
}

/* bytes from src into rank r's mailbox at `at` (enqueued) */
static halox_status_t halox__msg_copy(halox_comm_t *comm, halox__shm_t *m, const char *what, int r,
                                      size_t at, const void *src, size_t bytes)
{
    char *peer = halox__shm_ptr(m->mbox, m->pe_of[r]);
    if (!peer)
        return halox__error(HALOX_ERR_INTERNAL,
                            "%s: rank %d: rank %d's mailbox has no load/store pointer although "
                            "its signals have: report this",
                            m->g.name, comm->rank, r);
    return halox__gpu_check(comm, &m->g,
                            halox__shm_copy_to_peer(peer + at, src, bytes, m->g.stream), what);
}

/* One message: block i of the `n` goes to rank dst[i] (dst NULL: rank i), sbytes[i] from sbuf +
 * soffs[i] into that rank's slot `mine`; this rank receives block i from its slot i, rbytes[i]
 * into rbuf + roffs[i]; `slots` slots per half; `most`: the largest block of any rank (the same
 * everywhere, so every rank grows the mailbox alike first). Copies, waits for its stream, agrees
 * (then every block has landed), then copies this rank's blocks out on its stream. */
static halox_status_t halox__msg_run(halox_comm_t *comm, halox__shm_t *m, const char *what,
                                     halox_status_t st, int slots, int mine, int n, const int *dst,
                                     const void *sbuf, const size_t *soffs, const size_t *sbytes,
                                     void *rbuf, const size_t *roffs, const size_t *rbytes,
                                     size_t most)
{
    halox__gpu_t *g = &m->g;
    size_t half = m->mbox_cap / 2, slot = half / (size_t)slots / 16 * 16;
    if (most > slot) { /* halox__msg_open waited for this rank's last copy out of the old one */
        halox_status_t gst = halox__msg_grow(comm, m, ((most + 15) / 16 * 16) * (size_t)slots);
        if (gst != HALOX_OK)
            return gst;
        half = m->mbox_cap / 2;
        slot = half / (size_t)slots / 16 * 16;
    }
    const size_t base = (m->msg_seq & 1) ? half : 0;
    int copied = 0;
    for (int i = 0; i < n && st == HALOX_OK; i++) {
        if (sbytes[i] > slot || rbytes[i] > slot)
            st = halox__error(HALOX_ERR_INTERNAL,
                              "%s: rank %d: %s: block %d (%zu bytes out, %zu in) is larger than "
                              "the largest block every rank was told of (%zu): report this",
                              g->name, comm->rank, what, i, sbytes[i], rbytes[i], most);
        else if (sbytes[i] > 0) {
            st = halox__msg_copy(comm, m, what, dst ? dst[i] : i, base + slot * (size_t)mine,
                                 (const char *)sbuf + soffs[i], sbytes[i]);
            copied = 1;
        }
    }
    if (st == HALOX_OK && copied)
        st = halox__gpu_drain(comm, g, what, "its copy into the peer");
    if ((st = halox__agree(comm, st, what)) != HALOX_OK)
        return st;
    m->msg_seq++;
    int out = 0;
    for (int i = 0; i < n && st == HALOX_OK; i++) {
        if (rbytes[i] == 0)
            continue;
        st = halox__gpu_check(comm, g,
                              cudaMemcpyAsync((char *)rbuf + roffs[i],
                                              m->mbox + base + slot * (size_t)i, rbytes[i],
                                              cudaMemcpyDeviceToDevice, g->stream),
                              what);
        out = 1;
    }
    if (st == HALOX_OK && out)
        st = halox__gpu_check(comm, g, cudaEventRecord(m->mbox_read, g->stream), what);
    m->mbox_pending = st == HALOX_OK && out;
    if (st == HALOX_OK)
        comm->stats.direct_messages++;
    return st;
}

/* One message by the message kernels: block i of the `n` goes to rank dst[i] (dst NULL: rank i),
 * sbytes[i] from sbuf + soffs[i] into that rank's slot `mine`; this rank receives block i from
 * rank src[i] (src NULL: rank i) out of its slot i, rbytes[i] into rbuf + roffs[i]; `slots` slots
 * per half; `most`: the largest block of any rank (the same everywhere). A failure before it (st)
 * still launches both kernels, so that no peer waits out its timeout, and is returned. */
static halox_status_t halox__msg_kernels(halox_comm_t *comm, halox__shm_t *m, const char *what,
                                         halox_status_t st, int slots, int mine, int n,
                                         const int *dst, const int *src, const void *sbuf,
                                         const size_t *soffs, const size_t *sbytes, void *rbuf,
                                         const size_t *roffs, const size_t *rbytes, size_t most)
{
    halox__gpu_t *g = &m->g;
    size_t half = m->mbox_cap / 2, slot = half / (size_t)slots / 16 * 16;
    if (most > slot) {
        /* every rank alike: its kernels on the old mailbox done before the collective free */
        halox_status_t dst_st = halox__gpu_drain(comm, g, what, "growing the mailbox");
        if (dst_st == HALOX_OK)
            dst_st = halox__msg_grow(comm, m, ((most + 15) / 16 * 16) * (size_t)slots);
        if (dst_st != HALOX_OK)
            return dst_st;
        half = m->mbox_cap / 2;
        slot = half / (size_t)slots / 16 * 16;
    }
    const size_t base = (m->msg_seq & 1) ? half : 0;
    halox__shm_msg_launch_t snd, rcv;
    memset(&snd, 0, sizeof snd);
    memset(&rcv, 0, sizeof rcv);
    snd.L.state = m->state; /* what the waits need of the endpoint's launch parameters */
    snd.L.host_flag = m->d_flag;
    snd.L.timeout_ns = (long long)(comm->timeout_s * 1e9);
    snd.seq = m->msg_seq;
    rcv.L = snd.L;
    rcv.seq = snd.seq;
    size_t sent = 0, got = 0;
    snd.n = rcv.n = n;
    for (int i = 0; i < n; i++) {
        const int to = dst ? dst[i] : i, from = src ? src[i] : i;
        halox__shm_msg_block_t *b = &snd.b[i];
        b->bytes = sbytes[i];
        b->src = (const char *)sbuf + soffs[i];
        b->dst = (char *)halox__shm_ptr(m->mbox + base + slot * (size_t)mine, m->pe_of[to]);
        b->sig = halox__shm_ptr(&m->msync->sig[comm->rank], m->pe_of[to]);
        b->ack = &m->msync->ack[to];
        b->pe = m->pe_of[to];
        b = &rcv.b[i];
        b->bytes = rbytes[i];
        b->src = m->mbox + base + slot * (size_t)i;
        b->dst = (char *)rbuf + roffs[i];
        b->sig = &m->msync->sig[from];
        b->pe = m->pe_of[from];
        if ((snd.b[i].bytes && (!snd.b[i].dst || !snd.b[i].sig)) || rbytes[i] > slot ||
            sbytes[i] > slot)
            return halox__error(HALOX_ERR_INTERNAL,
                                "%s: rank %d: %s: rank %d's mailbox cannot take block %d (%zu "
                                "bytes, slots of %zu): report this",
                                g->name, comm->rank, what, to, i, sbytes[i], slot);
        sent += sbytes[i];
        got += rbytes[i];
    }
    rcv.n_ack = comm->size;
    for (int r = 0; r < comm->size; r++)
        rcv.ack_peer[r] = halox__shm_ptr(&m->msync->ack[comm->rank], m->pe_of[r]);
    /* about 4 KB per block: the messages are small (hundreds of KB at most at 45k atoms) */
    const int bs = (int)(sent / 4096 < 63 ? sent / 4096 + 1 : 64);
    const int br = (int)(got / 4096 < 63 ? got / 4096 + 1 : 64);
    snd.counter = &m->msync->counter[0];
    snd.target = m->msg_blocks[0] += (unsigned)bs;
    rcv.counter = &m->msync->counter[1];
    rcv.target = m->msg_blocks[1] += (unsigned)br;
    cudaError_t e = halox__shm_msg_send(&snd, bs, g->stream);
    if (e == cudaSuccess)
        e = halox__shm_msg_recv(&rcv, br, g->stream);
    m->msg_seq++;
    if (e != cudaSuccess) {
        halox__shm_poison(); /* peers may wait for this rank's signals: no collective exit */
        return halox__gpu_cuda_error(comm, g, e, what, HALOX_ERR_COMM, 1);
    }
    if (st == HALOX_OK)
        comm->stats.direct_messages++;
    return st;
}

/* What every message call does first: *direct, whether this call goes device to device (the
 * verdict, agreed at the first call; then every rank holds the same); for that, the GPU usable and
 * this rank's last copy out completed. A failure with *direct set is agreed in the message
 * (halox__msg_run takes part with it); without, it was every rank's (the first call's agreement).
 * The host path takes part even after a failure (the drivers' staging), so it needs no check. */
static halox_status_t halox__msg_open(halox_comm_t *comm, halox__shm_t *m, const char *what,
                                      halox_status_t st, int *direct)
{
    *direct = 0;
    if (m->msg_verdict == 0)
        return HALOX_OK;
    if (st == HALOX_OK)
        st = halox__gpu_usable(comm, &m->g, what);
    if (st == HALOX_OK)
        st = halox__msg_read_wait(comm, m);
    if (m->msg_verdict < 0 && (st = halox__msg_verdict(comm, m, what, st)) != HALOX_OK)
        return st;
    *direct = m->msg_verdict;
    return st;
}

halox_status_t halox__shm_dsendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                    int src, void *rbuf, size_t rbytes, size_t most, int *used)
{
    halox__shm_t *m = halox__shm(comm);
    static const char what[] = "the plan build's set-up message";
    int direct = 0;
    halox_status_t st = halox__msg_open(comm, m, what, HALOX_OK, &direct);
    *used = direct || st != HALOX_OK; /* a failure without direct is every rank's */
    if (!direct)
        return st;
    /* one slot: a rank receives one block */
    const size_t zero = 0;
    if (m->msg_kernels)
        return halox__msg_kernels(comm, m, what, st, 1, 0, 1, &dst, &src, sbuf, &zero, &sbytes,
                                  rbuf, &zero, &rbytes, most);
    return halox__msg_run(comm, m, what, st, 1, 0, 1, &dst, sbuf, &zero, &sbytes, rbuf, &zero,
                          &rbytes, most);
}

/* The mailbox holds a slot per sender: rank c's block for rank r lands in r's slot c. */
halox_status_t halox__shm_dalltoallv(halox_comm_t *comm, const void *sbuf, const size_t *sbytes,
                                     const size_t *soffs, void *rbuf, const size_t *rbytes,
                                     const size_t *roffs, size_t most, int *used)
{
    static const char what[] = "the migration's message";
    halox__shm_t *m = halox__shm(comm);
    int direct = 0;
    halox_status_t st = halox__msg_open(comm, m, what, HALOX_OK, &direct);
    *used = direct || st != HALOX_OK;
    if (!direct)
        return st;
    if (m->msg_kernels)
        return halox__msg_kernels(comm, m, what, st, comm->size, comm->rank, comm->size, NULL, NULL,
                                  sbuf, soffs, sbytes, rbuf, roffs, rbytes, most);
    return halox__msg_run(comm, m, what, st, comm->size, comm->rank, comm->size, NULL, sbuf, soffs,
                          sbytes, rbuf, roffs, rbytes, most);
}

void halox__shm_msg_fini(halox__shm_t *m, int collective)
{
    if (collective && m->mbox)
        halox__shm_free(m->mbox);
    if (collective && m->msync)
        halox__shm_free(m->msync);
    m->mbox = NULL;
    m->mbox_cap = 0;
    m->msync = NULL;
    if (m->mbox_read)
        cudaEventDestroy(m->mbox_read);
    m->mbox_read = NULL;
}
