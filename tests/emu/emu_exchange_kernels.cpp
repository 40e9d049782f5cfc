/* The kernels of the GPU transports' exchanges (the NVSHMEM runtime wrappers and halo kernels,
 * the packing, nvshmem-inline's and the device stores') and the test's own in-kernel exchange
 * (tests/inline_kernels.cu), compiled for the host emulation (tests/emu/halox_emu.h,
 * nvshmem.h): the very sources. */
#include "inline_kernels.cu"
#include "kernels/halo_pack.cu"
#include "kernels/inline_halo.cu"
#include "kernels/md_kernels.cu" /* the scan nvshmem-inline's send lists use */
#include "kernels/migrate_kernels.cu"
#include "kernels/nvshmem_halo.cu"
#include "kernels/nvshmem_msg.cu"
#include "kernels/nvshmem_rt.cu"
#include "kernels/plan_select.cu"
