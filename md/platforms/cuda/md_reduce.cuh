/* Block reductions shared by the MD kernels (device code only; included by .cu files). */
#ifndef HALOX_MD_CUDA_REDUCE_CUH
#define HALOX_MD_CUDA_REDUCE_CUH

__device__ static inline double md__warp_sum(double v)
{
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* Sum a per-thread double over the block and add it to *out (one atomic per block). */
__device__ static inline void md__block_add(double v, double *out)
{
    __shared__ double part[32];
    v = md__warp_sum(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        int nw = (blockDim.x + 31) >> 5;
        v = lane < nw ? part[lane] : 0.0;
        v = md__warp_sum(v);
        if (lane == 0)
            atomicAdd(out, v);
    }
    __syncthreads();
}

#endif
