/* A command line's settings made into a run: the checks across settings, the files a restart or
 * --read names, the device and transport left to the library, the launch, the Verlet buffer. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/md_internal.h"
#include "halox/md_options.h"
#include "halox/status.h"

#define BAD(...)    halox_set_error(HALOX_ERR_INVALID_ARG, __VA_ARGS__)
#define GIVEN(name) halox_md_setup_given(s, name)

/* Settings that exclude each other or need another. */
static halox_status_t md__setup_combinations(halox_md_setup_t *s)
{
    const halox_md_config_t *c = &s->cfg;
    const int set_read = GIVEN("--read");
    if (set_read &&
        (GIVEN("--lattice") || GIVEN("--cells") || GIVEN("--atoms") || GIVEN("--density")))
        return BAD("--read takes the atoms from the file: it cannot be combined with "
                   "--lattice, --cells, --atoms or --density");
    if (GIVEN("--atoms") && (GIVEN("--lattice") || GIVEN("--cells")))
        return BAD("--atoms places atoms at random; --lattice/--cells build an fcc lattice: "
                   "give one or the other");
    if (GIVEN("--box") && c->source != HALOX_MD_READ)
        return BAD("--box is for --read (fcc and random systems get their box from the density)");
    if (c->xyz_every > 0 && !c->xyz_path)
        return BAD("%s needs --xyz FILE or --traj FILE",
                   s->every_option ? s->every_option : "--traj-every");
    if (c->checkpoint_every > 0 && !c->checkpoint_path)
        return BAD("--checkpoint-every needs --checkpoint FILE");
    if ((GIVEN("--read-frame") || GIVEN("--new-velocities")) && !set_read)
        return BAD("%s is for --read FILE",
                   GIVEN("--read-frame") ? "--read-frame" : "--new-velocities");
    return HALOX_OK;
}

/* The checkpoint fixes the system, the precision and (unless given) the grid. */
static halox_status_t md__setup_restart(halox_md_setup_t *s)
{
    halox_md_config_t *c = &s->cfg;
    if (s->physics_option)
        return BAD("%s cannot be combined with --restart: the checkpoint fixes the system and "
                   "every setting of the trajectory (change only --steps, output, --grid, "
                   "--transport)",
                   s->physics_option);
    if (!GIVEN("--steps"))
        return BAD("--restart needs --steps: the last step to run to");
    halox_md_checkpoint_info_t info;
    halox_status_t st = halox_md_checkpoint_probe(c->restart_path, &info);
    if (st != HALOX_OK)
        return st;
    if (GIVEN("--precision") && c->real != info.real)
        return BAD("the checkpoint '%s' holds %s-precision data: --precision %s cannot restart it",
                   c->restart_path, info.real == HALOX_DOUBLE ? "double" : "single",
                   c->real == HALOX_DOUBLE ? "double" : "float");
    c->real = info.real;
    if (!GIVEN("--grid"))
        c->grid = info.grid;
    if (c->steps < info.step)
        return BAD("the checkpoint '%s' is at step %lld, after --steps %lld: give --steps >= %lld",
                   c->restart_path, info.step, c->steps, info.step);
    return HALOX_OK;
}

/* The device and the transport. auto without a transport: the GPU engine when a GPU is visible,
 * the precision is float and the ranks can run as processes (one rank, or started by an MPI
 * launcher with one process per rank); otherwise auto follows the transport. The GPU engine
 * without a transport takes halox_transport_choose()'s (nccl when every rank has its own GPU,
 * else mpi-staged: NCCL refuses ranks that share a GPU; nvshmem-fused when they reach each
 * other). */
