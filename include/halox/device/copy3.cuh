/** @file
 * Device-to-device copies of up to three regions in one kernel (header-only CUDA): a launch and
 * a cudaMemcpyAsync are each a host call into the CUDA runtime, and a rebuild's phases move
 * several arrays at once (coordinates, ids, velocities): one launch instead of three (what a
 * rebuild costs: docs/MD-DESIGN.md). Words of 4 bytes
 * where every region allows them (sizes and addresses multiples of 4), else bytes.
 *
 *   halox_copy3(dst, src, bytes, stream)   region r: bytes[r] from src[r] to dst[r] (a NULL
 *                                          pointer or 0 bytes: none); stream-ordered, returns the
 *                                          launch's error (cudaSuccess when nothing is copied) */
#ifndef HALOX_DEVICE_COPY3_CUH
#define HALOX_DEVICE_COPY3_CUH

#include <stddef.h>
#include <stdint.h>

#include "halox/device/launch.cuh"

/** The three regions of one halox_copy3() launch, passed by value to its kernel. */
typedef struct halox_copy3_args {
    unsigned char *dst[3];       /**< device destinations */
    const unsigned char *src[3]; /**< device sources (none overlaps its destination) */
    size_t bytes[3];             /**< bytes of each region (0: none) */
} halox_copy3_args_t;

/** `bytes` from src to dst by the whole grid (grid-stride): in 4-byte words when `words` (sizes
 *  and addresses multiples of 4), else in bytes. */
static __device__ inline void halox_copy_region(unsigned char *dst, const unsigned char *src,
                                                size_t bytes, int words)
{
    const size_t t0 = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t step = (size_t)gridDim.x * blockDim.x;
    if (words) {
        uint32_t *d = (uint32_t *)(void *)dst;
        const uint32_t *s = (const uint32_t *)(const void *)src;
        for (size_t u = t0; u < bytes / 4; u += step)
            d[u] = s[u];
    } else {
        for (size_t u = t0; u < bytes; u += step)
            dst[u] = src[u];
    }
}

/** The kernel of halox_copy3(): each region by the whole grid, one after the other. */
static __global__ void halox_copy3_kernel(halox_copy3_args_t c, int words)
{
    for (int r = 0; r < 3; r++)
        halox_copy_region(c.dst[r], c.src[r], c.bytes[r], words);
}

/** Region r: bytes[r] from device memory src[r] to device memory dst[r] (a NULL pointer or 0
 *  bytes: none), in one kernel on `stream`. Stream-ordered, returns once enqueued; the launch's
 *  error (cudaSuccess when nothing is copied). */
static inline cudaError_t halox_copy3(void *const dst[3], const void *const src[3],
                                      const size_t bytes[3], cudaStream_t stream)
{
    halox_copy3_args_t c;
    size_t most = 0;
    int words = 1;
    for (int r = 0; r < 3; r++) {
        c.dst[r] = (unsigned char *)dst[r];
        c.src[r] = (const unsigned char *)src[r];
        c.bytes[r] = dst[r] && src[r] ? bytes[r] : 0;
        words &= c.bytes[r] % 4 == 0 && (uintptr_t)dst[r] % 4 == 0 && (uintptr_t)src[r] % 4 == 0;
        most = c.bytes[r] > most ? c.bytes[r] : most;
    }
    if (most == 0)
        return cudaSuccess;
    const size_t units = words ? most / 4 : most;
    size_t blocks = (units + 255) / 256;
    blocks = blocks < 2048 ? blocks : 2048;
    HALOX_LAUNCH(halox_copy3_kernel, (unsigned)blocks, 256, stream)(c, words);
    return cudaPeekAtLastError();
}

#endif
