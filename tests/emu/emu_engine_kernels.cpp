/* The GPU engine's cluster kernels (src/kernels/md_cluster_*.cu), for the engine's tests over the
 * host emulation beside emu_exchange_kernels.cpp (which has md_kernels.cu and inline_halo.cu):
 * the very sources. */
#include "kernels/md_cluster_build.cu"
#include "kernels/md_cluster_forces.cu"
#include "kernels/md_cluster_lj.cu"
#include "kernels/md_cluster_sort.cu"
#include "kernels/md_cluster_super.cu"
#include "kernels/md_cluster_watch.cu"
