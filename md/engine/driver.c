/* Whole runs: on one rank of any transport (the tool calls it under MPI), and on a team of
 * threads, one per rank of the grid, on the `threads` transport. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/status.h"

void halox_md_result_free(halox_md_result_t *result)
{
    if (!result)
        return;
    free(result->thermo);
    free(result->x);
    free(result->v);
    result->thermo = NULL;
    result->x = result->v = NULL;
    result->n_thermo = 0;
}

int halox_md_result_mean_temp(const halox_md_result_t *result, double *mean_p)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < result->n_thermo; i++)
        if (result->thermo[i].step > result->summary.first_step) {
            sum += result->thermo[i].temp;
            n++;
        }
    *mean_p = n > 0 ? sum / n : 0.0;
    return n;
}

/* Agreement before an engine exists: every rank learns whether any failed. */
static halox_status_t md__agree_comm(halox_comm_t *comm, halox_status_t st)
{
    double v = st != HALOX_OK ? 1.0 : 0.0;
    halox_status_t cst = halox_comm_allreduce_max(comm, &v, 1);
    if (st != HALOX_OK)
        return st;
    if (cst != HALOX_OK)
        return cst;
    if (v > 0)
        return halox_set_error(HALOX_ERR_ABORTED, "rank %d stopped because another rank failed",
                               halox_comm_rank(comm));
    return HALOX_OK;
}

halox_status_t halox_md_rank_run(const halox_md_config_t *cfg, halox_comm_t *comm,
                                 const halox_md_system_t *sys, const halox_md_hooks_t *hooks,
                                 halox_md_result_t *result)
{
    int want_state = result ? result->want_state : 0;
    if (result) {
        memset(result, 0, sizeof *result);
        result->want_state = want_state;
    }
    halox_md_system_t *own = NULL;
    halox_md_t *md = NULL;
    halox_status_t st = HALOX_OK;
    int rank = halox_comm_rank(comm);
    if (!sys && !cfg->restart_path)
        st = halox_md_system_create(cfg, &own);
    st = md__agree_comm(comm, st);
    if (st == HALOX_OK)
        st = halox_md_create(cfg, comm, sys ? sys : own, hooks, &md);
    halox_md_system_destroy(own);
    if (st == HALOX_OK)
        st = halox_md_run(md);
    if (st == HALOX_OK && result) {
        halox_md_summary(md, &result->summary);
        result->natoms = md->natoms;
        if (rank == 0) {
            int n;
            const halox_md_thermo_t *r = halox_md_thermo_records(md, &n);
            result->thermo = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
            /* a restart with no step left has no records (r is NULL) */
            if (result->thermo && n > 0)
                memcpy(result->thermo, r, sizeof *r * (size_t)n);
            if (result->thermo)
                result->n_thermo = n;
        }
        if (want_state) {
            if (rank == 0) {
                result->x = malloc(sizeof(double) * 3 * (size_t)md->natoms);
                result->v = malloc(sizeof(double) * 3 * (size_t)md->natoms);
            }
            halox_status_t ast =
                rank == 0 && (!result->x || !result->v)
                    ? halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for the final state")
                    : HALOX_OK;
            st = md__agree(md, ast);
            if (st == HALOX_OK)
                st = halox_md_gather(md, result->x, result->v, NULL, 0);
        }
    }
    if (result) {
        result->status = st;
        if (st != HALOX_OK)
            snprintf(result->error, sizeof result->error, "rank %d: %s", rank,
                     halox_last_error()[0] ? halox_last_error() : halox_status_string(st));
    }
    halox_md_destroy(md);
    return st;
}

typedef struct md_thread_arg {
    const halox_md_config_t *cfg;
    const halox_md_hooks_t *hooks;
    const halox_md_system_t *sys;
    halox_team_t *team;
    int rank;
    int want_state;
    halox_md_result_t result;
} md_thread_arg_t;

