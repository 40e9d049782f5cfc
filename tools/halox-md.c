/* halox-md: Lennard-Jones molecular dynamics on the halo library (CPU: threads or MPI ranks).
 *
 * The command line and signal handling live here, the report on stdout in md_report.c; the
 * settings themselves (their table, values and combinations: include/halox/md_options.h) and the
 * simulation are the engine's (md/), which also writes the files.
 * Exit status: 0 success (also a run stopped by SIGINT/SIGTERM after writing its checkpoint),
 * 1 a run-time failure, 2 bad usage or bad input. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef HALOX_HAVE_MPI
#include <mpi.h>
#endif

#include "halox/features.h"
#include "halox/halox.h"
#ifdef HALOX_HAVE_MPI
#include "md_autotune.h"
#endif
#include "halox/md.h"
#include "halox/md_options.h"
#include "md_report.h"
#include "tool_agree.h"
#include "tool_common.h"
#include "tool_env.h"
#include "tool_launch.h"

/* Set by the signal handler, read by the engine's stop hook on another thread: a lock-free
 * atomic, which C11 allows a signal handler to touch and which orders across threads. */
static atomic_int g_stop = 0;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the stop flag must be lock-free to be signal-safe");

static void on_signal(int sig)
{
    if (atomic_exchange(&g_stop, 1)) {
        /* a second signal: stop now, the default way */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

static int stop_requested(void *user)
{
    (void)user;
    return atomic_load(&g_stop);
}

/* "  --preset NAME          TEXT", TEXT wrapped under itself at the width of the help. */
static void print_wrapped(FILE *to, const char *name, const char *text)
{
    enum { INDENT = 26, WIDTH = 94 };
    char head[64];
    snprintf(head, sizeof head, "  --preset %s", name);
    if ((int)strlen(head) < INDENT)
        fprintf(to, "%-*s", INDENT, head);
    else /* a long name: the text starts on the next line */
        fprintf(to, "%s\n%*s", head, INDENT, "");
    int col = INDENT;
    for (const char *w = text ? text : ""; *w;) {
        size_t n = strcspn(w, " ");
        if (col > INDENT && col + 1 + (int)n > WIDTH) {
            fprintf(to, "\n%*s", INDENT, "");
            col = INDENT;
        } else if (col > INDENT) {
            fputc(' ', to);
            col++;
        }
        fprintf(to, "%.*s", (int)n, w);
        col += (int)n;
        w += n;
        while (*w == ' ')
            w++;
    }
    fputc('\n', to);
}

/* the help states the equilibration's time constant as a number */
_Static_assert(HALOX_MD_EQUILIBRATE_TAU_STEPS == 10, "--help says --equilibrate runs at tau 10 dt");

/* ---- options --------------------------------------------------------------------------------- */

/* The tool's own options, beside the engine's (halox_md_options()): same layout, same help. */
static const halox_md_option_t k_tool_options[] = {
    {"--autotune", NULL, HALOX_MD_GROUP_PARALLEL, 0, "--autotune",
     "under mpirun: run every transport of the engine 3 times\n"
     "for a few steps first (--autotune-steps N, default 50),\n"
     "keep the fastest median (the automatic choice when it is\n"
     "within the measured noise), print the table; cached\n"
     "($HALOX_AUTOTUNE_CACHE, ~/.cache/halox-autotune.tsv) by size,\n"
     "grid and machine, so the next run skips the measurement"},
    {"--autotune-steps", "N", HALOX_MD_GROUP_PARALLEL, 0, NULL, NULL},
    {"--tma", NULL, HALOX_MD_GROUP_PARALLEL, 0, "--tma",
     "nvshmem-pulse/fused: write coordinates to NVLink peers\n"
     "with bulk asynchronous copies (TMA) from shared memory"},
    {"--quiet", NULL, HALOX_MD_GROUP_OUTPUT, 0, "--quiet",
     "no thermo table and no progress line: the banner, notices\n"
     "and the summary only"},
    {"--no-progress", NULL, HALOX_MD_GROUP_OUTPUT, 0, "--no-progress",
     "no progress line (shown only when stdout is a terminal)"},
    {"--help", NULL, HALOX_MD_GROUP_OUTPUT, 0, "--version | --help-env | --help", ""},
    {"-h", NULL, HALOX_MD_GROUP_OUTPUT, 0, NULL, NULL},
    {"--version", NULL, HALOX_MD_GROUP_OUTPUT, 0, NULL, NULL},
    {"--help-env", NULL, HALOX_MD_GROUP_OUTPUT, 0, NULL, NULL},
    {NULL, NULL, 0, 0, NULL, NULL},
};

static const halox_md_option_t *tool_option(const char *a)
{
    for (const halox_md_option_t *t = k_tool_options; t->name; t++)
        if (!strcmp(t->name, a))
            return t;
    return NULL;
}

/* "  USAGE                   line 1" and the help's further lines under it. */
static void print_option(FILE *to, const halox_md_option_t *opt)
{
    if (!opt->usage)
        return;
    const char *h = opt->help ? opt->help : "";
    if (!*h) {
        fprintf(to, "  %s\n", opt->usage);
        return;
    }
    for (int line = 0; *h; line++) {
        size_t n = strcspn(h, "\n");
        if (line == 0)
            fprintf(to, "  %-23s %.*s\n", opt->usage, (int)n, h);
        else
            fprintf(to, "%26s%.*s\n", "", (int)n, h);
        h += n;
        h += *h == '\n';
    }
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: halox-md [options]\n"
            "Lennard-Jones molecular dynamics (reduced units) on the halox halo library.\n"
            "\n"
            "Presets (each sets the values listed with it; options before or after it override\n"
            "them; the defaults below are those without a preset):\n");
    /* from the presets themselves (halox_md_preset_description), so that help and run agree */
    for (const char *const *p = halox_md_preset_names(); *p; p++)
        print_wrapped(to, *p, halox_md_preset_description(*p));
    for (int g = 0; g < HALOX_MD_GROUPS; g++) {
        fprintf(to, "%s:\n", halox_md_option_group_title(g));
        for (const halox_md_option_t *o = halox_md_options(); o->name; o++)
            if (o->group == g)
                print_option(to, o);
        for (const halox_md_option_t *o = k_tool_options; o->name; o++)
            if (o->group == g)
                print_option(to, o);
    }
    fprintf(to,
            "Exit status: 0 success (also a run stopped by a signal after its checkpoint), 1 a\n"
            "run-time failure, 2 bad usage or bad input. See docs/MD.md.\n");
}

static void version(void)
{
    tool_print_version("halox-md");
    printf("\npresets:");
    for (const char *const *p = halox_md_preset_names(); *p; p++)
        printf(" %s", *p);
    printf("\n");
}

typedef struct {
    halox_md_setup_t s; /* the engine's settings */
    int quiet;          /* --quiet: no thermo table, no progress line */
    int silent;         /* HALOX_LOG_LEVEL=0: nothing on stdout but notices */
    int progress;
    int autotune; /* --autotune: steps per candidate (0: off) */
} opts_t;

static int bad(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "halox-md: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 2;
}

/* The variables only the tool reads. */
static int read_env(opts_t *o)
{
    /* read by the GPU transports only, but a misspelt value must not pass silently elsewhere */
    const char *env = getenv("HALOX_CPU_AFFINITY");
    if (env && *env && strcmp(env, "gpu") && strcmp(env, "off") && strcmp(env, "0"))
        return bad("HALOX_CPU_AFFINITY='%s': use gpu (cores near the rank's GPU) or off", env);
    env = tool_env_string("HALOX_LOG_LEVEL");
    if (env) {
        char *end;
        long level = strtol(env, &end, 10);
        if (end == env || *end || level < 0 || level > 3)
            return bad("HALOX_LOG_LEVEL='%s': use 0 (errors only) or 1 (normal)", env);
        o->silent = level == 0;
    }
    return 0;
}

/* A tool option; 1 when it ends the parse with exit 0 (help, version), -2 after an error. */
static int apply_tool_option(opts_t *o, const char *a, const char *v)
{
    if (tool_info_option(a, usage, version))
        return 1;
    if (!strcmp(a, "--autotune")) {
        o->autotune = o->autotune ? o->autotune : 50;
    } else if (!strcmp(a, "--autotune-steps")) {
        char *end;
        long n = strtol(v, &end, 10);
        if (end == v || *end || n < 10 || n > 100000)
            return -bad("--autotune-steps '%s': give a number of steps from 10 to 100000", v);
        o->autotune = (int)n;
    } else if (!strcmp(a, "--tma")) {
        /* read by the NVSHMEM transports at endpoint creation (documented in the env table) */
        setenv("HALOX_NVSHMEM_TMA", "1", 1);
    } else if (!strcmp(a, "--quiet")) {
        o->quiet = 1;
    } else if (!strcmp(a, "--no-progress")) {
        o->progress = 0;
    }
    return 0;
}

/* --autotune measures new runs of the transports between processes: what the command line
 * says (before the settings are finished, whose errors would hide this one) and, once the
 * device is known (after), what the launch says. */
static int autotune_check(const opts_t *o, int finished)
{
    const halox_md_config_t *c = &o->s.cfg;
    const int ranks = halox_grid_size(&c->grid), launched = tool_launched_processes();
    if (!finished && halox_md_setup_given(&o->s, "--transport"))
        return bad("--autotune chooses the transport itself: leave out --transport (and unset "
                   "HALOX_TRANSPORT)");
    if (!finished && c->restart_path)
        return bad("--autotune measures new runs: it cannot be combined with --restart");
    if (finished && halox_md_config_device(c) == HALOX_MD_DEVICE_CPU && ranks > 1 &&
        launched != ranks)
        return bad("--autotune measures the MPI transports: start the %d ranks with mpirun -np %d",
                   ranks, ranks);
    return 0;
}

/* Returns 0 to run, 1 to exit 0 (help, version), 2 on a usage error. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    halox_md_setup_init(&o->s);
    o->progress = 1;
    tool_agree_tool("halox-md");
    if (tool_launch_check("halox-md"))
        return 2;
    if (halox_md_setup_env(&o->s) != HALOX_OK)
        return bad("%s", halox_last_error());
    if (read_env(o))
        return 2;
    /* presets first, wherever they stand, so that every other option overrides them */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--preset")) {
            if (i + 1 >= argc)
                return bad("--preset needs a name (lammps-lj or water-density)");
            if (halox_md_setup_option(&o->s, "--preset", argv[++i]) != HALOX_OK)
                return bad("%s", halox_last_error());
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const halox_md_option_t *opt = halox_md_option_find(a), *tool = tool_option(a);
        if (!opt && !tool) {
            if (a[0] == '-')
                return bad("unknown option '%s' (see --help)", a);
            return bad("unexpected argument '%s' (options start with --; see --help)", a);
        }
        const char *metavar = opt ? opt->metavar : tool->metavar;
        if (metavar && (!v || (v[0] == '-' && v[1] == '-')))
            return bad("%s needs a value (see --help)", a);
        if (metavar)
            i++;
        /* as the ranks of an MPI job compare them: the files --read and --restart by content */
        if (!strcmp(a, "--read") || !strcmp(a, "--restart"))
            tool_agree_input(a, v);
        else
            tool_agree_option(a, metavar ? v : NULL);
        if (tool) {
            int rc = apply_tool_option(o, a, v);
            if (rc)
                return rc < 0 ? 2 : 1;
        } else if (strcmp(a, "--preset") && halox_md_setup_option(&o->s, a, v) != HALOX_OK) {
            return bad("%s", halox_last_error());
        }
    }
    const char *var = NULL;
    char how[160];
    tool_launch_describe(how, sizeof how);
    halox_md_launch_t launch = {.processes = tool_launched_processes_var(&var),
                                .local_processes = tool_launched_local_processes(),
                                .var = var,
                                .how = how};
    if (o->autotune && autotune_check(o, 0))
        return 2;
    if (halox_md_setup_finish(&o->s, &launch) != HALOX_OK)
        return bad("%s", halox_last_error());
    if (o->autotune && autotune_check(o, 1))
        return 2;
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

