/* The kernels the GPU transports' shared parts and device stores launch, compiled for the host
 * emulation (tests/emu/halox_emu.h): the very sources of src/kernels. */
#include "kernels/halo_pack.cu"
#include "kernels/migrate_kernels.cu"
#include "kernels/plan_select.cu"
