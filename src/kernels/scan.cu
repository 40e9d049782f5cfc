/* The scan of counts behind kernels/scan.h, compiled once into libhalox for its C callers (the
 * send lists of nvshmem-inline's views): the public header-only scan (halox/device/scan.cuh). */
#include <cuda_runtime.h>

#include "halox/device/scan.cuh"
#include "kernels/scan.h"

extern "C" size_t halox__kernel_scan_scratch(int m) { return halox_scan_scratch(m); }

extern "C" cudaError_t halox__kernel_scan(const int *count, int m, int *start, int *cursor,
                                          int *scratch, cudaStream_t stream)
{
    return halox_scan(count, m, start, cursor, scratch, stream);
}
