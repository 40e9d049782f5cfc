/* A bound plan's pulses checked, and what each map waits for (core/plan/pulse_deps.c), which the
 * host transports' pulse loop (src/transports/host/pulse_host.c) runs on: on the planner's plans of
 * several grids (1 to 4 pulses per dimension, self pulses in one-rank dimensions) the derived
 * home prefixes and dependency masks equal the plan's own fields and the forward masks mirror
 * them; plans corrupted in each checked way are refused with a message naming what is wrong,
 * before anything indexes past a pulse array. */
#include <stdio.h>
#include <string.h>

#include "check/checksys.h"
#include "core/plan/pulse_deps.h"
#include "halox/plan.h"
#include "harness.h"

typedef struct {
    int g[3];
    double L[3], rc, buf;
    int n;
    chk_dist_t dist;
} grid_case_t;

static void check_valid(const halox_plan_t *plan, int *selfs)
{
    halox__pulse_deps_t d;
    memset(&d, 0xff, sizeof d); /* entries past n_pulses must come back zero */
    halox_status_t st = halox__pulse_deps(plan, "test", &d);
    CHECK_MSG(st == HALOX_OK, "rank %d: %s", plan->rank, halox_last_error());
    if (st != HALOX_OK)
        return;
    for (int k = 0; k < plan->n_pulses; k++) {
        const halox_pulse_t *p = &plan->pulse[k];
        CHECK_MSG(d.home_prefix[k] == p->dep_offset, "rank %d pulse %d: home prefix %d, plan %d",
                  plan->rank, k, d.home_prefix[k], p->dep_offset);
        CHECK_MSG(d.needs[k] == p->dep_mask, "rank %d pulse %d: needs 0x%x, plan 0x%x", plan->rank,
                  k, (unsigned)d.needs[k], (unsigned)p->dep_mask);
        /* bit j of fwd[k]: the later pulse j forwards atoms that pulse k delivered */
        for (int j = 0; j < HALOX_MAX_PULSES; j++) {
            unsigned fwd = j > k && j < plan->n_pulses && (plan->pulse[j].dep_mask >> k & 1u);
            CHECK_MSG((d.fwd[k] >> j & 1u) == fwd, "rank %d: fwd[%d] bit %d is %u", plan->rank, k,
                      j, (unsigned)(d.fwd[k] >> j & 1u));
        }
        const int self = p->send_rank == plan->rank && p->recv_rank == plan->rank;
        CHECK(halox__pulse_self(plan, k) == self);
        *selfs += self;
    }
    for (int k = plan->n_pulses; k < HALOX_MAX_PULSES; k++)
        CHECK_MSG(d.home_prefix[k] == 0 && d.needs[k] == 0 && d.fwd[k] == 0,
                  "rank %d: entry %d past the plan's %d pulses is not zero", plan->rank, k,
                  plan->n_pulses);
}

/* The plan refused with `st`, a message naming `says` (and the name given). */
static void refused(const halox_plan_t *plan, halox_status_t want, const char *says,
                    const char *what)
{
    halox__pulse_deps_t d;
    halox_status_t st = halox__pulse_deps(plan, "tname", &d);
    const char *e = halox_last_error();
    CHECK_MSG(st == want, "%s: status %d, expected %d", what, (int)st, (int)want);
    CHECK_MSG(strstr(e, "tname") && strstr(e, says), "%s: message lacks '%s': %s", what, says, e);
    printf("  %s: %s\n", what, e);
}

