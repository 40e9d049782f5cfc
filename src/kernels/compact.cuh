/* Internal to libhalox: its kernels' names for the public stable compaction
 * (halox/device/compact.cuh). */
#ifndef HALOX_KERNELS_COMPACT_CUH
#define HALOX_KERNELS_COMPACT_CUH

#include "halox/device/compact.cuh"
#include "kernels/launch.cuh"

#define halox__compact     halox_compact
#define halox__cmp_scratch halox_cmp_scratch

#endif
