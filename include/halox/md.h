/** @file
 * halox-md: a Lennard-Jones molecular-dynamics engine on the halo library (CPU).
 *
 * Reduced units (sigma = epsilon = mass = k_B = 1). Velocity Verlet, NVE or NVT (stochastic
 * velocity rescaling, Bussi-Donadio-Parrinello 2007), cell lists and Verlet pair lists with a
 * skin, atom migration and plan rebuild on list-rebuild steps, pair forces by the plan's zone rule
 * (each pair once over all ranks), forces on halo atoms returned through the reverse exchange.
 *
 * Usage, per rank (every call marked collective is made by every rank in the same order):
 *
 *     halox_md_config_t cfg;
 *     halox_md_config_default(&cfg);                   // or halox_md_config_preset()
 *     ... set fields ...
 *     halox_md_config_check(&cfg);                     // clear message on error
 *     halox_md_system_create(&cfg, &sys);              // the initial global system (not needed
 *                                                       // for a restart); may be shared by
 *                                                       // the threads of one process
 *     halox_md_create(&cfg, comm, sys, &hooks, &md);   // collective: step 0 forces, thermo
 *     halox_md_run(md);                                // collective: up to cfg.steps
 *     halox_md_summary(md, &summary);                  // collective
 *     halox_md_destroy(md);
 *
 * halox_md_rank_run() does all of that on one rank, and halox_md_threads_run() starts one
 * thread per rank of the grid on the `threads` transport and runs it on each.
 *
 * The library never prints: the tool (tools/halox-md.c) prints through the hooks. It writes the
 * files the configuration names (thermo CSV/JSON, XYZ trajectory, checkpoints), from rank 0.
 */
#ifndef HALOX_MD_H
#define HALOX_MD_H

#include <stdint.h>

#include "halox/atoms.h"
#include "halox/endpoint.h"
#include "halox/geometry.h"
#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Where the initial system comes from. */
typedef enum halox_md_source {
    HALOX_MD_FCC = 0,    /**< fcc lattice: density and unit cells per dimension */
    HALOX_MD_RANDOM = 1, /**< random non-overlapping placement: atom count and density */
    HALOX_MD_READ = 2,   /**< XYZ file with a box (extended-XYZ Lattice= or config box) */
} halox_md_source_t;

/** Statistical ensemble. */
typedef enum halox_md_ensemble {
    HALOX_MD_NVE = 0, /**< velocity Verlet, microcanonical */
    HALOX_MD_NVT = 1, /**< velocity Verlet + stochastic velocity rescaling (Bussi 2007) */
} halox_md_ensemble_t;

/** Trajectory file formats (halox_md_config_t.traj_format). */
typedef enum halox_md_traj_format {
    HALOX_MD_TRAJ_AUTO = 0,   /**< by the file name (halox_md_traj_format_by_name()); a name
                                   that says nothing: extended XYZ */
    HALOX_MD_TRAJ_XYZ = 1,    /**< extended XYZ: OVITO, ASE, VMD (no box in VMD, MDAnalysis) */
    HALOX_MD_TRAJ_LAMMPS = 2, /**< LAMMPS text dump with the box: MDAnalysis, VMD, OVITO */
} halox_md_traj_format_t;

/** The format a trajectory file's name asks for: .xyz and .extxyz extended XYZ; .lammpstrj,
 *  .lammpsdump and .dump the LAMMPS text dump (case-insensitive); HALOX_MD_TRAJ_AUTO for any
 *  other name. */
halox_md_traj_format_t halox_md_traj_format_by_name(const char *path);
/** "extended XYZ", "LAMMPS dump" (AUTO: "by file name"). */
const char *halox_md_traj_format_name(halox_md_traj_format_t f);

/** halox_md_config_t.read_frame: the last frame of the file. */
#define HALOX_MD_READ_LAST (-1LL)

/** Where the engine runs (halox_md_config_t.device). */
typedef enum halox_md_device {
    HALOX_MD_DEVICE_AUTO = 0, /**< the GPU when the transport moves GPU data (mpi-staged, nccl),
                                   else the CPU */
    HALOX_MD_DEVICE_CPU = 1,  /**< the CPU engine (threads, mpi) */
    HALOX_MD_DEVICE_GPU = 2,  /**< the GPU engine: single precision, a GPU transport, one GPU per
                                   rank (CUDA builds) */
} halox_md_device_t;

