/* The host emulation of NVSHMEM (tests/emu/nvshmem.h): PEs are processes of one machine. Rank 0's
 * unique id names a file; every PE maps it whole: a header (the collectives' barrier, bounded)
 * and every PE's symmetric heap (NVSHMEM_SYMMETRIC_SIZE, default 1G, a sparse file). Allocations
 * are collective and deterministic (first fit, the same calls in the same order on every PE), so
 * an allocation lies at the same offset of every heap and a symmetric address translates by its
 * offset. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <vector>

#include "nvshmem.h"

/* NVSHMEM_SYMMETRIC_SIZE as the transports read it (src/transports/nvshmem/nvshmem_rt.cu, built into every
 * program of the emulation) */
extern "C" size_t halox__shm_heap_size(int *user_set);

namespace {
struct head {
    unsigned arrived; /* the barrier: arrivals of this round, and rounds completed */
    unsigned round;
    int ready; /* the file is sized and the header set */
};
const size_t HEAD = 4096;
char *g_map;   /* the whole file */
size_t g_heap; /* bytes of one PE's heap */
int g_me = -1, g_n;
struct block {
    size_t off, bytes;
};
std::vector<block> g_used; /* this PE's allocations, by offset */

char *heap_of(int pe) { return g_map + HEAD + (size_t)pe * g_heap; }

size_t heap_size(void)
{
    int set = 0;
    const size_t v = halox__shm_heap_size(&set);
    return v >= 4096 ? v : (size_t)1 << 30;
}

/* every PE arrives (the last one opens the next round); bounded: a PE that never comes (it
 * failed) stops this one with a message instead of a hang */
void barrier(void)
{
    head *h = (head *)g_map;
    const unsigned r = __atomic_load_n(&h->round, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&h->arrived, 1u, __ATOMIC_ACQ_REL) == (unsigned)g_n) {
        __atomic_store_n(&h->arrived, 0u, __ATOMIC_RELAXED);
        __atomic_store_n(&h->round, r + 1, __ATOMIC_RELEASE);
        return;
    }
    for (long us = 0; __atomic_load_n(&h->round, __ATOMIC_ACQUIRE) == r; us += 100) {
        if (us > 120L * 1000 * 1000) {
            fprintf(stderr, "emulated NVSHMEM: PE %d waited 120 s for the others in a collective\n",
                    g_me);
            abort();
        }
        usleep(100);
    }
}
} // namespace

/* Before main, for the programs that link this emulation (several ranks, each a process):
 *  - one block per row of the NVSHMEM transports' kernels (HALOX_NVSHMEM_BLOCKS=1): a launch's
 *    blocks run one after another here, so a row of several, whose first block waits for a signal
 *    that its last raises, could not finish (on a GPU every block of the launch is resident:
 *    docs/NVSHMEM.md, "Co-residency");
 *  - each launch after a random pause of up to 200 us (HALOX_EMU_JITTER_US, emu_runtime.cpp),
 *    so that the ranks interleave in many orders: a wait left out shows as a wrong halo (tried
 *    by removing one).
 * Either may be set otherwise in the environment. */
__attribute__((constructor)) static void emu_nvshmem_defaults(void)
{
    setenv("HALOX_NVSHMEM_BLOCKS", "1", 0);
    setenv("HALOX_EMU_JITTER_US", "200", 0);
}

int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *id)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    snprintf(id->path, sizeof id->path, "/tmp/halox-emu-nvshmem-%ld-%ld-%ld", (long)getpid(),
             (long)t.tv_sec, (long)t.tv_nsec);
    return 0;
}

int nvshmemx_set_attr_uniqueid_args(int rank, int nranks, const nvshmemx_uniqueid_t *id,
                                    nvshmemx_init_attr_t *attr)
{
    attr->rank = rank;
    attr->nranks = nranks;
    attr->id = *id;
    return 0;
}

