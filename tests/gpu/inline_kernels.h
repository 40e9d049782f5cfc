/* Test kernels that exchange the halo inside themselves through the public device API
 * (halox/inline_device.cuh), as a user's integration and force kernels would
 * (tests/gpu/inline_kernels.cu; used by test_gpu_exchange against the reference exchange).
 * Float, stride 3. `wait_inside`: the consumers wait in each of their blocks (their grids kept
 * within the view's spin_blocks); 0: a one-thread kernel waits first. */
#ifndef HALOX_TESTS_INLINE_KERNELS_H
#define HALOX_TESTS_INLINE_KERNELS_H

#include <cuda_runtime_api.h>

#include "halox/inline.h"

#ifdef __cplusplus
extern "C" {
#endif

/* x[0, n_home) into the halos they are sent to, the receivers signalled (ticket 0); then this
 * rank's halo waited for (ticket 1 when waiting inside). */
cudaError_t tk_inline_coords(const halox_inline_view_t *v, const float *x, int n_home,
                             int wait_inside, cudaStream_t stream);
/* The halo rows f[n_home, n_total) to their owners, signalled (ticket 2); then, for the home
 * atoms, the returned forces waited for and added into f (ticket 3 when waiting inside). */
cudaError_t tk_inline_forces(const halox_inline_view_t *v, float *f, int n_home, int n_total,
                             int wait_inside, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