/** CUDA graphs of the GPU engine's plain steps (zero is auto). */
typedef enum halox_md_graph {
    HALOX_MD_GRAPH_AUTO = 0, /**< graphs wherever the transport can be captured (nccl and the
                                  NVSHMEM ones; not mpi-staged, mpi-cuda or hybrid, which call
                                  MPI from the host inside an exchange): the fastest path */
    HALOX_MD_GRAPH_ON,       /**< the same, with a notice where the transport cannot be
                                  captured; an error for the CPU engine */
    HALOX_MD_GRAPH_OFF       /**< every step launched kernel by kernel (diagnosis: the pulse
                                  that a stuck peer leaves waiting is named) */
} halox_md_graph_t;

/** Everything that defines a run. Plain data; paths are borrowed (the caller keeps them alive
 *  for the lifetime of the engine); NULL paths mean "no such output". */
typedef struct halox_md_config {
    const char *preset; /**< name of the preset the settings came from, or NULL */
    /* system */
    halox_md_source_t source; /**< where the initial system comes from */
    double density;           /**< fcc and random systems (reduced density N/V) */
    int cells[3];             /**< fcc: unit cells per dimension (4 atoms each) */
    long long natoms;         /**< random systems: number of atoms */
    const char *read_path;    /**< HALOX_MD_READ: the file (extended XYZ or LAMMPS text dump) */
    double box[3];            /**< HALOX_MD_READ: box edges when the file has no Lattice= */
    double temp;              /**< initial temperature (and NVT target), 0 to HALOX_MD_MAX_TEMP */
    uint64_t seed;            /**< velocities, random placement, thermostat noise */

    /* HALOX_MD_READ: which frame, and whether its velocities are kept (the formats are told
     * apart by their content: a LAMMPS dump starts with "ITEM:") */
    long long read_frame;    /**< from 0, or HALOX_MD_READ_LAST (the default) */
    int read_new_velocities; /**< draw them at temp even where the frame has velocities (0: the
                                  frame's own where it has them, temp only where not) */
    /* potential */
    double cutoff; /**< LJ cut-off */
    double skin;   /**< pair-list skin; the halo distance is cutoff + skin */
    int shift;     /**< shift the energy to zero at the cut-off */
    int tail;      /**< analytic long-range corrections to energy and pressure */
    /* integration */
    double dt;                    /**< time step, in reduced time units */
    long long steps;              /**< last step of the run (a restart continues up to it) */
    int rebuild_every;            /**< neighbour lists, migration and plan every K steps at most */
    int rebuild_check;            /**< also rebuild as soon as an atom moved more than skin / 2 */
    int thermo_every;             /**< thermo output every N steps (and at the first and last) */
    halox_md_ensemble_t ensemble; /**< NVE or NVT */
    double tau;                   /**< NVT: thermostat time constant */
    /* parallel run */
    halox_grid_t grid;     /**< the grid of ranks; its size is the rank count */
    const char *transport; /**< "threads", "mpi", ... */
    halox_real_t real;     /**< HALOX_FLOAT (default) or HALOX_DOUBLE */
    double timeout_s;      /**< bound on every wait (0: HALOX_TIMEOUT_S or 60 s; at most
                                HALOX_TIMEOUT_MAX_S) */
    /* output */
    const char *json_path;       /**< thermo and summary as JSON, written at the end */
    const char *csv_path;        /**< thermo as CSV, one row per thermo step, flushed */
    const char *xyz_path;        /**< trajectory, in traj_format (named before the dump) */
    int xyz_every;               /**< frames every N steps (0: first and last step only) */
    const char *checkpoint_path; /**< checkpoints (atomic writes) */
    long long checkpoint_every;  /**< at the first rebuild boundary after every N steps
                                      (0: only at the end and on an interrupt) */
    const char *restart_path;    /**< continue from this checkpoint */
    double fs_per_step;          /**< > 0: report ns/day assuming this many fs per step */

    halox_md_traj_format_t traj_format; /**< format of xyz_path (AUTO: by its name) */
    /* device (added with the GPU engine; zero is auto) */
    halox_md_device_t device; /**< CPU or GPU engine; AUTO follows the transport */
    halox_md_graph_t graph;   /**< GPU engine: the plain steps (no rebuild, no thermo, NVE, no
                                   rebuild check) replayed as a CUDA graph (AUTO, the default:
                                   wherever the transport can be captured) */
    int overlap_probe;        /**< > 0: after the last step, time this many repetitions of the local
                                   forces alone, the halo exchange (coordinates + forces) alone and
                                   both as a step runs them (summary: overlap_*), then recompute the
                                   forces, so the final state is that of a run without it; 0: off */
    int equilibrate;          /**< > 0: before step 0, this many steps of NVT at temp (stochastic
                                   velocity rescaling with tau = HALOX_MD_EQUILIBRATE_TAU_STEPS dt,
                                   displacement-checked lists), numbered 1 - equilibrate to 0, then the
                                   velocities scaled to exactly temp: the run starts from that state at
                                   step 0. Not counted in the run's steps, timers, halo bytes, thermo
                                   records or outputs (halox_md_summary_t.equilibrate_*); a restart
                                   never runs it (the checkpoint holds a state past it); 0: off */
    /* the pair-list buffer from a drift tolerance */
    double verlet_tolerance; /**< > 0: the energy drift the pair lists may cause by missed pairs,
                                  energy per atom per unit time (reduced units), from which
                                  halox_md_config_verlet() chooses skin and rebuild_every (the
                                  engine runs with those two as they are; the JSON settings
                                  record it with the estimate for the run's lists); 0: off */
} halox_md_config_t;

