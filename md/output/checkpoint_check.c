/* The checks of a checkpoint's contents, once its checksums matched (checkpoint_read.c). A
 * checksum only proves that the file is what was written, not that a sane run wrote it: every
 * setting is checked as the command line checks it (halox_md_config_check) and every atom
 * record (ids 0..N-1 each once, finite positions, velocities and forces, positions and speeds
 * within the blow-up bound that every checkpoint written passed), and a bad one is refused with
 * a message naming the field. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/status.h"
#include "output/checkpoint.h"

/* Steps beyond this are refused on reading: step arithmetic (next checkpoint, step + 1) stays
 * far from overflow, and no run gets near it. */
#define MD_CKPT_MAX_STEP (1LL << 53)

/* "the checkpoint 'PATH' has an invalid setting: ..." (the file passed its checksums: it is what
 * was written, and what was written is wrong or forged) */
static halox_status_t md__ckpt_invalid(const char *path, const char *fmt, ...) MD__PRINTF(2, 3);
static halox_status_t md__ckpt_invalid(const char *path, const char *fmt, ...)
{
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return halox_set_error(HALOX_ERR_IO, "the checkpoint '%s' has an invalid setting: %s", path,
                           why);
}

/* The same with the message of a check that failed (copied: halox_set_error writes that buffer). */
static halox_status_t md__ckpt_invalid_last(const char *path)
{
    char why[768];
    snprintf(why, sizeof why, "%s", halox_last_error());
    return md__ckpt_invalid(path, "%s", why);
}

/* Every setting, with the command line's checks where it has them. */
halox_status_t md__ckpt_check_settings(const char *path, const md_ckpt_settings_t *s,
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
    /* NVE runs keep it too (the command line's check is for NVT): a sane run writes a sane one */
    if (!(isfinite(s->tau) && s->tau > 0))
        return md__ckpt_invalid(path, "tau = %g: the thermostat time constant, finite and > 0",
                                s->tau);
    /* the rank blocks the settings announce fill the payload exactly */
    const uint64_t rs = (uint64_t)s->real_size;
    const uint64_t need = (uint64_t)s->nranks * md__ckpt_block_bytes(0, rs) +
                          (uint64_t)s->natoms * (sizeof(int32_t) + 9 * rs);
    if (payload_bytes - sizeof *s != need)
        return halox_set_error(HALOX_ERR_IO,
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

/* Atom k's position and speed within the blow-up bound of the checks before a state is written
 * (state_check.c): what a sane run writes, so a checkpoint beyond it is forged or blew up. */
static halox_status_t md__ckpt_check_motion(const char *path, const md_ckpt_settings_t *s,
                                            int32_t id, const char *x, const char *v, size_t k)
{
    const size_t rs = (size_t)s->real_size;
    const long long since = (long long)(s->step - s->last_rebuild);
    const double out = md__outside_limit(s->box, since);
    double v2 = 0;
    for (int d = 0; d < 3; d++) {
        const double p = md__ckpt_real(x, rs, 3 * k + (size_t)d);
        const double u = md__ckpt_real(v, rs, 3 * k + (size_t)d);
        if (!(p >= -out && p <= s->box[d] + out))
            return halox_set_error(HALOX_ERR_IO,
                                   "the checkpoint '%s' has a bad atom: atom id %d has position "
                                   "%c = %g, more than %g outside the box (0 to %g), farther than "
                                   "an atom moving at most half the box per step gets in the %lld "
                                   "step(s) since the last rebuild",
                                   path, id, "xyz"[d], p, out, s -> box[d], since > 1 ? since : 1);
        v2 += u * u;
    }
    const double vmax = md__speed_limit(s->box, s->dt);
    if (!(sqrt(v2) < vmax))
        return halox_set_error(HALOX_ERR_IO,
                               "the checkpoint '%s' has a bad atom: atom id %d has speed %g: it "
                               "moves %g per step of dt %g, more than half the box (%g): the "
                               "state blew up",
                               path, id, sqrt(v2), sqrt(v2) * s->dt, s->dt, vmax * s->dt);
    return HALOX_OK;
}

/* Every rank block and atom record: rank order, atom counts, ids 0..natoms-1 each exactly once,
 * finite positions, velocities and forces. */
halox_status_t md__ckpt_check_atoms(const char *path, const md_ckpt_settings_t *s,
                                    const char *payload, uint64_t payload_bytes)
{
    const size_t rs = (size_t)s->real_size;
    unsigned char *seen = calloc((size_t)(s->natoms + 7) / 8, 1);
    if (!seen)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory to check the checkpoint '%s'", path);
    static const char *const kind[3] = {"position", "velocity", "force"};
    static const char dim[3] = {'x', 'y', 'z'};
    halox_status_t st = HALOX_OK;
    size_t off = sizeof *s;
    long long atoms = 0;
    for (int64_t r = 0; r < s->nranks && st == HALOX_OK; r++) {
        int64_t bh[2];
        if (off + sizeof bh > payload_bytes) {
            st = halox_set_error(HALOX_ERR_IO, "the checkpoint '%s' has no block for rank %lld",
                                 path, (long long)r);
            break;
        }
        memcpy(bh, payload + off, sizeof bh);
        if (bh[0] != r) {
            st = halox_set_error(HALOX_ERR_IO,
                                 "the checkpoint '%s' has a bad block: the block of rank %lld says "
                                 "rank %lld",
                                 path, (long long)r, (long long)bh[0]);
            break;
        }
        if (bh[1] < 0 || bh[1] > s->natoms - atoms ||
            off + md__ckpt_block_bytes(bh[1], rs) > payload_bytes) {
            st = halox_set_error(HALOX_ERR_IO,
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
                st =
                    halox_set_error(HALOX_ERR_IO,
                                    "the checkpoint '%s' has a bad atom: atom %zu of rank %lld has "
                                    "id %d, but ids run from 0 to natoms - 1 = %lld",
                                    path, k, (long long)r, id, (long long)s->natoms - 1);
                break;
            }
            if (seen[id / 8] & (1u << (id % 8))) {
                st = halox_set_error(HALOX_ERR_IO,
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
                        st = halox_set_error(HALOX_ERR_IO,
                                             "the checkpoint '%s' has a bad atom: atom id %d has a "
                                             "non-finite %s (%c = %g)",
                                             path, id, kind[a], dim[d], v);
                        break;
                    }
                }
            if (st == HALOX_OK)
                st = md__ckpt_check_motion(path, s, id, arr[0], arr[1], k);
        }
        off += md__ckpt_block_bytes(bh[1], rs);
        atoms += bh[1];
    }
    free(seen);
    if (st == HALOX_OK && (atoms != s->natoms || off != payload_bytes))
        st = halox_set_error(HALOX_ERR_IO,
                             "the checkpoint '%s' is inconsistent: its rank blocks hold %lld atoms "
                             "in %zu bytes, its settings say natoms = %lld in %llu bytes",
                             path, atoms, off, (long long)s->natoms,
                             (unsigned long long)payload_bytes);
    return st;
}