#ifdef HALOX_HAVE_MPI
/* With HALOX_CPU_AFFINITY set, every rank's CPUs (the endpoint bound them near their GPU), one
 * line on rank 0. Collective. */
static halox_status_t report_affinity(halox_comm_t *comm, int print)
{
    const char *mode = getenv("HALOX_CPU_AFFINITY");
    if (!mode || !*mode)
        return HALOX_OK;
    enum { W = 96 };
    char mine[W];
    if (halox_affinity_describe(mine, sizeof mine) != 0)
        snprintf(mine, sizeof mine, "?");
    int n = halox_comm_size(comm);
    char *all = calloc((size_t)n, W);
    if (!all)
        return HALOX_ERR_NO_MEMORY;
    halox_status_t st = halox_comm_allgather(comm, mine, all, W);
    if (st == HALOX_OK && print) {
        printf("CPU affinity (HALOX_CPU_AFFINITY=%s):", mode);
        for (int r = 0; r < n; r++)
            printf("%s rank %d: %s", r ? "," : "", r, all + (size_t)r * W);
        printf("\n");
        fflush(stdout);
    }
    free(all);
    return st;
}
#endif

/* The exit status of a failed run: bad input (files, settings) is a usage error; the rest failed
 * at run time (a failed write of an output file, HALOX_ERR_WRITE, too). */
