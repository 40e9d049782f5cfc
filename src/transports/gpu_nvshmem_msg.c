/* Set-up messages from device memory to device memory (gpu_nvshmem.h). The device plan build's
 * sendrecv (plan_device.c) otherwise copies its message to pinned memory, waits for it, sends it
 * through the host and copies it up again: at 45k atoms on 2 ranks of one H200 that was 61 us of a
 * 0.75 ms rebuild, 48 of them the host sendrecv of 185 KB (host-clock probe,
 * bench/results/2026-12-04-h200). Here each rank copies its message into its receiver's symmetric
 * mailbox through the peer's load/store pointer.
 *
 * Every rank makes the call for the same pulse (the driver's sendrecv is collective), so two host
 * agreements order it: the first carries every rank's status, message size and whether it reaches
 * both its peers by stores (all ranks copy, or none: *used 0, the host path), and the mailboxes
 * grow alike; then each rank copies and waits for its stream; the second says that every message
 * landed, and each receiver copies its mailbox out on its stream. A mailbox is written only after
 * its owner's last copy out completed (waited for before the first agreement). A rank that fails
 * or stops is seen at an agreement, bounded as every host collective is: nothing here spins on
 * the GPU, so nothing can hang there. */
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
            return halox__gpu_cuda_error(comm, &m->g, e, "a set-up message's copy out",
                                         HALOX_ERR_COMM, 1);
        else if (halox__now() > until)
            return halox__error(HALOX_ERR_TIMEOUT,
                                "%s: rank %d: the copy out of the last set-up message did not "
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
    halox_status_t st = halox__shm_sym_alloc(comm, want, &p, "the set-up messages' mailbox");
    if (st != HALOX_OK)
        return st;
    m->mbox = p;
    m->mbox_cap = want;
    return HALOX_OK;
}

halox_status_t halox__shm_dsendrecv(halox_comm_t *comm, int dst, const void *sbuf, size_t sbytes,
                                    int src, void *rbuf, size_t rbytes, int *used)
{
    halox__shm_t *m = halox__shm(comm);
    halox__gpu_t *g = &m->g;
    *used = 0;
    halox_status_t st = halox__gpu_usable(comm, g, "a set-up message");
    if (st == HALOX_OK)
        st = halox__msg_read_wait(comm, m);
    long long msg[MSG_WORDS];
    memset(msg, 0, sizeof msg);
    /* hybrid keeps the host path: it may be told to treat reachable peers as unreachable */
    msg[MSG_REACH] = st == HALOX_OK && m->direct_setup && !m->use_put &&
                     m->mode != HALOX__SHM_HYBRID && halox__msg_reaches(m, comm, dst) &&
                     halox__msg_reaches(m, comm, src);
    msg[MSG_BYTES] = (long long)(sbytes > rbytes ? sbytes : rbytes);
    long long *all = malloc(sizeof(long long) * MSG_WORDS * (size_t)comm->size);
    if (!all && st == HALOX_OK)
        st = halox__error(HALOX_ERR_NO_MEMORY, "%s: a set-up message: no memory", g->name);
    st = halox__agree_gather(comm, st, "a set-up message", msg, MSG_WORDS, all);
    if (st != HALOX_OK) {
        free(all);
        *used = 1; /* every rank fails alike: no host path after it */
        return st;
    }
    int direct = 1;
    size_t most = 0;
    for (int r = 0; r < comm->size; r++) {
        direct &= all[(size_t)r * MSG_WORDS + MSG_REACH] != 0;
        const size_t b = (size_t)all[(size_t)r * MSG_WORDS + MSG_BYTES];
        most = b > most ? b : most;
    }
    free(all);
    if (!direct)
        return HALOX_OK;
    *used = 1;
    if ((st = halox__msg_grow(comm, m, most)) != HALOX_OK)
        return st;
    if (sbytes > 0) {
        void *peer = halox__shm_ptr(m->mbox, m->pe_of[dst]);
        st = peer
                 ? halox__gpu_check(comm, g, halox__shm_copy_to_peer(peer, sbuf, sbytes, g->stream),
                                    "a set-up message's copy")
                 : halox__error(HALOX_ERR_INTERNAL,
                                "%s: rank %d: rank %d's mailbox has no load/store pointer "
                                "although its signals have: report this",
                                g->name, comm->rank, dst);
        if (st == HALOX_OK)
            st = halox__gpu_drain(comm, g, "a set-up message", "its copy into the peer");
    }
    /* every message landed: the mailboxes are read */
    if ((st = halox__agree(comm, st, "a set-up message")) != HALOX_OK)
        return st;
    if (rbytes > 0) {
        st = halox__gpu_check(
            comm, g, cudaMemcpyAsync(rbuf, m->mbox, rbytes, cudaMemcpyDeviceToDevice, g->stream),
            "a set-up message's copy out");
        if (st == HALOX_OK)
            st = halox__gpu_check(comm, g, cudaEventRecord(m->mbox_read, g->stream),
                                  "a set-up message's copy out");
        m->mbox_pending = st == HALOX_OK;
    }
    if (st == HALOX_OK)
        comm->stats.setup_direct++;
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
