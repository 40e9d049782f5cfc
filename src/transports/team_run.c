/* halox_team_run: the ranks of a team as threads of this process, started, joined and judged in
 * one place (the MD driver, halox-check and halox-bench each had their own copy). */
#include <pthread.h>
#include <stdlib.h>

#include "core/error.h"
#include "halox/topology.h"

typedef struct team_thread {
    halox_team_t *team;
    halox_team_fn fn;
    void *arg;
    int rank;
    halox_status_t st;
} team_thread_t;

static void *halox__team_thread(void *vp)
{
    team_thread_t *t = vp;
    t->st = t->fn(t->rank, t->team, t->arg);
    /* a rank that fails releases the others from their waits (no hang) */
    if (t->st != HALOX_OK)
        halox_team_abort(t->team, t->rank, halox_status_string(t->st));
    return NULL;
}

halox_status_t halox_team_run(halox_team_t *team, int nranks, halox_team_fn fn, void *arg,
                              halox_status_t *status, int *started_p)
{
    if (started_p)
        *started_p = 0;
    if (!team || !fn || nranks < 1)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "halox_team_run: give a team, a function and at least one rank (%d)",
                            nranks);
    team_thread_t *t = calloc((size_t)nranks, sizeof *t);
    pthread_t *th = calloc((size_t)nranks, sizeof *th);
    if (!t || !th) {
        free(t);
        free(th);
        halox_team_abort(team, 0, "no memory for the threads");
        return halox__error(HALOX_ERR_NO_MEMORY, "no memory for %d threads", nranks);
    }
    halox_status_t st = HALOX_OK;
    int started = 0;
    for (int r = 0; r < nranks; r++) {
        t[r] = (team_thread_t){.team = team, .fn = fn, .arg = arg, .rank = r, .st = HALOX_OK};
        if (pthread_create(&th[r], NULL, halox__team_thread, &t[r]) != 0) {
            /* the started ranks would wait for this one: abort them */
            halox_team_abort(team, r, "thread start failed");
            st = halox__error(HALOX_ERR_INTERNAL,
                              "could not start the thread of rank %d of %d: fewer ranks, or "
                              "raise the limit on threads",
                              r, nranks);
            break;
        }
        started++;
    }
    for (int r = 0; r < started; r++)
        pthread_join(th[r], NULL);
    if (started_p)
        *started_p = started;
    for (int r = 0; status && r < nranks; r++)
        status[r] = r < started ? t[r].st : HALOX_ERR_ABORTED;
    /* the first rank that failed on its own (not because another one did) explains it */
    for (int r = 0; r < started && st == HALOX_OK; r++)
        if (t[r].st != HALOX_OK && t[r].st != HALOX_ERR_ABORTED)
            st = t[r].st;
    for (int r = 0; r < started && st == HALOX_OK; r++)
        st = t[r].st;
    free(t);
    free(th);
    return st;
}
