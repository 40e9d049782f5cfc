/* NVSHMEM runtime wrappers for the NVSHMEM transports: initialisation from the MPI job (unique
 * id), symmetric memory, peer pointers, on-stream put-with-signal, copies into peers' memory.
 * See nvshmem_halo.h.
 *
 * NVSHMEM is initialised at most once per process: a second nvshmem_init after
 * nvshmem_finalize is undefined behaviour, and tests create and destroy many endpoints. It is
 * finalised at exit, and only when nothing failed: finalisation is collective and would wait
 * forever for a peer that is gone. nvshmem_init()/nvshmemx_init_attr() exit the process on
 * failure, so initialisation calls nvshmemi_init_thread(), which returns a status. */
#include <cuda_runtime.h>
#include <nvshmem.h>
#include <nvshmemx.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/device/launch.cuh"
#include "transports/nvshmem/nvshmem_halo.h"
#include "transports/nvshmem/shm_sync.cuh"

static int halox__shm_ready = 0;    /* initialised in this process */
static int halox__shm_npes0 = 0;    /* PEs of that initialisation */
static int halox__shm_poisoned = 0; /* a failure happened: no collective finalisation */

static void halox__shm_at_exit(void)
{
    if (halox__shm_ready && !halox__shm_poisoned)
        nvshmem_finalize();
}

extern "C" size_t halox__shm_uid_size(void) { return sizeof(nvshmemx_uniqueid_t); }

extern "C" int halox__shm_uid(void *uid)
{
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    int rc = nvshmemx_get_uniqueid(&id);
    memcpy(uid, &id, sizeof id);
    return rc;
}

extern "C" int halox__shm_init(int rank, int nranks, const void *uid, char *why, size_t why_len)
{
    if (halox__shm_ready) {
        if (nranks != halox__shm_npes0) {
            snprintf(why, why_len,
                     "NVSHMEM was initialised in this process for %d PEs, and this endpoint has "
                     "%d ranks: NVSHMEM can be initialised only once per process, so every "
                     "NVSHMEM endpoint must span the same processes",
                     halox__shm_npes0, nranks);
            return 1;
        }
        return 0;
    }
    /* NVLink multicast stays off (it can take shared GPUs out of service), unless set already.
     * (NVSHMEM_DISABLE_NCCL=1 made every process hang in this set-up on the device: not used.) */
    setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
    nvshmemx_uniqueid_t id;
    memcpy(&id, uid, sizeof id);
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    int rc = nvshmemx_set_attr_uniqueid_args(rank, nranks, &id, &attr);
    if (rc != 0) {
        snprintf(why, why_len, "nvshmemx_set_attr_uniqueid_args returned %d", rc);
        return rc;
    }
    nvshmemx_init_init_attr_ver_only(attr);
    nvshmemi_version_t v = {NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
                            NVSHMEM_VENDOR_PATCH_VERSION};
    int provided = 0;
    rc = nvshmemi_init_thread(NVSHMEM_THREAD_SERIALIZED, &provided, NVSHMEMX_INIT_WITH_UNIQUEID,
                              &attr, v);
    if (rc != 0) {
        snprintf(why, why_len,
                 "nvshmemi_init_thread returned %d (NVSHMEM_DEBUG=INFO shows why; a symmetric "
                 "heap larger than the GPU memory, NVSHMEM_SYMMETRIC_SIZE, is a common cause)",
                 rc);
        return rc;
    }
    if (nvshmem_n_pes() != nranks || nvshmem_my_pe() != rank) {
        snprintf(why, why_len, "NVSHMEM made PE %d of %d for rank %d of %d", nvshmem_my_pe(),
                 nvshmem_n_pes(), rank, nranks);
        return 1;
    }
    halox__shm_ready = 1;
    halox__shm_npes0 = nranks;
    atexit(halox__shm_at_exit);
    return 0;
}

extern "C" int halox__shm_my_pe(void) { return nvshmem_my_pe(); }
extern "C" int halox__shm_n_pes(void) { return nvshmem_n_pes(); }

extern "C" const char *halox__shm_version(void)
{
    static char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", NVSHMEM_VENDOR_MAJOR_VERSION, NVSHMEM_VENDOR_MINOR_VERSION,
             NVSHMEM_VENDOR_PATCH_VERSION);
    return v;
}

/* What halox holds of the symmetric heap (the same on every PE: allocations are collective with
 * equal sizes). NVSHMEM grows its heap beyond NVSHMEM_SYMMETRIC_SIZE on demand (CUDA VMM), so a
 * user's setting is enforced here. */
