/* The GPU engine's cluster kernels and their launchers (md/platforms/cuda/md_cluster_*.cu with
 * the MD kernels, the inline exchange's and the scan they call), compiled for the host emulation
 * (tests/emu/halox_emu.h): the very sources. */
#include "transports/nvshmem/inline_halo.cu"
#include "kernels/scan.cu"
#include "platforms/cuda/md_cluster_build.cu"
#include "platforms/cuda/md_cluster_forces.cu"
#include "platforms/cuda/md_cluster_lj.cu"
#include "platforms/cuda/md_cluster_sort.cu"
#include "platforms/cuda/md_cluster_super.cu"
#include "platforms/cuda/md_cluster_watch.cu"
#include "platforms/cuda/md_kernels.cu"
