/* halox_md_system_create: the initial system from its source (fcc lattice, system_fcc.c; random
 * non-overlapping placement, system_random.c; a file, read_file.c), then its velocities. Each is
 * built whole, in id order, identically on every process, so the start does not depend on the
 * decomposition. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/md_internal.h"
#include "halox/status.h"
#include "systems/system.h"

halox_status_t halox_md_system_create(const halox_md_config_t *cfg, halox_md_system_t **sys_p)
{
    if (!cfg || !sys_p)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "system: NULL argument");
    *sys_p = NULL;
    halox_status_t st = halox_md_config_check(cfg);
    if (st != HALOX_OK)
        return st;
    halox_md_system_t *sys = calloc(1, sizeof *sys);
    if (!sys)
        return halox_set_error(HALOX_ERR_NO_MEMORY, "no memory");
    switch (cfg->source) {
    case HALOX_MD_FCC:
        st = md__fcc(cfg, sys);
        break;
    case HALOX_MD_RANDOM:
        st = md__random(cfg, sys);
        break;
    case HALOX_MD_READ:
        st = md__read_file(cfg->read_path, cfg->read_frame, cfg->box, !cfg->read_new_velocities,
                           sys, &sys->read);
        if (st == HALOX_OK) {
            char what[160];
            snprintf(what, sizeof what, "the box of '%.120s'", cfg->read_path);
            st = md__box_check(cfg, sys->box.len, what);
        }
        break;
    }
    /* a file's velocities are the state it continues from: --temp draws them only where the
     * frame has none (or with --new-velocities) */
    if (st == HALOX_OK && !sys->velocities_from_file)
        st = md__velocities(sys, cfg->temp, cfg->seed);
    if (st != HALOX_OK) {
        halox_md_system_destroy(sys);
        return st;
    }
    *sys_p = sys;
    return HALOX_OK;
}

void halox_md_system_destroy(halox_md_system_t *sys)
{
    if (!sys)
        return;
    free(sys->x);
    free(sys->v);
    free(sys);
}
