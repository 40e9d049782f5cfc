/* C entry points of nvshmem-inline's kernels (inline_halo.cu): its own exchange, the one
 * halox_comm_coords / halox_comm_forces run (the protocol of halox/inline.h, in kernels of the
 * library instead of the caller's), and the home atoms' send lists of a view. The wait and the
 * signal of a view's direction in a kernel of their own are public (halox/inline.h).
 *
 * The exchange's kernels use the pulse table and state of the NVSHMEM endpoint
 * (nvshmem_halo.h); every pulse's peer must be reachable by stores (R->x_peer, R->fb_peer and the
 * signal pointers set). No NVSHMEM call is made here: peers are plain pointers. */
#ifndef HALOX_KERNELS_INLINE_HALO_H
#define HALOX_KERNELS_INLINE_HALO_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "halox/inline.h"
#include "transports/nvshmem/nvshmem_halo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Coordinates of pulse k (map order, with its shift) stored into its receiver's halo; the
 * launch's last block raises the receiver's signal k. l->signal_only: the signal alone (2: every
 * kernel here returns at once, the launch floor). These kernels never wait: any grid size
 * (blocks) is safe. */
cudaError_t halox__inl_pack(const halox__shm_launch_t *l, int k, int blocks, cudaStream_t stream);
/* One thread: wait (bounded) until this PE's signal of direction dir reached the next exchange
 * for every pulse of the mask; with bump, that exchange of dir is complete (epoch raised). */
cudaError_t halox__inl_await(const halox__shm_launch_t *l, int dir, uint32_t pulses, int bump,
                             cudaStream_t stream);
/* Forces on pulse k's received atoms (f at its recv offset) stored into the owner's force
 * buffer; the launch's last block raises the owner's force signal k. */
cudaError_t halox__inl_send(const halox__shm_launch_t *l, int k, int blocks, cudaStream_t stream);
/* Wait (bounded, in each of `blocks` blocks: keep it within the co-resident bound) for the forces
 * returned for pulse k and add them into f at its map; with bump the launch's last block
 * completes the force exchange. */
cudaError_t halox__inl_take(const halox__shm_launch_t *l, int k, int bump, int blocks,
                            cudaStream_t stream);

/* Scratch ints halox__inl_sends needs for n_home atoms, and for its scan (scan_scratch: its own
 * allocation, zero when new, used by nothing else: md_kernels.h). */
size_t halox__inl_sends_scratch(int n_home);
size_t halox__inl_sends_scan_scratch(int n_home);
/* The home atoms' send lists: for the n_pulses maps (device; map[k] holds counts[k] local indices
 * below n_home), start[0..n_home] and send[start[a] .. start[a + 1]) = every (pulse, position)
 * that sends atom a, pulses descending (the order the returned forces are added in). scratch:
 * halox__inl_sends_scratch(n_home) ints; scan_scratch: halox__inl_sends_scan_scratch(n_home). */
cudaError_t halox__inl_sends(int n_home, int n_pulses, const int *const *maps, const int *counts,
                             int *start, halox_inline_send_t *send, int *scratch, int *scan_scratch,
                             cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
