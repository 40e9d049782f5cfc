/* Internal to src/kernels: kernel launches through one macro, HALOX__LAUNCH(kernel, blocks,
 * threads, stream)(arguments...), so that the kernels that use it also compile for the host
 * emulation of tests/emu (which defines the macro first): CI checks their logic without a GPU. */
#ifndef HALOX_KERNELS_LAUNCH_CUH
#define HALOX_KERNELS_LAUNCH_CUH

#ifndef HALOX__LAUNCH
#define HALOX__LAUNCH(kernel, blocks, threads, stream) kernel<<<(blocks), (threads), 0, (stream)>>>
#endif

#endif
