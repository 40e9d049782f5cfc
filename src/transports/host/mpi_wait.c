/* Bounded waiting on MPI requests: see mpi_wait.h. */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "transports/host/mpi_wait.h"

const char *halox__mpiw_errstr(int rc, char *buf)
{
    int len = 0;
    if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS)
        strcpy(buf, "unknown MPI error");
    return buf;
}

void halox__mpiw_backoff(int polls)
{
    if (polls < 1000) {
        sched_yield();
    } else {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

int halox__mpiw_abandon(MPI_Request *req, const halox__mpiw_info_t *info, int n)
{
    const double until = halox__now() + 0.1;
    int leaked = 0;
    for (int i = 0; i < n; i++) {
        if (req[i] == MPI_REQUEST_NULL)
            continue;
        if (info[i].kind == HALOX__MPIW_RECV) {
            MPI_Cancel(&req[i]);
            int done = 0;
            while (!done && halox__now() < until) {
                if (MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    break;
                if (!done)
                    sched_yield();
            }
            if (done)
                continue;
        }
        if (info[i].kind != HALOX__MPIW_COLLECTIVE)
            MPI_Request_free(&req[i]);
        req[i] = MPI_REQUEST_NULL;
        leaked = 1;
    }
    return leaked;
}

static halox_status_t halox__mpiw_timeout(halox_comm_t *comm, const char *who,
                                          const halox__mpiw_info_t *in, const char *op)
{
    double t = comm->timeout_s;
    const char *dir = in->kind == HALOX__MPIW_RECV ? "receive from" : "send to";
    if (in->kind == HALOX__MPIW_COLLECTIVE)
        return halox__error(HALOX_ERR_TIMEOUT,
                            "%s: rank %d timed out after %.3g s in the %s at step %lld: not "
                            "every rank joined it; check that all ranks make the same halox "
                            "calls in the same order and are alive (a crash or early exit "
                            "elsewhere looks like this), or raise HALOX_TIMEOUT_S if one is only "
                            "slow; this endpoint is unusable now (end the job: MPI_Abort)",
                            who, comm->rank, t, op, comm->step);
    if (in->pulse >= 0 && comm->plan)
        return halox__error(HALOX_ERR_TIMEOUT,
                            "%s: rank %d timed out after %.3g s in the %s at step %lld, pulse %d "
                            "(dim %c): the %s rank %d did not complete; check that rank %d "
                            "is alive and calls the same exchange for the same step, or raise "
                            "HALOX_TIMEOUT_S if it is only slow; this endpoint is unusable now "
                            "(end the job: MPI_Abort)",
                            who, comm->rank, t, op, comm->step, in->pulse,
                            "xyz"[comm->plan->pulse[in->pulse].dim], dir, in -> peer, in -> peer);
    return halox__error(HALOX_ERR_TIMEOUT,
                        "%s: rank %d timed out after %.3g s in the %s (step %lld): the %s "
                        "rank %d did not complete; check that rank %d is alive and makes the "
                        "same halox calls in the same order, or raise HALOX_TIMEOUT_S if it "
                        "is only slow; this endpoint is unusable now (end the job: MPI_Abort)",
                        who, comm->rank, t, op, comm->step, dir, in->peer, in->peer);
}

halox_status_t halox__mpiw_wait(halox_comm_t *comm, const char *who, MPI_Request *req,
                                const halox__mpiw_info_t *info, int count, int *index,
                                MPI_Status *status, const char *op, double deadline)
{
    int left = 0;
    for (int i = 0; i < count; i++)
        left += req[i] != MPI_REQUEST_NULL;
    for (int polls = 0; left > 0; polls++) {
        int done = 0;
        int rc = MPI_Testsome(count, req, &done, index, status);
        if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
            char es[MPI_MAX_ERROR_STRING];
            return halox__error(HALOX_ERR_COMM,
                                "%s: rank %d: MPI_Testsome failed in the %s at step %lld: %s", who,
                                comm->rank, op, comm->step, halox__mpiw_errstr(rc, es));
        }
        if (done == MPI_UNDEFINED)
            break;
        for (int j = 0; j < done; j++) {
            const halox__mpiw_info_t *in = &info[index[j]];
            const MPI_Status *s = &status[j]; /* statuses follow the index order */
            int err = rc == MPI_ERR_IN_STATUS ? s->MPI_ERROR : MPI_SUCCESS;
            if (err != MPI_SUCCESS) {
                char es[MPI_MAX_ERROR_STRING];
                return halox__error(
                    HALOX_ERR_COMM,
                    "%s: rank %d: %s rank %d (pulse %d) failed in the %s at step "
                    "%lld: %s",
                    who, comm->rank, in->kind == HALOX__MPIW_RECV ? "receive from" : "send to",
                    in->peer, in->pulse, op, comm->step, halox__mpiw_errstr(err, es));
            }
            if (in->kind == HALOX__MPIW_RECV) {
                int got = 0;
                MPI_Get_count(s, MPI_BYTE, &got);
                if ((size_t)got != in->bytes)
                    return halox__error(HALOX_ERR_COMM,
                                        "%s: rank %d: the %s at step %lld received %d bytes from "
                                        "rank %d in pulse %d but expected %zu: the ranks' plans "
                                        "disagree; every rank must bind a plan from the same build",
                                        who, comm->rank, op, comm->step, got, in->peer, in->pulse,
                                        in->bytes);
            }
        }
        left -= done;
        if (left <= 0)
            break;
        if (done == 0 && halox__now() > deadline) {
            const halox__mpiw_info_t *in = NULL;
            for (int i = 0; i < count && !in; i++)
                if (req[i] != MPI_REQUEST_NULL)
                    in = &info[i];
            return halox__mpiw_timeout(comm, who, in, op);
        }
        if (done == 0)
            halox__mpiw_backoff(polls);
    }
    return HALOX_OK;
}
