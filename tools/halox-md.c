/* halox-md: Lennard-Jones molecular dynamics on the halo library (CPU: threads or MPI ranks).
 *
 * The command line, the thermo table, progress, the summary table and signal handling live
 * here; the engine (src/md/, include/halox/md.h) does the simulation and writes the files.
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

#include "halox/comm.h"
#include "halox/env.h"
#include "halox/features.h"
#ifdef HALOX_HAVE_MPI
#include "md_autotune.h"
#endif
#include "halox/md.h"
#include "tool_common.h"
#include "tool_launch.h"
#include "tool_seed.h"

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
    fprintf(
        to,
        "System (one of):\n"
        "  --lattice fcc           fcc lattice (the default) with --density and --cells\n"
        "  --density RHO           number density (default 0.8442)\n"
        "  --cells NX,NY,NZ        fcc unit cells per dimension, 4 atoms each (default 10,10,10)\n"
        "  --atoms N               N atoms placed at random without overlaps at --density\n"
        "  --read FILE             atoms from an extended-XYZ file (box from its\n"
        "                          Lattice=\"LX 0 0 0 LY 0 0 0 LZ\" or --box) or a LAMMPS text\n"
        "                          dump (told apart by content); its velocities where the\n"
        "                          frame has them (XYZ velo/vel/momenta, dump vx vy vz)\n"
        "  --read-frame N|last     frame of --read to start from, from 0 (default: last, what\n"
        "                          a run continues from); the banner says which was read\n"
        "  --new-velocities        draw velocities at --temp even when the frame has its own\n"
        "  --box LX,LY,LZ          box for --read when the file has no Lattice\n"
        "  --temp T                initial temperature (velocities drawn where --read gives\n"
        "                          none), and the NVT target (default 1.44)\n"
        "  --seed S                velocities, random placement, thermostat (default 87287)\n"
        "Potential and lists:\n"
        "  --cutoff RC             Lennard-Jones cut-off (default 2.5)\n"
        "  --shift | --no-shift    energy shifted to zero at the cut-off (default: no)\n"
        "  --tail | --no-tail      analytic long-range corrections to energy and pressure (no)\n"
        "  --skin S                pair-list skin; halo distance = cut-off + skin (default 0.3)\n"
        "  --rebuild-every K       lists, migration and plan every K steps (default 20)\n"
        "  --rebuild-check         also rebuild as soon as an atom moved more than skin/2\n"
        "                          (CPU: one extra reduction per step; GPU: watched on the\n"
        "                          device, no host synchronisation); --no-rebuild-check: off\n"
        "  --verlet-tolerance E    choose the skin and the rebuild interval (those not given\n"
        "                          by --skin, --rebuild-every) for an estimated energy drift\n"
        "                          by missed pairs of at most E per atom per unit time (such\n"
        "                          as 1e-4), at --temp and the system's density (off unless\n"
        "                          given; printed at start, see docs/MD.md)\n"
        "Integration:\n"
        "  --dt DT                 time step (default 0.005)\n"
        "  --steps N               last step (default 100; with --restart: required)\n"
        "  --ensemble nve|nvt      NVE, or NVT with stochastic velocity rescaling (Bussi 2007)\n"
        "  --tau TAU               NVT time constant (default 0.1)\n"
        "  --equilibrate N         first N steps of NVT at --temp (tau 10 dt), numbered 1-N to\n"
        "                          0, then velocities scaled to exactly --temp: the run starts\n"
        "                          at step 0 from there; not timed, not counted, no output\n"
        "                          (default 0: none; water-density sets its own)\n"
        "Parallel run:\n"
        "  --grid NXxNYxNZ         rank grid (default 1x1x1; under mpirun -np P the most\n"
        "                          cubic grid of P ranks: 2x1x1, 2x2x1, 2x2x2); --transport\n"
        "                          mpi needs as many MPI processes (mpirun -np NX*NY*NZ)\n"
        "  --transport NAME        threads (default, or $HALOX_TRANSPORT) or mpi (see --version);\n"
        "                          mpi-staged or nccl run the GPU engine (under mpirun, one GPU\n"
        "                          per rank; 1 rank: local copies)\n"
        "  --device gpu|cpu|auto   engine (default auto, or $HALOX_DEVICE): auto runs the GPU\n"
        "                          engine when a GPU is visible and no --transport is given\n"
        "                          (one rank, or one MPI process per rank), else follows the\n"
        "                          transport; without --transport the GPU engine takes the\n"
        "                          measured-fastest one for the job (nvshmem-fused when the\n"
        "                          GPUs reach each other by NVLink/P2P, else nccl or\n"
        "                          mpi-staged; printed at start) and runs in single precision\n"
        "  --graph                 GPU engine: replay the steps between rebuilds as a CUDA\n"
        "                          graph (nccl, nvshmem-*; mpi-staged cannot be captured)\n"
        "  --autotune              under mpirun: run every transport of the engine 3 times\n"
        "                          for a few steps first (--autotune-steps N, default 50),\n"
        "                          keep the fastest median (the automatic choice when it is\n"
        "                          within the measured noise), print the table; cached\n"
        "                          ($HALOX_AUTOTUNE_CACHE, ~/.cache/halox-autotune.tsv) by size,\n"
        "                          grid and machine, so the next run skips the measurement\n"
        "  --tma                   nvshmem-pulse/fused: write coordinates to NVLink peers\n"
        "                          with bulk asynchronous copies (TMA) from shared memory\n"
        "  --precision P           float (default: positions and forces in single precision,\n"
        "                          energies in double) or double\n"
        "  --timeout S             bound on every wait for a peer, seconds (0 < S <= 1e6;\n"
        "                          default HALOX_TIMEOUT_S or 60)\n"
        "  --overlap-probe R       after the last step, time R repetitions of the local forces\n"
        "                          alone, the halo exchange alone and both as a step runs them;\n"
        "                          the summary adds them and overlap %% (halox-bench overlap)\n"
        "Output:\n"
        "  --thermo-every N        thermo rows every N steps, plus the first and last\n"
        "                          (default 50; each preset's own is listed with it)\n"
        "  --json FILE             settings, thermo records and summary as JSON\n"
        "  --csv FILE              thermo records as CSV: step,time,temp,pe,ke,etotal,press\n"
        "                          are the table's Step, (step x dt), Temp, E_pair, KE, TotEng,\n"
        "                          Press (energies per atom; the JSON keys are the CSV's)\n"
        "  --traj FILE             trajectory, format by the name: FILE.xyz or .extxyz\n"
        "                          extended XYZ (OVITO, ASE; VMD without the box),\n"
        "                          FILE.lammpstrj, .lammpsdump or .dump LAMMPS text dump with\n"
        "                          the box (MDAnalysis, VMD, OVITO)\n"
        "  --xyz FILE              extended-XYZ trajectory, whatever the name\n"
        "  --traj-every N          frame every N steps (default: first and last step only;\n"
        "  --xyz-every N           the same option)\n"
        "  --checkpoint FILE       checkpoints (atomic): at the end, on SIGINT/SIGTERM, and\n"
        "  --checkpoint-every N    at the first rebuild step boundary after every N steps\n"
        "  --restart FILE          continue from a checkpoint up to --steps; bit-identical to\n"
        "                          an uninterrupted run on the same grid\n"
        "  --quiet                 no thermo table and no progress on stdout\n"
        "  --no-progress           no progress line (shown only when stdout is a terminal)\n"
        "  --version | --help-env | --help\n"
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

/* ---- options --------------------------------------------------------------------------------- */