int nvshmemi_init_thread(int, int *provided, unsigned, nvshmemx_init_attr_t *attr,
                         nvshmemi_version_t)
{
    *provided = NVSHMEM_THREAD_SERIALIZED;
    g_heap = heap_size();
    const size_t total = HEAD + (size_t)attr->nranks * g_heap;
    int fd = -1;
    if (attr->rank == 0) {
        fd = open(attr->id.path, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)total) != 0)
            return 1;
    } else {
        /* rank 0 creates it: wait for it, and for its header (at most 60 s) */
        for (int tries = 0; tries < 60000 && fd < 0; tries++) {
            fd = open(attr->id.path, O_RDWR);
            struct stat st;
            if (fd >= 0 && (fstat(fd, &st) != 0 || (size_t)st.st_size < total)) {
                close(fd);
                fd = -1;
            }
            if (fd < 0)
                usleep(1000);
        }
        if (fd < 0)
            return 1;
    }
    void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return 1;
    g_map = (char *)m;
    head *h = (head *)g_map;
    if (attr->rank == 0) {
        __atomic_store_n(&h->ready, 1, __ATOMIC_RELEASE); /* a new file is zero: round 0 */
    } else {
        for (int tries = 0; tries < 60000 && !__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE); tries++)
            usleep(1000);
        if (!__atomic_load_n(&h->ready, __ATOMIC_ACQUIRE))
            return 1;
    }
    g_me = attr->rank;
    g_n = attr->nranks;
    barrier();
    if (g_me == 0)
        unlink(attr->id.path); /* every PE has it mapped */
    return 0;
}

int nvshmem_my_pe(void) { return g_me; }
int nvshmem_n_pes(void) { return g_n; }

void *nvshmem_malloc(size_t bytes)
{
    halox_emu_count(HALOX_EMU_NVSHMEM);
    barrier(); /* collective, as NVSHMEM's */
    bytes = (bytes + 255) / 256 * 256;
    size_t at = 0;
    size_t k = 0;
    for (; k < g_used.size(); k++) {
        if (g_used[k].off - at >= bytes)
            break;
        at = g_used[k].off + g_used[k].bytes;
    }
    if (at + bytes > g_heap)
        return NULL;
    g_used.insert(g_used.begin() + (long)k, block{at, bytes});
    /* poisoned, as cudaMalloc's (NVSHMEM's memory starts with anything in it): the code must not
     * read what it did not write; every PE's poison is in before any PE returns */
    memset(heap_of(g_me) + at, 0xa5, bytes);
    barrier();
    return heap_of(g_me) + at;
}

void nvshmem_free(void *p)
{
    halox_emu_count(HALOX_EMU_NVSHMEM);
    barrier();
    for (size_t k = 0; k < g_used.size(); k++)
        if (heap_of(g_me) + g_used[k].off == (char *)p) {
            g_used.erase(g_used.begin() + (long)k);
            return;
        }
}

void *nvshmem_ptr(const void *sym, int pe)
{
    const char *s = (const char *)sym, *mine = g_map ? heap_of(g_me) : NULL;
    if (!mine || pe < 0 || pe >= g_n || s < mine || s >= mine + g_heap)
        return NULL;
    return heap_of(pe) + (s - mine);
}

void nvshmem_finalize(void)
{
    if (g_map)
        munmap(g_map, HEAD + (size_t)g_n * g_heap);
    g_map = NULL;
}

void nvshmemx_putmem_signal_on_stream(void *dest, const void *src, size_t bytes, uint64_t *sig,
                                      uint64_t value, int op, int pe, cudaStream_t stream)
{
    halox_emu_count(HALOX_EMU_NVSHMEM);
    auto run = [=]() {
        memcpy(nvshmem_ptr(dest, pe), src, bytes);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        nvshmemx_signal_op(sig, value, op, pe);
    };
    if (!halox_emu_record(stream, run))
        run();
}

void nvshmemx_signal_op_on_stream(uint64_t *sig, uint64_t value, int op, int pe,
                                  cudaStream_t stream)
{
    halox_emu_count(HALOX_EMU_NVSHMEM);
    auto run = [=]() { nvshmemx_signal_op(sig, value, op, pe); };
    if (!halox_emu_record(stream, run))
        run();
}
