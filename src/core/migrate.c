/* Atom migration: home atoms that left the domain go straight to their owner (one all-to-all,
 * so atoms that crossed several domains between rebuilds are handled too), then the global
 * count is checked. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/transport.h"
#include "core/util.h"
#include "halox/comm.h"

/* Wrap component c of atom i into [0, len) in the atoms' own precision. */
static void halox__wrap_store(halox_atoms_t *a, int i, int c, double len)
{
    double w = halox_wrap(halox_atoms_get(a, i, c), len);
    halox_atoms_set(a, i, c, w);
    /* rounding to float can land on len itself */
    if (halox_atoms_get(a, i, c) >= len)
        halox_atoms_set(a, i, c, 0.0);
}

halox_status_t halox_comm_migrate(halox_comm_t *comm, const halox_grid_t *grid,
                                  const halox_box_t *box, halox_atoms_t *atoms,
                                  long long expected_total, long long step)
{
    const int P = comm->size;
    const int me = comm->rank;
    halox_status_t st = HALOX_OK;
    if (halox_grid_check(grid) != HALOX_OK || halox_box_check(box) != HALOX_OK)
        st = HALOX_ERR_INVALID_ARG;
    else if (halox_grid_size(grid) != P)
        st = halox__error(HALOX_ERR_INVALID_ARG, "migrate: grid has %d ranks, transport runs %d",
                          halox_grid_size(grid), P);

    int n = atoms->n_home;
    int *dest = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    size_t *blk = calloc((size_t)P * 6, sizeof(size_t));
    if (!dest || !blk)
        st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    size_t rec = halox__atom_bytes(atoms->real, atoms->stride, 1) + sizeof(int32_t) +
                 atoms->extra_bytes;
    for (int i = 0; i < n && st == HALOX_OK; i++) {
        double x[3];
        for (int c = 0; c < 3; c++) {
            double v = halox_atoms_get(atoms, i, c);
            if (!isfinite(v)) {
                st = halox__error(HALOX_ERR_COORDINATE,
                                  "step %lld, rank %d: atom id %d has a non-finite position: "
                                  "the system blew up (time step too large, overlapping atoms?)",
                                  step, me, atoms->id ? atoms->id[i] : -1);
                break;
            }
            halox__wrap_store(atoms, i, c, box->len[c]);
            x[c] = halox_atoms_get(atoms, i, c);
        }
        if (st == HALOX_OK)
            dest[i] = halox_owner_rank(grid, box, x);
    }
    st = halox__agree(comm, st, "migration");
    if (st != HALOX_OK)
        goto out;

    /* counts per destination, then everybody's counts (P x P) */
    size_t *scount = blk, *soff = blk + P, *sbytes = blk + 2 * P;
    size_t *rbytes = blk + 3 * P, *roff = blk + 4 * P;
    for (int i = 0; i < n; i++)
        if (dest[i] != me)
            scount[dest[i]]++;
    size_t *matrix = malloc(sizeof(size_t) * (size_t)P * (size_t)P);
    if (!matrix) {
        st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
        goto out;
    }
    st = comm->ops->allgather(comm, scount, matrix, sizeof(size_t) * (size_t)P);
    if (st != HALOX_OK) {
        free(matrix);
        goto out;
    }
    size_t stotal = 0, rtotal = 0;
    for (int r = 0; r < P; r++) {
        soff[r] = stotal;
        sbytes[r] = scount[r] * rec;
        stotal += sbytes[r];
        rbytes[r] = matrix[(size_t)r * P + me] * rec;
        roff[r] = rtotal;
        rtotal += rbytes[r];
    }
    free(matrix);
    char *sbuf = malloc(stotal ? stotal : 1);
    char *rbuf = malloc(rtotal ? rtotal : 1);
    size_t *fill = calloc((size_t)P, sizeof(size_t));
    size_t xb = halox__atom_bytes(atoms->real, atoms->stride, 1);
    if (!sbuf || !rbuf || !fill)
        st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
    else {
        /* pack leavers, compact stayers in their original order */
        int keep = 0;
        for (int i = 0; i < n; i++) {
            char *src_x = (char *)atoms->x + (size_t)i * xb;
            char *src_e = atoms->extra_bytes ? (char *)atoms->extra + (size_t)i * atoms->extra_bytes
                                             : NULL;
            if (dest[i] == me) {
                if (keep != i) {
                    memmove((char *)atoms->x + (size_t)keep * xb, src_x, xb);
                    atoms->id[keep] = atoms->id[i];
                    if (src_e)
                        memmove((char *)atoms->extra + (size_t)keep * atoms->extra_bytes, src_e,
                                atoms->extra_bytes);
                }
                keep++;
            } else {
                char *o = sbuf + soff[dest[i]] + fill[dest[i]];
                memcpy(o, src_x, xb);
                memcpy(o + xb, &atoms->id[i], sizeof(int32_t));
                if (src_e)
                    memcpy(o + xb + sizeof(int32_t), src_e, atoms->extra_bytes);
                fill[dest[i]] += rec;
            }
        }
        int nrecv = (int)(rtotal / rec);
        st = halox_atoms_reserve(atoms, keep + nrecv > 0 ? keep + nrecv : 1);
        st = halox__agree(comm, st, "migration");
        if (st == HALOX_OK)
            st = comm->ops->alltoallv(comm, sbuf, sbytes, soff, rbuf, rbytes, roff);
        if (st == HALOX_OK) {
            /* received atoms in source-rank order: deterministic for every transport */
            for (int j = 0; j < nrecv; j++) {
                const char *o = rbuf + (size_t)j * rec;
                int i = keep + j;
                memcpy((char *)atoms->x + (size_t)i * xb, o, xb);
                memcpy(&atoms->id[i], o + xb, sizeof(int32_t));
                if (atoms->extra_bytes)
                    memcpy((char *)atoms->extra + (size_t)i * atoms->extra_bytes,
                           o + xb + sizeof(int32_t), atoms->extra_bytes);
            }
            atoms->n_home = keep + nrecv;
            atoms->n_total = atoms->n_home;
        }
    }
    free(sbuf);
    free(rbuf);
    free(fill);
    if (st != HALOX_OK)
        goto out;

    /* the global count must not change; name the ranks if it does */
    long long mine[2] = {n, atoms->n_home};
    long long *all = malloc(sizeof(long long) * 2 * (size_t)P);
    if (!all) {
        st = halox__error(HALOX_ERR_NO_MEMORY, "migrate: no memory");
        goto out;
    }
    st = comm->ops->allgather(comm, mine, all, sizeof mine);
    if (st == HALOX_OK) {
        long long before = 0, after = 0;
        for (int r = 0; r < P; r++) {
            before += all[2 * r];
            after += all[2 * r + 1];
        }
        if (after != expected_total || before != expected_total) {
            char list[512];
            size_t len = 0;
            list[0] = '\0';
            for (int r = 0; r < P && len < sizeof list - 64; r++)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%d: %lld->%lld",
                                        r ? ", " : "", r, all[2 * r], all[2 * r + 1]);
            st = halox__error(HALOX_ERR_ATOM_COUNT,
                              "step %lld: the system should hold %lld atoms but holds %lld "
                              "before migration and %lld after (per rank, before->after: %s); "
                              "atoms were lost or duplicated: report this with the command line",
                              step, expected_total, before, after, list);
        }
    }
    free(all);
out:
    free(dest);
    free(blk);
    return st;
}
