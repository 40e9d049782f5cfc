/* Run configuration: defaults, presets and checks. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/status.h"

const char *md__source_name(halox_md_source_t s)
{
    switch (s) {
    case HALOX_MD_FCC:
        return "fcc";
    case HALOX_MD_RANDOM:
        return "random";
    case HALOX_MD_READ:
        return "file";
    }
    return "unknown";
}

const char *md__ensemble_name(halox_md_ensemble_t e)
{
    return e == HALOX_MD_NVT ? "nvt" : e == HALOX_MD_NVE ? "nve" : "unknown";
}

/* What both presets and the defaults share: a plain truncated LJ (no shift, no tail
 * corrections) integrated in NVE at dt 0.005, so that a preset never inherits a setting changed
 * before it was applied. */
static void md__plain_nve(halox_md_config_t *cfg)
{
    cfg->shift = 0;
    cfg->tail = 0;
    cfg->dt = 0.005;
    cfg->ensemble = HALOX_MD_NVE;
}

/* bench/in.lj of LAMMPS on an fcc lattice of `cells`^3: lattice fcc 0.8442, velocity all create
 * 1.44 87287, pair_style lj/cut 2.5, neighbor 0.3 bin, neigh_modify delay 0 every 20 check no,
 * fix nve, run 100. The defaults are this system at 10^3 cells, the lammps-lj preset at 20^3
 * (LAMMPS' region 0 20 0 20 0 20). */
static void md__lammps_lj(halox_md_config_t *cfg, int cells)
{
    md__plain_nve(cfg);
    cfg->source = HALOX_MD_FCC;
    cfg->density = 0.8442;
    cfg->cells[0] = cfg->cells[1] = cfg->cells[2] = cells;
    cfg->temp = 1.44;
    cfg->seed = 87287;
    cfg->cutoff = 2.5;
    cfg->skin = 0.3;
    cfg->rebuild_every = 20;
    cfg->rebuild_check = 0;
    cfg->steps = 100;
}

void halox_md_config_default(halox_md_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    md__lammps_lj(cfg, 10);
    cfg->natoms = 0;
    cfg->thermo_every = 50;
    cfg->tau = 0.1;
    cfg->grid = (halox_grid_t){{1, 1, 1}};
    cfg->transport = "threads";
    cfg->real = HALOX_FLOAT;
    cfg->xyz_every = 0;
    cfg->traj_format = HALOX_MD_TRAJ_AUTO;
    cfg->read_frame = HALOX_MD_READ_LAST; /* what a run continues from */
    cfg->checkpoint_every = 0;
    cfg->fs_per_step = 0;
    cfg->overlap_probe = 0;
    cfg->equilibrate = 0;
}

/* water-density: equilibration steps before the timed ones, the fewest that bring the mean
 * temperature of its 500 NVE steps within 5 % of its T 1.2 at 45k and 180k atoms (docs/MD.md) */
#define MD_WATER_EQUILIBRATE 75

static const char *const md__presets[] = {"lammps-lj", "water-density", NULL};

const char *const *halox_md_preset_names(void) { return md__presets; }

/* The values are written from the preset itself (halox_md_config_preset over the defaults), so
 * that a description, and halox-md --help which prints it, cannot differ from what a run with
 * the preset does. */
const char *halox_md_preset_description(const char *name)
{
    static _Thread_local char text[768];
    const char *origin = NULL;
    if (name && !strcmp(name, "lammps-lj"))
        origin = "LAMMPS bench/in.lj";
    else if (name && !strcmp(name, "water-density"))
        origin = "halo benchmark, halo slabs as thick relative to the box as water's "
                 "(100 atoms/nm^3, 1.0 nm cut-off)";
    halox_md_config_t c;
    halox_md_config_default(&c);
    if (!origin || halox_md_config_preset(&c, name) != HALOX_OK)
        return NULL;
    size_t n = 0;
#define MD_DESC(...)                                                                               \
    do {                                                                                           \
        if (n < sizeof text)                                                                       \
            n += (size_t)snprintf(text + n, sizeof text - n, __VA_ARGS__);                         \
    } while (0)
    MD_DESC("%s: ", origin);
    if (c.source == HALOX_MD_FCC)
        MD_DESC("fcc lattice, density %g, %dx%dx%d cells (%lld atoms)", c.density, c.cells[0],
                c.cells[1], c.cells[2], 4LL * c.cells[0] * c.cells[1] * c.cells[2]);
    else
        MD_DESC("%lld atoms at random (--atoms N), density %g", c.natoms, c.density);
    MD_DESC(", T %g, seed %llu, cut-off %g %s, %s, skin %g, rebuild every %d steps%s, dt %g, %s",
            c.temp, (unsigned long long)c.seed, c.cutoff, c.shift ? "shifted" : "unshifted",
            c.tail ? "tail corrections" : "no tail corrections", c.skin, c.rebuild_every,
            c.rebuild_check ? " (sooner once an atom moved skin/2)" : "", c.dt,
            c.ensemble == HALOX_MD_NVT ? "NVT" : "NVE");
    if (c.ensemble == HALOX_MD_NVT)
        MD_DESC(" (tau %g)", c.tau);
    MD_DESC(", %lld steps, thermo every %d steps", c.steps, c.thermo_every);
    if (c.equilibrate > 0)
        MD_DESC(", after %d steps of equilibration (NVT at T %g, tau %d dt; not timed, not "
                "counted)",
                c.equilibrate, c.temp, HALOX_MD_EQUILIBRATE_TAU_STEPS);
    if (c.fs_per_step > 0)
        MD_DESC("; ns/day reported at %g fs per step", c.fs_per_step);
#undef MD_DESC
    return text;
}

