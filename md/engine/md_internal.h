/* Internal: the engine's state and the functions its files share. One concept per file, each
 * calling only files listed above it (the table of backend.h included), so the calls among them
 * have no cycles:
 *   clock.c       the monotonic clock of timers and deadlines
 *   env.c         the engine's environment variables: their table and typed reads
 *   config.c      defaults, presets, checks
 *   velocities.c  Maxwell-Boltzmann velocities, zero momentum, exact temperature
 *   read_text.c, read_xyz.c, read_dump.c, read_file.c  (read.h) input files of --read: lines
 *                 and tokens, extended XYZ, LAMMPS text dumps, the frame's atoms into a system
 *   system_cache.c, system_fcc.c, system_random.c  (system.h) the random placements' cache,
 *                 the fcc lattice, random non-overlapping placement
 *   system.c      halox_md_system_create: the initial system from its source, its velocities
 *   neighbour.c   spatial sort of home atoms, cell list, Verlet pair list (zone rule)
 *   lj.c          Lennard-Jones forces, energy and virial over the pair list; tail corrections
 *   integrate.c   velocity Verlet kicks and drift, displacement check, kinetic energy
 *   thermostat.c  stochastic velocity rescaling (Bussi, Donadio, Parrinello 2007)
 *   verlet_buffer.c  the skin and rebuild interval from an energy-drift tolerance
 *   common.c      agreement on failure, notices, the force array
 *   cpu_backend.c the CPU back end of the step (backend.h): kick/drift, LJ + force exchange,
 *                 the exact rebuild check, the host rebuild's hooks, timers
 *   gpu_state.c, gpu_rebuild.c, gpu_resident.c, gpu_step.c, gpu_graph.c, gpu_backend.c
 *                 the GPU back end of the step (backend.h; CUDA builds only), in that order
 *                 (gpu_internal.h)
 *   gather.c      the state of all ranks on one (halox_md_gather)
 *   output.c      CSV, JSON and extended-XYZ writers
 *   thermo.c      reductions over ranks, thermo records
 *   state_check.c the physics check of the state before anything is written from it
 *   checkpoint_format.c, checkpoint_write.c, checkpoint_check.c, checkpoint_read.c,
 *   checkpoint_restore.c  (checkpoint.h) checksums and header; atomic writing; the checks of
 *                 the settings and atoms; reading a file whole; restarts
 *   step.c        the dynamics of one step and the rebuild, through the back end's table
 *   overlap.c     the overlap probe: local forces alone, halo alone, both together
 *   equilibrate.c NVT steps before step 0 (cfg.equilibrate), outside the run's statistics
 *   engine.c      create (picks the back end), the step loop with its outputs, summary
 *   driver.c      whole runs on one rank and on a team of threads
 *   options.c     the settings by name (md_options.h): table, values, help text
 *   setup.c       a command line's settings made into a run: combinations, restart and --read
 *                 files, device and transport, launch rules, Verlet buffer
 */
#ifndef HALOX_MD_INTERNAL_H
#define HALOX_MD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "halox/halox.h"
#include "halox/md.h"
#include "halox/plan.h"

/* printf-style checks of the engine's formatting functions */
#if defined(__GNUC__)
#define MD__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define MD__PRINTF(a, b)
#endif

