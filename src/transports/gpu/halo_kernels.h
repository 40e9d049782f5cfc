/* C entry points of the halo kernels (src/transports/gpu/halo_pack.cu).
 *
 * Each launcher enqueues one kernel on `stream` and checks the launch: it returns cudaSuccess or
 * the launch's error (the sticky error state is cleared when the error is not sticky). n == 0
 * launches nothing. The arithmetic is the very same as core's halox__pack_coords() and
 * halox__add_forces() (src/core/pack.c), so results are bit-identical to the CPU reference. */
#ifndef HALOX_KERNELS_HALO_KERNELS_H
#define HALOX_KERNELS_HALO_KERNELS_H

#include <cuda_runtime_api.h>

#include "halox/atoms.h"
#include "halox/fields.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[i] = x[index[i]] for n atoms of `stride` reals (device pointers), adding shift to
 * component dim when shift != 0, in the data's own precision (a float add of (float)shift for
 * HALOX_FLOAT): exactly halox__pack_coords(). */
cudaError_t halox_kernel_pack_coords(halox_real_t real, int stride, void *dst, const void *x,
                                     const int *index, int n, int dim, double shift,
                                     cudaStream_t stream);

/* halox_kernel_pack_coords, and in the same launch (one call instead of two: a plan build's
 * set-up message) id_out[i] = id[index[i]], zone_out[i] = zone[index[i]] | bit. */
cudaError_t halox_kernel_pack_setup(halox_real_t real, int stride, void *dst, const void *x,
                                    const int32_t *id, const uint8_t *zone, const int *index, int n,
                                    int dim, double shift, uint8_t bit, int32_t *id_out,
                                    uint8_t *zone_out, cudaStream_t stream);

/* f[index[i]] += src[i] for n atoms, components 0..2 (device pointers): exactly
 * halox__add_forces(). The entries of index must be distinct (true within one pulse's map), so
 * no two threads update the same atom and no atomics are needed. */
cudaError_t halox_kernel_add_forces(halox_real_t real, int stride, void *f, const int *index, int n,
                                    const void *src, cudaStream_t stream);

/* Per-atom fields (halox/fields.h): dst[i] = src's row index[i] for n rows of row_bytes bytes
 * (copied as 4-byte words when rows are whole words, else bytes: exactly
 * halox__field_gather()). */
cudaError_t halox_kernel_field_gather(void *dst, const void *src, const int *index, int n,
                                      size_t row_bytes, cudaStream_t stream);

/* f's row index[i] += src's row i for n rows of `count` elements of `type` (a number type;
 * integers wrap as unsigned): exactly halox__field_add(). index entries distinct. */
cudaError_t halox_kernel_field_add(halox_type_t type, int count, void *f, const int *index, int n,
                                   const void *src, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
