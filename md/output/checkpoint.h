/* Internal: the checkpoint file layout, its checksums and its checks, shared by the checkpoint
 * files (each calling only those listed before it) and with the tests that forge checkpoints
 * whose checksums match (tests/md/test_md_checkpoint_forged.c):
 *   checkpoint_format.c   checksums, block sizes, the header
 *   checkpoint_write.c    writing, atomically (md__checkpoint_write, md_internal.h)
 *   checkpoint_check.c    the checks of the settings and atom records
 *   checkpoint_read.c     reading a file and checking it whole; halox_md_checkpoint_probe
 *   checkpoint_restore.c  restarts (md__checkpoint_load, md_internal.h)
 *
 * Checkpoints: the exact state at a rebuild boundary, written atomically.
 *
 * File layout (native byte order, checked on reading):
 *   header (40 bytes)  magic "HLXMDCK1", format version, byte-order mark, payload size,
 *                      FNV-1a 64 of the payload, FNV-1a 64 of the header bytes before it
 *   settings           atom count, step, last rebuild, ranks, grid, precision and every setting
 *                      that shapes the trajectory (box, cut-off, skin, shift, tail, dt,
 *                      rebuild interval and check, ensemble, tau, temperature, seed), and the
 *                      fs-per-step convention of the ns/day report
 *   one block per rank, in rank order: rank, n, then the n home atoms in their exact local
 *                      order: ids (int32), positions, velocities, forces (3 reals each, bits as
 *                      in memory)
 * The thermostat's noise is a function of (seed, step), so no generator state is needed.
 *
 * Why a rebuild boundary: summation order depends on each rank's atom order and on the plan and
 * lists of the last rebuild. At a boundary the next step migrates, sorts, plans and lists from
 * the home atoms alone, so restoring them bit for bit (with the forces that the next half kick
 * uses) continues exactly as the uninterrupted run would. */
#ifndef HALOX_MD_CHECKPOINT_H
#define HALOX_MD_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "halox/status.h"

#define MD_CKPT_MAGIC   "HLXMDCK1"
#define MD_CKPT_VERSION 1u
#define MD_CKPT_ENDIAN  0x01020304u

typedef struct md_ckpt_header {
    char magic[8];
    uint32_t version;
    uint32_t endian;
    uint64_t payload_bytes;
    uint64_t payload_fnv;
    uint64_t header_fnv;
} md_ckpt_header_t;

typedef struct md_ckpt_settings {
    int64_t natoms, step, last_rebuild, nranks;
    int64_t grid[3];
    int64_t real_size;
    int64_t ensemble, shift, tail, rebuild_every, rebuild_check, source;
    uint64_t seed;
    double box[3];
    double fs_per_step;
    double cutoff, skin, dt, tau, temp, density;
    char transport[32];
} md_ckpt_settings_t;

_Static_assert(sizeof(md_ckpt_header_t) == 40, "checkpoint header layout");
_Static_assert(sizeof(md_ckpt_settings_t) == 232, "checkpoint settings layout");

/* checkpoint_format.c */
/* The payload after the settings: one block per rank of this many bytes for n atoms of reals
 * of rs bytes (rank, n, then ids, positions, velocities, forces). */
size_t md__ckpt_block_bytes(long long n, size_t rs);

/* The header of a payload of `bytes` bytes: magic, version, byte order, size, both checksums. */
void md__ckpt_header_make(md_ckpt_header_t *h, const void *payload, size_t bytes);

/* checkpoint_check.c: a payload whose checksums matched (the file is what was written; what was
 * written may still be wrong or forged), each refusal naming the field */
/* Every setting, with the command line's checks where it has them; the rank blocks the
 * settings announce fill payload_bytes exactly. */
halox_status_t md__ckpt_check_settings(const char *path, const md_ckpt_settings_t *s,
                                       uint64_t payload_bytes);
/* Every rank block and atom record: rank order, atom counts, ids 0..natoms-1 each exactly once,
 * finite positions, velocities and forces, positions and speeds within the blow-up bound
 * (md__outside_limit, md__speed_limit) that a state passes before it is written. */
halox_status_t md__ckpt_check_atoms(const char *path, const md_ckpt_settings_t *s,
                                    const char *payload, uint64_t payload_bytes);

/* checkpoint_read.c */
/* Read and check a whole checkpoint (header, checksums, settings, atoms). On success *s holds
 * the settings and *payload_p (malloc) the payload: the settings, then one block per rank. */
halox_status_t md__ckpt_read(const char *path, md_ckpt_header_t *h, md_ckpt_settings_t *s,
                             char **payload_p);

#endif