#define HALOX__SHM_TRACKED 256
static struct {
    void *p;
    size_t bytes;
} halox__shm_live[HALOX__SHM_TRACKED];
static size_t halox__shm_used = 0;

extern "C" size_t halox__shm_in_use(void) { return halox__shm_used; }

extern "C" void *halox__shm_malloc(size_t bytes)
{
    bytes = bytes > 0 ? bytes : 256;
    int slot = -1;
    for (int i = 0; i < HALOX__SHM_TRACKED && slot < 0; i++)
        if (!halox__shm_live[i].p)
            slot = i;
    if (slot < 0)
        return NULL;
    void *p = nvshmem_malloc(bytes);
    if (p) {
        halox__shm_live[slot].p = p;
        halox__shm_live[slot].bytes = bytes;
        halox__shm_used += bytes;
    }
    return p;
}

extern "C" void halox__shm_free(void *p)
{
    if (!p)
        return;
    for (int i = 0; i < HALOX__SHM_TRACKED; i++)
        if (halox__shm_live[i].p == p) {
            halox__shm_used -= halox__shm_live[i].bytes;
            halox__shm_live[i].p = NULL;
            halox__shm_live[i].bytes = 0;
        }
    nvshmem_free(p);
}
extern "C" void *halox__shm_ptr(const void *sym, int pe) { return nvshmem_ptr(sym, pe); }

extern "C" int halox__shm_is_symmetric(const void *p)
{
    /* nvshmem_ptr() of this PE returns the address itself for symmetric memory, NULL else */
    return p && halox__shm_ready && nvshmem_ptr(p, nvshmem_my_pe()) == p;
}

extern "C" size_t halox__shm_heap_size(int *user_set)
{
    const char *s = getenv("NVSHMEM_SYMMETRIC_SIZE");
    *user_set = s && *s;
    if (!*user_set)
        return (size_t)1 << 30; /* NVSHMEM's default */
    char *end = NULL;
    double v = strtod(s, &end);
    double m = 1;
    if (end && *end) {
        switch (*end) {
        case 'k':
        case 'K':
            m = 1024.0;
            break;
        case 'm':
        case 'M':
            m = 1024.0 * 1024;
            break;
        case 'g':
        case 'G':
            m = 1024.0 * 1024 * 1024;
            break;
        case 't':
        case 'T':
            m = 1024.0 * 1024 * 1024 * 1024;
            break;
        default:
            m = 0; /* not a size: NVSHMEM itself judges the variable at initialisation */
            break;
        }
        if (end[1])
            m = 0;
    }
    /* (size_t) of a negative, NaN or huge value is undefined: such a value is no limit here */
    if (end == s || !(v * m >= 1.0 && v * m < 9.2e18)) {
        *user_set = 0;
        return (size_t)1 << 30;
    }
    return (size_t)(v * m);
}

extern "C" void halox__shm_poison(void) { halox__shm_poisoned = 1; }

/* 16-byte words where both ends allow it, the rest byte by byte */
static __global__ void halox__shm_copy_kernel(char *dst, const char *src, size_t bytes)
{
    shm_copy_bytes(dst, src, bytes, (size_t)blockIdx.x * blockDim.x + threadIdx.x,
                   (size_t)gridDim.x * blockDim.x);
}

extern "C" cudaError_t halox__shm_copy_to_peer(void *dst, const void *src, size_t bytes,
                                               cudaStream_t stream)
{
    if (bytes == 0)
        return cudaSuccess;
    size_t blocks = (bytes / 16 + 255) / 256;
    blocks = blocks < 1 ? 1 : blocks > 1024 ? 1024 : blocks;
    HALOX_LAUNCH(halox__shm_copy_kernel, blocks, 256, stream)
    ((char *)dst, (const char *)src, bytes);
    return cudaGetLastError();
}

extern "C" cudaError_t halox__shm_put_signal_on_stream(void *dest_sym, const void *src,
                                                       size_t bytes, uint64_t *sig_sym, int pe,
                                                       cudaStream_t stream)
{
    if (bytes > 0)
        nvshmemx_putmem_signal_on_stream(dest_sym, src, bytes, sig_sym, 1, NVSHMEM_SIGNAL_ADD, pe,
                                         stream);
    else
        nvshmemx_signal_op_on_stream(sig_sym, 1, NVSHMEM_SIGNAL_ADD, pe, stream);
    return cudaGetLastError();
}
