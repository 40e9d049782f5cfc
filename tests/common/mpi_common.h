/* Helpers shared by the MPI tests: one random global system generated identically on every
 * rank from a seed, split into the owners' home atoms, so each rank can run the serial reference
 * for all ranks and compare its own share with what the transport produced. With <mpi.h>
 * included first, also what every MPI test program does: start, print on rank 0, skip, finish,
 * and one case of the exchange tests (test_mpi_exchange, test_gpu_exchange). */
#ifndef HALOX_TEST_MPI_COMMON_H
#define HALOX_TEST_MPI_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/atoms.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/geometry.h"
#include "halox/gpu.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "harness.h"

/* splitmix64: tiny, portable, the same sequence on every rank */
static inline uint64_t tm_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static inline double tm_uniform(uint64_t *s) { return (double)(tm_next(s) >> 11) * 0x1.0p-53; }

/* A value as stored in the given precision. */
static inline double tm_round(halox_real_t real, double v)
{
    return real == HALOX_FLOAT ? (double)(float)v : v;
}

/* Position component uniform in [0, len), exact in the given precision. */
static inline double tm_position(halox_real_t real, uint64_t *s, double len)
{
    double v = tm_round(real, tm_uniform(s) * len);
    return v >= len ? 0.0 : v;
}

/* Generate natoms atoms (ids 0..natoms-1) in the box and give each rank its home atoms, in id
 * order. atoms[] must hold halox_grid_size(grid) entries; each is initialised here. For stride
 * 4 the fourth component is a random "charge" that must travel with the atom. */
static inline int tm_make_system(const halox_grid_t *grid, const halox_box_t *box,
                                 halox_real_t real, int stride, size_t extra_bytes, int natoms,
                                 uint64_t seed, halox_atoms_t *atoms)
{
    int P = halox_grid_size(grid);
    double *x = malloc(sizeof(double) * 4 * (size_t)(natoms > 0 ? natoms : 1));
    int *owner = malloc(sizeof(int) * (size_t)(natoms > 0 ? natoms : 1));
    int *count = calloc((size_t)P, sizeof(int));
    if (!x || !owner || !count)
        return -1;
    uint64_t s = seed;
    for (int i = 0; i < natoms; i++) {
        for (int d = 0; d < 3; d++)
            x[4 * i + d] = tm_position(real, &s, box->len[d]);
        x[4 * i + 3] = tm_round(real, tm_uniform(&s) * 2 - 1);
        owner[i] = halox_owner_rank(grid, box, &x[4 * i]);
        count[owner[i]]++;
    }
    int rc = 0;
    for (int r = 0; r < P; r++) {
        if (halox_atoms_init(&atoms[r], real, stride, extra_bytes) != HALOX_OK ||
            halox_atoms_reserve(&atoms[r], count[r] > 0 ? count[r] : 1) != HALOX_OK)
            rc = -1;
        atoms[r].n_home = atoms[r].n_total = 0;
    }
    for (int i = 0; i < natoms && rc == 0; i++) {
        halox_atoms_t *a = &atoms[owner[i]];
        int k = a->n_home++;
        for (int c = 0; c < stride; c++)
            halox_atoms_set(a, k, c, x[4 * i + c]);
        a->id[k] = i;
        if (extra_bytes) {
            /* per-atom payload derived from the id, so migration can be checked */
            unsigned char *e = (unsigned char *)a->extra + (size_t)k * extra_bytes;
            for (size_t b = 0; b < extra_bytes; b++)
                e[b] = (unsigned char)(i * 31 + (int)b * 7);
        }
        a->n_total = a->n_home;
    }
    free(x);
    free(owner);
    free(count);
    return rc;
}

