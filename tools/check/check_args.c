/* halox-check's command line (check_args.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/check_args.h"
#include "halox/env.h"
#include "halox/features.h"
#include "tool_agree.h"
#include "tool_common.h"
#include "tool_launch.h"
#include "tool_seed.h"

static void usage(FILE *to)
{
    fprintf(
        to,
        "usage: halox-check [options]\n"
        "Plans and runs the halo exchange of a random system and verifies it against brute force.\n"
        "  --grid NXxNYxNZ      rank grid (default 2x2x2; under mpirun -np P > 1 the most cubic\n"
        "                       grid of P ranks; NX,NY,NZ reads the same); with --transport mpi,\n"
        "                       run as many MPI processes as the grid has ranks\n"
        "  --box L | LX,LY,LZ   box edges (default 12)\n"
        "  --atoms N            number of atoms (default 8000)\n"
        "  --cutoff RC          cut-off (default 2.5)\n"
        "  --buffer B           pair-list buffer added to the halo (default 0.3)\n"
        "  --dist NAME          uniform | clustered | slab (default uniform)\n"
        "  --seed S             random seed, 0 to 2^64-1 (default 1)\n"
        "  --precision P        float | double (default float)\n"
        "  --stride 3|4         reals per atom (default 3)\n"
        "  --steps K            exchange steps checked with moving atoms (default 3)\n"
        "  --full-shell         full-shell plans: ghosts from both neighbours, pairs by\n"
        "                       halox_full_pair (default: the half shell)\n"
        "  --transport NAME     host-memory transport to check: threads or mpi; auto (the\n"
        "                       default unless $HALOX_TRANSPORT names one): threads, and\n"
        "                       under mpirun -np P > 1 mpi (threads is refused there)\n"
        "  --timeout S          bound on every wait, seconds, 0 < S <= 1e6 (default\n"
        "                       HALOX_TIMEOUT_S or 60)\n"
        "  --verbose            per-rank plan details\n"
        "  --version            version, features and transports\n"
        "  --help-env           environment variables halox reads\n");
}

static void version(void)
{
    tool_print_version("halox-check");
    printf("\n");
}

static int parse_double(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out);
}

/* Under an MPI launcher with P > 1 processes the ranks must be those processes (on threads
 * every process would check its own copy): without --transport, mpi on the default grid for P
 * (unless --grid is given); another transport is refused, and so is a grid of another rank
 * count. Decided before MPI_Init, so every process exits 2 at once, each with the message (the
 * launcher stops the others when the first exits). Returns 2 after a refusal, else 0. */
static int launch_resolve(chk_opts_t *o)
{
    const char *var = NULL;
    const int launched = tool_launched_processes_var(&var);
    char how[160];
    tool_launch_describe(how, sizeof how);
    if (launched > 1) {
        if (!halox_transport_available("mpi")) {
            fprintf(stderr,
                    "halox-check: %s, but this build has no MPI (see --version): start one "
                    "process without mpirun (the threads transport runs every rank)\n",
                    how);
            return 2;
        }
        if (!o->set_transport) {
            o->transport = "mpi";
            halox_transport_caps(o->transport, &o->caps);
            if (!o->set_grid)
                halox_grid_default(launched, &o->prm.grid);
        } else if (o->caps.threads) {
            fprintf(stderr,
                    "halox-check: %s%s runs its ranks in one process, but halox-check was %s: "
                    "each process would check its own copy. %s, or start one process without "
                    "mpirun\n",
                    o->transport_from_env ? "HALOX_TRANSPORT=" : "--transport ", o->transport, how,
                    o->transport_from_env ? "Unset HALOX_TRANSPORT or add --transport mpi"
                                          : "Use --transport mpi (one rank per process)");
            return 2;
        }
    }
    const int P = halox_grid_size(&o->prm.grid);
    if (!o->caps.threads && launched > 0 && launched != P) {
        halox_grid_t g;
        halox_grid_default(launched, &g);
        fprintf(stderr,
                "halox-check: grid %dx%dx%d has %d ranks but %d MPI processes were started "
                "(%s=%d): start with mpirun -np %d, or give a --grid of %d ranks (such as "
                "%dx%dx%d)\n",
                o->prm.grid.n[0], o->prm.grid.n[1], o->prm.grid.n[2], P, launched, var, launched, P,
                launched, g.n[0], g.n[1], g.n[2]);
        return 2;
    }
    return 0;
}

/* The transport named by --transport or HALOX_TRANSPORT (from_env), checked once the command
 * line is read (a later --transport replaces a variable's): auto leaves it to launch_resolve()
 * as if none was named (the automatic choice: threads, or mpi under an MPI launcher). */
static void set_transport(chk_opts_t *o, const char *v, int from_env)
{
    const int chosen = !strcmp(v, "auto");
    o->transport = chosen ? "threads" : v;
    o->set_transport = !chosen;
    o->transport_from_env = !chosen && from_env;
}

