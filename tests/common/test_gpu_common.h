/* Helpers of the GPU tests: the skip rule (no GPU: exit 77), CUDA checks, device arrays. With
 * <mpi.h> included first, also the skip rule of the MPI-launched ones. */
#ifndef HALOX_TEST_GPU_COMMON_H
#define HALOX_TEST_GPU_COMMON_H

#include <cuda_runtime_api.h>
#include <stdio.h>

#include "harness.h"

/* Number of visible CUDA devices; 0 when there is none or no driver (the skip case). */
static inline int tg_device_count(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

/* A CUDA call in a test: failure is a failed check with the call and CUDA's message. */
#define TG_CUDA(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,                   \
                    cudaGetErrorString(e_));                                                       \
            halox_test_failures++;                                                                 \
        }                                                                                          \
    } while (0)

#ifdef MPI_VERSION
/* The fewest CUDA devices a process of MPI_COMM_WORLD sees (collective; 0: skip the test). */
static inline int tg_min_device_count(void)
{
    int ndev = tg_device_count(), min_dev = 0;
    MPI_Allreduce(&ndev, &min_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return min_dev;
}
#endif

#endif
