/* C entry points of the migration's kernels (src/transports/gpu/migrate_kernels.cu), for the device
 * store of src/transports/gpu/migrate_device.c. The wrap and the owner are core's arithmetic
 * (geometry.c, migrate.c) step by step in double (explicit round-to-nearest products, no fused
 * multiply-add), so a device migration wraps and moves exactly the atoms a host one does; the
 * compaction is stable (compact.cuh), so leavers and stayers keep their order. Every launcher
 * enqueues on `stream` and returns the launch's error. */
#ifndef HALOX_KERNELS_MIGRATE_KERNELS_H
#define HALOX_KERNELS_MIGRATE_KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "halox/atoms.h"
#include "halox/fields.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The box, the grid and this rank's domain, by value. */
typedef struct halox_mig_geometry {
    double len[3], lo[3], hi[3];
    int n[3];
    int me;
} halox_mig_geometry_t;

/* Scratch ints halox_kernel_mig_leavers needs for n atoms (zero it when new: compact.cuh). */
size_t halox_kernel_mig_scratch(int n);
/* One kernel over the home atoms i < n: components outside (0, len) wrapped into [0, len) in
 * place (as core's halox__wrap_store); the leavers (owner not me) in leave[0 .. *count)
 * ascending, each one's owner at the same place of owner[] (both sized n); *first_bad (set by
 * the caller above n) = the smallest i with a non-finite component (it stays). *count: device. */
cudaError_t halox_kernel_mig_leavers(halox_real_t real, int stride, void *x, int n,
                                     const halox_mig_geometry_t *geo, int *first_bad, int *leave,
                                     int *owner, int *count, int *scratch, cudaStream_t stream);

/* The per-atom arrays of a record, in record order, by value: column c has b[c] bytes per atom
 * at p[c] (coordinates, ids, the extra bytes, the carried fields: migrate_store.h's columns). */
#define HALOX_MIG_COLS (3 + HALOX_MAX_FIELDS)
typedef struct halox_mig_cols {
    int n;
    void *p[HALOX_MIG_COLS];
    size_t b[HALOX_MIG_COLS];
} halox_mig_cols_t;

/* One pass over the n home atoms, the leavers' indices leave[0 .. nl) ascending: leaver b's
 * record (a row of every column of src, in order) at buf + slot[b] * rec; the stayers, in order,
 * to the rows 0 .. n - nl of the columns of out (the same widths as src's). */
cudaError_t halox_kernel_mig_split(const halox_mig_cols_t *src, int n, const int *leave, int nl,
                                   const int *slot, size_t rec, void *buf,
                                   const halox_mig_cols_t *out, cudaStream_t stream);

/* Up to three device copies in one launch (bytes[r] from src[r] to dst[r]; 0: none): a launch
 * costs the host as much as one cudaMemcpyAsync. The regions must not overlap. */
cudaError_t halox_kernel_copy3(void *const dst[3], const void *const src[3], const size_t bytes[3],
                               cudaStream_t stream);

/* Record j of buf (rec bytes each) to row j of every column of dst, for j < n. */
cudaError_t halox_kernel_mig_unpack(const void *buf, size_t rec, int n, const halox_mig_cols_t *dst,
                                    cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