typedef struct {
    halox_md_config_t cfg;
    int quiet;
    int progress;
    /* what was given explicitly (for conflicts and restarts) */
    int set_lattice, set_cells, set_density, set_atoms, set_read, set_box, set_steps;
    int set_precision, set_grid, set_transport;
    int set_temp, set_read_frame, set_new_velocities;
    int set_skin, set_rebuild_every; /* given: --verlet-tolerance keeps them */
    halox_md_verlet_t verlet;   /* --verlet-tolerance: what was chosen (verlet.tolerance > 0) */
    const char *traj_option;    /* --traj or --xyz, the one given */
    const char *every_option;   /* --traj-every or --xyz-every, the one given */
    halox_md_read_info_t read;  /* --read: what the file holds (halox_md_read_probe) */
    int transport_from_env;     /* the transport came from HALOX_TRANSPORT (for messages) */
    const char *physics_option; /* first option that --restart cannot take */
    char auto_why[384];         /* why the GPU engine's transport was chosen (no --transport) */
    int autotune;               /* --autotune: steps per candidate (0: off) */
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

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out) && errno == 0;
}

static int parse_ll(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static int parse_triple_int(const char *s, int out[3])
{
    long v[3];
    const char *p = s;
    for (int d = 0; d < 3; d++) {
        char *end;
        errno = 0;
        v[d] = strtol(p, &end, 10);
        if (end == p || errno || v[d] < 1 || v[d] > 100000)
            return 0;
        p = end;
        if (d < 2) {
            if (*p != ',' && *p != 'x' && *p != 'X')
                return 0;
            p++;
        }
    }
    if (*p)
        return 0;
    for (int d = 0; d < 3; d++)
        out[d] = (int)v[d];
    return 1;
}

static int parse_triple_double(const char *s, double out[3])
{
    const char *p = s;
    for (int d = 0; d < 3; d++) {
        char *end;
        out[d] = strtod(p, &end);
        if (end == p || !isfinite(out[d]) || out[d] <= 0)
            return 0;
        p = end;
        if (d < 2) {
            if (*p != ',')
                return 0;
            p++;
        }
    }
    return *p == '\0';
}

/* Options a restart cannot take: they define the system or the trajectory. */
static int is_physics(const char *a)
{
    static const char *const list[] = {"--preset",
                                       "--lattice",
                                       "--density",
                                       "--cells",
                                       "--atoms",
                                       "--read",
                                       "--box",
                                       "--temp",
                                       "--seed",
                                       "--cutoff",
                                       "--skin",
                                       "--shift",
                                       "--no-shift",
                                       "--tail",
                                       "--no-tail",
                                       "--dt",
                                       "--rebuild-every",
                                       "--rebuild-check",
                                       "--ensemble",
                                       "--tau",
                                       "--equilibrate",
                                       "--no-rebuild-check",
                                       NULL};
    for (int i = 0; list[i]; i++)
        if (!strcmp(a, list[i]))
            return 1;
    if (!strcmp(a, "--verlet-tolerance")) /* it sets the skin and the rebuild interval */
        return 1;
    return !strcmp(a, "--read-frame") || !strcmp(a, "--new-velocities"); /* --read's too */
}

static int parse_device(const char *v, halox_md_device_t *d)
{
    if (!strcmp(v, "gpu"))
        *d = HALOX_MD_DEVICE_GPU;
    else if (!strcmp(v, "cpu"))
        *d = HALOX_MD_DEVICE_CPU;
    else if (!strcmp(v, "auto"))
        *d = HALOX_MD_DEVICE_AUTO;
    else
        return 0;
    return 1;
}

/* The MPI launcher, as every tool reads it (tools/tool_launch.h): processes of the job (0: not
 * started by a launcher) and of this node (0: unknown). */
static int launched_processes(void) { return tool_launched_processes(); }
static int launched_local_processes(void) { return tool_launched_local_processes(); }

/* Under an MPI launcher with P > 1 processes the ranks must be those processes: on threads
 * every process would run its own copy of the whole job. Without a transport the CPU engine
 * takes mpi (the GPU engine has chosen its own already); threads asked for is refused, and so
 * is a grid whose rank count is not P. Decided before MPI_Init, so that every process exits 2
 * at once with the message (each prints it: a process that exits first makes the launcher
 * stop the others, which may not have printed yet). Returns 2 after a refusal, else 0. */
static int launch_resolve(opts_t *o, int ranks)
{
    halox_md_config_t *c = &o->cfg;
    const int launched = launched_processes();
    char how[160];
    tool_launch_describe(how, sizeof how);
    if (launched > 1 && halox_md_config_device(c) == HALOX_MD_DEVICE_CPU) {
        if (!halox_transport_available("mpi"))
            return bad("%s, but this build has no MPI (see --version): start one process "
                       "without mpirun (--grid NXxNYxNZ runs the ranks as threads)",
                       how);
        if (!o->set_transport) {
            c->transport = "mpi";
            snprintf(o->auto_why, sizeof o->auto_why,
                     "mpi: %s, one rank per process, on the CPU engine", how);
        } else if (!strcmp(c->transport, "threads")) {
            return bad("%s runs every rank as a thread of one process, but halox-md was %s: "
                       "each process would run its own copy of the job. %s",
                       o->transport_from_env ? "HALOX_TRANSPORT=threads" : "--transport threads",
                       how,
                       o->transport_from_env
                           ? "Unset HALOX_TRANSPORT or add --transport mpi (one rank per "
                             "process), or start one process without mpirun"
                           : "Use --transport mpi (one rank per process), or start one process "
                             "without mpirun");
        }
    }
    const int processes = !strcmp(c->transport, "mpi") || halox_transport_on_gpu(c->transport);
    if (processes && launched > 0 && launched != ranks) {
        halox_grid_t g;
        halox_grid_default(launched, &g);
        const char *var = NULL;
        tool_launched_processes_var(&var);
        return bad("grid %dx%dx%d has %d ranks but %d MPI processes were started (%s=%d): "
                   "start with mpirun -np %d, or give a --grid of %d ranks (such as %dx%dx%d)",
                   c->grid.n[0], c->grid.n[1], c->grid.n[2], ranks, launched, var, launched, ranks,
                   launched, g.n[0], g.n[1], g.n[2]);
    }
    return 0;
}

/* Returns 0 to run, 1 to exit 0 (help, version), 2 on a usage error. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    memset(o, 0, sizeof *o);
    halox_md_config_default(&o->cfg);
    o->progress = 1;
    const char *env = getenv("HALOX_TRANSPORT");
    if (env && *env) {
        o->cfg.transport = env;
        o->set_transport = 1;
        o->transport_from_env = 1;
    }
    env = getenv("HALOX_DEVICE");
    if (env && *env && !parse_device(env, &o->cfg.device))
        return bad("HALOX_DEVICE='%s': use gpu, cpu or auto", env);
    /* read by the GPU transports only, but a misspelt value must not pass silently elsewhere */
    env = getenv("HALOX_CPU_AFFINITY");
    if (env && *env && strcmp(env, "gpu") && strcmp(env, "off") && strcmp(env, "0"))
        return bad("HALOX_CPU_AFFINITY='%s': use gpu (cores near the rank's GPU) or off", env);
    env = getenv("HALOX_LOG_LEVEL");
    if (env && *env) {
        long long level = 0;
        if (!parse_ll(env, 0, 3, &level))
            return bad("HALOX_LOG_LEVEL='%s': use 0 (errors only) or 1 (normal)", env);
        o->quiet = level == 0; /* like --quiet */
    }
    /* presets first, wherever they stand, so that every other option overrides them */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--preset")) {
            if (i + 1 >= argc)
                return bad("--preset needs a name (lammps-lj or water-density)");
            if (halox_md_config_preset(&o->cfg, argv[i + 1]) != HALOX_OK)
                return bad("%s", halox_last_error());
            o->physics_option = o->physics_option ? o->physics_option : "--preset";
            i++;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        halox_md_config_t *c = &o->cfg;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        }
        if (!strcmp(a, "--version")) {
            version();
            return 1;
        }
        if (!strcmp(a, "--help-env")) {
            tool_print_env();
            return 1;
        }
        if (is_physics(a) && !o->physics_option)
            o->physics_option = a;
        /* flags */
        if (!strcmp(a, "--shift")) {
            c->shift = 1;
            continue;
        } else if (!strcmp(a, "--no-shift")) {
            c->shift = 0;
            continue;
        } else if (!strcmp(a, "--tail")) {
            c->tail = 1;
            continue;
        } else if (!strcmp(a, "--no-tail")) {
            c->tail = 0;
            continue;
        } else if (!strcmp(a, "--rebuild-check")) {
            c->rebuild_check = 1;
            continue;
        } else if (!strcmp(a, "--no-rebuild-check")) { /* a preset's check off */
            c->rebuild_check = 0;
            continue;
        } else if (!strcmp(a, "--autotune")) {
            o->autotune = o->autotune ? o->autotune : 50;
            continue;
        } else if (!strcmp(a, "--graph")) {
            c->graph = 1;
            continue;
        } else if (!strcmp(a, "--tma")) {
            /* read by the NVSHMEM transports at endpoint creation (documented in the env table) */
            setenv("HALOX_NVSHMEM_TMA", "1", 1);
            continue;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        } else if (!strcmp(a, "--no-progress")) {
            o->progress = 0;
            continue;
        } else if (!strcmp(a, "--new-velocities")) {
            c->read_new_velocities = 1;
            o->set_new_velocities = 1;
            continue;
        }
        /* options with a value */
        static const char *const with_value[] = {"--preset",
                                                 "--lattice",
                                                 "--density",
                                                 "--cells",
                                                 "--atoms",
                                                 "--read",
                                                 "--box",
                                                 "--temp",
                                                 "--seed",
                                                 "--cutoff",
                                                 "--skin",
                                                 "--dt",
                                                 "--steps",
                                                 "--rebuild-every",
                                                 "--verlet-tolerance",
                                                 "--thermo-every",
                                                 "--ensemble",
                                                 "--tau",
                                                 "--equilibrate",
                                                 "--grid",
                                                 "--transport",
                                                 "--device",
                                                 "--precision",
                                                 "--timeout",
                                                 "--json",
                                                 "--csv",
                                                 "--xyz",
                                                 "--xyz-every",
                                                 "--traj",
                                                 "--traj-every",
                                                 "--read-frame",
                                                 "--checkpoint",
                                                 "--checkpoint-every",
                                                 "--overlap-probe",
                                                 "--restart",
                                                 "--autotune-steps",
                                                 NULL};
        int known = 0;
        for (int k = 0; with_value[k]; k++)
            known |= !strcmp(a, with_value[k]);
        if (!known) {
            if (a[0] == '-')
                return bad("unknown option '%s' (see --help)", a);
            return bad("unexpected argument '%s' (options start with --; see --help)", a);
        }
        if (!v || (v[0] == '-' && v[1] == '-'))
            return bad("%s needs a value (see --help)", a);
        i++;
        double d;
        long long n;
        if (!strcmp(a, "--preset")) {
            /* applied above */
        } else if (!strcmp(a, "--lattice")) {
            if (strcmp(v, "fcc"))
                return bad("--lattice '%s': only fcc is supported", v);
            c->source = HALOX_MD_FCC;
            o->set_lattice = 1;
        } else if (!strcmp(a, "--density")) {
            if (!parse_double(v, &d) || d <= 0)
                return bad("--density '%s': give a number > 0", v);
            c->density = d;
            o->set_density = 1;
        } else if (!strcmp(a, "--cells")) {
            if (!parse_triple_int(v, c->cells))
                return bad("--cells '%s': give NX,NY,NZ, each from 1 to 100000", v);
            c->source = HALOX_MD_FCC;
            o->set_cells = 1;
        } else if (!strcmp(a, "--atoms")) {
            if (!parse_ll(v, 2, 2147483647LL, &n))
                return bad("--atoms '%s': give a count from 2 to 2147483647", v);
            c->natoms = n;
            c->source = HALOX_MD_RANDOM;
            o->set_atoms = 1;
        } else if (!strcmp(a, "--read")) {
            c->read_path = v;
            c->source = HALOX_MD_READ;
            o->set_read = 1;
        } else if (!strcmp(a, "--box")) {
            if (!parse_triple_double(v, c->box))
                return bad("--box '%s': give LX,LY,LZ, each > 0", v);
            o->set_box = 1;
        } else if (!strcmp(a, "--temp")) {
            if (!parse_double(v, &d) || d < 0)
                return bad("--temp '%s': give a temperature >= 0", v);
            c->temp = d;
            o->set_temp = 1;
        } else if (!strcmp(a, "--seed")) {
            if (!tool_parse_seed(v, &c->seed))
                return bad("--seed '%s': give %s", v, TOOL_SEED_RANGE);
        } else if (!strcmp(a, "--cutoff")) {
            if (!parse_double(v, &d) || d <= 0)
                return bad("--cutoff '%s': give a number > 0", v);
            c->cutoff = d;
        } else if (!strcmp(a, "--skin")) {
            if (!parse_double(v, &d) || d < 0)
                return bad("--skin '%s': give a number >= 0", v);
            c->skin = d;
            o->set_skin = 1;
        } else if (!strcmp(a, "--dt")) {
            if (!parse_double(v, &d) || d <= 0)
                return bad("--dt '%s': give a number > 0", v);
            c->dt = d;
        } else if (!strcmp(a, "--steps")) {
            if (!parse_ll(v, 0, 1000000000000LL, &n))
                return bad("--steps '%s': give a number >= 0", v);
            c->steps = n;
            o->set_steps = 1;
        } else if (!strcmp(a, "--rebuild-every")) {
            if (!parse_ll(v, 1, 1000000000, &n))
                return bad("--rebuild-every '%s': give a number >= 1", v);
            c->rebuild_every = (int)n;
            o->set_rebuild_every = 1;
        } else if (!strcmp(a, "--verlet-tolerance")) {
            if (!parse_double(v, &d) || d <= 0)
                return bad("--verlet-tolerance '%s': give a finite energy drift > 0, energy per "
                           "atom per unit time in reduced units (such as 1e-4)",
                           v);
            c->verlet_tolerance = d;
        } else if (!strcmp(a, "--thermo-every")) {
            if (!parse_ll(v, 1, 1000000000, &n))
                return bad("--thermo-every '%s': give a number >= 1", v);
            c->thermo_every = (int)n;
        } else if (!strcmp(a, "--ensemble")) {
            if (!strcmp(v, "nve") || !strcmp(v, "NVE"))
                c->ensemble = HALOX_MD_NVE;
            else if (!strcmp(v, "nvt") || !strcmp(v, "NVT"))
                c->ensemble = HALOX_MD_NVT;
            else
                return bad("--ensemble '%s': use nve or nvt", v);
        } else if (!strcmp(a, "--tau")) {
            if (!parse_double(v, &d) || d <= 0)
                return bad("--tau '%s': give a time constant > 0", v);
            c->tau = d;
        } else if (!strcmp(a, "--equilibrate")) {
            if (!parse_ll(v, 0, 1000000000, &n))
                return bad("--equilibrate '%s': give a number of steps from 0 (none) to "
                           "1000000000",
                           v);
            c->equilibrate = (int)n;
        } else if (!strcmp(a, "--grid")) {
            if (halox_grid_parse(v, &c->grid) != HALOX_OK)
                return bad("--grid: %s", halox_last_error());
            o->set_grid = 1;
        } else if (!strcmp(a, "--transport")) {
            c->transport = v;
            o->set_transport = 1;
            o->transport_from_env = 0;
        } else if (!strcmp(a, "--device")) {
            if (!parse_device(v, &c->device))
                return bad("--device '%s': use gpu, cpu or auto", v);
        } else if (!strcmp(a, "--precision")) {
            if (!strcmp(v, "float") || !strcmp(v, "single"))
                c->real = HALOX_FLOAT;
            else if (!strcmp(v, "double"))
                c->real = HALOX_DOUBLE;
            else
                return bad("--precision '%s': use float or double", v);
            o->set_precision = 1;
        } else if (!strcmp(a, "--autotune-steps")) {
            if (!parse_ll(v, 10, 100000, &n))
                return bad("--autotune-steps '%s': give a number of steps from 10 to 100000", v);
            o->autotune = (int)n;
        } else if (!strcmp(a, "--timeout")) {
            if (!parse_double(v, &d) || d <= 0 || d > HALOX_TIMEOUT_MAX_S)
                return bad("--timeout '%s': give seconds > 0 and at most %g", v,
                           HALOX_TIMEOUT_MAX_S);
            c->timeout_s = d;
        } else if (!strcmp(a, "--json")) {
            c->json_path = v;
        } else if (!strcmp(a, "--csv")) {
            c->csv_path = v;
        } else if (!strcmp(a, "--xyz") || !strcmp(a, "--traj")) {
            /* one trajectory file: --xyz writes extended XYZ whatever the name (as it always
             * did), --traj the format its name asks for */
            if (o->traj_option && strcmp(o->traj_option, a))
                return bad("%s and %s both name a trajectory: give one (--traj FILE.xyz or "
                           "--traj FILE.lammpstrj)",
                           o->traj_option, a);
            halox_md_traj_format_t f = halox_md_traj_format_by_name(v);
            if (!strcmp(a, "--traj") && f == HALOX_MD_TRAJ_AUTO)
                return bad("--traj '%s': the name says no format: end it in .xyz or .extxyz "
                           "(extended XYZ), or .lammpstrj, .lammpsdump or .dump (LAMMPS text "
                           "dump)",
                           v);
            c->xyz_path = v;
            c->traj_format = !strcmp(a, "--xyz") ? HALOX_MD_TRAJ_XYZ : f;
            o->traj_option = a;
        } else if (!strcmp(a, "--xyz-every") || !strcmp(a, "--traj-every")) {
            if (!parse_ll(v, 0, 1000000000, &n))
                return bad("%s '%s': give a number >= 0", a, v);
            c->xyz_every = (int)n;
            o->every_option = a;
        } else if (!strcmp(a, "--read-frame")) {
            if (!strcmp(v, "last"))
                c->read_frame = HALOX_MD_READ_LAST;
            else if (parse_ll(v, 0, 1000000000000LL, &n))
                c->read_frame = n;
            else
                return bad("--read-frame '%s': give a frame number from 0 (the first) or last", v);
            o->set_read_frame = 1;
        } else if (!strcmp(a, "--checkpoint")) {
            c->checkpoint_path = v;
        } else if (!strcmp(a, "--checkpoint-every")) {
            if (!parse_ll(v, 0, 1000000000000LL, &n))
                return bad("--checkpoint-every '%s': give a number >= 0", v);
            c->checkpoint_every = n;
        } else if (!strcmp(a, "--restart")) {
            c->restart_path = v;
        } else if (!strcmp(a, "--overlap-probe")) {
            if (!parse_ll(v, 0, 1000000, &n))
                return bad("--overlap-probe '%s': give a number of repetitions from 0 (off) to "
                           "1000000",
                           v);
            c->overlap_probe = (int)n;
        }
    }
    halox_md_config_t *c = &o->cfg;
    /* combinations */
    if (o->set_read && (o->set_lattice || o->set_cells || o->set_atoms || o->set_density))
        return bad("--read takes the atoms from the file: it cannot be combined with "
                   "--lattice, --cells, --atoms or --density");
    if (o->set_atoms && (o->set_lattice || o->set_cells))
        return bad("--atoms places atoms at random; --lattice/--cells build an fcc lattice: "
                   "give one or the other");
    if (o->set_box && c->source != HALOX_MD_READ)
        return bad("--box is for --read (fcc and random systems get their box from the density)");
    if (c->xyz_every > 0 && !c->xyz_path)
        return bad("%s needs --xyz FILE or --traj FILE", o->every_option);
    if (c->checkpoint_every > 0 && !c->checkpoint_path)
        return bad("--checkpoint-every needs --checkpoint FILE");
    if ((o->set_read_frame || o->set_new_velocities) && !o->set_read)
        return bad("%s is for --read FILE",
                   o->set_read_frame ? "--read-frame" : "--new-velocities");
    /* the frame, its format and whether it has velocities, for the banner (and a frame beyond
     * the file's last refused now) */
    if (o->set_read && !c->restart_path &&
        halox_md_read_probe(c->read_path, c->read_frame, &o->read) != HALOX_OK)
        return bad("%s", halox_last_error());
    if (c->restart_path) {
        if (o->physics_option)
            return bad("%s cannot be combined with --restart: the checkpoint fixes the system "
                       "and every setting of the trajectory (change only --steps, output, "
                       "--grid, --transport)",
                       o->physics_option);
        if (!o->set_steps)
            return bad("--restart needs --steps: the last step to run to");
        halox_md_checkpoint_info_t info;
        if (halox_md_checkpoint_probe(c->restart_path, &info) != HALOX_OK)
            return bad("%s", halox_last_error());
        if (o->set_precision && c->real != info.real)
            return bad("the checkpoint '%s' holds %s-precision data: --precision %s cannot "
                       "restart it",
                       c->restart_path, info.real == HALOX_DOUBLE ? "double" : "single",
                       c->real == HALOX_DOUBLE ? "double" : "float");
        c->real = info.real;
        if (!o->set_grid)
            c->grid = info.grid;
        if (c->steps < info.step)
            return bad("the checkpoint '%s' is at step %lld, after --steps %lld: give --steps "
                       ">= %lld",
                       c->restart_path, info.step, c->steps, info.step);
    }
    /* the device and the transport. auto without a transport: the GPU engine when a GPU is
     * visible, the precision is float and the ranks can run as processes (one rank, or started
     * by an MPI launcher with one process per rank); otherwise auto follows the transport.
     * The GPU engine without a transport takes nccl when every rank has its own GPU, else
     * mpi-staged (NCCL refuses ranks that share a GPU). */
    /* no --grid under an MPI launcher: one rank per process, on the default grid */
    if (!o->set_grid && !c->restart_path && launched_processes() > 1)
        halox_grid_default(launched_processes(), &c->grid);
    const int ranks = halox_grid_size(&c->grid);
    if (c->device == HALOX_MD_DEVICE_AUTO && !o->set_transport && c->real == HALOX_FLOAT &&
        halox_transport_available("mpi-staged") && (ranks == 1 || launched_processes() == ranks) &&
        halox_gpu_count() > 0)
        c->device = HALOX_MD_DEVICE_GPU;
    if (c->device == HALOX_MD_DEVICE_GPU && !o->set_transport) {
        /* the job's shape as far as it is known before MPI starts: the launcher's local rank
         * count (unknown: one node), the visible GPUs, their peer access */
        halox_topology_t t;
        halox_topology_guess(ranks, launched_local_processes(), 1, &t);
        c->transport = halox_transport_choose(&t, c->natoms, o->auto_why, sizeof o->auto_why);
    }
    if (launch_resolve(o, ranks))
        return 2;
    int gpu_transports = 0; /* compiled in: a CUDA build with MPI */
    for (const char *const *t = halox_transport_names(); *t; t++)
        gpu_transports += halox_transport_on_gpu(*t);
    if (c->device == HALOX_MD_DEVICE_GPU &&
        (!gpu_transports || !halox_transport_available(c->transport)))
        return bad("--device gpu needs a CUDA build with MPI (GPU transports: mpi-staged, nccl, "
                   "nvshmem-*; see --version)");
    if (c->device == HALOX_MD_DEVICE_GPU && !halox_transport_on_gpu(c->transport))
        return bad("--device gpu runs on a GPU transport (mpi-staged, nccl, nvshmem-*), not '%s'",
                   c->transport);
    if (c->device == HALOX_MD_DEVICE_CPU && halox_transport_on_gpu(c->transport))
        return bad("--device cpu runs on the threads or mpi transport, not '%s'", c->transport);
    if (o->autotune && o->set_transport)
        return bad("--autotune chooses the transport itself: leave out --transport (and unset "
                   "HALOX_TRANSPORT)");
    if (o->autotune && c->restart_path)
        return bad("--autotune measures new runs: it cannot be combined with --restart");
    if (o->autotune && halox_md_config_device(c) == HALOX_MD_DEVICE_CPU && ranks > 1 &&
        launched_processes() != ranks)
        return bad("--autotune measures the MPI transports: start the %d ranks with mpirun -np %d",
                   ranks, ranks);
    if (o->autotune && halox_md_config_device(c) == HALOX_MD_DEVICE_CPU &&
        launched_processes() == ranks && ranks > 1)
        c->transport = "mpi"; /* the candidates run as MPI processes */
    if (halox_md_config_device(c) == HALOX_MD_DEVICE_GPU && c->real != HALOX_FLOAT)
        return bad("the GPU engine runs in single precision: use --precision float (or --device "
                   "cpu)");
    /* the pair-list buffer for the drift tolerance: what --skin / --rebuild-every did not give
     * (a restart was refused above: the checkpoint fixes both) */
    if (c->verlet_tolerance > 0) {
        double rho = 0; /* fcc and random: cfg->density; a file: its atoms in its box */
        if (c->source == HALOX_MD_READ) {
            const double *bx = o->read.has_box ? o->read.box : c->box;
            const double vol = bx[0] * bx[1] * bx[2];
            if (!(vol > 0 && isfinite(vol)))
                return bad("--verlet-tolerance needs the density of the system: the file '%s' "
                           "has no box (give --box LX,LY,LZ)",
                           c->read_path);
            rho = (double)o->read.natoms / vol;
        }
        const unsigned keep = (o->set_skin ? HALOX_MD_VERLET_KEEP_SKIN : 0u) |
                              (o->set_rebuild_every ? HALOX_MD_VERLET_KEEP_REBUILD : 0u);
        if (halox_md_config_verlet(c, rho, keep, 0, &o->verlet) != HALOX_OK)
            return bad("%s", halox_last_error());
    }
    if (halox_md_config_check(c) != HALOX_OK)
        return bad("%s", halox_last_error());
    return 0;
}

