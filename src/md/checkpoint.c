/* Checkpoints: the exact state at a rebuild boundary, written atomically.
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
 * uses) continues exactly as the uninterrupted run would.
 *
 * Writing: rank 0 gathers the blocks, writes a temporary file in the same directory, flushes and
 * fsyncs it, renames it over the target (atomic on POSIX) and fsyncs the directory: a crash at
 * any point leaves either the old checkpoint or the new one, never a torn file. Reading checks
 * magic, version, byte order, size and both checksums, and says which check failed. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "md/md_internal.h"

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

static uint64_t md__fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define MD_FNV_INIT 0xcbf29ce484222325ull

static size_t md__block_bytes(long long n, size_t rs)
{
    return 2 * sizeof(int64_t) + (size_t)n * (sizeof(int32_t) + 9 * rs);
}

/* fsync the directory holding path, so the rename itself is durable. */
static void md__sync_dir(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static halox_status_t md__write_atomic(const char *path, const void *a, size_t na, const void *b,
                                       size_t nb)
{
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        halox_status_t st = halox__error(HALOX_ERR_IO,
                                         "cannot create a temporary file next to the checkpoint "
                                         "'%s': %s",
                                         path, strerror(errno));
        free(tmp);
        return st;
    }
    const char *what = NULL;
    const void *part[2] = {a, b};
    size_t plen[2] = {na, nb};
    for (int k = 0; k < 2 && !what; k++) {
        const char *p = part[k];
        size_t left = plen[k];
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                what = "write";
                break;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (!what && fsync(fd) != 0)
        what = "fsync";
    int err = errno;
    if (close(fd) != 0 && !what) {
        what = "close";
        err = errno;
    }
    if (!what && rename(tmp, path) != 0) {
        what = "rename";
        err = errno;
    }
    if (what) {
        unlink(tmp);
        halox_status_t st = halox__error(HALOX_ERR_IO,
                                         "writing the checkpoint '%s' failed (%s: %s); the "
                                         "previous checkpoint, if any, is unchanged",
                                         path, what, strerror(err));
        free(tmp);
        return st;
    }
    free(tmp);
    md__sync_dir(path);
    return HALOX_OK;
}

halox_status_t md__checkpoint_write(halox_md_t *md, const char *path)
{
    const size_t rs = md__rs(md);
    const int n = md->atoms.n_home;
    const int P = md->nranks;
    size_t bb = md__block_bytes(n, rs);
    char *blk = malloc(bb);
    halox_status_t st = blk ? HALOX_OK : halox__error(HALOX_ERR_NO_MEMORY, "checkpoint: no memory");
    st = md__agree(md, st);
    if (st != HALOX_OK) {
        free(blk);
        return st;
    }
    int64_t hdr[2] = {md->rank, n};
    char *p = blk;
    memcpy(p, hdr, sizeof hdr);
    p += sizeof hdr;
    memcpy(p, md->atoms.id, sizeof(int32_t) * (size_t)n);
    p += sizeof(int32_t) * (size_t)n;
    memcpy(p, md->atoms.x, 3 * rs * (size_t)n);
    p += 3 * rs * (size_t)n;
    memcpy(p, md->atoms.extra, 3 * rs * (size_t)n);
    p += 3 * rs * (size_t)n;
    memcpy(p, md->f, 3 * rs * (size_t)n);

    /* the payload on rank 0: settings then every block */
    size_t total = sizeof(md_ckpt_settings_t) + (size_t)P * md__block_bytes(0, rs) +
                   (size_t)md->natoms * (sizeof(int32_t) + 9 * rs);
    char *payload = NULL;
    if (md->rank == 0) {
        payload = malloc(total);
        if (!payload)
            st = halox__error(HALOX_ERR_NO_MEMORY, "checkpoint: no memory for %zu bytes", total);
    }
    st = md__agree(md, st);
    size_t *counts = NULL;
    if (st == HALOX_OK && md->rank == 0) {
        counts = calloc((size_t)P, sizeof(size_t));
        if (!counts)
            st = halox__error(HALOX_ERR_NO_MEMORY, "checkpoint: no memory");
    }
    st = md__agree(md, st);
    if (st == HALOX_OK)
        st = halox_comm_gatherv(md->comm, blk, bb,
                                payload ? payload + sizeof(md_ckpt_settings_t) : NULL,
                                total - sizeof(md_ckpt_settings_t), counts, 0);
    free(blk);
    if (st == HALOX_OK && md->rank == 0) {
        size_t got = sizeof(md_ckpt_settings_t);
        for (int r = 0; r < P; r++)
            got += counts[r];
        if (got != total)
            st = halox__error(HALOX_ERR_ATOM_COUNT,
                              "checkpoint at step %lld: the ranks hold %zu bytes of atoms, %zu "
                              "expected for %lld atoms: atoms were lost or duplicated",
                              md->step, got, total, md->natoms);
    }
    if (st == HALOX_OK && md->rank == 0) {
        md_ckpt_settings_t s;
        memset(&s, 0, sizeof s);
        const halox_md_config_t *c = &md->cfg;
        s.natoms = md->natoms;
        s.step = md->step;
        s.last_rebuild = md->last_rebuild;
        s.nranks = P;
        for (int d = 0; d < 3; d++) {
            s.grid[d] = c->grid.n[d];
            s.box[d] = md->box.len[d];
        }
        s.real_size = (int64_t)rs;
        s.ensemble = c->ensemble;
        s.shift = c->shift;
        s.tail = c->tail;
        s.rebuild_every = c->rebuild_every;
        s.rebuild_check = c->rebuild_check;
        s.source = c->source;
        s.seed = c->seed;
        s.cutoff = c->cutoff;
        s.skin = c->skin;
        s.dt = c->dt;
        s.tau = c->tau;
        s.temp = c->temp;
        s.density = md->rho;
        s.fs_per_step = c->fs_per_step;
        snprintf(s.transport, sizeof s.transport, "%s", halox_comm_transport(md->comm));
        memcpy(payload, &s, sizeof s);
        md_ckpt_header_t h;
        memset(&h, 0, sizeof h);
        memcpy(h.magic, MD_CKPT_MAGIC, 8);
        h.version = MD_CKPT_VERSION;
        h.endian = MD_CKPT_ENDIAN;
        h.payload_bytes = total;
        h.payload_fnv = md__fnv1a(MD_FNV_INIT, payload, total);
        h.header_fnv = md__fnv1a(MD_FNV_INIT, &h, offsetof(md_ckpt_header_t, header_fnv));
        st = md__write_atomic(path, &h, sizeof h, payload, total);
    }
    free(counts);
    free(payload);
    return md__agree(md, st);
}

/* Read and check a whole checkpoint. On success *payload_p (malloc) holds the payload. */
static halox_status_t md__ckpt_read(const char *path, md_ckpt_header_t *h, char **payload_p)
{
    *payload_p = NULL;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return halox__error(HALOX_ERR_IO, "cannot open the checkpoint '%s': %s", path,
                            strerror(errno));
    halox_status_t st = HALOX_OK;
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0)
        size = ftell(fp);
    rewind(fp);
    char *payload = NULL;
    if (size < 0) {
        st = halox__error(HALOX_ERR_IO, "cannot read the checkpoint '%s'", path);
        goto out;
    }
    size_t got = fread(h, 1, sizeof *h, fp);
    if (got >= 8 && memcmp(h->magic, MD_CKPT_MAGIC, 8) != 0) {
        st = halox__error(HALOX_ERR_IO, "'%s' is not a halox-md checkpoint (wrong magic number)",
                          path);
        goto out;
    }
    if (got < sizeof *h) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' is truncated: %ld bytes, shorter than its "
                          "%zu-byte header",
                          path, size, sizeof *h);
        goto out;
    }
    if (h->header_fnv != md__fnv1a(MD_FNV_INIT, h, offsetof(md_ckpt_header_t, header_fnv))) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' is corrupted: its header checksum does not match",
                          path);
        goto out;
    }
    if (h->endian != MD_CKPT_ENDIAN) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' was written on a machine of another byte order",
                          path);
        goto out;
    }
    if (h->version != MD_CKPT_VERSION) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' has format version %u; this halox-md reads "
                          "version %u",
                          path, h->version, MD_CKPT_VERSION);
        goto out;
    }
    if ((uint64_t)size != sizeof *h + h->payload_bytes) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' is %s: its header announces %llu bytes, the file "
                          "holds %ld",
                          path,
                          (uint64_t)size < sizeof *h + h->payload_bytes ? "truncated"
                                                                        : "corrupted (too long)",
                          (unsigned long long)(sizeof *h + h->payload_bytes), size);
        goto out;
    }
    if (h->payload_bytes < sizeof(md_ckpt_settings_t)) {
        st = halox__error(HALOX_ERR_IO, "the checkpoint '%s' is corrupted: no settings", path);
        goto out;
    }
    payload = malloc(h->payload_bytes);
    if (!payload) {
        st = halox__error(HALOX_ERR_NO_MEMORY, "no memory to read the checkpoint '%s'", path);
        goto out;
    }
    if (fread(payload, 1, h->payload_bytes, fp) != h->payload_bytes) {
        st =
            halox__error(HALOX_ERR_IO, "the checkpoint '%s' is truncated: reading it failed", path);
        goto out;
    }
    uint64_t sum = md__fnv1a(MD_FNV_INIT, payload, h->payload_bytes);
    if (sum != h->payload_fnv) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' is corrupted: checksum %016llx, the header says "
                          "%016llx",
                          path, (unsigned long long)sum, (unsigned long long)h->payload_fnv);
        goto out;
    }
    /* blocks must fill the payload exactly */
    {
        md_ckpt_settings_t s;
        memcpy(&s, payload, sizeof s);
        size_t rs = (size_t)s.real_size;
        size_t off = sizeof s;
        long long atoms = 0;
        if ((rs != 4 && rs != 8) || s.nranks < 1 || s.natoms < 2) {
            st = halox__error(HALOX_ERR_IO, "the checkpoint '%s' has impossible settings", path);
            goto out;
        }
        for (int64_t r = 0; r < s.nranks; r++) {
            int64_t bh[2];
            if (off + sizeof bh > h->payload_bytes) {
                st = halox__error(HALOX_ERR_IO, "the checkpoint '%s' is missing rank blocks", path);
                goto out;
            }
            memcpy(bh, payload + off, sizeof bh);
            if (bh[0] != r || bh[1] < 0 || bh[1] > s.natoms) {
                st = halox__error(HALOX_ERR_IO, "the checkpoint '%s' has a bad block for rank %lld",
                                  path, (long long)r);
                goto out;
            }
            off += md__block_bytes(bh[1], rs);
            atoms += bh[1];
        }
        if (off != h->payload_bytes || atoms != s.natoms) {
            st = halox__error(HALOX_ERR_IO,
                              "the checkpoint '%s' is inconsistent: %lld atoms in its blocks, "
                              "%lld in its settings",
                              path, atoms, (long long)s.natoms);
            goto out;
        }
    }
