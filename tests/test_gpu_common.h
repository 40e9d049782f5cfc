/* Helpers of the GPU tests: the skip rule (no GPU: exit 77), CUDA checks, device arrays. */
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

#endif