/* ---- printing ----------------------------------------------------------------------------------
 */

typedef struct {
    const opts_t *o;
    int tty;
    int header_done;
    int progress_shown;
    double last_progress;
    long long first_step;
} printer_t;

static void clear_progress(printer_t *p)
{
    if (p->progress_shown) {
        printf("\r\033[K");
        p->progress_shown = 0;
    }
}

static void on_thermo(void *user, const halox_md_thermo_t *r)
{
    printer_t *p = user;
    if (p->o->quiet)
        return;
    clear_progress(p);
    if (!p->header_done) {
        printf("%10s %14s %14s %14s %14s %14s\n", "Step", "Temp", "E_pair", "KE", "TotEng",
               "Press");
        p->header_done = 1;
    }
    printf("%10lld %14.8g %14.8g %14.8g %14.8g %14.8g\n", r->step, r->temp, r->pe, r->ke, r->etotal,
           r->press);
    fflush(stdout);
}

static void on_progress(void *user, long long step, long long last, double seconds)
{
    printer_t *p = user;
    if (p->first_step < 0)
        p->first_step = step - 1;
    if (!p->tty || p->o->quiet || !p->o->progress || seconds < 1.0 ||
        seconds - p->last_progress < 0.5)
        return;
    p->last_progress = seconds;
    double rate = (double)(step - p->first_step) / seconds;
    double eta = rate > 0 ? (double)(last - step) / rate : 0;
    printf("\r\033[K  step %lld / %lld (%.0f%%), %.1f steps/s, %.0f s left", step, last,
           last > 0 ? 100.0 * (double)step / (double)last : 100.0, rate, eta);
    p->progress_shown = 1;
    fflush(stdout);
}