/* Copy the home atoms of src into dst (initialised with the same layout). */
static inline int tm_copy_home(halox_atoms_t *dst, const halox_atoms_t *src)
{
    if (halox_atoms_init(dst, src->real, src->stride, src->extra_bytes) != HALOX_OK ||
        halox_atoms_reserve(dst, src->n_home > 0 ? src->n_home : 1) != HALOX_OK)
        return -1;
    size_t rs = halox_real_size(src->real) * (size_t)src->stride;
    memcpy(dst->x, src->x, rs * (size_t)src->n_home);
    memcpy(dst->id, src->id, sizeof(int32_t) * (size_t)src->n_home);
    if (src->extra_bytes)
        memcpy(dst->extra, src->extra, src->extra_bytes * (size_t)src->n_home);
    dst->n_home = dst->n_total = src->n_home;
    return 0;
}

/* tm_make_system into ref[0..P) (P = the grid's ranks), then *mine a copy of rank me's home
 * atoms: every rank holds the whole system and its own share. Free with tm_free_ranks. */
static inline int tm_make_ranks(const halox_grid_t *grid, const halox_box_t *box, halox_real_t real,
                                int stride, size_t extra_bytes, int natoms, uint64_t seed, int me,
                                halox_atoms_t *ref, halox_atoms_t *mine)
{
    int rc = tm_make_system(grid, box, real, stride, extra_bytes, natoms, seed, ref);
    if (tm_copy_home(mine, &ref[me]) != 0)
        rc = -1;
    return rc;
}

static inline void tm_free_ranks(halox_atoms_t *ref, int P, halox_atoms_t *mine)
{
    if (mine)
        halox_atoms_free(mine);
    for (int r = 0; r < P; r++)
        halox_atoms_free(&ref[r]);
}

/* The grids the exchange tests run on P ranks, in this order (the seeds follow it): `gpu` 0 for
 * the mpi transport, 1 for the GPU transports (fewer: their cases are slower); P ranks in x
 * where P has none listed. Returns how many (at most 3). */
static inline int tm_grids_for(int P, int gpu, halox_grid_t *g)
{
    static const struct {
        int P, n[3], sets; /* sets: bit 0 mpi, bit 1 GPU */
    } list[] = {
        {1, {1, 1, 1}, 3}, {2, {2, 1, 1}, 3}, {2, {1, 2, 1}, 1}, {2, {1, 1, 2}, 3},
        {4, {2, 2, 1}, 3}, {4, {4, 1, 1}, 1}, {4, {1, 2, 2}, 3}, {8, {2, 2, 2}, 3},
        {8, {8, 1, 1}, 1}, {8, {2, 1, 4}, 1}, {8, {4, 2, 1}, 2},
    };
    int n = 0;
    for (size_t k = 0; k < sizeof list / sizeof list[0]; k++)
        if (list[k].P == P && (list[k].sets >> (gpu ? 1 : 0) & 1))
            g[n++] = (halox_grid_t){{list[k].n[0], list[k].n[1], list[k].n[2]}};
    if (n == 0)
        g[n++] = (halox_grid_t){{P, 1, 1}};
    return n;
}

/* New home coordinates on every rank of ref[0..P) (any values: a plan stays valid), each
 * component moved by up to 0.1 either way; the same on every process for the same *s. */
static inline void tm_move_home(halox_atoms_t *ref, int P, uint64_t *s)
{
    for (int r = 0; r < P; r++)
        for (int i = 0; i < ref[r].n_home; i++)
            for (int c = 0; c < ref[r].stride; c++)
                halox_atoms_set(&ref[r], i, c,
                                halox_atoms_get(&ref[r], i, c) + tm_uniform(s) * 0.2 - 0.1);
}

/* Random forces in [-10, 10) on every local atom (home and halo) of every rank: fs[r] holds
 * ref[r].n_total entries of ref[r]'s precision and stride. */
static inline void tm_random_forces(const halox_atoms_t *ref, void **fs, int P, uint64_t *s)
{
    for (int r = 0; r < P; r++)
        for (int i = 0; i < ref[r].n_total; i++)
            for (int c = 0; c < ref[r].stride; c++) {
                double v = tm_uniform(s) * 20 - 10;
                if (ref[r].real == HALOX_FLOAT)
                    ((float *)fs[r])[(size_t)i * ref[r].stride + c] = (float)v;
                else
                    ((double *)fs[r])[(size_t)i * ref[r].stride + c] = v;
            }
}

