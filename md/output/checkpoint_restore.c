/* Restarts (md__checkpoint_load): the trajectory's settings and each rank's home atoms from a
 * checkpoint read and checked by checkpoint_read.c. On the grid that wrote it every rank takes
 * its own block, in its exact order (the continuation is bit-identical); on another grid each
 * rank takes the atoms whose positions it owns. */
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/status.h"
#include "output/checkpoint.h"

/* Copy n atoms of a block (starting at atom k0 of it) to the end of the home atoms. */
static halox_status_t md__append_atoms(halox_md_t *md, const char *blk, long long nb, size_t rs,
                                       const long long *pick, long long npick)
{
    halox_atoms_t *a = &md->atoms;
    int n0 = a->n_home;
    long long need = n0 + npick;
    if (need > HALOX_ATOMS_MAX)
        return halox_set_error(HALOX_ERR_NO_MEMORY,
                               "the checkpoint puts %lld atoms on one rank, above the %d a rank "
                               "holds: restart on more ranks (a finer --grid)",
                               need, HALOX_ATOMS_MAX);
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
    md_ckpt_settings_t s;
    halox_status_t st = md__ckpt_read(path, &h, &s, &payload);
    if (st != HALOX_OK)
        return st;
    size_t rs = md__rs(md);
    if ((size_t)s.real_size != rs) {
        st = halox_set_error(HALOX_ERR_INVALID_ARG,
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
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "no memory");
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