static void on_notice(void *user, const char *text)
{
    printer_t *p = user;
    clear_progress(p);
    printf("halox-md: %s\n", text);
    fflush(stdout);
}

/* --read: the file, the frame read and where the velocities come from */
static void print_read(const opts_t *o)
{
    const halox_md_config_t *c = &o->cfg;
    const halox_md_read_info_t *r = &o->read;
    printf("system: read from %s (%s), frame %lld%s of %lld (from 0%s)", c->read_path,
           r->format == HALOX_MD_TRAJ_LAMMPS ? "LAMMPS dump" : "XYZ", r->frame,
           r->frame == r->nframes - 1 && r->nframes > 1 ? " = the last" : "", r->nframes,
           o->set_read_frame ? "" : "; --read-frame N reads another");
    if (r->step >= 0)
        printf(", step %lld", r->step);
    printf(", %lld atoms\n", r->natoms);
    if (o->set_box && r->has_box)
        printf("box: the file's, %g x %g x %g (--box is not used)\n", r->box[0], r->box[1],
               r->box[2]);
    if (r->velocities && !c->read_new_velocities)
        printf("velocities: the file's%s\n",
               c->ensemble == HALOX_MD_NVT ? " (--temp is the NVT target only)"
               : o->set_temp ? " (--temp is not used: add --new-velocities to draw them at --temp)"
                             : " (--new-velocities draws them at --temp instead)");
    else
        printf("velocities: drawn at T %g (%s)\n", c->temp,
               r->velocities ? "--new-velocities: the file's are not used" : "the frame has none");
}

