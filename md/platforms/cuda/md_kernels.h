/* C entry points of the MD kernels of the GPU engine (md/platforms/cuda/md_kernels.cu).
 *
 * Single precision, positions and forces with stride 3 (float3 layout, what the halo transports
 * bind); energies accumulated in double. Each launcher enqueues its kernels on `stream` and
 * checks the launch: it returns cudaSuccess or the launch's error. n == 0 launches nothing. All
 * pointers are device pointers unless said otherwise.
 *
 * The engine's pair lists and force kernel are the cluster ones of md_cluster.h. The first GPU
 * kernels, per-atom lists and their LJ kernel, live in bench/ (pair_roofline_atoms.cu) as the
 * baseline bench/pair_roofline_bench measures the cluster kernel against. */
#ifndef HALOX_MD_CUDA_KERNELS_H
#define HALOX_MD_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** v += h (f + fnl) (fnl may be NULL: v += h f); then x += dt v when dt != 0 (n home atoms). */
cudaError_t md__kernel_kick(float *v, const float *f, const float *fnl, float *x, int n, float h,
                            float dt, cudaStream_t stream);

/** v *= alpha. */
cudaError_t md__kernel_scale(float *v, int n, float alpha, cudaStream_t stream);

/** out[0] += 1/2 sum v^2 (double). */
cudaError_t md__kernel_kinetic(const float *v, int n, double *out, cudaStream_t stream);

/** Wrap the n positions of x into the periodic box [0, len) (each component; a one-rank run's
 *  rebuild on the device) and max_v2[0] = max(max_v2[0], largest |v|^2) as float bits (NaN as
 *  the largest float; set it to 0 first). */
cudaError_t md__kernel_wrap(float *x, const float *v, int n, const float len[3], unsigned *max_v2,
                            cudaStream_t stream);

/** max_v2[0] = max(max_v2[0], largest |v|^2 of the n atoms) as float bits (NaN as the largest
 *  float; set it to 0 first): the blow-up check of a rebuild that leaves positions alone. */
cudaError_t md__kernel_max_v2(const float *v, int n, unsigned *max_v2, cudaStream_t stream);

/** Lay the n atoms out in `order` (order[k]: the atom that moves to k, a permutation of 0..n-1):
 *  x and v (3 floats each; v may be NULL) and id (may be NULL) gathered into scratch (7 n
 *  floats' room) and copied back. With v and speed (two unsigneds, zero before the first launch
 *  and left zero by each), also the largest |v|^2 as float bits (NaN as the largest float) into
 *  *speed_out (host memory mapped for the device: readable once the stream got past it). */
cudaError_t md__kernel_permute(const int *order, int n, float *x, float *v, int32_t *id,
                               void *scratch, unsigned *speed, unsigned *speed_out,
                               cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
