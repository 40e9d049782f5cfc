/* What every part of the engine shares: agreement on failure across the ranks, notices to the
 * caller's hook (rank 0), the force array. The bottom of the engine's files: it calls only the
 * communicator, so any file may call it (md_internal.h lists the layers). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/md_internal.h"
#include "halox/status.h"

void md__notice(halox_md_t *md, const char *fmt, ...)
{
    if (md->rank != 0 || !md->hooks.notice)
        return;
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    md->hooks.notice(md->hooks.user, text);
}

/* Agree on failure: every rank returns an error when any rank failed (its own when it failed;
 * otherwise HALOX_ERR_ABORTED naming the rank that failed), so no rank walks alone into a
 * collective. */
halox_status_t md__agree(halox_md_t *md, halox_status_t st)
{
    int P = md->nranks;
    int mine = (int)st;
    int small[64];
    int *all = P <= 64 ? small : malloc(sizeof(int) * (size_t)P);
    if (!all)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory");
    halox_status_t cst = halox_comm_allgather(md->comm, &mine, all, sizeof mine);
    int bad = -1;
    if (cst == HALOX_OK)
        for (int r = 0; r < P; r++)
            if (all[r] != HALOX_OK) {
                bad = r;
                break;
            }
    halox_status_t other = bad >= 0 ? (halox_status_t)all[bad] : HALOX_OK;
    if (all != small)
        free(all);
    if (st != HALOX_OK)
        return st;
    if (cst != HALOX_OK)
        return cst;
    if (bad >= 0)
        return halox_set_error(HALOX_ERR_ABORTED, "rank %d stopped because rank %d failed (%s)",
                               md->rank, bad, halox_status_string(other));
    return HALOX_OK;
}

halox_status_t md__ensure_forces(halox_md_t *md, int n)
{
    if (n <= md->f_cap && md->f)
        return HALOX_OK;
    int cap = md->f_cap > 0 ? md->f_cap : 1024;
    while (cap < n)
        cap = cap > 0x3fffffff ? 0x7fffffff : 2 * cap;
    void *q = realloc(md->f, md__rs(md) * 3 * (size_t)cap);
    if (!q)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for %d forces", cap);
    md->f = q;
    md->f_cap = cap;
    return HALOX_OK;
}