static void md__setup_device(halox_md_setup_t *s, const halox_md_launch_t *L)
{
    halox_md_config_t *c = &s->cfg;
    /* no --grid under an MPI launcher: one rank per process, on the default grid */
    if (!GIVEN("--grid") && !c->restart_path && L->processes > 1)
        halox_grid_default(L->processes, &c->grid);
    const int ranks = halox_grid_size(&c->grid);
    int gpu_transport = 0;
    for (const char *const *t = halox_transport_names(); *t; t++)
        gpu_transport |= halox_transport_on_gpu(*t);
    if (c->device == HALOX_MD_DEVICE_AUTO && !GIVEN("--transport") && c->real == HALOX_FLOAT &&
        gpu_transport && (ranks == 1 || L->processes == ranks)) {
        /* auto takes the GPU engine here when there is a GPU; without one the CPU engine runs,
         * which the caller says (a long run on the CPU must not pass for one on the GPU) */
        if (halox_gpu_count() > 0)
            c->device = HALOX_MD_DEVICE_GPU;
        else
            s->gpu_absent = 1;
    }
    if (c->device == HALOX_MD_DEVICE_GPU && !GIVEN("--transport")) {
        /* the job's shape as far as it is known before MPI starts: the launcher's local rank
         * count (unknown: one node), the visible GPUs, their peer access */
        halox_topology_t t;
        halox_topology_guess(ranks, L->local_processes, 1, &t);
        c->transport = halox_transport_choose(&t, c->natoms, s->why, sizeof s->why);
    }
}

/* Under an MPI launcher with P > 1 processes the ranks must be those processes: on threads
 * every process would run its own copy of the whole job. Without a transport the CPU engine
 * takes a transport between processes (mpi); one whose ranks are threads is refused, and so is
 * a grid whose rank count is not P. Decided before MPI_Init, so that every process stops at once
 * with the message. */
static halox_status_t md__setup_launch(halox_md_setup_t *s, const halox_md_launch_t *L)
{
    halox_md_config_t *c = &s->cfg;
    const char *how = L->how ? L->how : "started by an MPI launcher";
    if (L->processes > 1 && halox_md_config_device(c) == HALOX_MD_DEVICE_CPU) {
        if (!halox_transport_available("mpi"))
            return BAD("%s, but this build has no MPI (see --version): start one process "
                       "without mpirun (--grid NXxNYxNZ runs the ranks as threads)",
                       how);
        halox_transport_caps_t caps;
        if (!GIVEN("--transport")) {
            c->transport = "mpi";
            snprintf(s->why, sizeof s->why, "mpi: %s, one rank per process, on the CPU engine",
                     how);
        } else if (halox_transport_caps(c->transport, &caps) == HALOX_OK && caps.threads) {
            return BAD("%s%s runs every rank as a thread of one process, but halox-md was %s: "
                       "each process would run its own copy of the job. %s",
                       s->transport_from_env ? "HALOX_TRANSPORT=" : "--transport ", c->transport,
                       how,
                       s->transport_from_env
                           ? "Unset HALOX_TRANSPORT or add --transport mpi (one rank per "
                             "process), or start one process without mpirun"
                           : "Use --transport mpi (one rank per process), or start one process "
                             "without mpirun");
        }
    }
    halox_transport_caps_t caps;
    const int ranks = halox_grid_size(&c->grid);
    if (halox_transport_caps(c->transport, &caps) == HALOX_OK && !caps.threads &&
        L->processes > 0 && L->processes != ranks) {
        halox_grid_t g;
        halox_grid_default(L->processes, &g);
        return BAD("grid %dx%dx%d has %d ranks but %d MPI processes were started (%s=%d): start "
                   "with mpirun -np %d, or give a --grid of %d ranks (such as %dx%dx%d)",
                   c->grid.n[0], c->grid.n[1], c->grid.n[2], ranks, L->processes,
                   L->var ? L->var : "the launcher", L->processes, ranks, L->processes, g.n[0],
                   g.n[1], g.n[2]);
    }
    return HALOX_OK;
}

