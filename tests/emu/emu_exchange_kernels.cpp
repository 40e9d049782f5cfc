/* The kernels of the GPU transports' exchanges (the NVSHMEM runtime wrappers and halo kernels,
 * the packing, nvshmem-inline's and the device stores') and the test's own in-kernel exchange
 * (tests/gpu/inline_kernels.cu), compiled for the host emulation (tests/emu/halox_emu.h,
 * nvshmem.h): the very sources. */
#include "inline_kernels.cu"
#include "transports/gpu/halo_pack.cu"
#include "transports/nvshmem/inline_halo.cu"
#include "kernels/scan.cu" /* the scan nvshmem-inline's send lists use */
#include "transports/gpu/migrate_kernels.cu"
#include "transports/nvshmem/nvshmem_halo.cu"
#include "transports/nvshmem/nvshmem_msg.cu"
#include "transports/nvshmem/nvshmem_rt.cu"
#include "transports/gpu/plan_select.cu"
