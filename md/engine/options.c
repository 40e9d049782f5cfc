/* The engine's settings by name: the table (parsing, help, what a restart cannot take) and the
 * application of one setting to a configuration. The checks across settings are in setup.c. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/md_options.h"
#include "halox/status.h"

#define P 1 /* physics: a restart cannot take it */

static const halox_md_option_t md__options[] = {
    {"--preset", "NAME", HALOX_MD_GROUP_SYSTEM, P, NULL, "a preset (listed above)"},
    {"--lattice", "fcc", HALOX_MD_GROUP_SYSTEM, P, "--lattice fcc",
     "fcc lattice (the default) with --density and --cells"},
    {"--density", "RHO", HALOX_MD_GROUP_SYSTEM, P, "--density RHO",
     "number density (default 0.8442)"},
    {"--cells", "NX,NY,NZ", HALOX_MD_GROUP_SYSTEM, P, "--cells NX,NY,NZ",
     "fcc unit cells per dimension, 4 atoms each (default 10,10,10)"},
    {"--atoms", "N", HALOX_MD_GROUP_SYSTEM, P, "--atoms N",
     "N atoms placed at random without overlaps at --density"},
    {"--read", "FILE", HALOX_MD_GROUP_SYSTEM, P, "--read FILE",
     "atoms from an extended-XYZ file (box from its\n"
     "Lattice=\"LX 0 0 0 LY 0 0 0 LZ\" or --box) or a LAMMPS text\n"
     "dump (told apart by content); its velocities where the\n"
     "frame has them (XYZ velo/vel/momenta, dump vx vy vz)"},
    {"--read-frame", "N|last", HALOX_MD_GROUP_SYSTEM, P, "--read-frame N|last",
     "frame of --read to start from, from 0 (default: last, what\n"
     "a run continues from); the banner says which was read"},
    {"--new-velocities", NULL, HALOX_MD_GROUP_SYSTEM, P, "--new-velocities",
     "draw velocities at --temp even when the frame has its own"},
    {"--box", "LX,LY,LZ", HALOX_MD_GROUP_SYSTEM, P, "--box LX,LY,LZ",
     "box for --read when the file has no Lattice"},
    {"--temp", "T", HALOX_MD_GROUP_SYSTEM, P, "--temp T",
     "initial temperature (velocities drawn where --read gives\n"
     "none), and the NVT target (default 1.44)"},
    {"--seed", "S", HALOX_MD_GROUP_SYSTEM, P, "--seed S",
     "velocities, random placement, thermostat (default 87287)"},

    {"--cutoff", "RC", HALOX_MD_GROUP_POTENTIAL, P, "--cutoff RC",
     "Lennard-Jones cut-off (default 2.5)"},
    {"--shift", NULL, HALOX_MD_GROUP_POTENTIAL, P, "--shift | --no-shift",
     "energy shifted to zero at the cut-off (default: no)"},
    {"--no-shift", NULL, HALOX_MD_GROUP_POTENTIAL, P, NULL, NULL},
    {"--tail", NULL, HALOX_MD_GROUP_POTENTIAL, P, "--tail | --no-tail",
     "analytic long-range corrections to energy and pressure (no)"},
    {"--no-tail", NULL, HALOX_MD_GROUP_POTENTIAL, P, NULL, NULL},
    {"--skin", "S", HALOX_MD_GROUP_POTENTIAL, P, "--skin S",
     "pair-list skin; halo distance = cut-off + skin (default 0.3)"},
    {"--rebuild-every", "K", HALOX_MD_GROUP_POTENTIAL, P, "--rebuild-every K",
     "lists, migration and plan every K steps (default 20)"},
    {"--rebuild-check", NULL, HALOX_MD_GROUP_POTENTIAL, P, "--rebuild-check",
     "rebuild as soon as an atom moved more than skin/2, else\n"
     "K steps after the last rebuild or after a checkpoint\n"
     "(CPU: one extra reduction per step; GPU: watched on the\n"
     "device, no host synchronisation); --no-rebuild-check: off"},
    {"--no-rebuild-check", NULL, HALOX_MD_GROUP_POTENTIAL, P, NULL, NULL},
    {"--verlet-tolerance", "E", HALOX_MD_GROUP_POTENTIAL, P, "--verlet-tolerance E",
     "choose the skin and the rebuild interval (those not given\n"
     "by --skin, --rebuild-every) for an estimated energy drift\n"
     "by missed pairs of at most E per atom per unit time (such\n"
     "as 1e-4), at --temp and the system's density (off unless\n"
     "given; printed at start, see docs/MD.md)"},

    {"--dt", "DT", HALOX_MD_GROUP_INTEGRATION, P, "--dt DT", "time step (default 0.005)"},
    {"--steps", "N", HALOX_MD_GROUP_INTEGRATION, 0, "--steps N",
     "last step (default 100; with --restart: required)"},
    {"--ensemble", "nve|nvt", HALOX_MD_GROUP_INTEGRATION, P, "--ensemble nve|nvt",
     "NVE, or NVT with stochastic velocity rescaling (Bussi 2007)"},
    {"--tau", "TAU", HALOX_MD_GROUP_INTEGRATION, P, "--tau TAU", "NVT time constant (default 0.1)"},
    {"--equilibrate", "N", HALOX_MD_GROUP_INTEGRATION, P, "--equilibrate N",
     "first N steps of NVT at --temp (tau 10 dt), numbered 1-N to\n"
     "0, then velocities scaled to exactly --temp: the run starts\n"
     "at step 0 from there; not timed, not counted, no output\n"
     "(default 0: none; water-density sets its own)"},

    {"--grid", "NXxNYxNZ", HALOX_MD_GROUP_PARALLEL, 0, "--grid NXxNYxNZ",
     "rank grid (default 1x1x1; under mpirun -np P the most\n"
     "cubic grid of P ranks: 2x1x1, 2x2x1, 2x2x2; NX,NY,NZ reads\n"
     "the same); --transport mpi needs as many MPI processes\n"
     "(mpirun -np NX*NY*NZ)"},
    {"--transport", "NAME", HALOX_MD_GROUP_PARALLEL, 0, "--transport NAME",
     "threads or mpi (see --version); mpi-staged or nccl run the\n"
     "GPU engine (under mpirun, one GPU per rank; 1 rank: local\n"
     "copies); auto: the automatic choice, the default unless\n"
     "$HALOX_TRANSPORT names one (see --device; on the CPU engine\n"
     "threads, under mpirun mpi)"},
    {"--device", "gpu|cpu|auto", HALOX_MD_GROUP_PARALLEL, 0, "--device gpu|cpu|auto",
     "engine (default auto, or $HALOX_DEVICE): auto runs the GPU\n"
     "engine when a GPU is visible and no --transport is given\n"
     "(one rank, or one MPI process per rank), else follows the\n"
     "transport; without --transport the GPU engine takes the\n"
     "measured-fastest one for the job (nvshmem-fused when the\n"
     "GPUs reach each other by NVLink/P2P, else nccl or\n"
     "mpi-staged; printed at start) and runs in single precision;\n"
     "where no GPU is visible, gpu (or a GPU transport) stops at\n"
     "start, auto runs the CPU engine and says so"},
    {"--graph", NULL, HALOX_MD_GROUP_PARALLEL, 0, "--graph | --no-graph",
     "GPU engine: the steps between rebuilds replayed as a CUDA\n"
     "graph, the default wherever the transport can be captured\n"
     "(nccl, nvshmem-*); --graph adds a notice where it cannot;\n"
     "--no-graph: every step kernel by kernel (diagnosis: a stuck\n"
     "peer's pulse is named)"},
    {"--no-graph", NULL, HALOX_MD_GROUP_PARALLEL, 0, NULL, NULL},
    {"--precision", "P", HALOX_MD_GROUP_PARALLEL, 0, "--precision P",
     "float (default: positions and forces in single precision,\n"
     "energies in double) or double"},
    {"--timeout", "S", HALOX_MD_GROUP_PARALLEL, 0, "--timeout S",
     "bound on every wait for a peer, seconds (0 < S <= 1e6;\n"
     "default HALOX_TIMEOUT_S or 60)"},
    {"--overlap-probe", "R", HALOX_MD_GROUP_PARALLEL, 0, "--overlap-probe R",
     "after the last step, time R repetitions of the local forces\n"
     "alone, the halo exchange alone and both as a step runs them;\n"
     "the summary adds them and overlap % (halox-bench overlap)"},

    {"--thermo-every", "N", HALOX_MD_GROUP_OUTPUT, 0, "--thermo-every N",
     "thermo rows every N steps, plus the first and last\n"
     "(default 50; each preset's own is listed with it)"},
    {"--json", "FILE", HALOX_MD_GROUP_OUTPUT, 0, "--json FILE",
     "settings, thermo records and summary as JSON"},
    {"--csv", "FILE", HALOX_MD_GROUP_OUTPUT, 0, "--csv FILE",
     "thermo records as CSV: step,time,temp,pe,ke,etotal,press\n"
     "are the table's Step, (step x dt), Temp, E_pair, KE, TotEng,\n"
     "Press (energies per atom; the JSON keys are the CSV's)"},
    {"--traj", "FILE", HALOX_MD_GROUP_OUTPUT, 0, "--traj FILE",
     "trajectory, format by the name: FILE.xyz or .extxyz\n"
     "extended XYZ (OVITO, ASE; VMD without the box),\n"
     "FILE.lammpstrj, .lammpsdump or .dump LAMMPS text dump with\n"
     "the box (MDAnalysis, VMD, OVITO)"},
    {"--xyz", "FILE", HALOX_MD_GROUP_OUTPUT, 0, "--xyz FILE",
     "extended-XYZ trajectory, whatever the name"},
    {"--traj-every", "N", HALOX_MD_GROUP_OUTPUT, 0, "--traj-every N",
     "frame every N steps (default: first and last step only);\n"
     "--xyz-every N is the same option"},
    {"--xyz-every", "N", HALOX_MD_GROUP_OUTPUT, 0, NULL, NULL},
    {"--checkpoint", "FILE", HALOX_MD_GROUP_OUTPUT, 0, "--checkpoint FILE",
     "checkpoints (atomic): at the end, on SIGINT/SIGTERM, and\n"
     "with --checkpoint-every"},
    {"--checkpoint-every", "N", HALOX_MD_GROUP_OUTPUT, 0, "--checkpoint-every N",
     "at the first rebuild step boundary after every N steps"},
    {"--restart", "FILE", HALOX_MD_GROUP_OUTPUT, 0, "--restart FILE",
     "continue from a checkpoint up to --steps; bit-identical to\n"
     "an uninterrupted run on the same grid"},
    {NULL, NULL, 0, 0, NULL, NULL},
};