/* The reference side of an exchange test on P ranks: plans[r] from halox_reference_build over
 * ref (every rank's home atoms, in one layout; the build adds their halo), xs[r] = ref[r].x,
 * fs[r] zeroed forces for ref[r].n_total atoms. Returns the build's status; free with
 * tm_reference_free, also after a failure. */
typedef struct tm_reference {
    int P, stride;
    halox_real_t real;
    halox_plan_t *plans;
    void **xs, **fs;
} tm_reference_t;

static inline halox_status_t
tm_reference_build(tm_reference_t *t, const halox_plan_params_t *params, halox_atoms_t *ref, int P)
{
    t->P = P;
    t->real = ref[0].real;
    t->stride = ref[0].stride;
    t->plans = calloc((size_t)P, sizeof *t->plans);
    t->xs = calloc((size_t)P, sizeof *t->xs);
    t->fs = calloc((size_t)P, sizeof *t->fs);
    if (!t->plans || !t->xs || !t->fs)
        return HALOX_ERR_NO_MEMORY;
    for (int r = 0; r < P; r++)
        halox_plan_init(&t->plans[r]);
    halox_status_t st = halox_reference_build(params, ref, t->plans);
    for (int r = 0; r < P; r++) {
        size_t esize = halox_real_size(ref[r].real) * (size_t)ref[r].stride;
        t->xs[r] = ref[r].x;
        t->fs[r] = calloc((size_t)(ref[r].n_total > 0 ? ref[r].n_total : 1), esize);
        if (!t->fs[r] && st == HALOX_OK)
            st = HALOX_ERR_NO_MEMORY;
    }
    return st;
}

/* The serial reference's coordinate exchange (halo of xs from the home atoms) and force
 * exchange (halo forces of fs added into their owners') on every rank. */
static inline void tm_reference_coords(tm_reference_t *t)
{
    halox_reference_coords(t->plans, t->P, t->real, t->stride, t->xs);
}

static inline void tm_reference_forces(tm_reference_t *t)
{
    halox_reference_forces(t->plans, t->P, t->real, t->stride, t->fs);
}

static inline void tm_reference_free(tm_reference_t *t)
{
    for (int r = 0; r < t->P && t->plans; r++)
        halox_plan_free(&t->plans[r]);
    for (int r = 0; r < t->P && t->fs; r++)
        free(t->fs[r]);
    free(t->plans);
    free(t->xs);
    free(t->fs);
}

#ifdef MPI_VERSION /* <mpi.h> included before this header */

