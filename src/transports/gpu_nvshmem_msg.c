/* The device rebuild's messages from device memory to device memory (gpu_nvshmem.h): the plan
 * build's set-up messages (plan_device.c's sendrecv) and the migrating atoms (migrate_device.c's
 * all-to-all). The host path copies them to pinned memory, waits, sends them through MPI and
 * copies them up again: at 45k atoms on 2 ranks of one H200 the set-up message alone took 61 us of
 * a 0.75 ms rebuild, 48 of them the host sendrecv of 185 KB (host-clock probe,
 * bench/results/2026-12-04-h200). Here each rank copies its blocks into its receivers' symmetric
 * mailboxes through their load/store pointers.
 *
 * Every rank makes the same calls (both are collective), so two host agreements order them: the
 * first carries every rank's status, largest block and whether it reaches its peers by stores
 * (all ranks copy, or none: *used 0, the host path), and the mailboxes grow alike (one slot for a
 * sendrecv, a slot per sender for an all-to-all); then each rank copies and waits for its stream;
 * the second says that every block landed, and each receiver copies its mailbox out on its
 * stream. A mailbox is written only after its owner's last copy out completed (waited for before
 * the first agreement). A rank that fails or stops is seen at an agreement, bounded as every host
 * collective is: nothing here spins on the GPU, so nothing can hang there. */
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/transport.h"
#include "kernels/nvshmem_halo.h"
#include "transports/gpu.h"
#include "transports/gpu_nvshmem.h"

enum { MSG_REACH = 1, MSG_BYTES, MSG_WORDS };

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

/* The mailboxes grown to `most` bytes on every rank (collective; the old ones are idle: every
 * copy into them landed before the last agreement, every copy out completed before this one). */
static halox_status_t halox__msg_grow(halox_comm_t *comm, halox__shm_t *m, size_t most)
{
    if (most <= m->mbox_cap)
        return HALOX_OK;
    if (m->mbox)
        halox__shm_free(m->mbox);
    m->mbox = NULL;
    m->mbox_cap = 0;
    const size_t want = (most + most / 4 + 4096 + 255) / 256 * 256;
    void *p = NULL;
    halox_status_t st = halox__shm_sym_alloc(comm, want, &p, "the rebuild's mailbox");
    if (st != HALOX_OK)
        return st;
    m->mbox = p;
    m->mbox_cap = want;
    return HALOX_OK;
}

/* The first agreement of a message call, after this rank's last copy out: every rank's status,
 * whether it reaches its `n` peers by stores and the largest block it sends or receives (`bytes`).
 * *direct: every rank copies (the mailboxes then hold `slots` blocks of the largest rank's
 * `bytes`, *slot bytes apart), or none does (0: the host path). Fails alike on every rank. */