#undef P

/* halox_md_setup_t.given has one bit per entry */
_Static_assert(sizeof md__options / sizeof md__options[0] <= 64,
               "more settings than bits in halox_md_setup_t.given");

const halox_md_option_t *halox_md_options(void) { return md__options; }

static int md__option_index(const char *name)
{
    for (int i = 0; name && md__options[i].name; i++)
        if (!strcmp(md__options[i].name, name))
            return i;
    return -1;
}

const halox_md_option_t *halox_md_option_find(const char *name)
{
    int i = md__option_index(name);
    return i < 0 ? NULL : &md__options[i];
}

const char *halox_md_option_group_title(int group)
{
    static const char *const titles[HALOX_MD_GROUPS] = {"System (one of)", "Potential and lists",
                                                        "Integration", "Parallel run", "Output"};
    return group >= 0 && group < HALOX_MD_GROUPS ? titles[group] : "Other";
}

int halox_md_setup_given(const halox_md_setup_t *s, const char *name)
{
    int i = md__option_index(name);
    return i >= 0 && (s->given >> i & 1u);
}

void halox_md_setup_init(halox_md_setup_t *s)
{
    memset(s, 0, sizeof *s);
    halox_md_config_default(&s->cfg);
}

/* ---- values, parsed strictly: a misspelt number must never pass as something else ----------- */