static inline int tm_world_rank(void)
{
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

/* printf on rank 0 of MPI_COMM_WORLD only, flushed at once (so that ranks' lines interleave in
 * the order they happen) */
#define ROOT_PRINTF(...)                                                                           \
    do {                                                                                           \
        if (tm_world_rank() == 0) {                                                                \
            printf(__VA_ARGS__);                                                                   \
            fflush(stdout);                                                                        \
        }                                                                                          \
    } while (0)

#ifdef HALOX_TEST_EMU_GPU
#include <cuda_runtime_api.h> /* tests/emu's: halox_emu_set_idle */

/* the emulation's idle hook (tests/emu/cuda_runtime_api.h): MPI's progress while a kernel spins */
static void tm_emu_progress(void)
{
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}
#endif

/* MPI_Init, then this process's rank and the number of processes. In the GPU emulation, MPI
 * also progresses while an emulated kernel spins (see halox_emu_set_idle). */
static inline void tm_mpi_init(int *argc, char ***argv, int *rank, int *size)
{
#ifdef HALOX_TEST_EMU_GPU
    int provided = 0;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
    if (provided >= MPI_THREAD_SERIALIZED)
        halox_emu_set_idle(tm_emu_progress);
#else
    MPI_Init(argc, argv);
#endif
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* The end of a skipped MPI test: says why on rank 0 and finalises MPI; main() returns this (77,
 * or 1 where a check before the skip failed). */
static inline int tm_mpi_skip(const char *why)
{
    ROOT_PRINTF("skipped: %s\n", why);
    MPI_Finalize();
    return halox_test_failures ? 1 : HALOX_TEST_SKIP;
}

/* Before TEST_DONE() at the end of an MPI test's main(): the failed checks of every rank summed
 * and said by rank 0, then MPI_Finalize. Returns the sum (each rank's exit status is still its
 * own checks': mpiexec fails when any rank does). */
static inline int tm_mpi_finish(void)
{
    int failed = halox_test_failures, any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ROOT_PRINTF("%d check(s) failed over all ranks\n", any);
    MPI_Finalize();
    return any;
}

/* tm_transports_main's devices() where a test is built for the GPU transports (test_gpu_common.h)
 */
#ifdef HALOX_TEST_GPU
#define TM_DEVICES tg_min_device_count
#else
#define TM_DEVICES NULL
#endif

/* main() of an MPI test over transports: fn(name) for each of names compiled in (--transport
 * NAME: that one only, as a sanitizer run wants); devices() (NULL for CPU transports) returns 0
 * where no GPU is visible, which skips the test. rank and size: this process's, set first. */
static inline int tm_transports_main(int argc, char **argv, const char *const *names, size_t n,
                                     int (*devices)(void), void (*fn)(const char *name), int *rank,
                                     int *size)
{
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--transport") == 0)
            only = argv[i + 1];
#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L /* setenv */
    setenv("NCCL_NVLS_ENABLE", "0", 0);                    /* NVLink multicast stays off */
    setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
#endif
    tm_mpi_init(&argc, &argv, rank, size);
    if (devices && devices() == 0)
        return tm_mpi_skip("no CUDA device visible");
    for (size_t t = 0; t < n; t++) {
        if (only && strcmp(only, names[t]) != 0)
            continue;
        if (!halox_transport_available(names[t]))
            ROOT_PRINTF("%s: not compiled in\n", names[t]);
        else
            fn(names[t]);
    }
    tm_mpi_finish();
    TEST_DONE();
}

/* Create the endpoint of `name` for real/stride (timeout 30 s) on every rank: 1 with *comm_p,
 * or 0 when the transport refused this machine (HALOX_ERR_UNAVAILABLE on every rank alike, said
 * on rank 0) or failed (a failed check). */
static inline int tm_comm_create(const char *name, halox_real_t real, int stride,
                                 halox_comm_t **comm_p)
{
    halox_comm_args_t args = {0};
    args.real = real;
    args.stride = stride;
    args.timeout_s = 30;
    *comm_p = NULL;
    halox_status_t st = halox_comm_create(name, &args, comm_p);
    int refused = st == HALOX_ERR_UNAVAILABLE, any = 0;
    MPI_Allreduce(&refused, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK_MSG(any == refused, "%s: refused on some ranks only", name);
    if (refused) {
        ROOT_PRINTF("%s: refused here: %s\n", name, halox_last_error());
        return 0;
    }
    CHECK_MSG(st == HALOX_OK, "%s: create: %s", name, halox_last_error());
    return st == HALOX_OK;
}

#if defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L /* setenv */
/* tm_comm_create for the device rebuild's tests (plan build, migration): the NVSHMEM transports
 * send those messages device to device (not hybrid) where every rank can; endpoint number k ==
 * off is created with HALOX_NVSHMEM_DIRECT_MESSAGES=0 on rank 0 only, so every rank must stage
 * them through the host. *want_p: whether this endpoint's messages should go device to device
 * (tm_check_direct). */
static inline int tm_comm_create_direct(const char *name, int k, int off, halox_real_t real,
                                        int stride, halox_comm_t **comm_p, int *want_p)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *env = getenv("HALOX_NVSHMEM_DIRECT_MESSAGES");
    const int env_off = env && strcmp(env, "0") == 0;
    const int direct = strncmp(name, "nvshmem", 7) == 0 && size > 1 && !env_off;
    const int one_off = direct && k == off && rank == 0;
    if (one_off)
        setenv("HALOX_NVSHMEM_DIRECT_MESSAGES", "0", 1);
    const int made = tm_comm_create(name, real, stride, comm_p);
    if (one_off)
        unsetenv("HALOX_NVSHMEM_DIRECT_MESSAGES");
    *want_p = direct && k != off;
    return made;
}
#endif

/* The endpoint's messages went device to device (want) or none did (halox_comm_stats_t). */
static inline void tm_check_direct(halox_comm_t *comm, const char *what, int want)
{
    halox_comm_stats_t s;
    halox_comm_get_stats(comm, &s);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK_MSG(want ? s.direct_messages > 0 : s.direct_messages == 0,
              "%s: rank %d: %lld messages device to device, expected %s", what, rank,
              s.direct_messages, want ? "some" : "none (staged through the host)");
}

/* One case of the exchange tests: natoms random atoms (seed) in box on grid, the plan of cutoff
 * and buffer, then run(): the plan built through comm and 3 exchanges against the reference
 * (ref: every rank's home atoms, mine: this rank's copy, ctx: the case in words, after `label`
 * where given; shifts: periodic_shifts; full: a full-shell plan). Returns 0 where the planner
 * refuses the case (too many pulses: skipped on every rank), else 1. */
typedef void (*tm_exchange_fn)(halox_comm_t *comm, const halox_plan_params_t *params,
                               halox_atoms_t *ref, halox_atoms_t *mine, int steps, uint64_t seed,
                               const char *ctx);

static inline int tm_exchange_case_full(halox_comm_t *comm, tm_exchange_fn run, const char *label,
                                        halox_grid_t grid, halox_box_t box, double cutoff,
                                        double buffer, int natoms, uint64_t seed, halox_real_t real,
                                        int stride, int shifts, int full)
{
    const int P = halox_comm_size(comm), me = halox_comm_rank(comm);
    halox_plan_params_t params = {grid, box, cutoff, buffer, shifts, full};
    int np[3];
    if (halox_plan_check(&params, np) != HALOX_OK)
        return 0;
    char ctx[200];
    snprintf(ctx, sizeof ctx,
             "%s%sgrid %dx%dx%d cutoff %g buffer %g pulses %d,%d,%d%s%s %s stride %d",
             label ? label : "", label ? ": " : "", grid.n[0], grid.n[1], grid.n[2], cutoff, buffer,
             np[0], np[1], np[2], shifts ? " (periodic shifts)" : "", full ? " (full shell)" : "",
             test_real_name(real), stride);
    halox_atoms_t *ref = calloc((size_t)P, sizeof *ref), mine;
    CHECK(tm_make_ranks(&grid, &box, real, stride, 0, natoms, seed, me, ref, &mine) == 0);
    run(comm, &params, ref, &mine, 3, seed * 7 + 1, ctx);
    ROOT_PRINTF("  %s: %d halo atoms on rank 0\n", ctx, mine.n_total - mine.n_home);
    tm_free_ranks(ref, P, &mine);
    free(ref);
    return 1;
}

/* the same with a half-shell plan */
static inline int tm_exchange_case_shifts(halox_comm_t *comm, tm_exchange_fn run, const char *label,
                                          halox_grid_t grid, halox_box_t box, double cutoff,
                                          double buffer, int natoms, uint64_t seed,
                                          halox_real_t real, int stride, int shifts)
{
    return tm_exchange_case_full(comm, run, label, grid, box, cutoff, buffer, natoms, seed, real,
                                 stride, shifts, 0);
}

/* the same with periodic images as copies (every dimension exchanges) */
static inline int tm_exchange_case(halox_comm_t *comm, tm_exchange_fn run, const char *label,
                                   halox_grid_t grid, halox_box_t box, double cutoff, double buffer,
                                   int natoms, uint64_t seed, halox_real_t real, int stride)
{
    return tm_exchange_case_shifts(comm, run, label, grid, box, cutoff, buffer, natoms, seed, real,
                                   stride, 0);
}

#endif /* MPI_VERSION */

#endif