/** The largest temperature a configuration or checkpoint holds (epsilon/k_B): a million times
 *  the well depth, where the attraction plays no part and atoms move sqrt(3T) = 1700 sigma per
 *  unit time; a larger value is a typo or a corrupted file, whose velocities would blow the run
 *  up at its first step. */
#define HALOX_MD_MAX_TEMP 1e6

/** The equilibration's thermostat time constant in steps (halox_md_config_t.equilibrate): short,
 *  so that the heat a random start releases is taken out within a few dozen steps. */
#define HALOX_MD_EQUILIBRATE_TAU_STEPS 10

/** The device a configuration runs on: cfg->device, with AUTO resolved by the transport. */
halox_md_device_t halox_md_config_device(const halox_md_config_t *cfg);

/** The format cfg->xyz_path is written in: cfg->traj_format, AUTO resolved by the name. */
halox_md_traj_format_t halox_md_traj_format(const halox_md_config_t *cfg);

/** Defaults: fcc at density 0.8442 with 10x10x10 cells, T 1.44, seed 87287, cut-off 2.5
 *  unshifted, no tail, skin 0.3, dt 0.005, 100 steps, rebuild every 20, thermo every 50, NVE,
 *  tau 0.1 (for NVT), no equilibration, grid 1x1x1, transport "threads", float; a file's last
 *  frame, its velocities where it has them; the trajectory's format by its file name. */
void halox_md_config_default(halox_md_config_t *cfg);

/** Apply a preset ("lammps-lj", "water-density") over the current settings. */
halox_status_t halox_md_config_preset(halox_md_config_t *cfg, const char *name);

/** Names of the presets, NULL-terminated. */
const char *const *halox_md_preset_names(void);
/** One-line description of a preset with every value it sets (written from the preset), or
 *  NULL when unknown; valid until the next call on the same thread. */
const char *halox_md_preset_description(const char *name);

/** Check a configuration: values in range, combinations that make sense, the transport in this
 *  build, and (for fcc and random systems, whose box is known) the decomposition able to serve
 *  cut-off + skin. Errors say what is wrong and what to do (halox_last_error()). */
halox_status_t halox_md_config_check(const halox_md_config_t *cfg);

/** What a file read by `--read` (HALOX_MD_READ) holds, from halox_md_read_probe() and in
 *  halox_md_system_t.read. */
typedef struct halox_md_read_info {
    halox_md_traj_format_t format; /**< XYZ (plain or extended) or LAMMPS */
    long long nframes;             /**< frames in the file */
    long long frame;               /**< the frame chosen, from 0 */
    long long natoms;              /**< atoms of that frame */
    long long step;                /**< its step (XYZ Step=, dump TIMESTEP), or -1: not given */
    int velocities;                /**< the frame has velocities (XYZ velo/vel/velocities or
                                        momenta with m = 1; dump vx vy vz) */
    int has_box;                   /**< the frame has a box (XYZ Lattice=, dump BOX BOUNDS) */
    double box[3];                 /**< that box (when has_box) */
} halox_md_read_info_t;

