/* The scan of counts behind kernels/scan.h: one block for small counts, the one-launch tiled
 * scan of scan.cuh for large ones. */
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/launch.cuh"
#include "kernels/scan.cuh"
#include "kernels/scan.h"

#define HALOX__SCAN1_THREADS 1024

static __global__ void halox__scan_block(const int *count, int m, int *start, int *cursor)
{
    __shared__ int part[HALOX__SCAN1_THREADS];
    int t = threadIdx.x;
    int chunk = (m + HALOX__SCAN1_THREADS - 1) / HALOX__SCAN1_THREADS;
    int a = t * chunk, b = a + chunk < m ? a + chunk : m;
    int s = 0;
    for (int k = a; k < b; k++)
        s += count[k];
    part[t] = s;
    __syncthreads();
    for (int off = 1; off < HALOX__SCAN1_THREADS; off *= 2) {
        int v = t >= off ? part[t - off] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    int run = part[t] - s; /* exclusive prefix of this chunk */
    for (int k = a; k < b; k++) {
        int c = count[k];
        start[k] = run;
        cursor[k] = run;
        run += c;
    }
    if (t == HALOX__SCAN1_THREADS - 1)
        start[m] = part[t];
}

extern "C" size_t halox__kernel_scan_scratch(int m) { return halox__scan_scratch(m); }

extern "C" cudaError_t halox__kernel_scan(const int *count, int m, int *start, int *cursor,
                                             int *scratch, cudaStream_t stream)
{
    if (m <= 16 * HALOX__SCAN1_THREADS) { /* one block: a chunk per thread */
        HALOX__LAUNCH(halox__scan_block, 1, HALOX__SCAN1_THREADS, stream)(count, m, start, cursor);
        return cudaGetLastError();
    }
    /* one launch over tiles (scan.cuh) */
    cudaError_t e = halox__scan(count, m, start, cursor, scratch, stream);
    (void)cudaGetLastError();
    return e;
}

