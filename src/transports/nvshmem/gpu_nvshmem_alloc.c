/* Symmetric allocations of the NVSHMEM endpoint (gpu_nvshmem.h): collective, the largest rank's
 * size on every rank, refused with the size to set when a heap size the user set is full. Apart
 * from the bind (gpu_nvshmem_bind.c) so that the rebuild's mailbox (gpu_nvshmem_msg.c) allocates
 * the same way without a circle of files. */
#include <stdlib.h>

#include "core/error.h"
#include "core/transport.h"
#include "transports/gpu/gpu.h"
#include "transports/nvshmem/gpu_nvshmem.h"
#include "transports/nvshmem/nvshmem_halo.h"

halox_status_t halox__shm_sym_alloc(halox_comm_t *comm, size_t bytes, void **ptr_p,
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
