/* The GPU engine's cluster kernels (md/platforms/cuda/md_cluster_*.cu) and MD kernels, for the engine's
 * tests over the host emulation beside emu_exchange_kernels.cpp (which has the transports'
 * kernels): the very sources. */
#include "platforms/cuda/md_cluster_build.cu"
#include "platforms/cuda/md_cluster_forces.cu"
#include "platforms/cuda/md_cluster_lj.cu"
#include "platforms/cuda/md_cluster_sort.cu"
#include "platforms/cuda/md_cluster_super.cu"
#include "platforms/cuda/md_cluster_watch.cu"
#include "platforms/cuda/md_kernels.cu"
