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
 * any point leaves either the old checkpoint or the new one, never a torn file. A path that is
 * not a regular file (a device, a FIFO, a directory) is refused before anything is written, and
 * checked again just before the rename, which never replaces anything but a regular file; a
 * symbolic link is followed (its target is replaced, the link stays).
 *
 * Reading checks magic, version, byte order, size and both checksums, and says which check
 * failed. A checksum only proves that the file is what was written, not that a sane run wrote
 * it: then every setting is checked as the command line checks it (halox_md_config_check) and
 * every atom record (ids 0..N-1 each once, finite positions, velocities and forces), and a bad
 * one is refused with a message naming the field. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/file.h"
#include "core/util.h"
#include "md/checkpoint.h"
#include "md/md_internal.h"

/* Steps beyond this are refused on reading: step arithmetic (next checkpoint, step + 1) stays
 * far from overflow, and no run gets near it. */
#define MD_CKPT_MAX_STEP (1LL << 53)

uint64_t md__ckpt_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

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
    h->payload_fnv = md__ckpt_fnv1a(MD_CKPT_FNV_INIT, payload, bytes);
    h->header_fnv = md__ckpt_fnv1a(MD_CKPT_FNV_INIT, h, offsetof(md_ckpt_header_t, header_fnv));
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
    /* a device, a FIFO, a directory: refused before anything is written */
    halox_status_t st = halox_output_check(path, "the checkpoint");
    char *target = NULL;
    if (st == HALOX_OK)
        st = halox__output_target(path, "the checkpoint", &target);
    if (st != HALOX_OK)
        return st;
    size_t len = strlen(target);
    char *tmp = malloc(len + 16);
    if (!tmp) {
        free(target);
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory");
    }
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", target);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        st = halox__error(HALOX_ERR_WRITE,
                          "cannot create a temporary file next to the checkpoint '%s': %s; the "
                          "previous checkpoint, if any, is unchanged",
                          path, strerror(errno));
        free(tmp);
        free(target);
        return st;
    }
    const char *what = NULL;
    int err = 0;
    const void *part[2] = {a, b};
    size_t plen[2] = {na, nb};
    for (int k = 0; k < 2 && !what; k++) {
        const char *p = part[k];
        size_t left = plen[k];
        while (left > 0) {
            errno = 0;
            ssize_t w = write(fd, p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                what = "write";
                err = w == 0 ? EIO : errno;
                break;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (!what && fsync(fd) != 0) {
        what = "fsync";
        err = errno;
    }
    if (close(fd) != 0 && !what) {
        what = "close";
        err = errno;
    }
    /* the target may have been replaced since the check: never rename over a special file */
    if (!what && (st = halox__rename_check(target, "the checkpoint")) != HALOX_OK) {
        unlink(tmp);
        free(tmp);
        free(target);
        return st;
    }
    if (!what && rename(tmp, target) != 0) {
        what = "rename";
        err = errno;
    }
    if (what) {
        unlink(tmp);
        st = halox__error(HALOX_ERR_WRITE,
                          "writing the checkpoint '%s' failed (%s: %s); the previous checkpoint, "
                          "if any, is unchanged",
                          path, what, strerror(err));
        free(tmp);
        free(target);
        return st;
    }
    free(tmp);
    md__sync_dir(target);
    free(target);
    return HALOX_OK;
}

halox_status_t md__checkpoint_write(halox_md_t *md, const char *path)
{
    const size_t rs = md__rs(md);
    const int n = md->atoms.n_home;
    const int P = md->nranks;
    size_t bb = md__ckpt_block_bytes(n, rs);
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
    size_t total = sizeof(md_ckpt_settings_t) + (size_t)P * md__ckpt_block_bytes(0, rs) +
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
        md__ckpt_header_make(&h, payload, total);
        st = md__write_atomic(path, &h, sizeof h, payload, total);
    }
    free(counts);
    free(payload);
    return md__agree(md, st);
}

/* "the checkpoint 'PATH' has an invalid setting: ..." (the file passed its checksums: it is what
 * was written, and what was written is wrong or forged) */
static halox_status_t md__ckpt_invalid(const char *path, const char *fmt, ...) HALOX__PRINTF(2, 3);
static halox_status_t md__ckpt_invalid(const char *path, const char *fmt, ...)
{
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return halox__error(HALOX_ERR_IO, "the checkpoint '%s' has an invalid setting: %s", path, why);
}

/* The same with the message of a check that failed (copied: halox__error writes that buffer). */
static halox_status_t md__ckpt_invalid_last(const char *path)
{
    char why[768];
    snprintf(why, sizeof why, "%s", halox_last_error());
    return md__ckpt_invalid(path, "%s", why);
}

/* Every setting, with the command line's checks where it has them. */
static halox_status_t md__ckpt_check_settings(const char *path, const md_ckpt_settings_t *s,
                                              uint64_t payload_bytes)
{
    if (s->real_size != 4 && s->real_size != 8)
        return md__ckpt_invalid(path, "real_size = %lld: 4 (float) or 8 (double) bytes per real",
                                (long long)s->real_size);
    if (s->natoms < 2 || s->natoms > INT32_MAX)
        return md__ckpt_invalid(path, "natoms = %lld: from 2 to 2^31-1 atoms",
                                (long long)s->natoms);
    if (s->nranks < 1 || s->nranks > INT_MAX)
        return md__ckpt_invalid(path, "nranks = %lld: from 1 to 2^31-1 ranks",
                                (long long)s->nranks);
    halox_grid_t grid;
    for (int d = 0; d < 3; d++) {
        if (s->grid[d] < 1 || s->grid[d] > INT_MAX)
            return md__ckpt_invalid(
                path, "grid = %lldx%lldx%lld: every dimension has 1 to 2^31-1 ranks",
                (long long)s->grid[0], (long long)s->grid[1], (long long)s->grid[2]);
        grid.n[d] = (int)s->grid[d];
    }
    if (halox_grid_check(&grid) != HALOX_OK)
        return md__ckpt_invalid_last(path);
    if (halox_grid_size(&grid) != s->nranks)
        return md__ckpt_invalid(path, "grid = %dx%dx%d has %d ranks, but nranks = %lld", grid.n[0],
                                grid.n[1], grid.n[2], halox_grid_size(&grid), (long long)s->nranks);
    if (s->step < 0 || s->step > MD_CKPT_MAX_STEP)
        return md__ckpt_invalid(path, "step = %lld: from 0 to 2^53", (long long)s->step);
    if (s->last_rebuild < 0 || s->last_rebuild > s->step)
        return md__ckpt_invalid(path, "last_rebuild = %lld: from 0 to the step, %lld",
                                (long long)s->last_rebuild, (long long)s->step);
    const struct {
        const char *name;
        int64_t v;
    } flag[3] = {{"shift", s->shift}, {"tail", s->tail}, {"rebuild_check", s->rebuild_check}};
    for (int k = 0; k < 3; k++)
        if (flag[k].v != 0 && flag[k].v != 1)
            return md__ckpt_invalid(path, "%s = %lld: 0 (off) or 1 (on)", flag[k].name,
                                    (long long)flag[k].v);
    if (s->rebuild_every < INT_MIN || s->rebuild_every > INT_MAX)
        return md__ckpt_invalid(path, "rebuild_every = %lld: give a number of steps from 1 to %d",
                                (long long)s->rebuild_every, INT_MAX);
    if (s->ensemble < INT_MIN || s->ensemble > INT_MAX)
        return md__ckpt_invalid(path, "ensemble = %lld: 0 (nve) or 1 (nvt)",
                                (long long)s->ensemble);
    if (s->source != HALOX_MD_FCC && s->source != HALOX_MD_RANDOM && s->source != HALOX_MD_READ)
        return md__ckpt_invalid(path, "source = %lld: 0 (fcc), 1 (random) or 2 (file)",
                                (long long)s->source);
    /* printed in notices: a terminated name of printable characters */
    const char *nul = memchr(s->transport, '\0', sizeof s->transport);
    if (!nul)
        return md__ckpt_invalid(path,
                                "transport: the name is not terminated within its %zu "
                                "bytes",
                                sizeof s->transport);
    if (nul == s->transport)
        return md__ckpt_invalid(path, "transport: the name is empty");
    for (const char *q = s->transport; q < nul; q++)
        if (*q < 0x21 || *q > 0x7e)
            return md__ckpt_invalid(path,
                                    "transport: byte %d of the name is 0x%02x, not a "
                                    "printable character",
                                    (int)(q - s->transport), (unsigned)(unsigned char)*q);
    halox_box_t box = {{s->box[0], s->box[1], s->box[2]}};
    if (halox_box_check(&box) != HALOX_OK)
        return md__ckpt_invalid_last(path);
    if (!isfinite(s->fs_per_step) || s->fs_per_step < 0)
        return md__ckpt_invalid(path, "fs_per_step = %g: finite and >= 0 (0: no ns/day)",
                                s->fs_per_step);
    /* the trajectory's settings, with the checks of the command line */
    halox_md_config_t c;
    halox_md_config_default(&c);
    c.restart_path = path;
    c.timeout_s = 60; /* given: HALOX_TIMEOUT_S is not the checkpoint's to answer for */
    c.grid = grid;
    c.real = s->real_size == 8 ? HALOX_DOUBLE : HALOX_FLOAT;
    c.steps = s->step;
    c.ensemble = (halox_md_ensemble_t)s->ensemble;
    c.shift = (int)s->shift;
    c.tail = (int)s->tail;
    c.rebuild_every = (int)s->rebuild_every;
    c.rebuild_check = (int)s->rebuild_check;
    c.seed = s->seed;
    c.cutoff = s->cutoff;
    c.skin = s->skin;
    c.dt = s->dt;
    c.tau = s->tau;
    c.temp = s->temp;
    c.density = s->density;
    if (halox_md_config_check(&c) != HALOX_OK || md__config_check_restored(&c) != HALOX_OK ||
        md__box_check(&c, s->box, "box") != HALOX_OK) /* a box its precision can hold */
        return md__ckpt_invalid_last(path);
    /* the rank blocks the settings announce fill the payload exactly */
    const uint64_t rs = (uint64_t)s->real_size;
    const uint64_t need = (uint64_t)s->nranks * md__ckpt_block_bytes(0, rs) +
                          (uint64_t)s->natoms * (sizeof(int32_t) + 9 * rs);
    if (payload_bytes - sizeof *s != need)
        return halox__error(HALOX_ERR_IO,
                            "the checkpoint '%s' is inconsistent: its settings (natoms = %lld, "
                            "nranks = %lld, real_size = %lld: %s precision) make %llu bytes of "
                            "rank blocks, the file holds %llu",
                            path, (long long)s->natoms, (long long)s->nranks,
                            (long long)s->real_size, rs == 8 ? "double" : "single",
                            (unsigned long long)need,
                            (unsigned long long)(payload_bytes - sizeof *s));
    return HALOX_OK;
}

/* Real k of an array of reals of rs bytes, as a double. */
static double md__ckpt_real(const char *p, size_t rs, size_t k)
{
    if (rs == 4) {
        float f;
        memcpy(&f, p + 4 * k, sizeof f);
        return f;
    }
    double d;
    memcpy(&d, p + 8 * k, sizeof d);
    return d;
}

/* Every rank block and atom record: rank order, atom counts, ids 0..natoms-1 each exactly once,
 * finite positions, velocities and forces. */
static halox_status_t md__ckpt_check_atoms(const char *path, const md_ckpt_settings_t *s,
                                           const char *payload, uint64_t payload_bytes)
{
    const size_t rs = (size_t)s->real_size;
    unsigned char *seen = calloc((size_t)(s->natoms + 7) / 8, 1);
    if (!seen)
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory to check the checkpoint '%s'", path);
    static const char *const kind[3] = {"position", "velocity", "force"};
    static const char dim[3] = {'x', 'y', 'z'};
    halox_status_t st = HALOX_OK;
    size_t off = sizeof *s;
    long long atoms = 0;
    for (int64_t r = 0; r < s->nranks && st == HALOX_OK; r++) {
        int64_t bh[2];
        if (off + sizeof bh > payload_bytes) {
            st = halox__error(HALOX_ERR_IO, "the checkpoint '%s' has no block for rank %lld", path,
                              (long long)r);
            break;
        }
        memcpy(bh, payload + off, sizeof bh);
        if (bh[0] != r) {
            st = halox__error(HALOX_ERR_IO,
                              "the checkpoint '%s' has a bad block: the block of rank %lld says "
                              "rank %lld",
                              path, (long long)r, (long long)bh[0]);
            break;
        }
        if (bh[1] < 0 || bh[1] > s->natoms - atoms ||
            off + md__ckpt_block_bytes(bh[1], rs) > payload_bytes) {
            st = halox__error(HALOX_ERR_IO,
                              "the checkpoint '%s' has a bad block: rank %lld holds %lld atoms, "
                              "and the blocks before it %lld, of natoms = %lld",
                              path, (long long)r, (long long)bh[1], atoms, (long long)s->natoms);
            break;
        }
        const size_t n = (size_t)bh[1];
        const char *ids = payload + off + sizeof bh;
        const char *arr[3];
        arr[0] = ids + sizeof(int32_t) * n;
        arr[1] = arr[0] + 3 * rs * n;
        arr[2] = arr[1] + 3 * rs * n;
        for (size_t k = 0; k < n && st == HALOX_OK; k++) {
            int32_t id;
            memcpy(&id, ids + sizeof id * k, sizeof id);
            if (id < 0 || id >= s->natoms) {
                st = halox__error(HALOX_ERR_IO,
                                  "the checkpoint '%s' has a bad atom: atom %zu of rank %lld has "
                                  "id %d, but ids run from 0 to natoms - 1 = %lld",
                                  path, k, (long long)r, id, (long long)s->natoms - 1);
                break;
            }
            if (seen[id / 8] & (1u << (id % 8))) {
                st = halox__error(HALOX_ERR_IO,
                                  "the checkpoint '%s' has a bad atom: atom id %d appears twice "
                                  "(again as atom %zu of rank %lld)",
                                  path, id, k, (long long)r);
                break;
            }
            seen[id / 8] |= (unsigned char)(1u << (id % 8));
            for (int a = 0; a < 3 && st == HALOX_OK; a++)
                for (int d = 0; d < 3; d++) {
                    double v = md__ckpt_real(arr[a], rs, 3 * k + (size_t)d);
                    if (!isfinite(v)) {
                        st = halox__error(HALOX_ERR_IO,
                                          "the checkpoint '%s' has a bad atom: atom id %d has a "
                                          "non-finite %s (%c = %g)",
                                          path, id, kind[a], dim[d], v);
                        break;
                    }
                }
        }
        off += md__ckpt_block_bytes(bh[1], rs);
        atoms += bh[1];
    }
    free(seen);
    if (st == HALOX_OK && (atoms != s->natoms || off != payload_bytes))
        st =
            halox__error(HALOX_ERR_IO,
                         "the checkpoint '%s' is inconsistent: its rank blocks hold %lld atoms "
                         "in %zu bytes, its settings say natoms = %lld in %llu bytes",
                         path, atoms, off, (long long)s->natoms, (unsigned long long)payload_bytes);
    return st;
}

/* Read and check a whole checkpoint. On success *payload_p (malloc) holds the payload. */
static halox_status_t md__ckpt_read(const char *path, md_ckpt_header_t *h, char **payload_p)
{
    *payload_p = NULL;
    /* before the open: opening a FIFO would wait for a writer */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return halox__error(HALOX_ERR_IO,
                            "the checkpoint '%s' is %s, not a regular file: give the file that "
                            "--checkpoint wrote",
                            path, halox__file_kind(sb.st_mode));
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return halox__error(HALOX_ERR_IO, "cannot open the checkpoint '%s': %s", path,
                            strerror(errno));
    halox_status_t st = HALOX_OK;
    char *payload = NULL;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st =
            halox__error(HALOX_ERR_IO, "cannot read the checkpoint '%s': not a regular file", path);
        goto out;
    }
    const long long size = (long long)sb.st_size;
    size_t got = fread(h, 1, sizeof *h, fp);
    if (got >= 8 && memcmp(h->magic, MD_CKPT_MAGIC, 8) != 0) {
        st = halox__error(HALOX_ERR_IO, "'%s' is not a halox-md checkpoint (wrong magic number)",
                          path);
        goto out;
    }
    if (got < sizeof *h) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' is truncated: %lld bytes, shorter than its "
                          "%zu-byte header",
                          path, size, sizeof *h);
        goto out;
    }
    if (h->header_fnv !=
        md__ckpt_fnv1a(MD_CKPT_FNV_INIT, h, offsetof(md_ckpt_header_t, header_fnv))) {
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
    if (h->payload_bytes > (uint64_t)size || (uint64_t)size != sizeof *h + h->payload_bytes) {
        st = halox__error(HALOX_ERR_IO,
                          "the checkpoint '%s' is %s: its header announces %llu bytes, the file "
                          "holds %lld",
                          path,
                          h->payload_bytes > (uint64_t)size - sizeof *h ? "truncated"
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
    uint64_t sum = md__ckpt_fnv1a(MD_CKPT_FNV_INIT, payload, h->payload_bytes);
    if (sum != h->payload_fnv) {
        st = halox__error(HALOX_ERR_IO,
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
        off += md__ckpt_block_bytes(bh[1], rs);
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
        /* settings and atoms were checked on reading (md__ckpt_read) */
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
