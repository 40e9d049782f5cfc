/* The host emulation's stand-in for NVSHMEM (tests/emu): the part of the host and device API that
 * src/transports/nvshmem/nvshmem_rt.cu and nvshmem_halo.cu use, for PEs that are processes of one
 * machine (ranks under mpirun). Every PE maps one shared file holding every PE's symmetric heap; an
 * allocation is at the same offset of every PE's heap (collective, in the same order everywhere;
 * poisoned with 0xa5 as cudaMalloc's),
 * and a symmetric address of this PE is translated to a peer's by that offset (nvshmem_ptr).
 * Signals are 64-bit atomics in the peers' heaps; a put is a copy and then the signal. Waits
 * across PEs spin for real: each process runs its own launches. Implementation:
 * tests/emu/emu_nvshmem.cpp. */
#ifndef HALOX_TESTS_EMU_NVSHMEM_H
#define HALOX_TESTS_EMU_NVSHMEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cuda_runtime.h"

#define NVSHMEM_VENDOR_MAJOR_VERSION 3
#define NVSHMEM_VENDOR_MINOR_VERSION 4
#define NVSHMEM_VENDOR_PATCH_VERSION 5
#define NVSHMEM_THREAD_SERIALIZED    2
#define NVSHMEMX_INIT_WITH_UNIQUEID  4
enum { NVSHMEM_SIGNAL_SET = 0, NVSHMEM_SIGNAL_ADD = 5 };

typedef struct {
    char path[120]; /* the shared file of the PEs' heaps */
} nvshmemx_uniqueid_t;
#define NVSHMEMX_UNIQUEID_INITIALIZER                                                              \
    {                                                                                              \
        {                                                                                          \
            0                                                                                      \
        }                                                                                          \
    }
typedef struct {
    int rank, nranks;
    nvshmemx_uniqueid_t id;
} nvshmemx_init_attr_t;
#define NVSHMEMX_INIT_ATTR_INITIALIZER                                                             \
    {                                                                                              \
        0, 0,                                                                                      \
        {                                                                                          \
            {                                                                                      \
                0                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
typedef struct {
    int major, minor, patch;
} nvshmemi_version_t;
#define nvshmemx_init_init_attr_ver_only(attr) ((void)(attr))

int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *id);
int nvshmemx_set_attr_uniqueid_args(int rank, int nranks, const nvshmemx_uniqueid_t *id,
                                    nvshmemx_init_attr_t *attr);
int nvshmemi_init_thread(int requested, int *provided, unsigned flags, nvshmemx_init_attr_t *attr,
                         nvshmemi_version_t version);
int nvshmem_my_pe(void);
int nvshmem_n_pes(void);
void *nvshmem_malloc(size_t bytes);
void nvshmem_free(void *p);
void *nvshmem_ptr(const void *sym, int pe);
void nvshmem_finalize(void);
void nvshmemx_putmem_signal_on_stream(void *dest, const void *src, size_t bytes, uint64_t *sig,
                                      uint64_t value, int op, int pe, cudaStream_t stream);
void nvshmemx_signal_op_on_stream(uint64_t *sig, uint64_t value, int op, int pe,
                                  cudaStream_t stream);

/* device side: the peer's copy of a symmetric address, written as the hardware would */
static inline void nvshmemx_signal_op(uint64_t *sig, uint64_t value, int op, int pe)
{
    uint64_t *q = (uint64_t *)nvshmem_ptr(sig, pe);
    if (op == NVSHMEM_SIGNAL_ADD)
        __atomic_fetch_add(q, value, __ATOMIC_SEQ_CST);
    else
        __atomic_store_n(q, value, __ATOMIC_SEQ_CST);
}
/* every thread of the block calls it (block-uniform): one copies, then signals */
static inline void nvshmemx_putmem_signal_block(void *dest, const void *src, size_t bytes,
                                                uint64_t *sig, uint64_t value, int op, int pe)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        memcpy(nvshmem_ptr(dest, pe), src, bytes);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        nvshmemx_signal_op(sig, value, op, pe);
    }
    __syncthreads();
}

#endif
