/* Internal: the checkpoint file layout and its checksums (checkpoint.c), shared with the tests
 * that forge checkpoints whose checksums match (tests/test_md_checkpoint_forged.c). */
#ifndef HALOX_MD_CHECKPOINT_H
#define HALOX_MD_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

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

/* The payload after the settings: one block per rank of this many bytes for n atoms of reals
 * of rs bytes (rank, n, then ids, positions, velocities, forces). */
size_t md__ckpt_block_bytes(long long n, size_t rs);

/* FNV-1a 64 of n bytes, continuing from h (MD_CKPT_FNV_INIT to start). */
#define MD_CKPT_FNV_INIT 0xcbf29ce484222325ull
uint64_t md__ckpt_fnv1a(uint64_t h, const void *data, size_t n);

/* The header of a payload of `bytes` bytes: magic, version, byte order, size, both checksums. */
void md__ckpt_header_make(md_ckpt_header_t *h, const void *payload, size_t bytes);

#endif