/* Cell list and half Verlet list of one rank's local atoms (home + halo). */
typedef struct md_nlist {
    int n;      /* atoms the list covers (n_total at build) */
    int *start; /* n + 1 offsets into list */
    int start_cap;
    int32_t *list; /* neighbours j of atom i: list[start[i] .. start[i+1]) */
    size_t list_cap;
    size_t npairs;
    /* periodic shifts (plan.shift_dims): atom i's neighbours come in segments of one image
     * each, the unshifted ones first, from start[i]; its shifted segments are
     * [seg_first[i], seg_first[i + 1]), segment s from list[seg_at[s]] to the next segment of
     * atom i (or start[i + 1]), taking x_i - shift[seg_code[s]] in place of x_i. No segments in
     * copy mode (seg_first all 0), where the kernels compute exactly what they did before. */
    int *seg_first; /* n + 1 */
    int seg_first_cap;
    int *seg_at;
    uint8_t *seg_code;
    int seg_cap;
    int nseg;
    double shift[27][3]; /* by code: image n_d in {0, +1, -1} coded 0, 1, 2; code sum 3^d c_d */
    /* cell list scratch */
    int *cell_of;     /* cell of each atom */
    int *cell_start;  /* ncell + 1 */
    int *cell_atoms;  /* atoms sorted by cell, stable */
    int *pos_in_cell; /* index of each atom in cell_atoms */
    int atom_cap;
    int cell_cap;
    /* sort scratch */
    void *scratch;
    size_t scratch_bytes;
} md_nlist_t;

typedef struct md_backend md_backend_t;

struct halox_md {
    halox_md_config_t cfg;
    const md_backend_t *be; /* the back end of the step (backend.h), chosen at create */
    void *be_state;         /* its state (gpu_internal.h), NULL on the CPU */
    halox_md_hooks_t hooks;
    halox_comm_t *comm;
    int rank, nranks;
    halox_box_t box;
    halox_plan_params_t prm;
    long long natoms;
    double dof; /* 3N - 3 */
    double volume;
    double rho;

    halox_atoms_t atoms; /* x: home + halo; extra: velocities of home atoms. The engine's own
                            arrays at a capacity it chose: the host rebuild passes them to the
                            library's caller-owned calls and grows them when those ask */
    uint8_t *zone;       /* atoms.capacity zones beside them (the plan build writes them) */
    int zone_cap;
    void *f; /* forces, n_total * 3 reals */
    int f_cap;
    halox_plan_t plan;
    md_nlist_t nl;
    void *x_ref; /* home positions at the last rebuild (rebuild check) */
    int xref_cap;

    long long step;
    long long until; /* the last step of the halox_md_run_until in progress */
    long long first_step;
    long long last_rebuild;
    int force_rebuild; /* the next step must rebuild (restart) */
    int ckpt_rebuild;  /* a checkpoint was written: the next step rebuilds, as its restart does */

    /* potential */
    double rc2;
    double eshift;         /* energy at the cut-off, subtracted per pair when shifting */
    double e_tail, p_tail; /* per atom and pressure, 0 when off */

    /* from the last force computation */
    int have_energy;
    long long energy_step;
    double pe_local, vir_local;

    /* statistics */
    long long rebuilds;
    long long device_rebuilds; /* of those, without the host (backend.h rebuild_local) */
    long long graph_steps;     /* GPU back end: steps run as a replayed CUDA graph */
    long long graph_launches;  /* GPU back end: the launches that ran them */
    long long graph_captures, graph_updates; /* GPU back end: captures, of them updates */
    long long graph_kept;                    /* GPU back end: rebuilds the step's graph outlived */
    long long inline_steps; /* GPU back end: steps exchanging inside their kernels */
    long long migrated;
    int max_hops;
    double timer[HALOX_MD_T_COUNT];
    double rpart[HALOX_MD_R_COUNT]; /* the rebuilds' parts (halox_md_rebuild_part_t) */
    /* the rebuilds' budget (halox_md_summary_t.rebuild_collectives ...): collectives, their
     * seconds, host waits for the GPU, their seconds; in_rebuild while md__rebuild runs (the
     * engine's own waits count then) */
    double rbudget[4];
    int in_rebuild;
    double setup_seconds;
    double loop_seconds;
    long long loop_steps;
    int interrupted;
    int finished;
    int checkpoints;
    long long checkpoint_step;
    /* the step whose state last passed md__state_check, and whether with its forces */
    long long checked_step;
    int checked_forces;
    long long next_checkpoint; /* step from which the next periodic checkpoint counts */