/** Scan a file for `--read`: its format, frame count, and the frame `frame` (from 0, or
 *  HALOX_MD_READ_LAST) without reading its atoms. Errors (HALOX_ERR_IO, HALOX_ERR_INVALID_ARG)
 *  say what is wrong: not a regular file, a malformed or truncated frame (with its line), a
 *  frame beyond the last. */
halox_status_t halox_md_read_probe(const char *path, long long frame, halox_md_read_info_t *info);

/** The initial global system: box, positions and velocities of every atom in id order. */
typedef struct halox_md_system {
    long long natoms;          /**< atoms in the system */
    halox_box_t box;           /**< the periodic box */
    double *x;                 /**< 3 * natoms positions in [0, box) */
    double *v;                 /**< 3 * natoms velocities: zero total momentum, exactly cfg->temp;
                                    or a file's, as they are (velocities_from_file) */
    double min_distance;       /**< random systems: minimum pair distance enforced */
    halox_md_read_info_t read; /**< HALOX_MD_READ: the file's frame that was read */
    int velocities_from_file;  /**< the velocities are the file's (not drawn at cfg->temp) */
} halox_md_system_t;

/** Build the initial system from the configuration (fcc, random or file; then velocities,
 *  unless the file's frame has them and cfg->read_new_velocities is 0).
 *  Deterministic: every process that calls it gets the same bits. */
halox_status_t halox_md_system_create(const halox_md_config_t *cfg, halox_md_system_t **sys_p);
/** Free a system (NULL is fine). */
void halox_md_system_destroy(halox_md_system_t *sys);

/** One thermo record. Energies are per atom; pressure includes the kinetic part with 3N-3
 *  degrees of freedom, as LAMMPS reports it. */
typedef struct halox_md_thermo {
    long long step; /**< the step the record is of */
    double time;    /**< step * dt */
    double temp;    /**< temperature, from the kinetic energy with 3N-3 degrees of freedom */
    double pe;      /**< potential energy per atom (plus tail correction when on) */
    double ke;      /**< kinetic energy per atom */
    double etotal;  /**< pe + ke */
    double press;   /**< pressure: virial and kinetic parts (plus tail correction when on) */
} halox_md_thermo_t;

/** Parts of a step that are timed. */
typedef enum halox_md_timer {
    HALOX_MD_T_PAIR = 0,  /**< pair forces */
    HALOX_MD_T_COORDS,    /**< halo exchange: coordinates */
    HALOX_MD_T_FORCES,    /**< halo exchange: forces */
    HALOX_MD_T_INTEGRATE, /**< kicks, drift, thermostat */
    HALOX_MD_T_NEIGHBOUR, /**< sorting, cell lists and Verlet lists */
    HALOX_MD_T_MIGRATE,   /**< migration and plan build */
    HALOX_MD_T_OTHER,     /**< thermo reductions, output, checkpoints, checks */
    HALOX_MD_T_COUNT      /**< the number of timers */
} halox_md_timer_t;

/** Name of a timer ("pair forces", ...). */
const char *halox_md_timer_name(halox_md_timer_t t);

/** Parts of the rebuilds (host wall time of rebuild steps). Together, DRAIN aside, they make up
 *  the timers "migration + plan" and "neighbour search" of the rebuild steps (which of the two
 *  holds the plan build and the bind differs between the engines' paths); DRAIN is in no timer:
 *  it is the GPU finishing the steps queued before the rebuild, their time, not the rebuild's;
 *  GRAPH is in no timer either: the first step after a rebuild captures it (wall time only). */
typedef enum halox_md_rebuild_part {
    HALOX_MD_R_DRAIN = 0, /**< the steps still queued on the GPU completing (GPU engine) */
    HALOX_MD_R_TO_HOST,   /**< positions and velocities copied to the host (GPU engine, host
                               rebuilds) */
    HALOX_MD_R_MIGRATE,   /**< blow-up check, wrap, owners, atoms to their owners */
    HALOX_MD_R_PLAN,      /**< the plan build: halo selection and set-up messages */
    HALOX_MD_R_BIND,      /**< upload to the GPU (host rebuilds) and the transport's bind */
    HALOX_MD_R_LISTS,     /**< sort, cell and pair lists (GPU: clusters and their lists) */
    HALOX_MD_R_GRAPH,     /**< the step's CUDA graph captured again and instantiated, or its
                               executable updated (GPU engine, --graph) */
    HALOX_MD_R_COUNT      /**< the number of rebuild parts */
} halox_md_rebuild_part_t;