out:
    fclose(fp);
    if (st != HALOX_OK)
        free(payload);
    else
        *payload_p = payload;
    return st;
}

halox_status_t halox_md_checkpoint_probe(const char *path, halox_md_checkpoint_info_t *info_p)
{
    md_ckpt_header_t h;
    char *payload = NULL;
    halox_status_t st = md__ckpt_read(path, &h, &payload);
    if (st != HALOX_OK)
        return st;
    md_ckpt_settings_t s;
    memcpy(&s, payload, sizeof s);
    free(payload);
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

/* Copy n atoms of a block (starting at atom k0 of it) to the end of the home atoms. */
static halox_status_t md__append_atoms(halox_md_t *md, const char *blk, long long nb, size_t rs,
                                       const long long *pick, long long npick)
{
    halox_atoms_t *a = &md->atoms;
    int n0 = a->n_home;
    long long need = n0 + npick;
    if (need > 0x7ffffff0)
        return halox__error(HALOX_ERR_NO_MEMORY, "too many atoms on one rank");
    halox_status_t st = halox_atoms_reserve(a, (int)need + 1);
    if (st == HALOX_OK)
        st = md__ensure_forces(md, (int)need + 1);
    if (st != HALOX_OK)
        return st;
    const char *ids = blk + 2 * sizeof(int64_t);
    const char *x = ids + sizeof(int32_t) * (size_t)nb;
    const char *v = x + 3 * rs * (size_t)nb;
    const char *f = v + 3 * rs * (size_t)nb;
    for (long long q = 0; q < npick; q++) {
        long long k = pick ? pick[q] : q;
        size_t i = (size_t)(n0 + q);
        memcpy(&a->id[i], ids + sizeof(int32_t) * (size_t)k, sizeof(int32_t));
        memcpy((char *)a->x + 3 * rs * i, x + 3 * rs * (size_t)k, 3 * rs);
        memcpy((char *)a->extra + 3 * rs * i, v + 3 * rs * (size_t)k, 3 * rs);
        memcpy((char *)md->f + 3 * rs * i, f + 3 * rs * (size_t)k, 3 * rs);
    }
    a->n_home = a->n_total = (int)need;
    return HALOX_OK;
}

halox_status_t md__checkpoint_load(halox_md_t *md, const char *path)
{
    md_ckpt_header_t h;
    char *payload = NULL;
    halox_status_t st = md__ckpt_read(path, &h, &payload);
    if (st != HALOX_OK)
        return st;
    md_ckpt_settings_t s;
    memcpy(&s, payload, sizeof s);
    size_t rs = md__rs(md);
    if ((size_t)s.real_size != rs) {
        st = halox__error(HALOX_ERR_INVALID_ARG,
                          "the checkpoint '%s' holds %s-precision data; restart it with "
                          "--precision %s",
                          path, s.real_size == 8 ? "double" : "single",
                          s.real_size == 8 ? "double" : "float");
        free(payload);
        return st;
    }
    /* the trajectory's settings come from the checkpoint */
    halox_md_config_t *c = &md->cfg;
    md->natoms = s.natoms;
    md->step = s.step;
    md->last_rebuild = s.last_rebuild;
    for (int d = 0; d < 3; d++)
        md->box.len[d] = s.box[d];
    c->ensemble = (halox_md_ensemble_t)s.ensemble;
    c->shift = (int)s.shift;
    c->tail = (int)s.tail;
    c->rebuild_every = (int)s.rebuild_every;
    c->rebuild_check = (int)s.rebuild_check;
    c->seed = s.seed;
    c->cutoff = s.cutoff;
    c->skin = s.skin;
    c->dt = s.dt;
    c->tau = s.tau;
    c->temp = s.temp;
    c->density = s.density;
    if (c->fs_per_step <= 0)
        c->fs_per_step = s.fs_per_step;
    int same_grid = s.nranks == md->nranks;
    for (int d = 0; d < 3; d++)
        same_grid = same_grid && s.grid[d] == c->grid.n[d];
    size_t off = sizeof s;
    for (int64_t r = 0; r < s.nranks && st == HALOX_OK; r++) {
        int64_t bh[2];
        memcpy(bh, payload + off, sizeof bh);
        const char *blk = payload + off;
        off += md__block_bytes(bh[1], rs);
        if (same_grid) {
            /* this rank's atoms, in their exact order */
            if (r == md->rank)
                st = md__append_atoms(md, blk, bh[1], rs, NULL, bh[1]);
            continue;
        }
        /* another grid: take the atoms whose current position this rank owns; the first step
         * migrates them again after its drift anyway */
        long long *pick = malloc(sizeof(long long) * (size_t)(bh[1] > 0 ? bh[1] : 1));
        if (!pick) {
            st = halox__error(HALOX_ERR_NO_MEMORY, "no memory");
            break;
        }
        long long np = 0;
        const char *x = blk + 2 * sizeof(int64_t) + sizeof(int32_t) * (size_t)bh[1];
        for (long long k = 0; k < bh[1]; k++) {
            double p[3];
            for (int d = 0; d < 3; d++) {
                double v;
                if (rs == 4) {
                    float fv;
                    memcpy(&fv, x + rs * (3 * (size_t)k + d), sizeof fv);
                    v = fv;
                } else {
                    memcpy(&v, x + rs * (3 * (size_t)k + d), sizeof v);
                }
                p[d] = halox_wrap(v, md->box.len[d]);
            }
            if (halox_owner_rank(&c->grid, &md->box, p) == md->rank)
                pick[np++] = k;
        }
        st = md__append_atoms(md, blk, bh[1], rs, pick, np);
        free(pick);
    }
    free(payload);
    if (st == HALOX_OK) {
        for (int i = 0; i < md->atoms.n_home; i++)
            if (md->atoms.id[i] < 0 || md->atoms.id[i] >= md->natoms)
                return halox__error(HALOX_ERR_IO, "the checkpoint '%s' holds atom id %d of %lld",
                                    path, md->atoms.id[i], md->natoms);
        if (!same_grid)
            md__notice(md,
                       "the checkpoint was written on a %lldx%lldx%lld grid; continuing on "
                       "%dx%dx%d (a valid continuation, not bit-identical to the original run)",
                       (long long)s.grid[0], (long long)s.grid[1], (long long)s.grid[2],
                       c->grid.n[0], c->grid.n[1], c->grid.n[2]);
        if (strcmp(s.transport, halox_comm_transport(md->comm)) != 0)
            md__notice(md,
                       "the checkpoint was written with the %s transport, continuing with %s "
                       "(transports move the same bits, so the run continues identically)",
                       s.transport, halox_comm_transport(md->comm));
    }
    return st;
}