    /* overlap probe (overlap.c): ms per repetition, median of the slowest rank, by kind */
    int ovl_reps;
    double ovl_ms[3];
    long long ovl_bytes; /* sent by the probe's exchanges: not the run's, the summary drops them */

    /* equilibration before step 0 (equilibrate.c): not the run's, the summary reports it apart */
    long long eq_steps;
    long long eq_stale; /* the platform's stale-list steps (backend.h: stats) when it ended */
    double eq_seconds;
    long long eq_bytes; /* sent by its exchanges: the summary drops them */

    /* rank 0: records and files */
    halox_md_thermo_t *rec;
    int nrec, rec_cap;
    FILE *csv;
    FILE *xyz;
    halox_md_summary_t summary;
    int have_summary;
};

/* config.c */
const char *md__source_name(halox_md_source_t s);
const char *md__ensemble_name(halox_md_ensemble_t e);
/* temperature and density, which halox_md_config_check() skips for a restart */
halox_status_t md__config_check_restored(const halox_md_config_t *cfg);
/* A box the run's precision can hold with cfg's cut-off and skin (finite with its halo, fine
 * enough coordinates, cell counts within an int); `what` names the box in the message. */
halox_status_t md__box_check(const halox_md_config_t *cfg, const double box[3], const char *what);

/* velocities.c */
halox_status_t md__velocities(halox_md_system_t *sys, double temp, uint64_t seed);

/* neighbour.c */
void md__nlist_free(md_nlist_t *nl);
/* Reorder home atoms (x, id, velocities) by cell so that neighbours sit close in memory. */
halox_status_t md__sort_home(halox_md_t *md);
/* Build the half list over local atoms: pairs within rl whose zones allow them on this rank. */
halox_status_t md__nlist_build(halox_md_t *md, double rl);

/* lj.c */
/* Zero f over n_total and add the pair forces; energies and virial (local) when want_energy. */
void md__lj_forces(halox_md_t *md, int want_energy);

/* integrate.c */
void md__kick(halox_md_t *md, double half_dt);
void md__drift(halox_md_t *md, double dt);
void md__save_reference(halox_md_t *md);
double md__max_displacement2(const halox_md_t *md);
void md__scale_velocities(halox_md_t *md, double alpha);
double md__max_speed2(const halox_md_t *md, int *id_p);
double md__kinetic_local(const halox_md_t *md);
/* The blow-up bound of every check (the rebuild's, the state's before it is written, the
 * checkpoint reader's): the speed at which an atom crosses half the smallest box edge per step. */
double md__speed_limit(const double box[3], double dt);
/* How far outside the box an atom slower than that bound can be `steps` steps after the
 * rebuild that wrapped it into the box (at least one step's worth). */
double md__outside_limit(const double box[3], long long steps);
/* The error of a system that blew up at md->step: `who` ("atom id 7") moves `speed` per unit
 * time, beyond the bound; `unwritten` (NULL at a rebuild) names the output it was found before. */
halox_status_t md__blown_up(const halox_md_t *md, const char *who, double speed,
                            const char *unwritten);

/* thermostat.c */
/* Scaling factor of stochastic velocity rescaling for one step from kinetic energy ke. */
double md__bussi_alpha(double ke, double ke_target, double ndof, double dt_over_tau, uint64_t seed,
                       long long step);

/* thermo.c */
halox_status_t md__thermo_compute(halox_md_t *md, halox_md_thermo_t *rec);
halox_status_t md__record_thermo(halox_md_t *md, const halox_md_thermo_t *rec);

/* state_check.c */
/* Before `what` ("the checkpoint") is written from the state at md->step: finite positions,
 * velocities and (forces) forces of the home atoms on the host, none beyond the blow-up bound
 * of md__speed_limit or farther outside the box than md__outside_limit, finite energies in rec
 * (or NULL). Collective (agreed); a state that passed at this step is not checked again. */
halox_status_t md__state_check(halox_md_t *md, const char *what, int forces,
                               const halox_md_thermo_t *rec);