/** Name of a rebuild part ("migration", ...). */
const char *halox_md_rebuild_part_name(halox_md_rebuild_part_t p);

/** What a run did and how fast. Timers are averaged over ranks. */
typedef struct halox_md_summary {
    long long natoms;        /**< atoms in the system */
    int nranks;              /**< ranks of the run */
    halox_grid_t grid;       /**< their grid */
    char transport[32];      /**< the transport's name (halox_comm_transport()) */
    halox_real_t real;       /**< precision of the positions, velocities and forces */
    long long first_step;    /**< step the run started from (0, or the restart step) */
    long long last_step;     /**< step reached */
    long long steps;         /**< steps integrated by this run */
    double setup_seconds;    /**< system, first plan, lists and forces (not the equilibration) */
    double loop_seconds;     /**< wall time of the steps (the slowest rank's) */
    double ms_per_step;      /**< loop_seconds per step, in milliseconds (0 without steps) */
    double steps_per_second; /**< steps per second of loop_seconds (0 without steps) */
    double ns_per_day;       /**< when cfg->fs_per_step > 0, else 0 */
    double fs_per_step;      /**< cfg->fs_per_step: the femtoseconds a step stands for */
    double timer_seconds[HALOX_MD_T_COUNT];     /**< mean over ranks */
    double timer_max_seconds[HALOX_MD_T_COUNT]; /**< slowest rank */
    double concurrent_seconds; /**< mean over ranks: how much the named parts exceed the wall
                                    time because they ran at the same time (GPU engine: the
                                    local pair forces beside the halo exchange and the non-local
                                    forces); parts - concurrent = wall time, as "other" fills the
                                    rest when the parts fall short */
    long long rebuilds;        /**< neighbour-list rebuilds (with migration and plan build) */
    long long device_rebuilds; /**< of those, done on the GPU without the host (one rank
                                    periodic by shifts; HALOX_MD_DEVICE_REBUILD) */
    double rebuild_seconds[HALOX_MD_R_COUNT]; /**< the rebuilds' parts over the run, mean over
                                                   ranks (halox_md_rebuild_part_t) */
    /* where the rebuilds' time went, across their parts (mean over ranks, over the run): */
    double rebuild_collectives;        /**< collectives (halox_comm_stats_t.collectives) */
    double rebuild_collective_seconds; /**< wall time inside them (waiting for the slowest rank) */
    double rebuild_waits;              /**< host waits for the GPU (the transport's and the
                                            engine's: the lists, the blow-up check) */
    double rebuild_wait_seconds;       /**< wall time inside them (the drain included) */
    long long migrated;                /**< atoms that changed rank, summed over rebuilds */
    int max_hops;              /**< most domains an atom crossed in one dimension between two
                                    rebuilds (periodic distance in grid coordinates) */
    long long stale_steps;     /**< steps of the run (not the equilibration's) on lists that an
                                    atom had outgrown on some rank (it had moved more than half
                                    the buffer since their build: pairs may have been missed;
                                    use a larger skin or rebuild_check); -1 where not counted
                                    (the CPU engine, whose rebuild_check is exact) */
    double halo_atoms;         /**< mean halo atoms per rank at the last rebuild */
    double pairs;              /**< pairs in the Verlet lists at the last rebuild, all ranks */
    long long halo_bytes;      /**< bytes sent by the halo exchanges, all ranks */
    int interrupted;           /**< stopped early on a stop request (signal) */
    int checkpoints;           /**< checkpoints written */
    long long checkpoint_step; /**< step of the last checkpoint written, or -1 */
    long long graph_steps;     /**< GPU engine: steps run as a CUDA graph (timed only as a
                                    whole) */
    long long timed_steps;     /**< steps whose parts were timed one by one: all but the graph's.
                                    Under graphs the step's parts (pair, coordinates, forces,
                                    integrate) are these steps' times scaled to all steps: a
                                    sample (the steps with rebuilds or energies), not a
                                    measurement of the graph's steps */
    long long graph_launches;  /**< GPU engine: launches that ran the graph steps (one step
                                    each, or several where they need nothing of the host
                                    between them: one rank, periodic by shifts) */
    long long graph_captures;  /**< GPU engine, graphs: captures of the step (the first, then
                                    one after each rebuild that graph steps follow; with
                                    several steps per launch each capture takes two graphs;
                                    rank 0) */
    long long graph_updates;   /**< of those, how many updated the executable in place
                                    (cudaGraphExecUpdate) instead of
                                    instantiating a new one */
    long long graph_kept;      /**< rebuilds after which the step's graph was launched as it was,
                                    without a capture (HALOX_MD_GRAPH_SPAN: the counts fit the
                                    spans of its kernels; rank 0) */
    long long inline_steps;    /**< GPU engine on nvshmem-inline: steps whose halo exchanges ran
                                    inside the step's kernels (halox/inline.h) on rank 0, graphs
                                    included; the others used the transport's exchange kernels
                                    (each rank decides for itself: a rank whose maps forward
                                    atoms cannot, and both ways interoperate) */
    long long device_bytes;    /**< NVSHMEM transports: symmetric memory per rank (largest) */
    /* cfg->overlap_probe: ms per repetition, median over the repetitions of the slowest rank */
    int overlap_reps;        /**< timed repetitions (0: the probe did not run) */
    double overlap_local_ms; /**< the step's force work without any exchange */
    double overlap_halo_ms;  /**< halox_comm_coords() + halox_comm_forces() alone */
    double overlap_both_ms;  /**< the step's real sequence: forces with both exchanges */
    double overlap_percent;  /**< 100 (halo + local - both) / halo: the share of the exchange
                                  hidden behind the force work (the CPU engine does not overlap:
                                  about 0 or below) */
    /* cfg->equilibrate: the steps before step 0, in no other field */
    long long equilibrate_steps; /**< steps run (0: none, and on a restart) */
    double equilibrate_seconds;  /**< their wall time (rank 0) */
} halox_md_summary_t;

