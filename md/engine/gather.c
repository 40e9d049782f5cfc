/* The state of every rank on one (halox_md_gather): positions wrapped into the box, velocities
 * and forces by atom id, with a check that every id came exactly once. Below the writers that
 * use it (output.c: trajectory frames) and the engine. */
#include <stdlib.h>

#include "engine/backend.h"
#include "engine/md_internal.h"
#include "halox/status.h"

halox_status_t halox_md_gather(halox_md_t *md, double *x, double *v, double *f, int root)
{
    enum { W = 10 };
    halox_status_t gst = md__be_to_host(md, 1);
    if (gst != HALOX_OK)
        return gst;
    int n = md->atoms.n_home;
    long long N = md->natoms;
    double *send = malloc(sizeof(double) * W * (size_t)(n > 0 ? n : 1));
    double *recv = NULL;
    halox_status_t st = HALOX_OK;
    if (!send)
        st = halox_set_error(HALOX_ERR_NO_MEMORY, "gather: no memory");
    if (md->rank == root) {
        recv = malloc(sizeof(double) * W * (size_t)(N > 0 ? N : 1));
        if (!recv)
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "gather: no memory for %lld atoms", N);
    }
    st = md__agree(md, st);
    if (st != HALOX_OK) {
        free(send);
        free(recv);
        return st;
    }
    const int float_mode = md->atoms.real == HALOX_FLOAT;
    for (int i = 0; i < n; i++) {
        double *o = send + (size_t)W * i;
        o[0] = (double)md->atoms.id[i];
        for (int d = 0; d < 3; d++) {
            double w = halox_wrap(halox_atoms_get(&md->atoms, i, d), md->box.len[d]);
            if (float_mode) {
                w = (double)(float)w;
                if (w >= md->box.len[d])
                    w = 0.0;
            }
            o[1 + d] = w;
            size_t k = 3 * (size_t)i + d;
            o[4 + d] =
                float_mode ? (double)((float *)md->atoms.extra)[k] : ((double *)md->atoms.extra)[k];
            o[7 + d] =
                md->f ? (float_mode ? (double)((float *)md->f)[k] : ((double *)md->f)[k]) : 0.0;
        }
    }
    size_t *counts = md->rank == root ? calloc((size_t)md->nranks, sizeof(size_t)) : NULL;
    st = md__agree(md, md->rank == root && !counts
                           ? halox_set_error(HALOX_ERR_NO_MEMORY, "gather: no memory")
                           : HALOX_OK);
    if (st == HALOX_OK)
        st = halox_comm_gatherv(md->comm, send, sizeof(double) * W * (size_t)n, recv,
                                sizeof(double) * W * (size_t)(N > 0 ? N : 1), counts, root);
    free(send);
    if (st == HALOX_OK && md->rank == root) {
        size_t total = 0;
        for (int r = 0; r < md->nranks; r++)
            total += counts[r];
        long long got = (long long)(total / (sizeof(double) * W));
        unsigned char *seen = calloc((size_t)(N > 0 ? N : 1), 1);
        if (!seen)
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "gather: no memory");
        else if (got != N)
            st = halox_set_error(HALOX_ERR_ATOM_COUNT,
                                 "step %lld: the ranks hold %lld atoms, the system has %lld: atoms "
                                 "were lost or duplicated",
                                 md->step, got, N);
        for (long long k = 0; k < N && st == HALOX_OK; k++) {
            const double *o = recv + (size_t)W * k;
            long long id = (long long)o[0];
            if (id < 0 || id >= N || seen[id]) {
                st = halox_set_error(HALOX_ERR_ATOM_COUNT,
                                     "step %lld: atom id %lld is %s: atoms were lost or duplicated",
                                     md->step, id,
                                     id < 0 || id >= N ? "out of range" : "duplicated");
                break;
            }
            seen[id] = 1;
            for (int d = 0; d < 3; d++) {
                if (x)
                    x[3 * id + d] = o[1 + d];
                if (v)
                    v[3 * id + d] = o[4 + d];
                if (f)
                    f[3 * id + d] = o[7 + d];
            }
        }
        free(seen);
    }
    free(counts);
    free(recv);
    return md__agree(md, st);
}
