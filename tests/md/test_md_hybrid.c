/* The routes must not change a bit: the CPU engine on the threads transport gives the same
 * trajectory (every position and velocity, every thermo record, bit for bit) whether every pair
 * of ranks exchanges by direct stores or some pairs, declared in HALOX_HYBRID_UNREACHABLE, go
 * through the two-sided mailbox path (the CPU twin of the hybrid GPU transport). Runs of 60
 * steps with rebuilds, migration and NVT, float and double, on 2x2x2 (one pulse per dimension)
 * and 4x1x1 (two pulses in x, so forwarded atoms cross routes). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "test_md_common.h"

static void compare(halox_real_t real, const char *grid, const char *decl)
{
    halox_md_config_t cfg;
    md_test_config(&cfg, 6);
    cfg.steps = 60;
    cfg.rebuild_every = 10;
    cfg.thermo_every = 20;
    cfg.real = real;
    cfg.ensemble = HALOX_MD_NVT;
    cfg.tau = 0.05;
    halox_grid_parse(grid, &cfg.grid);
    halox_md_result_t direct, routed;
    unsetenv("HALOX_HYBRID_UNREACHABLE");
    if (md_test_run(&cfg, NULL, 1, &direct))
        return;
    setenv("HALOX_HYBRID_UNREACHABLE", decl, 1);
    int failed = md_test_run(&cfg, NULL, 1, &routed);
    unsetenv("HALOX_HYBRID_UNREACHABLE");
    if (failed) {
        halox_md_result_free(&direct);
        return;
    }
    long long diff = 0;
    CHECK(direct.natoms == routed.natoms && direct.n_thermo == routed.n_thermo);
    for (long long i = 0; i < 3 * direct.natoms && direct.natoms == routed.natoms; i++)
        diff += direct.x[i] != routed.x[i] || direct.v[i] != routed.v[i];
    for (int k = 0; k < direct.n_thermo && k < routed.n_thermo; k++)
        diff += memcmp(&direct.thermo[k], &routed.thermo[k], sizeof direct.thermo[k]) != 0;
    printf("%s grid %s, HALOX_HYBRID_UNREACHABLE=%s: %lld atoms, %d thermo records, %lld atoms "
           "migrated, %lld values differ from the run without\n",
           test_real_name(real), grid, decl, routed.natoms, routed.n_thermo,
           routed.summary.migrated, diff);
    CHECK_MSG(diff == 0, "%s %s: the routes changed %lld values", grid, decl, diff);
    CHECK(routed.summary.migrated > 0); /* the plans were rebuilt with atoms moved */
    halox_md_result_free(&direct);
    halox_md_result_free(&routed);
}

int main(void)
{
    compare(HALOX_FLOAT, "2x2x2", "0-1,2-6,node:4");
    compare(HALOX_DOUBLE, "2x2x2", "all");
    compare(HALOX_FLOAT, "4x1x1", "1-2");
    compare(HALOX_DOUBLE, "4x1x1", "node:2");
    TEST_DONE();
}