/** Callbacks. thermo, progress and notice are called on rank 0 only (from its thread); stop as
 *  described below. Any may be NULL. */
typedef struct halox_md_hooks {
    /** A thermo record (first step, every thermo_every steps, last step). */
    void (*thermo)(void *user, const halox_md_thermo_t *rec);
    /** After every step: step reached, last step, seconds since the loop started. */
    void (*progress)(void *user, long long step, long long last_step, double seconds);
    /** A one-line notice (checkpoint written, stopping on request, ...). */
    void (*notice)(void *user, const char *text);
    /** Asked at every rebuild boundary whether to stop there (after writing the checkpoint):
     *  non-zero means stop. Called on rank 0 when the ranks are threads of one process (they
     *  share one process's signals), on every rank otherwise; the ranks agree collectively. A
     *  tool sets a lock-free atomic flag in its signal handler and reads it here. */
    int (*stop)(void *user);
    void *user; /**< passed to every hook as it is; the engine never reads it */
} halox_md_hooks_t;

/** A rank's engine: opaque, from halox_md_create() to halox_md_destroy(). */
typedef struct halox_md halox_md_t;

/** Create a rank's engine (collective). With cfg->restart_path the state comes from the
 *  checkpoint and sys may be NULL; otherwise the rank takes the atoms of sys it owns. Builds the
 *  first plan and lists and computes the forces of the first step, runs the cfg->equilibrate
 *  steps (not on a restart), then writes step 0's thermo record. */
halox_status_t halox_md_create(const halox_md_config_t *cfg, halox_comm_t *comm,
                               const halox_md_system_t *sys, const halox_md_hooks_t *hooks,
                               halox_md_t **md_p);

/** Integrate up to cfg->steps (collective). Returns early, with HALOX_OK, when a stop was
 *  requested (halox_md_interrupted() then says so). With cfg->overlap_probe, runs the overlap
 *  probe after the last step (not after a stop). Writes the JSON file at the end and closes the
 *  CSV and XYZ files. A write to any output file that fails (here or in a step) returns
 *  HALOX_ERR_WRITE; output paths that are not regular files are refused by halox_md_create()
 *  (HALOX_ERR_INVALID_ARG, before any file is written; include/halox/file.h). */