static void print_banner(const opts_t *o, int nranks)
{
    const halox_md_config_t *c = &o->cfg;
    if (o->quiet)
        return;
    printf("halox-md %s", HALOX_VERSION_STRING);
    if (c->preset)
        printf(" (preset %s)", c->preset);
    printf("\nbuild: %s\n", tool_build_line());
    if (c->restart_path) {
        printf("system: restart from %s\n", c->restart_path);
    } else if (c->source == HALOX_MD_FCC) {
        printf("system: fcc lattice, density %g, %dx%dx%d unit cells = %lld atoms\n", c->density,
               c->cells[0], c->cells[1], c->cells[2],
               4LL * c->cells[0] * c->cells[1] * c->cells[2]);
    } else if (c->source == HALOX_MD_RANDOM) {
        printf("system: %lld atoms at random (no overlaps), density %g\n", c->natoms, c->density);
    } else {
        print_read(o);
    }
    if (!c->restart_path) {
        printf("potential: LJ 12-6, cut-off %g (%s, %s), skin %g, rebuild every %d steps%s\n",
               c->cutoff, c->shift ? "shifted" : "unshifted",
               c->tail ? "tail corrections" : "no tail corrections", c->skin, c->rebuild_every,
               c->rebuild_check ? " or when an atom moved more than skin/2" : "");
        const halox_md_verlet_t *vb = &o->verlet;
        if (vb->tolerance > 0)
            printf("Verlet buffer: %s, estimated drift by missed pairs %.3g %s the tolerance "
                   "%g (energy per atom per unit time; ballistic at T %g, density %g; "
                   "cost model: a rebuild = %g steps)\n",
                   vb->chose_skin && vb->chose_rebuild ? "skin and rebuild interval chosen"
                   : vb->chose_skin                    ? "skin chosen (--rebuild-every given)"
                   : vb->chose_rebuild                 ? "rebuild interval chosen (--skin given)"
                                       : "--skin and --rebuild-every given, nothing chosen",
                   vb->drift, vb->drift <= vb->tolerance ? "<=" : "ABOVE", vb->tolerance, vb->temp,
                   vb->density, vb->rebuild_cost);
        printf("dynamics: velocity Verlet, dt %g, %s", c->dt,
               c->ensemble == HALOX_MD_NVT ? "NVT (stochastic velocity rescaling)" : "NVE");
        if (c->ensemble == HALOX_MD_NVT)
            printf(", T %g, tau %g", c->temp, c->tau);
        else if (c->source == HALOX_MD_READ && o->read.velocities && !c->read_new_velocities)
            printf(", velocities from the file");
        else
            printf(", initial T %g", c->temp);
        printf(", seed %llu\n", (unsigned long long)c->seed);
        if (c->equilibrate > 0)
            printf("equilibration: %d steps of NVT at T %g (tau %g) before step 0, then "
                   "velocities at exactly T %g; not timed, not counted\n",
                   c->equilibrate, c->temp, HALOX_MD_EQUILIBRATE_TAU_STEPS * c->dt, c->temp);
    }
    printf("run: steps up to %lld, grid %dx%dx%d (%d rank%s), transport %s, precision %s, "
           "device %s\n",
           c->steps, c->grid.n[0], c->grid.n[1], c->grid.n[2], nranks, nranks > 1 ? "s" : "",
           c->transport, c->real == HALOX_DOUBLE ? "double" : "float",
           halox_md_config_device(c) == HALOX_MD_DEVICE_GPU ? "gpu" : "cpu");
    if (o->auto_why[0])
        printf("transport chosen automatically: %s\n", o->auto_why);
    printf("units: reduced LJ; pressure includes the kinetic part with 3N-3 degrees of freedom\n");
    fflush(stdout);
}

