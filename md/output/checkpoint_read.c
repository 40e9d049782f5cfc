/* Reading checkpoints: magic, version, byte order, size and both checksums checked, saying which
 * check failed, then the contents (checkpoint_check.c); halox_md_checkpoint_probe. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/md_internal.h"
#include "halox/file.h"
#include "halox/md.h"
#include "halox/status.h"
#include "output/checkpoint.h"

/* Read and check a whole checkpoint. On success *payload_p (malloc) holds the payload. */
halox_status_t md__ckpt_read(const char *path, md_ckpt_header_t *h, md_ckpt_settings_t *s_out,
                             char **payload_p)
{
    *payload_p = NULL;
    /* a FIFO is not waited on, whatever is at the path when it is opened */
    FILE *fp = NULL;
    halox_status_t st =
        halox_input_open(path, "the checkpoint", "give the file that --checkpoint wrote", &fp);
    if (st != HALOX_OK)
        return st;
    char *payload = NULL;
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        st = halox_set_error(HALOX_ERR_IO, "cannot read the checkpoint '%s': %s", path,
                             strerror(errno));
        goto out;
    }
    const long long size = (long long)sb.st_size;
    size_t got = fread(h, 1, sizeof *h, fp);
    if (got >= 8 && memcmp(h->magic, MD_CKPT_MAGIC, 8) != 0) {
        st = halox_set_error(HALOX_ERR_IO, "'%s' is not a halox-md checkpoint (wrong magic number)",
                             path);
        goto out;
    }
    if (got < sizeof *h) {
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' is truncated: %lld bytes, shorter than its "
                             "%zu-byte header",
                             path, size, sizeof *h);
        goto out;
    }
    if (h->header_fnv != md__fnv1a64(MD_FNV_INIT, h, offsetof(md_ckpt_header_t, header_fnv))) {
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' is corrupted: its header checksum does not match",
                             path);
        goto out;
    }
    if (h->endian != MD_CKPT_ENDIAN) {
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' was written on a machine of another byte order",
                             path);
        goto out;
    }
    if (h->version != MD_CKPT_VERSION) {
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' has format version %u; this halox-md reads "
                             "version %u",
                             path, h->version, MD_CKPT_VERSION);
        goto out;
    }
    if (h->payload_bytes > (uint64_t)size || (uint64_t)size != sizeof *h + h->payload_bytes) {
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' is %s: its header announces %llu bytes, the file "
                             "holds %lld",
                             path,
                             h->payload_bytes > (uint64_t)size - sizeof *h ? "truncated"
                                                                           : "corrupted (too long)",
                             (unsigned long long)(sizeof *h + h->payload_bytes), size);
        goto out;
    }
    if (h->payload_bytes < sizeof(md_ckpt_settings_t)) {
        st = halox_set_error(HALOX_ERR_IO, "the checkpoint '%s' is corrupted: no settings", path);
        goto out;
    }
    payload = malloc(h->payload_bytes);
    if (!payload) {
        st = halox_set_error(HALOX_ERR_NO_MEMORY, "no memory to read the checkpoint '%s'", path);
        goto out;
    }
    if (fread(payload, 1, h->payload_bytes, fp) != h->payload_bytes) {
        st = halox_set_error(HALOX_ERR_IO, "the checkpoint '%s' is truncated: reading it failed",
                             path);
        goto out;
    }
    uint64_t sum = md__fnv1a64(MD_FNV_INIT, payload, h->payload_bytes);
    if (sum != h->payload_fnv) {
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' is corrupted: checksum %016llx, the header says "
                             "%016llx",
                             path, (unsigned long long)sum, (unsigned long long)h->payload_fnv);
        goto out;
    }
    md_ckpt_settings_t s;
    memcpy(&s, payload, sizeof s);
    st = md__ckpt_check_settings(path, &s, h->payload_bytes);
    if (st == HALOX_OK)
        st = md__ckpt_check_atoms(path, &s, payload, h->payload_bytes);
out:
    fclose(fp);
    if (st != HALOX_OK) {
        free(payload);
    } else {
        *payload_p = payload;
        memcpy(s_out, payload, sizeof *s_out);
    }
    return st;
}

/* The settings of a whole, checked checkpoint (what a probe needs, not the atoms). */
static halox_status_t md__ckpt_read_settings(const char *path, md_ckpt_settings_t *s)
{
    md_ckpt_header_t h;
    char *payload = NULL;
    halox_status_t st = md__ckpt_read(path, &h, s, &payload);
    free(payload);
    return st;
}

halox_status_t halox_md_checkpoint_probe(const char *path, halox_md_checkpoint_info_t *info_p)
{
    md_ckpt_settings_t s;
    halox_status_t st = md__ckpt_read_settings(path, &s);
    if (st != HALOX_OK)
        return st;
    if (info_p) {
        memset(info_p, 0, sizeof *info_p);
        info_p->step = s.step;
        info_p->natoms = s.natoms;
        info_p->nranks = (int)s.nranks;
        for (int d = 0; d < 3; d++)
            info_p->grid.n[d] = (int)s.grid[d];
        info_p->real = s.real_size == 8 ? HALOX_DOUBLE : HALOX_FLOAT;
        memcpy(info_p->transport, s.transport, sizeof info_p->transport);
        info_p->transport[sizeof info_p->transport - 1] = '\0';
    }
    return HALOX_OK;
}