halox_status_t halox_md_run(halox_md_t *md);

/** Integrate up to step `last` (<= cfg->steps) without finishing the run (collective). */
halox_status_t halox_md_run_until(halox_md_t *md, long long last);

/** Write the checkpoint now (collective). Only valid at a rebuild boundary: returns
 *  HALOX_ERR_STATE otherwise, since a restart would not continue bit-identically. */
halox_status_t halox_md_write_checkpoint(halox_md_t *md, const char *path);

/** Current step. */
long long halox_md_step(const halox_md_t *md);
/** Whether a checkpoint can be written now: a multiple of rebuild-every, or a restart that ran
 *  no step yet. Without the rebuild check the next step rebuilds the lists; with it, only once a
 *  checkpoint is written (a restart from it rebuilds there too). */
int halox_md_at_boundary(const halox_md_t *md);
/** Whether the last run stopped on a stop request. */
int halox_md_interrupted(const halox_md_t *md);

/** Thermo of the current state (collective; computes energies if the last force computation
 *  did not). */
halox_status_t halox_md_thermo_now(halox_md_t *md, halox_md_thermo_t *rec_p);

/** The thermo records of this run so far (rank 0; others get 0 records). */
const halox_md_thermo_t *halox_md_thermo_records(const halox_md_t *md, int *count_p);

/** Summary of the run so far (collective: timers are reduced over ranks). */
halox_status_t halox_md_summary(halox_md_t *md, halox_md_summary_t *summary_p);

/** Gather positions (wrapped into the box), velocities and forces of every atom by id on
 *  root (collective). x, v, f: 3 * natoms doubles each on root (any may be NULL). */
halox_status_t halox_md_gather(halox_md_t *md, double *x, double *v, double *f, int root);

/** Number of atoms of the run. */
long long halox_md_natoms(const halox_md_t *md);
/** Box of the run. */
halox_box_t halox_md_box(const halox_md_t *md);

/** Free a rank's engine and close its files (not collective; NULL is fine). */
void halox_md_destroy(halox_md_t *md);

/** What halox_md_rank_run() and halox_md_threads_run() give back (on rank 0). Free with
 *  halox_md_result_free(). */
typedef struct halox_md_result {
    halox_status_t status;      /**< the run's status (on every rank) */
    char error[1024];           /**< first error, with the rank that raised it */
    halox_md_summary_t summary; /**< what the run did and how fast */
    halox_md_thermo_t *thermo;  /**< records (malloc) */
    int n_thermo;               /**< entries of thermo */
    int want_state;             /**< in: gather the final state into x, v */
    long long natoms;           /**< atoms of the system: x and v hold 3 * natoms entries each */
    double *x;                  /**< final positions by id (malloc; with want_state) */
    double *v;                  /**< final velocities by id (malloc; with want_state) */
} halox_md_result_t;

/** Free the arrays of a result (the struct itself is the caller's). */
void halox_md_result_free(halox_md_result_t *result);

/** The mean temperature of the thermo records of the steps the run integrated (the record of
 *  its first step is the state it started from) in *mean_p; returns how many records, and sets
 *  *mean_p to 0 when there are none. */
int halox_md_result_mean_temp(const halox_md_result_t *result, double *mean_p);

/** A whole run on one rank: system (when sys is NULL and not restarting), create, run,
 *  summary, final state. Collective. result is filled on rank 0 (status on every rank). */
halox_status_t halox_md_rank_run(const halox_md_config_t *cfg, halox_comm_t *comm,
                                 const halox_md_system_t *sys, const halox_md_hooks_t *hooks,
                                 halox_md_result_t *result);

/** A whole run with one thread per rank of cfg->grid on the `threads` transport: the initial
 *  system is built once and shared; the first rank that failed on its own explains an error. */
halox_status_t halox_md_threads_run(const halox_md_config_t *cfg, const halox_md_hooks_t *hooks,
                                    halox_md_result_t *result);

/** The pair-list buffer from an energy-drift tolerance (halox_md_config_t.verlet_tolerance;
 *  the model, its formula and assumptions: md/engine/verlet_buffer.h). A list of pairs within
 *  cut-off + skin rebuilt every K steps misses the pairs that come within the cut-off from
 *  beyond it; each such pair adds its energy at the next rebuild. With ballistic Maxwell
 *  displacements at temp over K dt and partners uniform at the density, the mean of that energy
 *  per atom per unit time (an upper-side estimate), in reduced LJ units, mass 1. NaN for
 *  arguments out of range (temp >= 0, density, cutoff, dt > 0, rebuild_every >= 1, skin >= 0). */