/* Mean temperature of the thermo records of the steps the run integrated (the record of its
 * first step is the state it started from); the number of records, 0 when none. */
static int run_mean_temp(const halox_md_result_t *res, double *mean_p)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < res->n_thermo; i++)
        if (res->thermo[i].step > res->summary.first_step) {
            sum += res->thermo[i].temp;
            n++;
        }
    *mean_p = n > 0 ? sum / n : 0.0;
    return n;
}

static void print_summary(const halox_md_result_t *res)
{
    const halox_md_summary_t *s = &res->summary;
    printf("\nSummary\n");
    printf("  atoms %lld, ranks %d (grid %dx%dx%d), transport %s, precision %s\n", s->natoms,
           s->nranks, s->grid.n[0], s->grid.n[1], s->grid.n[2], s->transport,
           s->real == HALOX_DOUBLE ? "double" : "float");
    printf("  steps %lld (%lld -> %lld) in %.3f s: %.3f ms/step, %.1f steps/s%s\n", s->steps,
           s->first_step, s->last_step, s->loop_seconds, s->ms_per_step, s->steps_per_second,
           s->interrupted ? " (stopped on request)" : "");
    if (s->fs_per_step > 0)
        printf("  %.2f ns/day (convention: %g fs per step)\n", s->ns_per_day, s->fs_per_step);
    double tmean;
    const int nt = run_mean_temp(res, &tmean);
    if (nt > 0)
        printf("  temperature %.6g: mean of the %d thermo record%s of steps %lld to %lld\n", tmean,
               nt, nt > 1 ? "s" : "", s->first_step + 1, s->last_step);
    if (s->equilibrate_steps > 0)
        printf("  equilibration: %lld steps before step 0 in %.3f s, outside every timing here\n",
               s->equilibrate_steps, s->equilibrate_seconds);
    printf("  set-up %.3f s; %lld rebuilds, %lld atoms migrated, %.0f halo atoms per rank, "
           "%.0f pairs in the lists\n",
           s->setup_seconds, s->rebuilds, s->migrated, s->halo_atoms, s->pairs);
    if (s->graph_steps > 0)
        printf("  CUDA graphs: %lld of %lld steps replayed as a graph\n", s->graph_steps, s->steps);
    if (s->device_bytes > 0)
        printf("  NVSHMEM symmetric memory: %.1f MiB per rank (NVSHMEM_SYMMETRIC_SIZE must hold "
               "it)\n",
               (double)s->device_bytes / 1048576.0);
    if (s->overlap_reps > 0)
        printf("  overlap probe (%d repetitions, median of the slowest rank): local forces %.4f "
               "ms, halo %.4f ms, both %.4f ms: %.1f%% of the halo overlapped\n",
               s->overlap_reps, s->overlap_local_ms, s->overlap_halo_ms, s->overlap_both_ms,
               s->overlap_percent);
    if (s->steps == 0) {
        printf("  (no steps integrated: no timings)\n");
        fflush(stdout);
        return;
    }
    if (s->graph_steps > 0) {
        /* a replayed graph is timed only as a whole: a split of the other steps alone would be
         * read as the split of the run */
        printf("\n  time split: not measured under --graph (%lld of %lld steps ran as graphs, "
               "timed only as a whole); run without --graph for the split\n",
               s->graph_steps, s->steps);
        fflush(stdout);
        return;
    }
    double total = 0; /* the parts as measured, then less what ran at the same time: the wall */
    for (int t = 0; t < HALOX_MD_T_COUNT; t++)
        total += s->timer_seconds[t];
    const double wall = total - s->concurrent_seconds;
    double per = 1e3 / (double)s->steps;
    printf("\n  %-20s %12s %9s %16s\n", "part (mean of ranks)", "ms/step", "percent",
           "slowest ms/step");
    for (int t = 0; t < HALOX_MD_T_COUNT; t++)
        printf("  %-20s %12.4f %8.1f%% %16.4f\n", halox_md_timer_name((halox_md_timer_t)t),
               s->timer_seconds[t] * per, wall > 0 ? 100.0 * s->timer_seconds[t] / wall : 0.0,
               s->timer_max_seconds[t] * per);
    if (s->concurrent_seconds > 0)
        printf("  %-20s %12.4f %8.1f%%   (parts that ran at the same time on the GPU)\n",
               "concurrent", -s->concurrent_seconds * per,
               wall > 0 ? -100.0 * s->concurrent_seconds / wall : 0.0);
    printf("  %-20s %12.4f %8.1f%%\n", "total", wall * per, wall > 0 ? 100.0 : 0.0);
    fflush(stdout);
}

