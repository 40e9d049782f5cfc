/* The kernels the GPU transports' shared parts and device stores launch, compiled for the host
 * emulation (tests/emu/halox_emu.h): the very sources of src/kernels. */
#include "transports/gpu/halo_pack.cu"
#include "transports/gpu/migrate_kernels.cu"
#include "transports/gpu/plan_select.cu"