double halox_md_verlet_drift(double temp, double density, double cutoff, double dt, int shift,
                             int rebuild_every, double skin);

/** halox_md_config_verlet(): keep cfg->skin as it is. */
#define HALOX_MD_VERLET_KEEP_SKIN 1u
/** halox_md_config_verlet(): keep cfg->rebuild_every as it is. */
#define HALOX_MD_VERLET_KEEP_REBUILD 2u
/** The rebuild cost of the cost model by default, in steps: that of the CPU engine (docs/MD.md,
 *  the Verlet buffer). */
#define HALOX_MD_VERLET_REBUILD_COST 5.0

/** What halox_md_config_verlet() chose and assumed. */
typedef struct halox_md_verlet {
    double skin;         /**< the skin now in the configuration */
    int rebuild_every;   /**< the rebuild interval now in the configuration */
    double drift;        /**< halox_md_verlet_drift() for them */
    double tolerance;    /**< cfg->verlet_tolerance */
    double temp;         /**< the temperature the estimate assumed */
    double density;      /**< the density the estimate assumed */
    double rebuild_cost; /**< R of the cost model, in steps */
    int chose_skin;      /**< the skin was chosen (not kept) */
    int chose_rebuild;   /**< the interval was chosen (not kept) */
} halox_md_verlet_t;

/** Set cfg->skin and cfg->rebuild_every from cfg->verlet_tolerance (> 0), cfg->temp, cfg->cutoff,
 *  cfg->shift, cfg->dt and the density (<= 0: cfg->density): the skin is the smallest multiple of
 *  0.01 cut-off (up to the cut-off) whose estimate is at most the tolerance; the interval the one
 *  of 10, 20, 25, 40, 50, 80 and 100 steps that minimises the cost of a step, ((rc + skin)/rc)^3
 *  (1 + R / K), where a rebuild costs R steps (rebuild_cost; <= 0: HALOX_MD_VERLET_REBUILD_COST).
 *  keep (HALOX_MD_VERLET_KEEP_*): a kept skin gets the longest interval (of those, else below
 *  10) within the tolerance; a kept interval the smallest skin; both kept: only out->drift.
 *  Errors (HALOX_ERR_INVALID_ARG) name the value: a tolerance that is not finite and > 0, and
 *  a tolerance no skin up to the cut-off (or no interval down to 1 for a kept skin) meets. */
halox_status_t halox_md_config_verlet(halox_md_config_t *cfg, double density, unsigned keep,
                                      double rebuild_cost, halox_md_verlet_t *out);

/** Analytic long-range correction for a uniform fluid beyond the cut-off rc at density rho
 *  (Allen & Tildesley): energy per atom, (8/3) pi rho (rc^-9 / 3 - rc^-3). */
double halox_md_tail_energy(double rho, double rc);
/** The same for the pressure: (16/3) pi rho^2 ((2/3) rc^-9 - rc^-3). */
double halox_md_tail_pressure(double rho, double rc);

/** What a checkpoint holds, from halox_md_checkpoint_probe(). */
typedef struct halox_md_checkpoint_info {
    long long step;     /**< the step it was written at */
    long long natoms;   /**< atoms it holds */
    int nranks;         /**< ranks of the run that wrote it */
    halox_grid_t grid;  /**< grid of the run that wrote it */
    halox_real_t real;  /**< precision of its positions, velocities and forces */
    char transport[32]; /**< transport of the run that wrote it */
} halox_md_checkpoint_info_t;

/** Read a checkpoint and check it whole (magic, version, size, checksums, then every setting as
 *  halox_md_config_check() checks it and every atom record); fill info_p (may be NULL). Errors
 *  (HALOX_ERR_IO) say what is wrong with the file (not a regular file, truncated, corrupted, not
 *  a checkpoint, the setting or atom that is invalid). */
halox_status_t halox_md_checkpoint_probe(const char *path, halox_md_checkpoint_info_t *info_p);

#ifdef __cplusplus
}
#endif
#endif