/* Each corruption on a copy of the pulse fields, restored afterwards. */
static void check_corrupt(halox_plan_t *plan)
{
    const halox_plan_t keep = *plan;
    int k = plan->n_pulses - 1;
    /* a map entry fed by a later pulse: the last pulse's range read by pulse 0 */
    int k0 = 0;
    while (k0 < plan->n_pulses && plan->pulse[k0].send_count == 0)
        k0++;
    CHECK_MSG(plan->n_pulses >= 2 && k0 < plan->n_pulses, "the plan has %d pulses", plan->n_pulses);
    if (plan->n_pulses < 2 || k0 == plan->n_pulses)
        return;

    char says[64];
    snprintf(says, sizeof says, "%d pulses (at most %d)", HALOX_MAX_PULSES + 1, HALOX_MAX_PULSES);
    plan->n_pulses = HALOX_MAX_PULSES + 1;
    refused(plan, HALOX_ERR_INVALID_ARG, says, "too many pulses");
    *plan = keep;
    plan->n_pulses = -1;
    refused(plan, HALOX_ERR_INVALID_ARG, "-1 pulses", "negative pulses");
    *plan = keep;

    plan->pulse[k].send_rank = plan->nranks;
    refused(plan, HALOX_ERR_INVALID_ARG, "names ranks", "send rank outside the grid");
    *plan = keep;
    plan->pulse[k].recv_rank = -1;
    refused(plan, HALOX_ERR_INVALID_ARG, "names ranks", "receive rank -1");
    *plan = keep;

    plan->pulse[k].dim = 3;
    refused(plan, HALOX_ERR_INVALID_ARG, "dimension 3", "dimension 3");
    *plan = keep;
    plan->pulse[k].recv_count = -1;
    refused(plan, HALOX_ERR_INVALID_ARG, "negative counts", "negative receive count");
    *plan = keep;

    plan->pulse[1].recv_offset = plan->pulse[0].recv_offset; /* overlaps pulse 0's range */
    if (plan->pulse[0].recv_count > 0)
        refused(plan, HALOX_ERR_INTERNAL, "overlaps an earlier pulse's range",
                "overlapping ranges");
    *plan = keep;
    plan->pulse[k].recv_count = plan->n_total - plan->pulse[k].recv_offset + 1; /* leaves it */
    refused(plan, HALOX_ERR_INTERNAL, "leaves the halo", "range past n_total");
    *plan = keep;

    int *map = plan->pulse[k0].send_index;
    int was = map[0];
    map[0] = plan->n_total;
    refused(plan, HALOX_ERR_INVALID_ARG, "outside 0..", "map entry past n_total");
    map[0] = -1;
    refused(plan, HALOX_ERR_INVALID_ARG, "outside 0..", "negative map entry");
    /* an atom of the last pulse's range, sent in pulse k0 <= it */
    int kl = plan->n_pulses - 1;
    while (kl > k0 && plan->pulse[kl].recv_count == 0)
        kl--;
    if (kl >= k0 && plan->pulse[kl].recv_count > 0) {
        map[0] = plan->pulse[kl].recv_offset;
        refused(plan, HALOX_ERR_INTERNAL, "which no earlier pulse received", "map fed later");
    }
    map[0] = was;
    *plan = keep;
    CHECK_OK(halox__pulse_deps(plan, "test", &(halox__pulse_deps_t){0}));
}

int main(void)
{
    const grid_case_t cases[] = {
        {{1, 1, 1}, {10, 10, 10}, 2.5, 0.3, 800, CHK_UNIFORM},  /* self pulses only */
        {{2, 1, 1}, {8, 8, 8}, 2.9, 1.2, 1500, CHK_UNIFORM},    /* self pulses in y, z */
        {{4, 3, 2}, {12, 9, 8}, 3.5, 0.4, 3000, CHK_CLUSTERED}, /* 2 pulses */
        {{3, 3, 3}, {9, 9, 9}, 4.4, 2.0, 2000, CHK_UNIFORM},    /* 3 pulses per dimension */
        {{6, 1, 1}, {12, 9, 9}, 4.0, 0.5, 2000, CHK_SLAB},      /* 3 pulses, empty domains */
        {{8, 1, 1}, {16, 14, 14}, 6.5, 0.5, 1500, CHK_UNIFORM}, /* 4 pulses */
    };
    int corrupted = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const grid_case_t *tc = &cases[c];
        halox_plan_params_t prm = {{{tc->g[0], tc->g[1], tc->g[2]}},
                                   {{tc->L[0], tc->L[1], tc->L[2]}},
                                   tc->rc,
                                   tc->buf,
                                   0,
                                   0};
        chk_world_t w;
        CHECK_OK(chk_world_make(&w, &prm, tc->n, tc->dist, 7 + c, HALOX_FLOAT, 3));
        halox_status_t st = halox_reference_build(&prm, w.atoms, w.plans);
        CHECK_MSG(st == HALOX_OK, "grid %dx%dx%d: %s", tc->g[0], tc->g[1], tc->g[2],
                  halox_last_error());
        int most = 0, selfs = 0;
        for (int r = 0; r < w.P && st == HALOX_OK; r++) {
            check_valid(&w.plans[r], &selfs);
            most = w.plans[r].n_pulses > most ? w.plans[r].n_pulses : most;
        }
        printf("grid %dx%dx%d: %d ranks, up to %d pulses, %d self pulses: derived masks match "
               "the plans\n",
               tc->g[0], tc->g[1], tc->g[2], w.P, most, selfs);
        /* a dimension with one rank imports its own atoms: self pulses */
        CHECK(selfs > 0 || (tc->g[0] > 1 && tc->g[1] > 1 && tc->g[2] > 1));
        /* the corruptions on one rank's plan of a multi-pulse grid with atoms in every map */
        if (st == HALOX_OK && !corrupted && tc->dist == CHK_UNIFORM && most >= 6) {
            check_corrupt(&w.plans[0]);
            corrupted = 1;
        }
        chk_world_free(&w);
    }
    CHECK_MSG(corrupted, "no grid was corrupted");
    TEST_DONE();
}