static int failure_code(halox_status_t st)
{
    return st == HALOX_ERR_INVALID_ARG || st == HALOX_ERR_IO || st == HALOX_ERR_DECOMPOSITION ? 2
                                                                                              : 1;
}

int main(int argc, char **argv)
{
    tool_ignore_file_limit_signal();
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    const halox_md_config_t *cfg = &o.s.cfg;
    int P = halox_grid_size(&cfg->grid);
    /* transports whose ranks are not threads run one process per rank */
    halox_transport_caps_t caps;
    halox_transport_caps(cfg->transport, &caps);
    int use_mpi = !caps.threads;
    int my_rank = 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    /* under mpirun stdout may be a pseudo-terminal whatever the user's is: no progress there */
    md_printer_t pr = {.s = &o.s,
                       .quiet = o.quiet,
                       .silent = o.silent,
                       .progress = o.progress,
                       .tty = isatty(STDOUT_FILENO) && !use_mpi,
                       .first_step = -1};
    halox_md_hooks_t hooks = {.thermo = md_on_thermo,
                              .progress = md_on_progress,
                              .notice = md_on_notice,
                              .stop = stop_requested,
                              .user = &pr};
    halox_md_result_t res;
    memset(&res, 0, sizeof res);
    halox_status_t st;
    int code = 0;
    if (!use_mpi) {
        md_print_banner(&pr, P);
        st = halox_md_threads_run(cfg, &hooks, &res);
        md_clear_progress(&pr);
        if (st != HALOX_OK) {
            fprintf(stderr, "halox-md: %s\n", res.error);
            code = failure_code(st);
        }
    } else {
#ifdef HALOX_HAVE_MPI
        MPI_Init(&argc, &argv);
        /* MPI_Init may install its own handlers: ours decide how a run stops */
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        int nproc = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &nproc);
        /* first: every later step depends on the ranks having the same inputs */
        if (tool_agree_inputs()) {
            MPI_Finalize();
            return 2;
        }
        if (nproc != P) {
            if (my_rank == 0)
                fprintf(stderr,
                        "halox-md: grid %dx%dx%d has %d ranks but %d MPI processes run: start "
                        "with mpirun -np %d\n",
                        cfg->grid.n[0], cfg->grid.n[1], cfg->grid.n[2], P, nproc, P);
            MPI_Finalize();
            return 2;
        }
        if (my_rank == 0)
            md_print_banner(&pr, P);
        else
            pr.silent = o.silent = 1;
        /* GPU transports: device = local rank modulo the visible devices (args.device -1) */
        halox_comm_args_t args = {
            .real = cfg->real, .stride = 3, .timeout_s = cfg->timeout_s, .device = -1};
        halox_comm_t *comm = NULL;
        /* --autotune: one system for every candidate and the run */
        halox_md_system_t *sys = NULL;
        halox_md_config_t tuned = *cfg;
        st = HALOX_OK;
        if (o.autotune) {
            char why[900];
            st = halox_md_system_create(cfg, &sys);
            if (st != HALOX_OK)
                snprintf(why, sizeof why, "%s", halox_last_error());
            else if (md_autotune(cfg, sys, o.autotune, my_rank, my_rank == 0 && !o.silent,
                                 &tuned.transport, why, sizeof why) != 0)
                st = HALOX_ERR_UNAVAILABLE;
            if (st != HALOX_OK) {
                res.status = st;
                snprintf(res.error, sizeof res.error, "rank %d: %s", my_rank, why);
            }
            cfg = &tuned;
        }
        if (st == HALOX_OK)
            st = halox_comm_create(cfg->transport, &args, &comm);
        if (st == HALOX_OK)
            st = report_affinity(comm, my_rank == 0 && !o.silent);
        if (st == HALOX_OK) {
            st = halox_md_rank_run(cfg, comm, sys, &hooks, &res);
        } else if (!res.error[0]) {
            res.status = st;
            snprintf(res.error, sizeof res.error, "rank %d: %s", my_rank, halox_last_error());
        }
        halox_md_system_destroy(sys);
        md_clear_progress(&pr);
        /* every rank learns the job's outcome; the rank whose failure is the cause says why,
         * once (ranks that stopped because another failed only followed it) */
        char line[1100];
        snprintf(line, sizeof line, "halox-md: %s", res.error);
        double wait_s = 60;
        halox_timeout_resolve(cfg->timeout_s, &wait_s);
        code = tool_agree_outcome(st != HALOX_OK ? failure_code(st) : 0, st == HALOX_ERR_ABORTED,
                                  line, wait_s);
        halox_comm_destroy(comm);
#else
        fprintf(stderr, "halox-md: this build has no MPI (see --version)\n");
        return 2;
#endif
    }
    if (my_rank == 0 && code == 0 && !o.silent)
        md_print_summary(&res);
    halox_md_result_free(&res);
#ifdef HALOX_HAVE_MPI
    if (use_mpi)
        MPI_Finalize();
#endif
    return code;
}
