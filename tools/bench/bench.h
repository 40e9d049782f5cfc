/* halox-bench: what the subcommands share (options, ranks, GPU helpers, records, systems). */
#ifndef HALOX_TOOLS_BENCH_H
#define HALOX_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/gpu.h"
#include "halox/md.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "halox/transport.h"

/* Exit codes: 0 measured (or skipped with a message), 1 a wrong result or a run-time failure,
 * 2 bad usage or bad input. */
enum { BENCH_OK = 0, BENCH_FAILED = 1, BENCH_USAGE = 2 };

#define BENCH_MAX_LIST 64

/* ---- options (args.c) ------------------------------------------------------------------------ */

typedef struct bench_opts {
    const char *cmd;
    char transports[BENCH_MAX_LIST][64];
    int n_transports;
    long long atoms[BENCH_MAX_LIST];
    int n_atoms;
    halox_grid_t grid;
    int grid_set;
    int threads;                    /* ranks of the threads transport */
    int repeats, warmup, iters;     /* halo: -r -w; latency/bandwidth: -n -w */
    int back_to_back;               /* halo: exchanges per timed repeat, enqueued one after
                                       the other (1: a barrier before each) */
    int back_to_back_set;           /* given on the command line (in-step's default is 20) */
    int shifts;                     /* halo --shifts: periodic images by shifts (no pulse in a
                                       one-rank dimension), as the GPU engine plans */
    int full_shell;                 /* halo --full-shell: ghosts from both neighbours */
    int fields;                     /* halo --fields N: N float fields per atom forwarded with
                                       every coordinate exchange (halox_comm_bind_fields) */
    int in_step;                    /* halo --mode in-step: the K exchanges of a repeat
                                       captured in one CUDA graph, launched at once */
    long long min_bytes, max_bytes; /* -b -e */
    double factor;                  /* -f */
    int verify;
    halox_real_t real;
    int stride;
    uint64_t seed;
    double timeout_s;
    long long steps;        /* md, overlap */
    halox_md_graph_t graph; /* md: AUTO unless --graph or --no-graph */
    halox_md_device_t device;
    const char *files[BENCH_MAX_LIST]; /* scaling: JSON files */
    /* md, overlap: the engine's own settings given on the command line (name, value or NULL),
     * applied after the preset by the engine's option table; in the records as
     * "engine_options" */
    const char *engine_opt[BENCH_MAX_LIST][2];
    int n_engine_opts;
    char engine_options[512];
    int n_files;
    const char *json_path, *csv_path;
    char cmdline[2048];
} bench_opts_t;

/* Parse argv[2..] for subcommand o->cmd; prints the error and returns BENCH_USAGE on bad input,
 * 1 after --help, 0 to run. */
