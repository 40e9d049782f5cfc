/* Internal: where a rank's atoms live during a migration, and the steps that touch them: host
 * arrays (migrate.c) or a GPU transport's device arrays (src/transports/gpu/migrate_device.c:
 * kernels). The driver, halox__migrate_drive (migrate.c), owns the counts, the agreements, the
 * all-to-all's blocks and the count check, so both move the same atoms to the same places.
 * Records are the atom's coordinates, its id, its extra bytes, then a row of each carried field
 * (halox_fixed_atoms_t.carry): halox__mig_cols lists them. */
#ifndef HALOX_CORE_MIGRATE_STORE_H
#define HALOX_CORE_MIGRATE_STORE_H

#include <stddef.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/fields.h"

/* The per-atom arrays of a record, in record order: column c holds b[c] bytes per atom at p[c]
 * (coordinates, ids, the extra bytes when there are any, each carried field). */
enum { HALOX__MIG_COLS = 3 + HALOX_MAX_FIELDS };
typedef struct halox__mig_cols {
    int n;
    char *p[HALOX__MIG_COLS];
    size_t b[HALOX__MIG_COLS];
} halox__mig_cols_t;

/* The columns of atoms of the endpoint's precision and stride (x, id, extra, extra_bytes from
 * `x`, `id`, `extra`; carry from `carry`, n_carry), and the record's bytes. */
size_t halox__mig_cols(halox__mig_cols_t *c, size_t xb, void *x, int32_t *id, void *extra,
                       size_t extra_bytes, const halox_field_t *carry, int n_carry);

typedef struct halox__mig_store_ops {
    /* Wrap every home atom into the box and find the leavers, in index order, with their
     * owners; scount[r] (P entries, zeroed) = leavers for rank r; *hops_p = halox__mig_hops of
     * their owners. HALOX_ERR_COORDINATE on a non-finite position. */
    halox_status_t (*scan)(void *ctx, const halox_grid_t *grid, const halox_box_t *box, int me,
                           long long step, long long *scount, int *nleave_p, int *hops_p);
    /* send and receive buffers for at least nsend and nrecv records (contents need not
     * survive a call that grows them) */
    halox_status_t (*reserve)(void *ctx, long long nsend, long long nrecv);
    /* leavers packed by destination (index order within one) at soff[r] bytes (fill: P zeroed
     * counters, bytes), stayers moved down in order; *keep_p = stayers */
    halox_status_t (*pack)(void *ctx, const size_t *soff, size_t *fill, int *keep_p);
    /* the all-to-all of the buffers (blocks as transport.h's alltoallv; most: the largest block
     * any rank sends, the same on every rank) */
    halox_status_t (*alltoallv)(void *ctx, halox_comm_t *comm, const size_t *sbytes,
                                const size_t *soffs, const size_t *rbytes, const size_t *roffs,
                                size_t most);
    /* room for `atoms` home atoms (not called where the store is fixed) */
    halox_status_t (*grow)(void *ctx, int atoms);
    /* the nrecv arrivals after the keep stayers, in buffer order; n_home = keep + nrecv */
    halox_status_t (*append)(void *ctx, int keep, int nrecv);
    /* no atom moved: the arrays as they are (n_total = n_home) */
    void (*still)(void *ctx);
    /* a store whose arrays cannot grow: the capacity this rank needs (when it was short) */
    void (*need)(void *ctx, long long atoms);
    void (*done)(void *ctx);
} halox__mig_store_ops_t;

typedef struct halox__mig_store {
    const halox__mig_store_ops_t *ops; /* its steps */
    void *ctx;
    int fixed;          /* the arrays cannot grow: a rank short of room stops every rank with
                           HALOX_ERR_NO_MEMORY before any atom moves */
    int n;              /* home atoms before */
    long long capacity; /* atoms the arrays hold */
    size_t rec;         /* bytes of one atom's record */
} halox__mig_store_t;

/* The most domains, in any dimension (periodic grid steps), that the n leavers going to ranks
 * to[] cross from rank me. */
int halox__mig_hops(const halox_grid_t *grid, int me, const int *to, int n);

/* Migrate over `store` (collective): halox_comm_migrate's steps, whatever holds the atoms.
 * *moved_p and *hops_p (may be NULL): this rank's leavers and halox__mig_hops of them. st0: a
 * failure before the drive (the store's opening; its ops may be NULL then), agreed in the
 * drive's first agreement instead of one of its own. */
halox_status_t halox__migrate_drive(halox_comm_t *comm, const halox_grid_t *grid,
                                    const halox_box_t *box, const halox__mig_store_t *store,
                                    long long expected_total, long long step, int *moved_p,
                                    int *hops_p, halox_status_t st0);

#endif
