/** @file
 * The engine's settings by name ("--cells 10,10,10"), as command lines give them: one table
 * serves parsing, help text and the checks of combinations, so that tools and documentation
 * cannot drift from the engine.
 *
 *     halox_md_setup_t s;
 *     halox_md_setup_init(&s);                        // defaults
 *     halox_md_setup_env(&s);                         // HALOX_TRANSPORT, HALOX_DEVICE
 *     halox_md_setup_option(&s, "--preset", "water-density");   // presets first
 *     halox_md_setup_option(&s, "--cells", "12,12,12");          // then the others in order
 *     halox_md_setup_finish(&s, &launch);             // combinations, device and transport
 *     ... s.cfg is ready for halox_md_threads_run() / halox_md_rank_run() ...
 *
 * Errors are HALOX_ERR_INVALID_ARG (or what a probed file returns) with a message that names the
 * option and value and says what to give instead; nothing is printed. */
#ifndef HALOX_MD_OPTIONS_H
#define HALOX_MD_OPTIONS_H

#include <stdint.h>

#include "halox/env.h"
#include "halox/md.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Sections of the help text, in order. */
typedef enum halox_md_option_group {
    HALOX_MD_GROUP_SYSTEM = 0,  /**< "System (one of)": where the atoms come from */
    HALOX_MD_GROUP_POTENTIAL,   /**< "Potential and lists" */
    HALOX_MD_GROUP_INTEGRATION, /**< "Integration" */
    HALOX_MD_GROUP_PARALLEL,    /**< "Parallel run" */
    HALOX_MD_GROUP_OUTPUT,      /**< "Output" */
    HALOX_MD_GROUPS             /**< the number of sections */
} halox_md_option_group_t;

/** One setting. */
typedef struct halox_md_option {
    const char *name;    /**< "--cells" */
    const char *metavar; /**< "NX,NY,NZ"; NULL: a flag without a value */
    int group;           /**< halox_md_option_group_t */
    int physics;         /**< defines the system or the trajectory: --restart cannot take it */
    const char *usage;   /**< the help's left column ("--shift | --no-shift"); NULL: listed
                              with another option */
    const char *help;    /**< lines separated by '\n', without a final newline */
} halox_md_option_t;

/** The settings, terminated by an entry whose name is NULL. */
const halox_md_option_t *halox_md_options(void);
/** The setting called `name`, or NULL. */
const halox_md_option_t *halox_md_option_find(const char *name);
/** A section's title ("Potential and lists"). */
const char *halox_md_option_group_title(int group);

/** A command line being applied: the configuration, and what was given (for the checks of
 *  combinations and for restarts). */
typedef struct halox_md_setup {
    halox_md_config_t cfg;      /**< the configuration the settings are applied to */
    uint64_t given;             /**< one bit per entry of halox_md_options() */
    int transport_from_env;     /**< the transport came from HALOX_TRANSPORT (for messages) */
    const char *physics_option; /**< the first option given that --restart cannot take */
    const char *traj_option;    /**< --traj or --xyz, the one given */
    const char *every_option;   /**< --traj-every or --xyz-every, the one given */
    halox_md_read_info_t read;  /**< after finish, with --read: what the file holds */
    halox_md_verlet_t verlet;   /**< after finish, with --verlet-tolerance: what was chosen */
    char why[384];              /**< after finish: how the transport was chosen when not given
                                     (empty when given) */
    int gpu_absent;             /**< after finish: device auto runs the CPU engine only because
                                     no GPU is visible (the build has the GPU engine and nothing
                                     else kept the run from it): tools say so */
} halox_md_setup_t;

/** Defaults (halox_md_config_default()), nothing given. */
void halox_md_setup_init(halox_md_setup_t *s);

/** HALOX_TRANSPORT (as --transport, but a later --transport wins) and HALOX_DEVICE. */
halox_status_t halox_md_setup_env(halox_md_setup_t *s);

/** Apply one setting: `value` is NULL for flags. Apply --preset before the others so that they
 *  override it. HALOX_ERR_INVALID_ARG for an unknown name, a missing or malformed value, or a
 *  second trajectory option. */
halox_status_t halox_md_setup_option(halox_md_setup_t *s, const char *name, const char *value);

/** Whether the setting `name` was given. */
int halox_md_setup_given(const halox_md_setup_t *s, const char *name);

/** How the job was launched, as the caller read it before MPI starts. */
typedef struct halox_md_launch {
    int processes;       /**< processes of the MPI job; 0: not started by an MPI launcher */
    int local_processes; /**< of them on this node; 0: unknown (one node) */
    const char *var;     /**< the launcher's variable that said so ("OMPI_COMM_WORLD_SIZE") */
    const char *how;     /**< "started by mpirun with 2 processes (...)", for messages */
} halox_md_launch_t;

/** Check the combinations, probe --read and --restart files, choose the device and transport
 *  where they were left to the library (the GPU engine when a GPU is visible, the precision is
 *  float and the ranks can run as processes; halox_transport_choose() for its transport; mpi
 *  under an MPI launcher for the CPU engine), refuse a launch that would run one copy of the job
 *  per process or a grid that does not match the processes, refuse the GPU engine (--device gpu,
 *  a GPU transport) where no GPU is visible, apply --verlet-tolerance, check the result
 *  (halox_md_config_check()) and the run's files together (every output can be written, no two
 *  of them and no output and input are the same file: halox_files_check()). `launch` may be
 *  NULL: no launcher. */
halox_status_t halox_md_setup_finish(halox_md_setup_t *s, const halox_md_launch_t *launch);

/** A seed as every halox tool takes it: a decimal integer from 0 to 2^64 - 1, strictly (no sign,
 *  no spaces, nothing after it). 1 and *seed_p set when it is one, else 0. */
int halox_parse_seed(const char *text, uint64_t *seed_p);
/** The range, as messages state it. */
#define HALOX_SEED_RANGE "an integer from 0 to 18446744073709551615"

/** The environment variables the engine reads besides the library's (halox_env_table()): the
 *  GPU engine's switches and diagnostics (HALOX_MD_*) and the system cache, each with its type,
 *  default and meaning; *count_p gets the table's length. Tools print it with --help-env. */
const halox_env_var_t *halox_md_env_table(int *count_p);

#ifdef __cplusplus
}
#endif

#endif