/* One rank of halox_md_threads_run (halox_team_run aborts the team when it fails). */
static halox_status_t md__thread_main(int rank, halox_team_t *team, void *vp)
{
    md_thread_arg_t *ta = (md_thread_arg_t *)vp + rank;
    (void)team;
    halox_comm_args_t args = {.real = ta->cfg->real,
                              .stride = 3,
                              .timeout_s = ta->cfg->timeout_s,
                              .team = ta->team,
                              .rank = ta->rank};
    halox_comm_t *comm = NULL;
    ta->result.want_state = ta->want_state;
    halox_status_t st = halox_comm_create("threads", &args, &comm);
    if (st == HALOX_OK) {
        st = halox_md_rank_run(ta->cfg, comm, ta->sys, ta->hooks, &ta->result);
    } else {
        ta->result.status = st;
        snprintf(ta->result.error, sizeof ta->result.error, "rank %d: %s", ta->rank,
                 halox_last_error());
    }
    if (st != HALOX_OK) /* the message of the failure, before halox_team_run's own abort */
        halox_team_abort(ta->team, ta->rank, ta->result.error);
    halox_comm_destroy(comm);
    return st;
}

halox_status_t halox_md_threads_run(const halox_md_config_t *cfg, const halox_md_hooks_t *hooks,
                                    halox_md_result_t *result)
{
    int want_state = result ? result->want_state : 0;
    halox_md_result_t local;
    if (!result)
        result = &local;
    memset(result, 0, sizeof *result);
    result->want_state = want_state;
    halox_status_t st = halox_md_config_check(cfg);
    halox_transport_caps_t caps;
    if (st == HALOX_OK &&
        (halox_transport_caps(cfg->transport, &caps) != HALOX_OK || !caps.threads))
        st = halox_set_error(HALOX_ERR_INVALID_ARG,
                             "halox_md_threads_run runs a transport whose ranks are threads "
                             "(threads), not '%s'",
                             cfg->transport);
    halox_md_system_t *sys = NULL;
    if (st == HALOX_OK && !cfg->restart_path)
        st = halox_md_system_create(cfg, &sys); /* once, shared read-only by the ranks */
    halox_team_t *team = NULL;
    int P = halox_grid_size(&cfg->grid);
    if (st == HALOX_OK)
        st = halox_team_create(P, cfg->timeout_s, &team);
    md_thread_arg_t *ta = NULL;
    if (st == HALOX_OK) {
        ta = calloc((size_t)P, sizeof *ta);
        if (!ta)
            st = halox_set_error(HALOX_ERR_NO_MEMORY, "no memory for %d threads", P);
    }
    int started = 0;
    if (st == HALOX_OK) {
        for (int r = 0; r < P; r++)
            /* every rank gathers when rank 0 does: the gather is collective */
            ta[r] = (md_thread_arg_t){.cfg = cfg,
                                      .hooks = hooks,
                                      .sys = sys,
                                      .team = team,
                                      .rank = r,
                                      .want_state = want_state};
        /* the ranks' own results explain a failure (below); only a thread that could not
         * start is reported from here */
        halox_status_t rst = halox_team_run(team, P, md__thread_main, ta, NULL, &started);
        if (started < P)
            st = rst;
    }
    if (st == HALOX_OK && started == P) {
        /* the first rank that failed on its own (not because another one did) explains it */
        int cause = -1;
        for (int r = 0; r < P && cause < 0; r++)
            if (ta[r].result.status != HALOX_OK && ta[r].result.status != HALOX_ERR_ABORTED)
                cause = r;
        for (int r = 0; r < P && cause < 0; r++)
            if (ta[r].result.status != HALOX_OK)
                cause = r;
        halox_status_t cause_st = cause >= 0 ? ta[cause].result.status : HALOX_OK;
        char cause_msg[sizeof result->error];
        snprintf(cause_msg, sizeof cause_msg, "%s", cause >= 0 ? ta[cause].result.error : "");
        *result = ta[0].result;
        memset(&ta[0].result, 0, sizeof ta[0].result);
        if (cause >= 0) {
            result->status = cause_st;
            snprintf(result->error, sizeof result->error, "%s", cause_msg);
            st = cause_st;
        }
    } else if (st != HALOX_OK) {
        result->status = st;
        snprintf(result->error, sizeof result->error, "%s", halox_last_error());
    }
    if (ta)
        for (int r = 0; r < P; r++)
            halox_md_result_free(&ta[r].result);
    free(ta);
    halox_team_destroy(team);
    halox_md_system_destroy(sys);
    if (result == &local)
        halox_md_result_free(&local);
    return st;
}
