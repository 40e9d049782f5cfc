/* Ranks: MPI processes (one rank each) or threads of one process on the `threads` transport,
 * behind one call, so that every benchmark is written once for both. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#ifdef HALOX_HAVE_MPI
#include <mpi.h>
#endif

#include "bench.h"
#include "tool_agree.h"
#include "tool_launch.h"

static int g_mpi_started;
/* MPI ranks: this rank's failure in the current case, said at the case's end when it is the
 * cause (bench_mpi_case_end) */
static char g_fail_line[1400];

/* as every tool reads the launcher (tools/tool_launch.h) */
int bench_launched_processes(void) { return tool_launched_processes(); }

int bench_mpi_start(int *argc, char ***argv, int need)
{
#ifdef HALOX_HAVE_MPI
    /* under a launcher always: every process must take part in the job */
    if (need || bench_launched_processes() > 0) {
        /* NVLink multicast stays off (it can take shared GPUs out of service), unless set */
        setenv("NCCL_NVLS_ENABLE", "0", 0);
        MPI_Init(argc, argv);
        g_mpi_started = 1;
        /* first: every later step depends on the ranks having the same inputs */
        if (tool_agree_inputs()) {
            bench_mpi_stop();
            return BENCH_USAGE;
        }
    }
#else
    (void)argc;
    (void)argv;
    (void)need;
#endif
    return 0;
}

void bench_mpi_stop(void)
{
#ifdef HALOX_HAVE_MPI
    if (g_mpi_started)
        MPI_Finalize();
#endif
    g_mpi_started = 0;
}

int bench_mpi_started(void) { return g_mpi_started; }

/* The world's size (or this process's rank): 1 (0) until MPI is started. */
static int bench_world(int size)
{
    int v = size ? 1 : 0;
#ifdef HALOX_HAVE_MPI
    if (g_mpi_started) {
        if (size)
            MPI_Comm_size(MPI_COMM_WORLD, &v);
        else
            MPI_Comm_rank(MPI_COMM_WORLD, &v);
    }
#endif
    return v;
}

int bench_world_size(void) { return bench_world(1); }
int bench_world_rank(void) { return bench_world(0); }

halox_status_t bench_comm_create(const bench_rank_t *who, const char *transport, halox_real_t real,
                                 int stride, double timeout_s, halox_comm_t **comm_p)
{
    char base[64];
    bench_base_name(transport, base, sizeof base);
    /* GPU transports: device = local rank modulo the visible devices */
    halox_comm_args_t args = {.real = real,
                              .stride = stride,
                              .timeout_s = timeout_s,
                              .team = who->team,
                              .rank = who->rank,
                              .device = -1};
    return halox_comm_create(base, &args, comm_p);
}

void bench_rank_fail(const bench_rank_t *who, const char *what)
{
    if (who->team) {
        fprintf(stderr, "halox-bench: rank %d: %s\n", who->rank, what);
        fflush(stderr);
        halox_team_abort(who->team, who->rank, what);
        return;
    }
    snprintf(g_fail_line, sizeof g_fail_line, "halox-bench: rank %d: %s", who->rank, what);
}

halox_status_t bench_mpi_case_end(halox_status_t st, double timeout_s)
{
#ifdef HALOX_HAVE_MPI
    if (g_mpi_started) {
        double wait_s = 60;
        halox_timeout_resolve(timeout_s, &wait_s);
        if (st != HALOX_OK && !g_fail_line[0])
            snprintf(g_fail_line, sizeof g_fail_line, "halox-bench: rank %d: %s",
                     bench_world_rank(), halox_status_string(st));
        int job = tool_agree_outcome(st != HALOX_OK ? BENCH_FAILED : 0, st == HALOX_ERR_ABORTED,
                                     g_fail_line, wait_s);
        g_fail_line[0] = '\0';
        if (job && st == HALOX_OK)
            st = HALOX_ERR_ABORTED; /* another rank failed: this case failed for every rank */
    }
#else
    (void)timeout_s;
#endif
    return st;
}

typedef struct team_job {
    int nranks;
    bench_rank_fn fn;
    void *arg;
} team_job_t;

static halox_status_t team_rank(int rank, halox_team_t *team, void *vp)
{
    const team_job_t *j = vp;
    const bench_rank_t who = {rank, j->nranks, team};
    return j->fn(&who, j->arg);
}

static halox_status_t run_threads(int nranks, double timeout_s, bench_rank_fn fn, void *arg)
{
    halox_team_t *team = NULL;
    halox_status_t st = halox_team_create(nranks, timeout_s, &team);
    if (st != HALOX_OK)
        return st;
    team_job_t job = {nranks, fn, arg};
    st = halox_team_run(team, nranks, team_rank, &job, NULL, NULL);
    halox_team_destroy(team);
    return st;
}

halox_status_t bench_ranks_run(const char *transport, int nranks, double timeout_s,
                               bench_rank_fn fn, void *arg)
{
    if (bench_label_caps(transport).threads)
        return run_threads(nranks, timeout_s, fn, arg);
    bench_rank_t who = {bench_world_rank(), bench_world_size(), NULL};
    if (nranks != who.size)
        return HALOX_ERR_INVALID_ARG;
    return bench_mpi_case_end(fn(&who, arg), timeout_s);
}

int bench_transport_ranks(const bench_opts_t *o, const char *label, int *nranks_p)
{
    char base[64];
    bench_base_name(label, base, sizeof base);
    const int root = bench_world_rank() == 0;
    if (bench_label_caps(base).threads) {
        if (bench_world_size() > 1) {
            if (root)
                printf("%-22s skipped: thread ranks run in one process (start without mpirun, "
                       "--threads P)\n",
                       label);
            return 0;
        }
        *nranks_p = o->threads ? o->threads : o->grid_set ? halox_grid_size(&o->grid) : 2;
    } else {
        *nranks_p = bench_world_size();
    }
    if (halox_transport_on_gpu(base) && bench_gpu_count() == 0) {
        if (root)
            printf("%-22s skipped: no GPU visible\n", label);
        return 0;
    }
    return 1;
}

void bench_variant_env(const char *label, int on)
{
    static const char *const var[][3] = {{"+put", "HALOX_NVSHMEM_PUT", "1"},
                                         {"+tma", "HALOX_NVSHMEM_TMA", "1"},
                                         {"+floor", "HALOX_NVSHMEM_SIGNAL_ONLY", "1"},
                                         {"+null", "HALOX_NVSHMEM_SIGNAL_ONLY", "2"}};
    const char *plus = strchr(label, '+');
    for (int k = 0; k < 4; k++) {
        if (on && plus && !strcmp(plus, var[k][0]))
            setenv(var[k][1], var[k][2], 1);
        else if (!on)
            unsetenv(var[k][1]);
    }
}
