/* Internal to libhalox: its kernels' names for the public launch helpers
 * (halox/device/launch.cuh). */
#ifndef HALOX_KERNELS_LAUNCH_CUH
#define HALOX_KERNELS_LAUNCH_CUH

#include "halox/device/launch.cuh"

#define HALOX__LAUNCH          HALOX_LAUNCH
#define HALOX__LAUNCH_CHAINED  HALOX_LAUNCH_CHAINED
#define halox__chained_wait    halox_chained_wait
#define halox__chained_trigger halox_chained_trigger

#endif