halox_status_t halox_md_config_preset(halox_md_config_t *cfg, const char *name)
{
    if (!cfg || !name)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "preset: NULL argument");
    if (!strcmp(name, "lammps-lj")) {
        /* bench/in.lj of LAMMPS, region 0 20 0 20 0 20 (thermo: first and last step) */
        cfg->preset = "lammps-lj";
        md__lammps_lj(cfg, 20);
        cfg->thermo_every = 100;
        return HALOX_OK;
    }
    if (!strcmp(name, "water-density")) {
        /* N atoms at reduced density 0.8 with a 5.0 cut-off: rc / L = 5 / (N / 0.8)^(1/3),
         * exactly 1.0 nm / (N / 100 nm^-3)^(1/3) for water, and 4/3 pi 5^3 0.8 = 419
         * neighbours per atom within the cut-off. */
        cfg->preset = "water-density";
        cfg->source = HALOX_MD_RANDOM;
        cfg->natoms = 45000;
        cfg->density = 0.8;
        cfg->temp = 1.2;
        cfg->cutoff = 5.0;
        /* a Verlet buffer for long-lived lists: the lists are rebuilt when an atom
         * has moved skin / 2 (rebuild check: exact on the CPU engine, from the displacements
         * the device publishes on the GPU engine), at the latest every 100 steps; at T 1.2 the
         * fastest of 45k atoms moves half of a 3.0 skin in about 75 steps. The GPU prunes inner
         * lists at cut-off + 5 % in between (kernels/md_cluster.h), so the outer buffer costs a
         * prune now and then, not pair terms, and a larger skin means fewer rebuilds
         * (docs/MD-DESIGN.md#verlet-buffer-and-dynamic-pruning) */
        cfg->skin = 3.0;
        md__plain_nve(cfg);
        cfg->rebuild_every = 100;
        cfg->rebuild_check = 1;
        cfg->steps = 500;
        cfg->thermo_every = 100;
        cfg->fs_per_step = 2.0;
        /* the random start releases heat (NVE from it reaches T 2.6 within 100 steps): the
         * timed steps start from a state equilibrated at T (docs/MD.md, "Equilibration") */
        cfg->equilibrate = MD_WATER_EQUILIBRATE;
        return HALOX_OK;
    }
    return halox_set_error(HALOX_ERR_INVALID_ARG,
                           "unknown preset '%s': the presets are lammps-lj and water-density",
                           name);
}

static int md__finite_pos(double v) { return isfinite(v) && v > 0; }

static halox_status_t md__temp_check(double t)
{
    if (!(t >= 0 && t <= HALOX_MD_MAX_TEMP)) /* NaN too */
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "temperature %g: give a finite temperature from 0 to %g", t,
                               HALOX_MD_MAX_TEMP);
    return HALOX_OK;
}

/* The settings that halox_md_config_check() leaves to the system when it restarts (a
 * checkpoint holds them), checked as the command line checks them for a new system. */
halox_status_t md__config_check_restored(const halox_md_config_t *cfg)
{
    if (md__temp_check(cfg->temp) != HALOX_OK)
        return HALOX_ERR_INVALID_ARG;
    if (!md__finite_pos(cfg->density))
        return halox_set_error(HALOX_ERR_INVALID_ARG, "density %g: give a finite density > 0",
                               cfg->density);
    return HALOX_OK;
}