/* The engine and the transport must agree. */
static halox_status_t md__setup_engine(const halox_md_setup_t *s)
{
    const halox_md_config_t *c = &s->cfg;
    int gpu_transports = 0; /* compiled in: a CUDA build with MPI */
    for (const char *const *t = halox_transport_names(); *t; t++)
        gpu_transports += halox_transport_on_gpu(*t);
    if (c->device == HALOX_MD_DEVICE_GPU &&
        (!gpu_transports || !halox_transport_available(c->transport)))
        return BAD("--device gpu needs a CUDA build with MPI (GPU transports: mpi-staged, nccl, "
                   "nvshmem-*; see --version)");
    if (c->device == HALOX_MD_DEVICE_GPU && !halox_transport_on_gpu(c->transport))
        return BAD("--device gpu runs on a GPU transport (mpi-staged, nccl, nvshmem-*), not '%s'",
                   c->transport);
    if (c->device == HALOX_MD_DEVICE_CPU && halox_transport_on_gpu(c->transport))
        return BAD("--device cpu runs on the threads or mpi transport, not '%s'", c->transport);
    if (halox_md_config_device(c) == HALOX_MD_DEVICE_GPU && c->real != HALOX_FLOAT)
        return BAD("the GPU engine runs in single precision: use --precision float (or --device "
                   "cpu)");
    /* asked for where there is none: refused before any process starts MPI, never run on the
     * CPU instead */
    if (halox_md_config_device(c) == HALOX_MD_DEVICE_GPU && halox_gpu_count() == 0) {
        char asked[96];
        if (c->device != HALOX_MD_DEVICE_GPU)
            snprintf(asked, sizeof asked, "%s%s",
                     s->transport_from_env ? "HALOX_TRANSPORT=" : "--transport ", c->transport);
        else
            snprintf(asked, sizeof asked, "%s",
                     GIVEN("--device") ? "--device gpu" : "HALOX_DEVICE=gpu");
        return BAD("%s runs the GPU engine, but no GPU is visible to this process (no CUDA "
                   "device, no driver, or CUDA_VISIBLE_DEVICES hides them): run it on a GPU "
                   "machine, or use --device cpu (the CPU engine, on threads or mpi)",
                   asked);
    }
    return HALOX_OK;
}

/* The pair-list buffer for the drift tolerance: what --skin / --rebuild-every did not give (a
 * restart with it is refused by md__setup_restart: the checkpoint fixes both). */
static halox_status_t md__setup_verlet(halox_md_setup_t *s)
{
    halox_md_config_t *c = &s->cfg;
    if (!(c->verlet_tolerance > 0))
        return HALOX_OK;
    double rho = 0; /* fcc and random: cfg->density; a file: its atoms in its box */
    if (c->source == HALOX_MD_READ) {
        const double *bx = s->read.has_box ? s->read.box : c->box;
        const double vol = bx[0] * bx[1] * bx[2];
        if (!(vol > 0 && isfinite(vol)))
            return BAD("--verlet-tolerance needs the density of the system: the file '%s' has no "
                       "box (give --box LX,LY,LZ)",
                       c->read_path);
        rho = (double)s->read.natoms / vol;
    }
    const unsigned keep = (GIVEN("--skin") ? HALOX_MD_VERLET_KEEP_SKIN : 0u) |
                          (GIVEN("--rebuild-every") ? HALOX_MD_VERLET_KEEP_REBUILD : 0u);
    return halox_md_config_verlet(c, rho, keep, 0, &s->verlet);
}

halox_status_t halox_md_setup_finish(halox_md_setup_t *s, const halox_md_launch_t *launch)
{
    static const halox_md_launch_t none = {0};
    const halox_md_launch_t *L = launch ? launch : &none;
    halox_md_config_t *c = &s->cfg;
    if (GIVEN("--transport") &&
        halox_transport_check_name(c->transport,
                                   s->transport_from_env ? "HALOX_TRANSPORT" : "--transport",
                                   "auto (the automatic choice)") != HALOX_OK)
        return HALOX_ERR_INVALID_ARG;
    halox_status_t st = md__setup_combinations(s);
    /* the frame, its format and whether it has velocities (and a frame beyond the file's last
     * refused now) */
    if (st == HALOX_OK && GIVEN("--read") && !c->restart_path)
        st = halox_md_read_probe(c->read_path, c->read_frame, &s->read);
    if (st == HALOX_OK && c->restart_path)
        st = md__setup_restart(s);
    if (st != HALOX_OK)
        return st;
    md__setup_device(s, L);
    if ((st = md__setup_launch(s, L)) != HALOX_OK)
        return st;
    if ((st = md__setup_engine(s)) != HALOX_OK)
        return st;
    if ((st = md__setup_verlet(s)) != HALOX_OK)
        return st;
    if ((st = halox_md_config_check(c)) != HALOX_OK)
        return st;
    /* the output files now, before a system is read or placed: a run refused later would have
     * spent that time */
    return md__files_check(c);
}
