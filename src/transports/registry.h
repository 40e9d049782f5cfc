/* Internal: the transports compiled into this build (see registry.c). */
#ifndef HALOX_TRANSPORTS_REGISTRY_H
#define HALOX_TRANSPORTS_REGISTRY_H

#include "core/transport.h"

/* NULL-terminated; the order is the order `--version` lists them. */
extern const halox_transport_ops_t *const halox__transport_table[];

extern const halox_transport_ops_t halox__threads_ops;
#ifdef HALOX_HAVE_MPI
extern const halox_transport_ops_t halox__mpi_ops;
#endif
#if defined(HALOX_HAVE_CUDA) && defined(HALOX_HAVE_MPI)
/* src/transports/gpu/gpu_mpi.c */
extern const halox_transport_ops_t halox__mpi_staged_ops;
extern const halox_transport_ops_t halox__mpi_cuda_ops;
#endif
#if defined(HALOX_HAVE_CUDA) && defined(HALOX_HAVE_MPI) && defined(HALOX_HAVE_NCCL)
/* src/transports/gpu/gpu_nccl.c */
extern const halox_transport_ops_t halox__nccl_ops;
#endif
#if defined(HALOX_HAVE_CUDA) && defined(HALOX_HAVE_MPI) && defined(HALOX_HAVE_NVSHMEM)
/* src/transports/nvshmem/gpu_nvshmem.c */
extern const halox_transport_ops_t halox__nvshmem_stream_ops;
extern const halox_transport_ops_t halox__nvshmem_pulse_ops;
extern const halox_transport_ops_t halox__nvshmem_fused_ops;
/* src/transports/nvshmem/gpu_nvshmem_inline.c */
extern const halox_transport_ops_t halox__nvshmem_inline_ops;
/* src/transports/nvshmem/gpu_nvshmem.c with gpu_hybrid.c */
extern const halox_transport_ops_t halox__hybrid_ops;
#endif

#endif