/* A box the run's precision can hold. Three limits, each with its reason:
 *   - the edge plus the halo distance (cut-off + skin) is finite in the precision: halo images
 *     across the upper boundary are shifted by the edge (a single-precision box of 1e39 made
 *     them inf, and the cell search never ended);
 *   - the precision spaces its numbers at the edge at most 1/MD_BOX_RESOLUTION of the cut-off
 *     apart: beyond that, distances near the edge and the steps atoms take round away (single
 *     precision: at most 8192 cut-offs);
 *   - the edge is at most MD_BOX_MAX_CUTOFFS cut-offs: cells at least half a cut-off wide then
 *     number at most 2^30 per edge, an int. */
#define MD_BOX_RESOLUTION  1024.0
#define MD_BOX_MAX_CUTOFFS 536870912.0 /* 2^29 */

halox_status_t md__box_check(const halox_md_config_t *cfg, const double box[3], const char *what)
{
    const int fl = cfg->real == HALOX_FLOAT;
    const char *prec = fl ? "single" : "double";
    const double eps = fl ? FLT_EPSILON : DBL_EPSILON, top = fl ? FLT_MAX : DBL_MAX;
    const double rh = cfg->cutoff + cfg->skin;
    const double by_res = cfg->cutoff / (MD_BOX_RESOLUTION * eps);
    const double by_int = cfg->cutoff * MD_BOX_MAX_CUTOFFS;
    /* a generated system's box follows from its density */
    const char *how =
        !cfg->restart_path && cfg->source != HALOX_MD_READ ? " (a higher density)" : "";
    for (int d = 0; d < 3; d++) {
        const char dim = "xyz"[d];
        if (!md__finite_pos(box[d]))
            return halox_set_error(HALOX_ERR_INVALID_ARG,
                                   "%s: box edge %c is %g: it must be finite and > 0", what, dim,
                                   box[d]);
        if (!(box[d] + rh <= top))
            return halox_set_error(
                HALOX_ERR_INVALID_ARG,
                "%s: box edge %c %g plus the halo distance %g (cut-off + skin) is "
                "beyond the largest %s-precision number, %g: use a smaller box%s%s",
                what, dim, box[d], rh, prec, top, how, fl ? " or --precision double" : "");
        /* the tighter limit is the one to report (single precision: the resolution) */
        if (by_res <= by_int && !(box[d] <= by_res))
            return halox_set_error(HALOX_ERR_INVALID_ARG,
                                   "%s: box edge %c %g is more than %g cut-offs (%g): %s precision "
                                   "spaces coordinates there up to %g apart, more than 1/%g of the "
                                   "cut-off; use a box edge of at most %g%s%s",
                                   what, dim, box[d], by_res / cfg->cutoff, cfg->cutoff, prec,
                                   box[d] * eps, MD_BOX_RESOLUTION, by_res, how,
                                   fl ? " or --precision double" : "");
        if (!(box[d] <= by_int))
            return halox_set_error(HALOX_ERR_INVALID_ARG,
                                   "%s: box edge %c %g is more than %g cut-offs (%g): its cell "
                                   "counts would overflow an int; use a box edge of at most %g%s",
                                   what, dim, box[d], MD_BOX_MAX_CUTOFFS, cfg->cutoff, by_int, how);
    }
    return HALOX_OK;
}

/* Box of a generated system (fcc, random); 0 for a file (known only after reading it). */
static int md__config_box(const halox_md_config_t *cfg, double box[3])
{
    if (cfg->source == HALOX_MD_FCC) {
        double a = cbrt(4.0 / cfg->density);
        for (int d = 0; d < 3; d++)
            box[d] = a * cfg->cells[d];
        return 1;
    }
    if (cfg->source == HALOX_MD_RANDOM) {
        double l = cbrt((double)cfg->natoms / cfg->density);
        box[0] = box[1] = box[2] = l;
        return 1;
    }
    return 0;
}