int halox_parse_seed(const char *text, uint64_t *seed_p)
{
    /* strtoull alone takes "-1" (and " -1") as 2^64 - 1: the first character must be a digit */
    if (!text || *text < '0' || *text > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || errno || v > UINT64_MAX)
        return 0;
    *seed_p = (uint64_t)v;
    return 1;
}

static int md__double(const char *s, double *out)
{
    char *end;
    errno = 0;
    *out = strtod(s, &end);
    return end != s && *end == '\0' && isfinite(*out) && errno == 0;
}

static int md__ll(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

static int md__int3(const char *s, int out[3])
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

static int md__double3(const char *s, double out[3])
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

static int md__device(const char *v, halox_md_device_t *d)
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

#define BAD(...) halox_set_error(HALOX_ERR_INVALID_ARG, __VA_ARGS__)

/* The transport named by --transport or HALOX_TRANSPORT (checked by halox_md_setup_finish(),
 * where a later --transport has replaced a variable's): auto leaves it to the automatic choice,
 * as if none was named. */
static void md__transport(halox_md_setup_t *s, const char *v, int from_env)
{
    const uint64_t bit = UINT64_C(1) << md__option_index("--transport");
    halox_md_config_t d;
    halox_md_config_default(&d);
    const int chosen = !strcmp(v, "auto");
    s->cfg.transport = chosen ? d.transport : v;
    s->given = chosen ? s->given & ~bit : s->given | bit;
    s->transport_from_env = !chosen && from_env;
}

halox_status_t halox_md_setup_env(halox_md_setup_t *s)
{
    const char *env = halox_env_string("HALOX_TRANSPORT");
    if (env)
        md__transport(s, env, 1);
    env = halox_env_string("HALOX_DEVICE");
    if (env && !md__device(env, &s->cfg.device))
        return BAD("HALOX_DEVICE='%s' is not an engine: give gpu, cpu or auto, or unset it", env);
    return HALOX_OK;
}

/* Flags: no value. */
static halox_status_t md__flag(halox_md_setup_t *s, const char *a)
{
    halox_md_config_t *c = &s->cfg;
    if (!strcmp(a, "--shift") || !strcmp(a, "--no-shift"))
        c->shift = !strcmp(a, "--shift");
    else if (!strcmp(a, "--tail") || !strcmp(a, "--no-tail"))
        c->tail = !strcmp(a, "--tail");
    else if (!strcmp(a, "--rebuild-check") || !strcmp(a, "--no-rebuild-check"))
        c->rebuild_check = !strcmp(a, "--rebuild-check"); /* --no-: a preset's check off */
    else if (!strcmp(a, "--graph") || !strcmp(a, "--no-graph"))
        c->graph = !strcmp(a, "--graph") ? HALOX_MD_GRAPH_ON : HALOX_MD_GRAPH_OFF;
    else if (!strcmp(a, "--new-velocities"))
        c->read_new_velocities = 1;
    return HALOX_OK;
}

/* The system and the potential. */
static halox_status_t md__system(halox_md_setup_t *s, const char *a, const char *v, int *done)
{
    halox_md_config_t *c = &s->cfg;
    double d;
    long long n;
    *done = 1;
    if (!strcmp(a, "--preset")) {
        return halox_md_config_preset(c, v);
    } else if (!strcmp(a, "--lattice")) {
        if (strcmp(v, "fcc"))
            return BAD("--lattice '%s': only fcc is supported", v);
        c->source = HALOX_MD_FCC;
    } else if (!strcmp(a, "--density")) {
        if (!md__double(v, &d) || d <= 0)
            return BAD("--density '%s': give a number > 0", v);
        c->density = d;
    } else if (!strcmp(a, "--cells")) {
        if (!md__int3(v, c->cells))
            return BAD("--cells '%s': give NX,NY,NZ, each from 1 to 100000", v);
        c->source = HALOX_MD_FCC;
    } else if (!strcmp(a, "--atoms")) {
        if (!md__ll(v, 2, 2147483647LL, &n))
            return BAD("--atoms '%s': give a count from 2 to 2147483647", v);
        c->natoms = n;
        c->source = HALOX_MD_RANDOM;
    } else if (!strcmp(a, "--read")) {
        c->read_path = v;
        c->source = HALOX_MD_READ;
    } else if (!strcmp(a, "--read-frame")) {
        if (!strcmp(v, "last"))
            c->read_frame = HALOX_MD_READ_LAST;
        else if (md__ll(v, 0, 1000000000000LL, &n))
            c->read_frame = n;
        else
            return BAD("--read-frame '%s': give a frame number from 0 (the first) or last", v);
    } else if (!strcmp(a, "--box")) {
        if (!md__double3(v, c->box))
            return BAD("--box '%s': give LX,LY,LZ, each > 0", v);
    } else if (!strcmp(a, "--temp")) {
        if (!md__double(v, &d) || d < 0 || d > HALOX_MD_MAX_TEMP)
            return BAD("--temp '%s': give a temperature from 0 to %g", v, HALOX_MD_MAX_TEMP);
        c->temp = d;
    } else if (!strcmp(a, "--seed")) {
        if (!halox_parse_seed(v, &c->seed))
            return BAD("--seed '%s': give %s", v, HALOX_SEED_RANGE);
    } else if (!strcmp(a, "--cutoff")) {
        if (!md__double(v, &d) || d <= 0)
            return BAD("--cutoff '%s': give a number > 0", v);
        c->cutoff = d;
    } else if (!strcmp(a, "--skin")) {
        if (!md__double(v, &d) || d < 0)
            return BAD("--skin '%s': give a number >= 0", v);
        c->skin = d;
    } else if (!strcmp(a, "--rebuild-every")) {
        if (!md__ll(v, 1, 1000000000, &n))
            return BAD("--rebuild-every '%s': give a number >= 1", v);
        c->rebuild_every = (int)n;
    } else if (!strcmp(a, "--verlet-tolerance")) {
        if (!md__double(v, &d) || d <= 0)
            return BAD("--verlet-tolerance '%s': give a finite energy drift > 0, energy per "
                       "atom per unit time in reduced units (such as 1e-4)",
                       v);
        c->verlet_tolerance = d;
    } else {
        *done = 0;
    }
    return HALOX_OK;
}

/* Integration, the parallel run and output. */
static halox_status_t md__run(halox_md_setup_t *s, const char *a, const char *v)
{
    halox_md_config_t *c = &s->cfg;
    double d;
    long long n;
    if (!strcmp(a, "--dt")) {
        if (!md__double(v, &d) || d <= 0)
            return BAD("--dt '%s': give a number > 0", v);
        c->dt = d;
    } else if (!strcmp(a, "--steps")) {
        if (!md__ll(v, 0, 1000000000000LL, &n))
            return BAD("--steps '%s': give a number >= 0", v);
        c->steps = n;
    } else if (!strcmp(a, "--ensemble")) {
        if (!strcmp(v, "nve") || !strcmp(v, "NVE"))
            c->ensemble = HALOX_MD_NVE;
        else if (!strcmp(v, "nvt") || !strcmp(v, "NVT"))
            c->ensemble = HALOX_MD_NVT;
        else
            return BAD("--ensemble '%s': use nve or nvt", v);
    } else if (!strcmp(a, "--tau")) {
        if (!md__double(v, &d) || d <= 0)
            return BAD("--tau '%s': give a time constant > 0", v);
        c->tau = d;
    } else if (!strcmp(a, "--equilibrate")) {
        if (!md__ll(v, 0, 1000000000, &n))
            return BAD("--equilibrate '%s': give a number of steps from 0 (none) to 1000000000", v);
        c->equilibrate = (int)n;
    } else if (!strcmp(a, "--grid")) {
        if (halox_grid_parse(v, &c->grid) != HALOX_OK)
            return BAD("--grid: %s", halox_last_error());
    } else if (!strcmp(a, "--transport")) {
        md__transport(s, v, 0);
    } else if (!strcmp(a, "--device")) {
        if (!md__device(v, &c->device))
            return BAD("--device '%s': use gpu, cpu or auto", v);
    } else if (!strcmp(a, "--precision")) {
        if (!strcmp(v, "float") || !strcmp(v, "single"))
            c->real = HALOX_FLOAT;
        else if (!strcmp(v, "double"))
            c->real = HALOX_DOUBLE;
        else
            return BAD("--precision '%s': use float or double", v);
    } else if (!strcmp(a, "--timeout")) {
        if (!md__double(v, &d) || d <= 0 || d > HALOX_TIMEOUT_MAX_S)
            return BAD("--timeout '%s': give seconds > 0 and at most %g", v, HALOX_TIMEOUT_MAX_S);
        c->timeout_s = d;
    } else if (!strcmp(a, "--overlap-probe")) {
        if (!md__ll(v, 0, 1000000, &n))
            return BAD("--overlap-probe '%s': give a number of repetitions from 0 (off) to "
                       "1000000",
                       v);
        c->overlap_probe = (int)n;
    } else if (!strcmp(a, "--thermo-every")) {
        if (!md__ll(v, 1, 1000000000, &n))
            return BAD("--thermo-every '%s': give a number >= 1", v);
        c->thermo_every = (int)n;
    } else if (!strcmp(a, "--json")) {
        c->json_path = v;
    } else if (!strcmp(a, "--csv")) {
        c->csv_path = v;
    } else if (!strcmp(a, "--xyz") || !strcmp(a, "--traj")) {
        /* one trajectory file: --xyz writes extended XYZ whatever the name (as it always did),
         * --traj the format its name asks for */
        if (s->traj_option && strcmp(s->traj_option, a))
            return BAD("%s and %s both name a trajectory: give one (--traj FILE.xyz or "
                       "--traj FILE.lammpstrj)",
                       s->traj_option, a);
        halox_md_traj_format_t f = halox_md_traj_format_by_name(v);
        if (!strcmp(a, "--traj") && f == HALOX_MD_TRAJ_AUTO)
            return BAD("--traj '%s': the name says no format: end it in .xyz or .extxyz "
                       "(extended XYZ), or .lammpstrj, .lammpsdump or .dump (LAMMPS text dump)",
                       v);
        c->xyz_path = v;
        c->traj_format = !strcmp(a, "--xyz") ? HALOX_MD_TRAJ_XYZ : f;
        s->traj_option = halox_md_option_find(a)->name;
    } else if (!strcmp(a, "--xyz-every") || !strcmp(a, "--traj-every")) {
        if (!md__ll(v, 0, 1000000000, &n))
            return BAD("%s '%s': give a number >= 0", a, v);
        c->xyz_every = (int)n;
        s->every_option = halox_md_option_find(a)->name;
    } else if (!strcmp(a, "--checkpoint")) {
        c->checkpoint_path = v;
    } else if (!strcmp(a, "--checkpoint-every")) {
        if (!md__ll(v, 0, 1000000000000LL, &n))
            return BAD("--checkpoint-every '%s': give a number >= 0", v);
        c->checkpoint_every = n;
    } else if (!strcmp(a, "--restart")) {
        c->restart_path = v;
    }
    return HALOX_OK;
}

halox_status_t halox_md_setup_option(halox_md_setup_t *s, const char *name, const char *value)
{
    int i = md__option_index(name);
    if (i < 0)
        return BAD("unknown option '%s' (see --help)", name ? name : "(null)");
    const halox_md_option_t *o = &md__options[i];
    if (o->metavar && (!value || (value[0] == '-' && value[1] == '-')))
        return BAD("%s needs a value (see --help)", o->name);
    if (o->physics && !s->physics_option)
        s->physics_option = o->name;
    s->given |= UINT64_C(1) << i;
    if (!o->metavar)
        return md__flag(s, o->name);
    int done = 0;
    halox_status_t st = md__system(s, o->name, value, &done);
    if (done || st != HALOX_OK)
        return st;
    return md__run(s, o->name, value);
}