int bench_parse(int argc, char **argv, bench_opts_t *o);
void bench_usage(FILE *to);
int bench_bad(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
/* "8", "64K", "64M", "1G" (powers of 1024) into *v; 0 on bad input. */
int bench_parse_size(const char *s, long long *v);
/* Base name of a transport label ("nvshmem-fused+put" -> "nvshmem-fused") into out. */
void bench_base_name(const char *label, char *out, size_t cap);
/* The capabilities of a label's transport (all zero when unknown: labels are checked first). */
halox_transport_caps_t bench_label_caps(const char *label);

/* ---- ranks: MPI processes or threads (ranks.c) -------------------------------------------- */

typedef struct bench_rank {
    int rank, size;
    halox_team_t *team; /* threads transport: the team; else NULL */
} bench_rank_t;

typedef halox_status_t (*bench_rank_fn)(const bench_rank_t *who, void *arg);

/* Start MPI when a transport other than `threads` is listed (or `need` says so), and compare the
 * ranks' inputs (tools/tool_agree.h): BENCH_USAGE after they differ (said, MPI finished), else
 * 0. */
int bench_mpi_start(int *argc, char ***argv, int need);
void bench_mpi_stop(void);
int bench_mpi_started(void);
/* Processes of this job (1 without MPI) and this process's rank. */
int bench_world_size(void);
int bench_world_rank(void);
/* Processes the launcher started (0: not started by an MPI launcher). */
int bench_launched_processes(void);
/* Run fn on nranks ranks: threads of this process for `threads`, else this MPI process as its
 * rank of the world (nranks must be the world size). Returns the first rank's failure. */
halox_status_t bench_ranks_run(const char *transport, int nranks, double timeout_s,
                               bench_rank_fn fn, void *arg);
/* This rank's endpoint on transport (the base name, without +variant). */
halox_status_t bench_comm_create(const bench_rank_t *who, const char *transport, halox_real_t real,
                                 int stride, double timeout_s, halox_comm_t **comm_p);
/* Ranks of a transport in this launch (threads: --threads, the grid's or 2; else the world),
 * or 0 after a message when it cannot run here (threads under mpirun, GPU without a GPU). */
int bench_transport_ranks(const bench_opts_t *o, const char *label, int *nranks_p);
/* NAME+put, +tma, +floor, +null: set (on) or clear (off) the NVSHMEM knob it stands for; the
 * transports read them at endpoint creation. */
void bench_variant_env(const char *label, int on);
/* +floor (signals without atoms) and +null (the exchange kernels launched empty): nothing moves,
 * nothing to verify */
int bench_label_floor(const char *label);
/* A failure no rank can recover from: threads: said, and the team aborted; MPI: said at the
 * case's end if it is the cause (bench_mpi_case_end). */
void bench_rank_fail(const bench_rank_t *who, const char *what);
/* MPI ranks, at the end of a case (collective): every rank learns whether any failed, the cause
 * is said once, and the ranks go on together to the next case; ranks that do not arrive in time
 * are aborted (tool_agree_outcome). Returns st, or HALOX_ERR_ABORTED where only another rank
 * failed. Without MPI: st. */
halox_status_t bench_mpi_case_end(halox_status_t st, double timeout_s);

/* ---- GPU helpers; stubs without CUDA (gpu.c / gpu_none.c) -------------------------------- */

int bench_gpu_count(void);
/* Names ("NVIDIA H200, NVIDIA H200"), count, driver and runtime versions (0 when none). */
void bench_gpu_describe(char *names, size_t cap, int *count_p, int *driver_p, int *runtime_p);
typedef struct bench_timer bench_timer_t;
int bench_timer_create(bench_timer_t **t_p);
void bench_timer_destroy(bench_timer_t *t);
int bench_timer_start(bench_timer_t *t, void *stream);
/* Record the end and wait for it; *ms_p gets the time between start and end on the stream. */
int bench_timer_stop(bench_timer_t *t, void *stream, double *ms_p);
int bench_gpu_put(void *dst, const void *src, size_t bytes, void *stream);
int bench_gpu_get(void *dst, const void *src, size_t bytes, void *stream);
int bench_gpu_fill(void *dst, int byte, size_t bytes, void *stream);
int bench_gpu_sync(void *stream);
const char *bench_gpu_error(void);
/* CUDA graphs: capture what is enqueued on `stream` between begin and end (thread-local mode),
 * instantiated into *g_p; launch on a stream; destroy (NULL is fine). -1 on failure
 * (bench_gpu_error says why); end always ends the capture, also after a failed enqueue. */
typedef struct bench_graph bench_graph_t;
int bench_graph_begin(void *stream);
int bench_graph_end(void *stream, bench_graph_t **g_p);
int bench_graph_launch(bench_graph_t *g, void *stream);
void bench_graph_destroy(bench_graph_t *g);
/* The link the transports move data over, measured once by the calling process: with two
 * visible GPUs that can access each other, a 256 MiB GPU 0 -> GPU 1 peer copy (median of 5,
 * CUDA events); else a 256 MiB host memcpy. GB/s, what was measured in what[]; 0 on failure. */
double bench_link_peak(char *what, size_t len);
/* The host memcpy part (stats.c). */
double bench_host_copy_peak(char *what, size_t len);

/* ---- arrays and verification (verify.c) --------------------------------------------------- */

/* Every rank's arrays as they must be after one coordinate and one force exchange, from the
 * serial reference. Shared read-only by thread ranks. */
typedef struct bench_expect {
    int nranks;
    size_t esize;
    int *n_home, *n_total;
    void **x;     /* expected coordinates (home + halo) */
    void **f_in;  /* forces loaded before the exchange */
    void **f_out; /* expected forces after it */
} bench_expect_t;

/* From the plans of all ranks and their home coordinates (x_home[r]: n_total entries, home part
 * filled): coordinates and forces by halox_reference_coords/forces. */
int bench_expect_make(const halox_plan_t *plans, int nranks, halox_real_t real, int stride,
                      void *const *x_home, uint64_t seed, bench_expect_t *e);
void bench_expect_free(bench_expect_t *e);

/* A rank's bound arrays: host memory, or device memory from halox_comm_device_alloc(). */
typedef struct bench_arrays {
    halox_comm_t *comm;
    int on_gpu;
    void *stream;
    void *x, *f;
    size_t bytes;
} bench_arrays_t;
halox_status_t bench_arrays_alloc(halox_comm_t *comm, size_t bytes, bench_arrays_t *a);
void bench_arrays_free(bench_arrays_t *a);
/* One coordinate and one force exchange as a benchmark runs them (bench_exchange_host: the two
 * calls; halo --mode in-step: a captured graph launched). */
typedef halox_status_t (*bench_exchange_fn)(halox_comm_t *comm, void *ctx);
halox_status_t bench_exchange_host(halox_comm_t *comm, void *ctx);
/* Load rank `me`'s expected home coordinates (halo poisoned) and input forces, barrier, one
 * exchange by `run`, compare bit for bit. *ok_p: 1 on every rank when every rank matched. */
halox_status_t bench_verify(bench_arrays_t *a, const bench_expect_t *e, int me,
                            bench_exchange_fn run, void *ctx, int *ok_p);

/* ---- systems and plans (system.c) --------------------------------------------------------- */

/* The most cubic grid of P ranks, x >= y >= z (halox_grid_default). */
void bench_make_grid(int P, halox_grid_t *g);
/* The water-density-like system: density 0.8, cut-off 5.0, buffer 0.5, cubic box. */
void bench_water_params(long long natoms, const halox_grid_t *grid, halox_plan_params_t *p);
/* Every rank's home atoms, the same on every process (atoms: one per rank, initialised here). */
int bench_make_system(const halox_plan_params_t *p, halox_real_t real, int stride, long long natoms,
                      uint64_t seed, halox_atoms_t *atoms);
/* A copy of src's home atoms (dst uninitialised; free with halox_atoms_free). */
int bench_copy_home(const halox_atoms_t *src, halox_atoms_t *dst);
/* The plan of `rank` (0 or 1) of a synthetic 2-rank exchange: one pulse in x, rank 0 sends n
 * atoms to rank 1 (coordinates) and gets their forces back. */
int bench_pair_plan(int rank, int n, long long generation, halox_plan_t *plan);
uint64_t bench_rand(uint64_t *s);
double bench_uniform(uint64_t *s);

/* ---- statistics and records (stats.c, record.c, meta.c) ----------------------------------- */

typedef struct bench_stats {
    double median, min, max;
} bench_stats_t;
/* Sorts v. */
bench_stats_t bench_summarise(double *v, int n);
double bench_now(void);

#define BENCH_MAX_FIELDS 96
typedef struct bench_field {
    char key[48];
    char value[320]; /* JSON text of the value */
    int is_string;
} bench_field_t;
typedef struct bench_record {
    bench_field_t field[BENCH_MAX_FIELDS];
    int n;
} bench_record_t;

void rec_init(bench_record_t *r);
/* Keys with a dot ("time_us.median") become nested objects in JSON, columns in CSV. */
void rec_str(bench_record_t *r, const char *key, const char *v);
void rec_int(bench_record_t *r, const char *key, long long v);
void rec_num(bench_record_t *r, const char *key, double v);
void rec_bool(bench_record_t *r, const char *key, int v);
void rec_null(bench_record_t *r, const char *key);
void rec_grid(bench_record_t *r, const halox_grid_t *g);
/* bench, transport, ranks, grid, then hardware, commit, options, date. */
void rec_common(bench_record_t *r, const bench_opts_t *o, const char *transport, int ranks,
                const halox_grid_t *grid);
/* Append to o->json_path (one line) and o->csv_path (one row; a header when the file is new).
 * Returns 0, or -1 after a message when a file cannot be written. */
int rec_write(const bench_record_t *r, const bench_opts_t *o);

/* Facts gathered once, before MPI starts (meta.c). */
void bench_meta_init(int argc, char **argv, bench_opts_t *o);
const char *bench_meta_commit(void);
const char *bench_meta_date(void);
const char *bench_meta_cpu(void);
int bench_meta_cores(void);

/* ---- JSON lines reading (jsonl.c) --------------------------------------------------------- */

/* Top-level fields of one JSON object: 1 when found with the right type. */
int json_get_str(const char *obj, const char *key, char *out, size_t cap);
int json_get_num(const char *obj, const char *key, double *out);
int json_get_bool(const char *obj, const char *key, int *out);

/* ---- MD runs through the public engine API (mdrun.c; md and overlap) ------------------------ */

typedef struct bench_md_case {
    const bench_opts_t *o;
    const char *label; /* transport label (with its variant) */
    long long natoms;
    int nranks;
    int overlap_probe; /* cfg.overlap_probe: repetitions (0: off) */
    halox_md_config_t cfg;
} bench_md_case_t;
/* Rank 0: print the case's row and write its record; BENCH_OK or BENCH_FAILED. */
typedef int (*bench_md_report_fn)(const bench_md_case_t *c, const halox_md_result_t *res);
/* One run of the water-density preset with natoms atoms on transport `label` (threads of this
 * process, or this MPI process as its rank), then report() on rank 0. BENCH_OK also when the
 * case cannot run here (said), BENCH_USAGE on a bad configuration, BENCH_FAILED. */
int bench_md_case(const bench_opts_t *o, const char *label, long long natoms, int overlap_probe,
                  bench_md_report_fn report);
/* bench_md_case for every size and transport of the options: the worst status (BENCH_USAGE
 * stops at once). */
int bench_md_all(const bench_opts_t *o, int overlap_probe, bench_md_report_fn report);
/* A record's fields common to md and overlap: rec_common, preset, atoms, device, real, steps,
 * the equilibration steps before them, the preset's temperature and the timed steps' mean. */
void bench_md_record_start(bench_record_t *r, const bench_md_case_t *c,
                           const halox_md_result_t *res);
/* The preset, then the engine's settings given on the command line (o->engine_opt), as every
 * case runs them; BENCH_USAGE (said) on a refused value. */
int bench_md_preset(const bench_opts_t *o, halox_md_config_t *cfg);
/* The run did what was asked: every atom, every step, finite energies and pressure. */
int bench_md_sane(const halox_md_result_t *res, long long natoms, long long steps);

/* ---- subcommands ----------------------------------------------------------------------------- */

int bench_cmd_halo(const bench_opts_t *o);
int bench_cmd_pingpong(const bench_opts_t *o); /* latency and bandwidth */
int bench_cmd_md(const bench_opts_t *o);
int bench_cmd_overlap(const bench_opts_t *o);
int bench_cmd_scaling(const bench_opts_t *o);

#endif