/* ---- main --------------------------------------------------------------------------------------
 */

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

int main(int argc, char **argv)
{
    opts_t o;
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc == 1 ? 0 : 2;
    const halox_md_config_t *cfg = &o.cfg;
    int P = halox_grid_size(&cfg->grid);
    /* the CPU engine on mpi and the GPU engine (GPU transports) run one process per rank */
    int use_mpi = !strcmp(cfg->transport, "mpi") || halox_transport_on_gpu(cfg->transport);
    int my_rank = 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    /* under mpirun stdout may be a pseudo-terminal whatever the user's is: no progress there */
    printer_t pr = {.o = &o, .tty = isatty(STDOUT_FILENO) && !use_mpi, .first_step = -1};
    halox_md_hooks_t hooks = {.thermo = on_thermo,
                              .progress = on_progress,
                              .notice = on_notice,
                              .stop = stop_requested,
                              .user = &pr};
    halox_md_result_t res;
    memset(&res, 0, sizeof res);
    halox_status_t st;
    if (!use_mpi) {
        if (strcmp(cfg->transport, "threads") != 0) {
            fprintf(stderr,
                    "halox-md: the CPU engine runs on the threads or mpi transport, not '%s'\n",
                    cfg->transport);
            return 2;
        }
        print_banner(&o, P);
        st = halox_md_threads_run(cfg, &hooks, &res);
    } else {
#ifdef HALOX_HAVE_MPI
        MPI_Init(&argc, &argv);
        /* MPI_Init may install its own handlers: ours decide how a run stops */
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGTERM, &sa, NULL);
        int nproc = 1;
        MPI_Comm_rank(MPI_COMM_WORLD, &my_rank);
        MPI_Comm_size(MPI_COMM_WORLD, &nproc);
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
            print_banner(&o, P);
        else
            o.quiet = 1;
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
            else if (md_autotune(cfg, sys, o.autotune, my_rank, my_rank == 0 && !o.quiet,
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
            st = report_affinity(comm, my_rank == 0 && !o.quiet);
        if (st == HALOX_OK) {
            st = halox_md_rank_run(cfg, comm, sys, &hooks, &res);
        } else if (!res.error[0]) {
            res.status = st;
            snprintf(res.error, sizeof res.error, "rank %d: %s", my_rank, halox_last_error());
        }
        halox_md_system_destroy(sys);
        if (st != HALOX_OK) {
            /* the rank that failed first explains why; the others only followed */
            if (st != HALOX_ERR_ABORTED || my_rank == 0)
                fprintf(stderr, "halox-md: %s\n", res.error);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        halox_comm_destroy(comm);
#else
        fprintf(stderr, "halox-md: this build has no MPI (see --version)\n");
        return 2;
#endif
    }
    clear_progress(&pr);
    int code = 0;
    if (my_rank == 0) {
        if (st != HALOX_OK) {
            fprintf(stderr, "halox-md: %s\n", res.error);
            /* bad input (files, settings) is a usage error; the rest failed at run time (a
             * failed write of an output file, HALOX_ERR_WRITE, too) */
            code =
                st == HALOX_ERR_INVALID_ARG || st == HALOX_ERR_IO || st == HALOX_ERR_DECOMPOSITION
                    ? 2
                    : 1;
        } else if (!o.quiet) {
            print_summary(&res);
        }
    }
    halox_md_result_free(&res);
#ifdef HALOX_HAVE_MPI
    if (use_mpi)
        MPI_Finalize();
#endif
    return code;
}
