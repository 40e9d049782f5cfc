/* The checkpoint file's checksums, block sizes and header (checkpoint.h: the layout). */
#include <stddef.h>
#include <string.h>

#include "engine/md_internal.h"
#include "output/checkpoint.h"

size_t md__ckpt_block_bytes(long long n, size_t rs)
{
    return 2 * sizeof(int64_t) + (size_t)n * (sizeof(int32_t) + 9 * rs);
}

void md__ckpt_header_make(md_ckpt_header_t *h, const void *payload, size_t bytes)
{
    memset(h, 0, sizeof *h);
    memcpy(h->magic, MD_CKPT_MAGIC, 8);
    h->version = MD_CKPT_VERSION;
    h->endian = MD_CKPT_ENDIAN;
    h->payload_bytes = bytes;
    h->payload_fnv = md__fnv1a64(MD_FNV_INIT, payload, bytes);
    h->header_fnv = md__fnv1a64(MD_FNV_INIT, h, offsetof(md_ckpt_header_t, header_fnv));
}