int chk_parse_args(int argc, char **argv, chk_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->prm.grid = (halox_grid_t){{2, 2, 2}};
    o->prm.box = (halox_box_t){{12, 12, 12}};
    o->prm.cutoff = 2.5;
    o->prm.buffer = 0.3;
    o->n = 8000;
    o->seed = 1;
    o->real = HALOX_FLOAT;
    o->stride = 3;
    o->steps = 3;
    o->transport = "threads";
    tool_agree_tool("halox-check");
    if (tool_launch_check("halox-check"))
        return 2;
    const char *env = getenv("HALOX_TRANSPORT");
    if (env && *env)
        set_transport(o, env, 1);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const int at = i;
#define NEED_VALUE()                                                                               \
    do {                                                                                           \
        if (!v) {                                                                                  \
            fprintf(stderr, "halox-check: %s needs a value (see --help)\n", a);                    \
            return 2;                                                                              \
        }                                                                                          \
        i++;                                                                                       \
    } while (0)
        if (tool_info_option(a, usage, version))
            return 1;
        if (!strcmp(a, "--verbose")) {
            o->verbose = 1;
        } else if (!strcmp(a, "--full-shell")) {
            o->prm.full_shell = 1;
        } else if (!strcmp(a, "--grid")) {
            NEED_VALUE();
            if (halox_grid_parse(v, &o->prm.grid) != HALOX_OK) {
                fprintf(stderr, "halox-check: %s\n", halox_last_error());
                return 2;
            }
            o->set_grid = 1;
        } else if (!strcmp(a, "--box")) {
            NEED_VALUE();
            double b[3];
            char *end;
            b[0] = strtod(v, &end);
            if (*end == '\0' && end != v) {
                b[1] = b[2] = b[0];
            } else if (sscanf(v, "%lf,%lf,%lf", &b[0], &b[1], &b[2]) != 3) {
                fprintf(stderr, "halox-check: cannot read --box '%s': give L or LX,LY,LZ\n", v);
                return 2;
            }
            for (int d = 0; d < 3; d++)
                o->prm.box.len[d] = b[d];
        } else if (!strcmp(a, "--atoms")) {
            NEED_VALUE();
            char *end;
            long n = strtol(v, &end, 10);
            if (*end || end == v || n < 0 || n > 100000000) {
                fprintf(stderr, "halox-check: --atoms '%s': give a count from 0 to 1e8\n", v);
                return 2;
            }
            o->n = (int)n;
        } else if (!strcmp(a, "--cutoff") || !strcmp(a, "--buffer") || !strcmp(a, "--timeout")) {
            NEED_VALUE();
            double d;
            if (!parse_double(v, &d)) {
                fprintf(stderr, "halox-check: %s '%s' is not a finite number\n", a, v);
                return 2;
            }
            if (!strcmp(a, "--cutoff"))
                o->prm.cutoff = d;
            else if (!strcmp(a, "--buffer"))
                o->prm.buffer = d;
            else if (!(d > 0 && d <= HALOX_TIMEOUT_MAX_S)) {
                /* 0 would mean "the default" to the library: a given bound must be one */
                fprintf(stderr, "halox-check: --timeout '%s': give seconds > 0 and at most %g\n", v,
                        HALOX_TIMEOUT_MAX_S);
                return 2;
            } else
                o->timeout = d;
        } else if (!strcmp(a, "--dist")) {
            NEED_VALUE();
            if (!strcmp(v, "uniform"))
                o->dist = CHK_UNIFORM;
            else if (!strcmp(v, "clustered"))
                o->dist = CHK_CLUSTERED;
            else if (!strcmp(v, "slab"))
                o->dist = CHK_SLAB;
            else {
                fprintf(stderr, "halox-check: --dist '%s': use uniform, clustered or slab\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            if (!tool_parse_seed(v, &o->seed)) {
                fprintf(stderr, "halox-check: --seed '%s': give %s\n", v, TOOL_SEED_RANGE);
                return 2;
            }
        } else if (!strcmp(a, "--precision")) {
            NEED_VALUE();
            if (!strcmp(v, "float"))
                o->real = HALOX_FLOAT;
            else if (!strcmp(v, "double"))
                o->real = HALOX_DOUBLE;
            else {
                fprintf(stderr, "halox-check: --precision '%s': use float or double\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--stride")) {
            NEED_VALUE();
            if (strcmp(v, "3") && strcmp(v, "4")) {
                fprintf(stderr, "halox-check: --stride '%s': use 3 or 4\n", v);
                return 2;
            }
            o->stride = atoi(v);
        } else if (!strcmp(a, "--steps")) {
            NEED_VALUE();
            char *end;
            long k = strtol(v, &end, 10);
            if (*end || end == v || k < 1 || k > 1000000) {
                fprintf(stderr, "halox-check: --steps '%s': give a count >= 1\n", v);
                return 2;
            }
            o->steps = (int)k;
        } else if (!strcmp(a, "--transport")) {
            NEED_VALUE();
            set_transport(o, v, 0);
        } else {
            fprintf(stderr, "halox-check: unknown option '%s' (see --help)\n", a);
            return 2;
        }
        /* as the ranks of an MPI job compare them */
        tool_agree_option(a, i > at ? v : NULL);
#undef NEED_VALUE
    }
    if (o->set_transport &&
        halox_transport_check_name(o->transport,
                                   o->transport_from_env ? "HALOX_TRANSPORT" : "--transport",
                                   "auto (the automatic choice)") != HALOX_OK) {
        fprintf(stderr, "halox-check: %s\n", halox_last_error());
        return 2;
    }
    halox_transport_caps(o->transport, &o->caps);
    if (o->caps.on_gpu) {
        /* the check binds host arrays; the GPU transports are checked by test_gpu_exchange */
        fprintf(stderr,
                "halox-check: --transport %s keeps its data on the GPU, and halox-check checks "
                "the host-memory transports (threads, mpi); GPU transports are checked against "
                "the same reference by the test test_gpu_exchange on a GPU machine\n",
                o->transport);
        return 2;
    }
    if (launch_resolve(o))
        return 2;
    if (halox_plan_check(&o->prm, NULL) != HALOX_OK) {
        fprintf(stderr, "halox-check: %s\n", halox_last_error());
        return 2;
    }
    /* HALOX_TIMEOUT_S too, when no --timeout is given: refused here, before the ranks start */
    if (halox_timeout_resolve(o->timeout, NULL) != HALOX_OK) {
        fprintf(stderr, "halox-check: %s\n", halox_last_error());
        return 2;
    }
    return 0;
}
