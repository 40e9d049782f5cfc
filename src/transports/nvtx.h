/* Internal: NVTX ranges, so that Nsight Systems shows the parts of a GPU step (integration, force
 * kernels, halo exchanges) on the host timeline and projected onto the GPU's. NVTX 3 is
 * header-only (CUDA toolkit): without a tool attached a range costs a branch. Builds without
 * CUDA get empty functions. */
#ifndef HALOX_TRANSPORTS_NVTX_H
#define HALOX_TRANSPORTS_NVTX_H

#ifdef HALOX_HAVE_CUDA
#include <nvtx3/nvToolsExt.h>
static inline void halox__nvtx_push(const char *name) { nvtxRangePushA(name); }
static inline void halox__nvtx_pop(void) { nvtxRangePop(); }
#else
static inline void halox__nvtx_push(const char *name) { (void)name; }
static inline void halox__nvtx_pop(void) {}
#endif

#endif