halox_status_t halox_md_config_check(const halox_md_config_t *cfg)
{
    if (!cfg)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "configuration is NULL");
    if (!cfg->restart_path) {
        switch (cfg->source) {
        case HALOX_MD_FCC:
            if (!md__finite_pos(cfg->density))
                return halox_set_error(HALOX_ERR_INVALID_ARG,
                                       "density %g: give a finite density > 0", cfg->density);
            for (int d = 0; d < 3; d++)
                if (cfg->cells[d] < 1)
                    return halox_set_error(HALOX_ERR_INVALID_ARG,
                                           "fcc lattice needs at least 1 unit cell per dimension "
                                           "(--cells NX,NY,NZ), got %d,%d,%d",
                                           cfg->cells[0], cfg->cells[1], cfg->cells[2]);
            if (4.0 * cfg->cells[0] * (double)cfg->cells[1] * cfg->cells[2] > 2147483647.0)
                return halox_set_error(HALOX_ERR_INVALID_ARG,
                                       "%d x %d x %d fcc cells make more than 2^31 atoms",
                                       cfg->cells[0], cfg->cells[1], cfg->cells[2]);
            break;
        case HALOX_MD_RANDOM:
            if (!md__finite_pos(cfg->density))
                return halox_set_error(HALOX_ERR_INVALID_ARG,
                                       "density %g: give a finite density > 0", cfg->density);
            if (cfg->natoms < 2 || cfg->natoms > 2147483647LL)
                return halox_set_error(HALOX_ERR_INVALID_ARG,
                                       "random system of %lld atoms: give --atoms from 2 to 2^31-1",
                                       cfg->natoms);
            break;
        case HALOX_MD_READ:
            if (!cfg->read_path || !*cfg->read_path)
                return halox_set_error(HALOX_ERR_INVALID_ARG, "no file to read the system from");
            if (cfg->read_frame < HALOX_MD_READ_LAST)
                return halox_set_error(HALOX_ERR_INVALID_ARG,
                                       "read frame %lld: give a frame from 0, or the last (%lld)",
                                       cfg->read_frame, HALOX_MD_READ_LAST);
            break;
        default:
            return halox_set_error(HALOX_ERR_INVALID_ARG, "unknown system source %d",
                                   (int)cfg->source);
        }
        if (md__temp_check(cfg->temp) != HALOX_OK)
            return HALOX_ERR_INVALID_ARG;
    }
    if (!md__finite_pos(cfg->cutoff))
        return halox_set_error(HALOX_ERR_INVALID_ARG, "cut-off %g: give a finite cut-off > 0",
                               cfg->cutoff);
    if (!isfinite(cfg->skin) || cfg->skin < 0)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "skin %g: give a finite skin >= 0",
                               cfg->skin);
    if (!isfinite(cfg->verlet_tolerance) || cfg->verlet_tolerance < 0)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "Verlet-buffer tolerance %g: give a finite energy drift > 0 (energy "
                               "per atom per unit time), or 0 for none",
                               cfg->verlet_tolerance);
    if (!md__finite_pos(cfg->dt))
        return halox_set_error(HALOX_ERR_INVALID_ARG, "time step %g: give a finite dt > 0",
                               cfg->dt);
    if (cfg->steps < 0)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "steps %lld: give a number >= 0", cfg->steps);
    if (cfg->rebuild_every < 1)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "rebuild every %d steps: give a number >= 1",
                               cfg->rebuild_every);
    if (cfg->thermo_every < 1)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "thermo every %d steps: give a number >= 1",
                               cfg->thermo_every);
    if (cfg->ensemble != HALOX_MD_NVE && cfg->ensemble != HALOX_MD_NVT)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "unknown ensemble %d", (int)cfg->ensemble);
    if (cfg->ensemble == HALOX_MD_NVT && !md__finite_pos(cfg->tau))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "thermostat time constant %g: give a finite tau > 0", cfg->tau);
    if (cfg->xyz_every < 0)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "XYZ every %d steps: give a number >= 0",
                               cfg->xyz_every);
    if (cfg->traj_format != HALOX_MD_TRAJ_AUTO && cfg->traj_format != HALOX_MD_TRAJ_XYZ &&
        cfg->traj_format != HALOX_MD_TRAJ_LAMMPS)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "unknown trajectory format %d",
                               (int)cfg->traj_format);
    if (cfg->checkpoint_every < 0)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "checkpoint every %lld steps: give a number >= 0",
                               cfg->checkpoint_every);
    if (cfg->checkpoint_every > 0 && !cfg->checkpoint_path)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "checkpoints every %lld steps need a file: give --checkpoint FILE",
                               cfg->checkpoint_every);
    if (halox_timeout_resolve(cfg->timeout_s, NULL) != HALOX_OK)
        return HALOX_ERR_INVALID_ARG; /* the message names the bound (or HALOX_TIMEOUT_S) */
    if (cfg->real != HALOX_FLOAT && cfg->real != HALOX_DOUBLE)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "unknown precision %d", (int)cfg->real);
    if (halox_grid_check(&cfg->grid) != HALOX_OK)
        return HALOX_ERR_INVALID_ARG;
    if (!cfg->transport || !halox_transport_available(cfg->transport))
        return halox_set_error(
            HALOX_ERR_UNKNOWN_TRANSPORT,
            "transport '%s' is not in this build (halox-md --version lists them)",
            cfg->transport ? cfg->transport : "(none)");
    if (cfg->device != HALOX_MD_DEVICE_AUTO && cfg->device != HALOX_MD_DEVICE_CPU &&
        cfg->device != HALOX_MD_DEVICE_GPU)
        return halox_set_error(HALOX_ERR_INVALID_ARG, "unknown device %d", (int)cfg->device);
    if (cfg->device == HALOX_MD_DEVICE_GPU && !halox_transport_on_gpu(cfg->transport))
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "the GPU engine needs a GPU transport (mpi-staged, nccl, "
                               "nvshmem-stream/pulse/fused), not '%s'",
                               cfg->transport);
    if (cfg->device == HALOX_MD_DEVICE_CPU && halox_transport_on_gpu(cfg->transport))
        return halox_set_error(
            HALOX_ERR_INVALID_ARG,
            "transport '%s' moves GPU data: the CPU engine runs on threads or mpi "
            "(or use --device gpu)",
            cfg->transport);
    if (cfg->graph == HALOX_MD_GRAPH_ON && halox_md_config_device(cfg) != HALOX_MD_DEVICE_GPU)
        return halox_set_error(
            HALOX_ERR_INVALID_ARG, "%s",
            halox_gpu_count() > 0
                ? "CUDA graphs (--graph) are for the GPU engine: add --device gpu"
                : "CUDA graphs (--graph) are for the GPU engine, and no GPU is "
                  "visible here (or this build has no CUDA): run without --graph");
    if (cfg->equilibrate < 0)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "equilibration of %d steps: give a number of steps >= 0 (0: none)",
                               cfg->equilibrate);
    if (cfg->overlap_probe < 0 || cfg->overlap_probe > 1000000)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "overlap probe of %d repetitions: give 0 (off) to 1000000",
                               cfg->overlap_probe);
    if (halox_md_config_device(cfg) == HALOX_MD_DEVICE_GPU && cfg->real != HALOX_FLOAT)
        return halox_set_error(HALOX_ERR_INVALID_ARG,
                               "the GPU engine runs in single precision: use --precision float (or "
                               "--device cpu for double)");
    /* lengths the precision squares: the pair search compares squared distances with
     * (cut-off + skin)^2, the forces with the squared cut-off */
    {
        const int fl = cfg->real == HALOX_FLOAT;
        const double lo = sqrt(fl ? FLT_MIN : DBL_MIN), hi = sqrt(fl ? FLT_MAX : DBL_MAX);
        if (!(cfg->cutoff >= lo && cfg->cutoff + cfg->skin <= hi))
            return halox_set_error(HALOX_ERR_INVALID_ARG,
                                   "cut-off %g with skin %g: %s precision squares them, so give a "
                                   "cut-off of at least %g and a cut-off + skin of at most %g",
                                   cfg->cutoff, cfg->skin, fl ? "single" : "double", lo, hi);
    }
    double box[3];
    char what[160];
    int have_box = 0;
    if (!cfg->restart_path && md__config_box(cfg, box)) {
        have_box = 1;
        if (cfg->source == HALOX_MD_FCC)
            snprintf(what, sizeof what, "density %g with %dx%dx%d fcc cells", cfg->density,
                     cfg->cells[0], cfg->cells[1], cfg->cells[2]);
        else
            snprintf(what, sizeof what, "density %g with %lld random atoms", cfg->density,
                     cfg->natoms);
    } else if (cfg->restart_path && (cfg->box[0] != 0 || cfg->box[1] != 0 || cfg->box[2] != 0)) {
        /* a restart's box, when the caller gives it (the checkpoint's) */
        have_box = 1;
        for (int d = 0; d < 3; d++)
            box[d] = cfg->box[d];
        snprintf(what, sizeof what, "the box of the checkpoint '%.100s'", cfg->restart_path);
    }
    if (have_box) {
        halox_status_t st = md__box_check(cfg, box, what);
        if (st != HALOX_OK)
            return st;
        halox_plan_params_t prm = {.grid = cfg->grid,
                                   .box = {{box[0], box[1], box[2]}},
                                   .cutoff = cfg->cutoff,
                                   .buffer = cfg->skin};
        if (halox_plan_check(&prm, NULL) != HALOX_OK)
            return HALOX_ERR_DECOMPOSITION;
    }
    return HALOX_OK;
}

halox_md_device_t halox_md_config_device(const halox_md_config_t *cfg)
{
    if (cfg->device != HALOX_MD_DEVICE_AUTO)
        return cfg->device;
    return cfg->transport && halox_transport_on_gpu(cfg->transport) ? HALOX_MD_DEVICE_GPU
                                                                    : HALOX_MD_DEVICE_CPU;
}
