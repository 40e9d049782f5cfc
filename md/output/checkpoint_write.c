/* Writing checkpoints (md__checkpoint_write, for halox_md_write_checkpoint; the layout in
 * checkpoint.h): rank 0 gathers the blocks and replaces the file atomically (file.h: a
 * temporary file in the same directory, fsynced, renamed over the target through the
 * directory's descriptor, the directory fsynced): a crash at any point leaves either the old
 * checkpoint or the new one, never a torn file. A path that is not a regular file (a device, a
 * FIFO, a directory) is refused before anything is written, and checked again just before the
 * rename, which never replaces anything but a regular file; a symbolic link is followed (its
 * target is replaced, the link stays). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/file.h"
#include "halox/status.h"
#include "output/checkpoint.h"

static halox_status_t md__write_atomic(const char *path, const void *a, size_t na, const void *b,
                                       size_t nb)
{
    /* a device, a FIFO, a directory: refused before anything is written */
    halox_status_t st = halox_output_check(path, "the checkpoint");
    halox_replace_t *w = NULL;
    if (st == HALOX_OK)
        st = halox_replace_begin(path, "the checkpoint", HALOX_REPLACE_FOLLOW, &w);
    if (st != HALOX_OK)
        return st;
    halox_replace_write(w, a, na);
    halox_replace_write(w, b, nb);
    return halox_replace_commit(w);
}

halox_status_t md__checkpoint_write(halox_md_t *md, const char *path)
{
    const size_t rs = md__rs(md);
    const int n = md->atoms.n_home;
    const int P = md->nranks;
    size_t bb = md__ckpt_block_bytes(n, rs);
    char *blk = malloc(bb);
    halox_status_t st =
        blk ? HALOX_OK : halox_set_error(HALOX_ERR_NO_MEMORY, "checkpoint: no memory");
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
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "checkpoint: no memory for %zu bytes", total);
    }
    st = md__agree(md, st);
    size_t *counts = NULL;
    if (st == HALOX_OK && md->rank == 0) {
        counts = calloc((size_t)P, sizeof(size_t));
        if (!counts)
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "checkpoint: no memory");
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
            st = halox_set_error(HALOX_ERR_ATOM_COUNT,
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