/* output.c */
/* Every file of cfg's run checked together before any is opened (halox_files_check): each
 * output can be written, and none is another output, the --read file, the system cache file or
 * the --restart checkpoint (but for --checkpoint, which replaces it atomically). */
halox_status_t md__files_check(const halox_md_config_t *cfg);
halox_status_t md__outputs_open(halox_md_t *md);
halox_status_t md__outputs_close(halox_md_t *md);
halox_status_t md__csv_row(halox_md_t *md, const halox_md_thermo_t *rec);
halox_status_t md__json_write(const halox_md_t *md, const char *path);
halox_status_t md__xyz_frame(halox_md_t *md);

/* checkpoint_write.c */
halox_status_t md__checkpoint_write(halox_md_t *md, const char *path);
/* checkpoint_restore.c */
halox_status_t md__checkpoint_load(halox_md_t *md, const char *path);

/* overlap.c */
/* What one repetition of the probe times: the step's force work without any exchange, the
 * coordinate + force exchange alone, and the step's real sequence (both overlapped). */
enum { MD_OVL_LOCAL = 0, MD_OVL_HALO = 1, MD_OVL_BOTH = 2, MD_OVL_KINDS = 3 };
/* Run the probe of cfg.overlap_probe repetitions (collective), then restore the forces. */
halox_status_t md__overlap_probe(halox_md_t *md);

/* equilibrate.c */
/* Run cfg.equilibrate NVT steps from the state of step 0 (forces computed), numbered
 * 1 - equilibrate to 0, then scale the velocities to exactly cfg.temp; collective. Leaves the
 * engine at step 0 with its energies, as a fresh start; called by halox_md_create. */
halox_status_t md__equilibrate(halox_md_t *md);

/* clock.c */
/* Monotonic clock in seconds. */
double md__now(void);

/* common.c */
halox_status_t md__agree(halox_md_t *md, halox_status_t st);
void md__notice(halox_md_t *md, const char *fmt, ...) MD__PRINTF(2, 3);
halox_status_t md__ensure_forces(halox_md_t *md, int n);

/* step.c (and backend.h: the pieces the platforms' steps share) */
/* The platform's rebuild (migration, order, plan, bind, lists; the plan build fills the halo) at
 * md->step, with its budget and counters. */
halox_status_t md__rebuild(halox_md_t *md);
/* Step s computes energies (thermo output): every thermo_every steps, the first and the last. */
int md__thermo_step(const halox_md_t *md, long long s);
/* Whether step s rebuilds (on the schedule, after a checkpoint or a restart; the platform's
 * displacement check may add others). */
int md__rebuild_due(const halox_md_t *md, long long s);
/* How many steps from s on (at most kmax) need nothing of the host between them, so
 * that a platform may enqueue them at once: inside the run in progress, no rebuild due, no
 * energies, no trajectory frame, NVE, and no rebuild boundary but the last (whose checkpoint or
 * stop sees the state after it). */
int md__plain_steps(const halox_md_t *md, long long s, int kmax);

#define MD_PI 3.14159265358979323846

/* real-type helpers */
static inline size_t md__rs(const halox_md_t *md) { return halox_real_size(md->atoms.real); }
/* FNV-1a 64 of n bytes, continuing from h (MD_FNV_INIT to start): the checksums of the
 * checkpoints and of the system cache. */
#define MD_FNV_INIT 0xcbf29ce484222325ull
static inline uint64_t md__fnv1a64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}
/* Element k of an array of reals of this precision. */
static inline double md__real_at(const void *p, halox_real_t real, size_t k)
{
    return real == HALOX_FLOAT ? (double)((const float *)p)[k] : ((const double *)p)[k];
}
/* Component c of local atom i (halox_atoms_get, inline for the loops over every atom). */
static inline double md__atom_coord(const halox_atoms_t *a, int i, int c)
{
    return md__real_at(a->x, a->real, (size_t)i * (size_t)a->stride + (size_t)c);
}

#endif
