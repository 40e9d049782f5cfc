/* The GPU engine's cluster kernels and their launchers (src/kernels/md_cluster_*.cu with the MD
 * kernels and the inline exchange's they call), compiled for the host emulation
 * (tests/emu/halox_emu.h): the very sources of src/kernels. */
#include "kernels/inline_halo.cu"
#include "kernels/md_cluster_build.cu"
#include "kernels/md_cluster_forces.cu"
#include "kernels/md_cluster_lj.cu"
#include "kernels/md_cluster_sort.cu"
#include "kernels/md_cluster_super.cu"
#include "kernels/md_cluster_watch.cu"
#include "kernels/md_kernels.cu"
