/* Internal to libhalox: its kernels' names for the public three-region copy
 * (halox/device/copy3.cuh). */
#ifndef HALOX_KERNELS_COPY3_CUH
#define HALOX_KERNELS_COPY3_CUH

#include "halox/device/copy3.cuh"
#include "kernels/launch.cuh"

#define halox__copy3       halox_copy3
#define halox__copy_region halox_copy_region

#endif