static halox_status_t halox__msg_open(halox_comm_t *comm, halox__shm_t *m, const char *what,
                                      halox_status_t st0, const int *peers, int n, size_t bytes,
                                      int slots, int *direct, size_t *slot)
{
    halox__gpu_t *g = &m->g;
    *direct = 0;
    *slot = 0;
    halox_status_t st = st0 != HALOX_OK ? st0 : halox__gpu_usable(comm, g, what);
    if (st == HALOX_OK)
        st = halox__msg_read_wait(comm, m);
    /* hybrid keeps the host path: it may be told to treat reachable peers as unreachable */
    int reach = st == HALOX_OK && m->msg_direct && !m->use_put && m->mode != HALOX__SHM_HYBRID;
    for (int i = 0; i < n && reach; i++)
        reach = halox__msg_reaches(m, comm, peers[i]);
    long long msg[MSG_WORDS];
    memset(msg, 0, sizeof msg);
    msg[MSG_REACH] = reach;
    msg[MSG_BYTES] = (long long)bytes;
    long long *all = malloc(sizeof(long long) * MSG_WORDS * (size_t)comm->size);
    if (!all && st == HALOX_OK)
        st = halox__error(HALOX_ERR_NO_MEMORY, "%s: %s: no memory", g->name, what);
    st = halox__agree_gather(comm, st, what, msg, MSG_WORDS, all);
    if (st != HALOX_OK) {
        free(all);
        return st;
    }
    int every = 1;
    size_t most = 0;
    for (int r = 0; r < comm->size; r++) {
        every &= all[(size_t)r * MSG_WORDS + MSG_REACH] != 0;
        const size_t b = (size_t)all[(size_t)r * MSG_WORDS + MSG_BYTES];
        most = b > most ? b : most;
    }
    free(all);
    if (!every)
        return HALOX_OK;
    most = (most + 15) / 16 * 16; /* blocks on 16 bytes: the copy kernel's words */
    if ((st = halox__msg_grow(comm, m, most * (size_t)slots)) != HALOX_OK)
        return st;
    *direct = 1;
    *slot = most;
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

/* After this rank's copies: they landed (its stream), every rank's did (an agreement); then the
 * copies out of this rank's mailbox, n blocks (to[i] from mailbox offset at[i], bytes[i]). */
static halox_status_t halox__msg_close(halox_comm_t *comm, halox__shm_t *m, const char *what,
                                       halox_status_t st, int copied, void *const *to,
                                       const size_t *at, const size_t *bytes, int n)
{
    halox__gpu_t *g = &m->g;
    if (st == HALOX_OK && copied)
        st = halox__gpu_drain(comm, g, what, "its copy into the peer");
    if ((st = halox__agree(comm, st, what)) != HALOX_OK)
        return st;
    int out = 0;
    for (int i = 0; i < n && st == HALOX_OK; i++) {
        if (bytes[i] == 0)
            continue;
        st = halox__gpu_check(
            comm, g,
            cudaMemcpyAsync(to[i], m->mbox + at[i], bytes[i], cudaMemcpyDeviceToDevice, g->stream),
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

halox_status_t halox__shm_dsendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                    int src, void *rbuf, size_t rbytes, int *used)
{
    halox__shm_t *m = halox__shm(comm);
    const int peers[2] = {dst, src};
    int direct = 0;
    size_t slot = 0;
    *used = 1; /* a failure is every rank's: no host path after it */
    static const char what[] = "the plan build's set-up message";
    halox_status_t st = halox__msg_open(comm, m, what, HALOX_OK, peers, 2,
                                        sbytes > rbytes ? sbytes : rbytes, 1, &direct, &slot);
    if (st != HALOX_OK)
        return st;
    if (!direct) {
        *used = 0;
        return HALOX_OK;
    }
    if (sbytes > 0)
        st = halox__msg_copy(comm, m, what, dst, 0, sbuf, sbytes);
    const size_t at = 0;
    return halox__msg_close(comm, m, what, st, sbytes > 0, &rbuf, &at, &rbytes, 1);
}

/* The mailbox holds a slot per sender: rank c's block for rank r lands in r's slot c. */
halox_status_t halox__shm_dalltoallv(halox_comm_t *comm, const void *sbuf, const size_t *sbytes,
                                     const size_t *soffs, void *rbuf, const size_t *rbytes,
                                     const size_t *roffs, int *used)
{
    static const char what[] = "the migration's message";
    halox__shm_t *m = halox__shm(comm);
    const int P = comm->size;
    int *peers = malloc(sizeof(int) * (size_t)P);
    void **to = malloc(sizeof(void *) * (size_t)P);
    size_t *at = malloc(sizeof(size_t) * (size_t)P);
    int n = 0;
    size_t most = 0;
    for (int r = 0; peers && r < P; r++) {
        if (sbytes[r] > 0 || rbytes[r] > 0)
            peers[n++] = r;
        most = sbytes[r] > most ? sbytes[r] : most;
        most = rbytes[r] > most ? rbytes[r] : most;
    }
    int direct = 0;
    size_t slot = 0;
    *used = 1;
    halox_status_t st =
        peers && to && at ? HALOX_OK
                          : halox__error(HALOX_ERR_NO_MEMORY, "%s: %s: no memory", m->g.name, what);
    st = halox__msg_open(comm, m, what, st, peers, peers ? n : 0, most, P, &direct, &slot);
    if (st == HALOX_OK && !direct)
        *used = 0;
    if (st == HALOX_OK && direct) {
        int copied = 0;
        for (int r = 0; r < P && st == HALOX_OK; r++)
            if (sbytes[r] > 0) {
                st = halox__msg_copy(comm, m, what, r, slot * (size_t)comm->rank,
                                     (const char *)sbuf + soffs[r], sbytes[r]);
                copied = 1;
            }
        for (int c = 0; c < P; c++) {
            to[c] = (char *)rbuf + roffs[c];
            at[c] = slot * (size_t)c;
        }
        st = halox__msg_close(comm, m, what, st, copied, to, at, rbytes, P);
    }
    free(peers);
    free(to);
    free(at);
    return st;
}

void halox__shm_msg_fini(halox__shm_t *m, int collective)
{
    if (collective && m->mbox)
        halox__shm_free(m->mbox);
    m->mbox = NULL;
    m->mbox_cap = 0;
    if (m->mbox_read)
        cudaEventDestroy(m->mbox_read);
    m->mbox_read = NULL;
}
