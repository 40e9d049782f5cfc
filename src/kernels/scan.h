/* Internal to libhalox (and its tests): an exclusive scan of int counts on the device, the public
 * halox_scan (halox/device/scan.cuh) as a C function. */
#ifndef HALOX_KERNELS_SCAN_H
#define HALOX_KERNELS_SCAN_H

#include <cuda_runtime.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Exclusive scan of count[0..m) into start[0..m] (start[m] = the total) and cursor[0..m);
 *  count may be start or cursor (each count is read before it is overwritten). scratch: device
 *  ints, halox__kernel_scan_scratch(m) of them (unused for small m), zero when new and left
 *  ready for the next scan (of any size). */
cudaError_t halox__kernel_scan(const int *count, int m, int *start, int *cursor, int *scratch,
                               cudaStream_t stream);
size_t halox__kernel_scan_scratch(int m);

#ifdef __cplusplus
}
#endif

#endif
