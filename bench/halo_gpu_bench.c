/* halo_gpu_bench: halo exchange time per transport on a water-density-like system.
 *
 * Every rank generates the same random system (reduced density 0.8 in a cubic box, cut-off 5.0
 * plus a 0.5 pair-list buffer: about 420 neighbours per atom, like water with a 1 nm cut-off),
 * keeps its home atoms and builds the plan through the transport. Before timing, one coordinate
 * and one force exchange are checked bit for bit against the serial reference (every rank runs
 * it for all ranks). Then `warmup` untimed and `repeats` timed exchanges, each a coordinate plus
 * a force exchange after a barrier: GPU time between CUDA events recorded on the exchange stream
 * around the pair, and host time from the call to the stream's completion. Each repeat counts
 * the slowest rank; the median, minimum and maximum over repeats are reported.
 *
 *   mpirun -np P halo_gpu_bench [-n N[,N...]] [-t T[,T...]] [-r repeats] [-w warmup]
 *                               [--stride 3|4] [--double] [--json FILE] [--seed S]
 *
 * Defaults: -n 45000,176000 -t mpi-staged,nccl,mpi-cuda,mpi,nvshmem-stream,nvshmem-pulse,
 * nvshmem-fused,nvshmem-pulse+put,nvshmem-fused+put,nvshmem-fused+tma,nvshmem-fused+floor -r 200
 * -w 20, float, stride 3. NAME+put forces NVSHMEM's put-with-signal path (HALOX_NVSHMEM_PUT=1),
 * NAME+tma its bulk asynchronous copies (HALOX_NVSHMEM_TMA=1); NAME+floor
 * moves the same pulses' signals and no atoms (HALOX_NVSHMEM_SIGNAL_ONLY=1): the floor.
 * The grid comes from P (1: 1x1x1, 2: 2x1x1, 4: 2x2x1, 8: 2x2x2, else the most cubic).
 * A transport that refuses the machine (nccl with several ranks per GPU, mpi-cuda without
 * CUDA-aware MPI) is reported as such. JSON: one object per (transport, N) line, appended. */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "halox/comm.h"
#include "halox/plan.h"

static int g_rank, g_size;

#define ROOT(...)                                                                                  \
    do {                                                                                           \
        if (g_rank == 0) {                                                                         \
            printf(__VA_ARGS__);                                                                   \
            fflush(stdout);                                                                        \
        }                                                                                          \
    } while (0)

#define BCUDA(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "rank %d: %s:%d: %s failed: %s\n", g_rank, __FILE__, __LINE__, #call,  \
                    cudaGetErrorString(e_));                                                       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t next_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }

static void make_grid(int P, halox_grid_t *g)
{
    int best[3] = {P, 1, 1};
    long best_cost = -1;
    for (int a = 1; a <= P; a++)
        for (int b = 1; a * b <= P; b++) {
            if (P % (a * b))
                continue;
            int c = P / (a * b);
            if (a < b || b < c)
                continue;                                        /* x >= y >= z */
            long cost = (long)a * b + (long)b * c + (long)a * c; /* halo surface */
            if (best_cost < 0 || cost < best_cost) {
                best_cost = cost;
                best[0] = a;
                best[1] = b;
                best[2] = c;
            }
        }
    g->n[0] = best[0];
    g->n[1] = best[1];
    g->n[2] = best[2];
}

/* Every rank's home atoms, the same on every rank. */
static int make_system(const halox_grid_t *grid, const halox_box_t *box, halox_real_t real,
                       int stride, int natoms, uint64_t seed, halox_atoms_t *atoms)
{
    int P = halox_grid_size(grid);
    int *owner = malloc(sizeof(int) * (size_t)natoms), *count = calloc((size_t)P, sizeof(int));
    double *x = malloc(sizeof(double) * 4 * (size_t)natoms);
    if (!owner || !count || !x)
        return -1;
    uint64_t s = seed;
    for (int i = 0; i < natoms; i++) {
        for (int d = 0; d < 3; d++) {
            double v = uniform(&s) * box->len[d];
            if (real == HALOX_FLOAT)
                v = (double)(float)v;
            x[4 * i + d] = v >= box->len[d] ? 0.0 : v;
        }
        x[4 * i + 3] = uniform(&s) * 2 - 1;
        owner[i] = halox_owner_rank(grid, box, &x[4 * i]);
        count[owner[i]]++;
    }
    for (int r = 0; r < P; r++) {
        if (halox_atoms_init(&atoms[r], real, stride, 0) != HALOX_OK ||
            halox_atoms_reserve(&atoms[r], count[r] > 0 ? count[r] : 1) != HALOX_OK)
            return -1;
        atoms[r].n_home = atoms[r].n_total = 0;
    }
    for (int i = 0; i < natoms; i++) {
        halox_atoms_t *a = &atoms[owner[i]];
        int k = a->n_home++;
        for (int c = 0; c < stride; c++)
            halox_atoms_set(a, k, c, x[4 * i + c]);
        a->id[k] = i;
        a->n_total = a->n_home;
    }
    free(owner);
    free(count);
    free(x);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct stats {
    double median, min, max;
} stats_t;

static stats_t summarise(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    stats_t s = {n ? (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2])) : 0, n ? v[0] : 0,
                 n ? v[n - 1] : 0};
    return s;
}

static int bench_run(const char *name, const char *label, int floor_run, int natoms,
                     halox_real_t real, int stride, int repeats, int warmup, uint64_t seed,
                     FILE *json);

/* One transport at one size; returns 0 when measured, 1 when the transport refused, -1 on
 * failure. */
static int bench_one(const char *label, int natoms, halox_real_t real, int stride, int repeats,
                     int warmup, uint64_t seed, FILE *json)
{
    /* "NAME+put": HALOX_NVSHMEM_PUT=1; "NAME+floor": HALOX_NVSHMEM_SIGNAL_ONLY=1 (the same
     * pulses and signals with no payload: the floor; not verified, since nothing moves) */
    char name[64];
    snprintf(name, sizeof name, "%s", label);
    char *plus = strchr(name, '+');
    int floor_run = 0;
    if (plus) {
        *plus++ = 0;
        if (strcmp(plus, "put") == 0) {
            setenv("HALOX_NVSHMEM_PUT", "1", 1);
        } else if (strcmp(plus, "tma") == 0) {
            setenv("HALOX_NVSHMEM_TMA", "1", 1);
        } else if (strcmp(plus, "floor") == 0) {
            setenv("HALOX_NVSHMEM_SIGNAL_ONLY", "1", 1);
            floor_run = 1;
        } else {
            ROOT("%s: unknown variant '+%s' (use +put, +tma or +floor)\n", label, plus);
            return -1;
        }
    }
    int rc = bench_run(name, label, floor_run, natoms, real, stride, repeats, warmup, seed, json);
    unsetenv("HALOX_NVSHMEM_PUT");
    unsetenv("HALOX_NVSHMEM_TMA");
    unsetenv("HALOX_NVSHMEM_SIGNAL_ONLY");
    return rc;
}

static int bench_run(const char *name, const char *label, int floor_run, int natoms,
                     halox_real_t real, int stride, int repeats, int warmup, uint64_t seed,
                     FILE *json)
{
    const int on_gpu = halox_transport_on_gpu(name);
    halox_grid_t grid;
    make_grid(g_size, &grid);
    const double len = cbrt((double)natoms / 0.8);
    halox_box_t box = {{len, len, len}};
    halox_plan_params_t params = {grid, box, 5.0, 0.5};
    int np[3];
    if (halox_plan_check(&params, np) != HALOX_OK) {
        ROOT("%-10s N=%d: no valid plan: %s\n", name, natoms, halox_last_error());
        return -1;
    }
    halox_comm_args_t args = {.real = real, .stride = stride, .timeout_s = 60};
    halox_comm_t *comm = NULL;
    halox_status_t st = halox_comm_create(name, &args, &comm);
    if (st == HALOX_ERR_UNAVAILABLE || st == HALOX_ERR_UNKNOWN_TRANSPORT) {
        ROOT("%-10s N=%d: not available here: %s\n", name, natoms, halox_last_error());
        if (json && g_rank == 0)
            fprintf(json,
                    "{\"transport\":\"%s\",\"atoms\":%d,\"ranks\":%d,\"available\":false,"
                    "\"why\":\"%s\"}\n",
                    name, natoms, g_size, halox_status_string(st));
        return 1;
    }
    if (st != HALOX_OK) {
        fprintf(stderr, "rank %d: %s: create: %s\n", g_rank, name, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int P = g_size, me = g_rank;
    const size_t esize = halox_real_size(real) * (size_t)stride;
    halox_atoms_t *ref = calloc((size_t)P, sizeof *ref), mine;
    halox_plan_t *plans = calloc((size_t)P, sizeof *plans), plan;
    if (!ref || !plans || make_system(&grid, &box, real, stride, natoms, seed, ref) != 0) {
        fprintf(stderr, "rank %d: no memory for the system\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    halox_atoms_init(&mine, real, stride, 0);
    halox_atoms_reserve(&mine, ref[me].n_home);
    memcpy(mine.x, ref[me].x, esize * (size_t)ref[me].n_home);
    memcpy(mine.id, ref[me].id, sizeof(int32_t) * (size_t)ref[me].n_home);
    mine.n_home = mine.n_total = ref[me].n_home;
    for (int r = 0; r < P; r++)
        halox_plan_init(&plans[r]);
    halox_plan_init(&plan);
    double t_build = now_s();
    st = halox_comm_build_plan(comm, &params, &mine, &plan);
    t_build = now_s() - t_build;
    if (st != HALOX_OK || halox_reference_build(&params, ref, plans) != HALOX_OK) {
        fprintf(stderr, "rank %d: %s: plan: %s\n", g_rank, name, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const int nt = plan.n_total;
    void *x = mine.x, *f = calloc((size_t)nt, esize);
    void *hx = malloc(esize * (size_t)nt), *hf = malloc(esize * (size_t)nt);
    cudaStream_t stream = NULL;
    if (on_gpu) {
        /* through the endpoint: the NVSHMEM transports need symmetric memory */
        free(f);
        if (halox_comm_device_alloc(comm, esize * (size_t)nt, &x) != HALOX_OK ||
            halox_comm_device_alloc(comm, esize * (size_t)nt, &f) != HALOX_OK) {
            fprintf(stderr, "rank %d: %s: device_alloc: %s\n", g_rank, name, halox_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        stream = (cudaStream_t)halox_comm_stream(comm);
        BCUDA(cudaMemcpyAsync(x, mine.x, esize * (size_t)nt, cudaMemcpyHostToDevice, stream));
    }
    st = halox_comm_bind(comm, &plan, x, f);
    if (st != HALOX_OK) {
        fprintf(stderr, "rank %d: %s: bind: %s\n", g_rank, name, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* ---- correctness first: one exchange each way against the reference ---- */
    void **xs = calloc((size_t)P, sizeof *xs), **fs = calloc((size_t)P, sizeof *fs);
    uint64_t s = seed ^ 0xf00d;
    for (int r = 0; r < P; r++) {
        xs[r] = ref[r].x;
        fs[r] = calloc((size_t)(ref[r].n_total > 0 ? ref[r].n_total : 1), esize);
        for (size_t i = 0; i < (size_t)ref[r].n_total * stride; i++) {
            double v = uniform(&s) * 20 - 10;
            if (real == HALOX_FLOAT)
                ((float *)fs[r])[i] = (float)v;
            else
                ((double *)fs[r])[i] = v;
        }
    }
    memcpy(hf, fs[me], esize * (size_t)nt);
    halox_reference_coords(plans, P, real, stride, xs);
    int ok = 1;
    if (on_gpu) {
        BCUDA(cudaMemsetAsync((char *)x + esize * (size_t)plan.n_home, 0xff,
                              esize * (size_t)(nt - plan.n_home), stream));
        BCUDA(cudaMemcpyAsync(f, hf, esize * (size_t)nt, cudaMemcpyHostToDevice, stream));
        BCUDA(cudaStreamSynchronize(stream));
        /* GPU-initiated transports store into this halo as soon as a peer starts */
        MPI_Barrier(MPI_COMM_WORLD);
    } else {
        memcpy(f, hf, esize * (size_t)nt);
    }
    st = halox_comm_coords(comm);
    if (st == HALOX_OK)
        st = halox_comm_forces(comm);
    if (st != HALOX_OK) {
        fprintf(stderr, "rank %d: %s: exchange: %s\n", g_rank, name, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    halox_reference_forces(plans, P, real, stride, fs);
    if (on_gpu) {
        BCUDA(cudaStreamSynchronize(stream));
        BCUDA(cudaMemcpy(hx, x, esize * (size_t)nt, cudaMemcpyDeviceToHost));
        BCUDA(cudaMemcpy(hf, f, esize * (size_t)nt, cudaMemcpyDeviceToHost));
    } else {
        memcpy(hx, x, esize * (size_t)nt);
        memcpy(hf, f, esize * (size_t)nt);
    }
    ok = memcmp(hx, ref[me].x, esize * (size_t)nt) == 0 &&
         memcmp(hf, fs[me], esize * (size_t)nt) == 0;
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    const char *verdict = floor_run ? "floor   " : all_ok ? "verified" : "WRONG   ";

    /* ---- timing ---- */
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (on_gpu) {
        BCUDA(cudaEventCreate(&e0));
        BCUDA(cudaEventCreate(&e1));
    }
    double *gpu_ms = calloc((size_t)repeats, sizeof(double));
    double *host_ms = calloc((size_t)repeats, sizeof(double));
    for (int it = -warmup; it < repeats && st == HALOX_OK; it++) {
        halox_comm_barrier(comm);
        double t0 = now_s();
        if (on_gpu)
            BCUDA(cudaEventRecord(e0, stream));
        st = halox_comm_coords(comm);
        if (st == HALOX_OK)
            st = halox_comm_forces(comm);
        if (on_gpu) {
            BCUDA(cudaEventRecord(e1, stream));
            BCUDA(cudaEventSynchronize(e1));
        }
        double t1 = now_s();
        if (it >= 0) {
            float ms = 0;
            if (on_gpu)
                BCUDA(cudaEventElapsedTime(&ms, e0, e1));
            double v[2] = {on_gpu ? ms : (t1 - t0) * 1e3, (t1 - t0) * 1e3}, mx[2];
            MPI_Allreduce(v, mx, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            gpu_ms[it] = mx[0];
            host_ms[it] = mx[1];
        }
    }
    if (st != HALOX_OK) {
        fprintf(stderr, "rank %d: %s: timed exchange: %s\n", g_rank, name, halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    long long sent = 0, halo = plan.n_total - plan.n_home;
    for (int k = 0; k < plan.n_pulses; k++)
        sent += plan.pulse[k].send_count;
    long long mx_sent = 0, mx_halo = 0;
    MPI_Allreduce(&sent, &mx_sent, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&halo, &mx_halo, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    stats_t g = summarise(gpu_ms, repeats), h = summarise(host_ms, repeats);
    ROOT("%-10s N=%-8d grid %dx%dx%d pulses %2d  halo %7lld atoms  %8.1f KB/step  %s  "
         "time %8.1f us (min %8.1f max %8.1f)  host %8.1f us  build %.2f s\n",
         label, natoms, grid.n[0], grid.n[1], grid.n[2], plan.n_pulses, mx_halo,
         (double)mx_sent * (double)esize / 1024.0, verdict, g.median * 1e3, g.min * 1e3,
         g.max * 1e3, h.median * 1e3, t_build);
    if (json && g_rank == 0)
        fprintf(json,
                "{\"transport\":\"%s\",\"atoms\":%d,\"ranks\":%d,\"grid\":[%d,%d,%d],\"available\""
                ":true,\"real\":\"%s\",\"stride\":%d,\"pulses\":%d,\"max_halo_atoms\":%lld,"
                "\"max_send_bytes\":%lld,\"verified\":%s,\"floor\":%s,\"repeats\":%d,\"time_us\":{"
                "\"median\":"
                "%.3f,\"min\":%.3f,\"max\":%.3f},\"host_us\":{\"median\":%.3f,\"min\":%.3f,\"max\""
                ":%.3f},\"timing\":\"%s\"}\n",
                label, natoms, g_size, grid.n[0], grid.n[1], grid.n[2],
                real == HALOX_FLOAT ? "float" : "double", stride, plan.n_pulses, mx_halo,
                mx_sent * (long long)esize, all_ok && !floor_run ? "true" : "false",
                floor_run ? "true" : "false", repeats, g.median * 1e3, g.min * 1e3, g.max * 1e3,
                h.median * 1e3, h.min * 1e3, h.max * 1e3,
                on_gpu ? "cuda events around coords+forces, slowest rank"
                       : "host clock around coords+forces, slowest rank");

    if (on_gpu) {
        cudaEventDestroy(e0);
        cudaEventDestroy(e1);
        BCUDA(cudaStreamSynchronize(stream));
    }
    if (on_gpu) {
        halox_comm_device_free(comm, x);
        halox_comm_device_free(comm, f);
    } else {
        free(f);
    }
    halox_comm_destroy(comm);
    for (int r = 0; r < P; r++) {
        free(fs[r]);
        halox_plan_free(&plans[r]);
        halox_atoms_free(&ref[r]);
    }
    halox_plan_free(&plan);
    halox_atoms_free(&mine);
    free(xs);
    free(fs);
    free(ref);
    free(plans);
    free(hx);
    free(hf);
    free(gpu_ms);
    free(host_ms);
    return floor_run || all_ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    /* NVLink multicast stays off (it can take shared GPUs out of service), unless set already */
    setenv("NCCL_NVLS_ENABLE", "0", 0);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    char sizes[256] = "45000,176000",
         transports[512] =
             "mpi-staged,nccl,mpi-cuda,mpi,nvshmem-stream,nvshmem-pulse,nvshmem-fused,"
             "nvshmem-pulse+put,nvshmem-fused+put,nvshmem-fused+tma,"
             "nvshmem-fused+floor";
    const char *json_path = NULL;
    int repeats = 200, warmup = 20, stride = 3;
    halox_real_t real = HALOX_FLOAT;
    uint64_t seed = 2026;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-n") && v)
            snprintf(sizes, sizeof sizes, "%s", argv[++i]);
        else if (!strcmp(a, "-t") && v)
            snprintf(transports, sizeof transports, "%s", argv[++i]);
        else if (!strcmp(a, "-r") && v)
            repeats = atoi(argv[++i]);
        else if (!strcmp(a, "-w") && v)
            warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--stride") && v)
            stride = atoi(argv[++i]);
        else if (!strcmp(a, "--double"))
            real = HALOX_DOUBLE;
        else if (!strcmp(a, "--json") && v)
            json_path = argv[++i];
        else if (!strcmp(a, "--seed") && v)
            seed = strtoull(argv[++i], NULL, 10);
        else {
            ROOT("usage: halo_gpu_bench [-n N[,N...]] [-t T[,T...]] [-r repeats] [-w warmup] "
                 "[--stride 3|4] [--double] [--json FILE] [--seed S]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (repeats < 1 || warmup < 0 || (stride != 3 && stride != 4)) {
        ROOT("halo_gpu_bench: bad -r, -w or --stride\n");
        MPI_Finalize();
        return 2;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess)
        ndev = 0;
    FILE *json = NULL;
    if (json_path && g_rank == 0) {
        json = fopen(json_path, "a");
        if (!json)
            fprintf(stderr, "halo_gpu_bench: cannot write %s\n", json_path);
    }
    halox_grid_t grid;
    make_grid(g_size, &grid);
    ROOT("halo_gpu_bench: %d rank(s), grid %dx%dx%d, %d GPU(s) visible, density 0.8, cut-off 5.0 + "
         "buffer 0.5, %s stride %d, %d repeats after %d warm-up\n",
         g_size, grid.n[0], grid.n[1], grid.n[2], ndev, real == HALOX_FLOAT ? "float" : "double",
         stride, repeats, warmup);
    int bad = 0;
    char *save_n = NULL;
    for (char *ns = strtok_r(sizes, ",", &save_n); ns; ns = strtok_r(NULL, ",", &save_n)) {
        int natoms = atoi(ns);
        char tl[512];
        snprintf(tl, sizeof tl, "%s", transports);
        char *save_t = NULL;
        for (char *t = strtok_r(tl, ",", &save_t); t; t = strtok_r(NULL, ",", &save_t)) {
            char base[64];
            snprintf(base, sizeof base, "%s", t);
            base[strcspn(base, "+")] = 0;
            if (halox_transport_on_gpu(base) && ndev == 0) {
                ROOT("%-10s N=%d: no GPU visible\n", t, natoms);
                continue;
            }
            bad |= bench_one(t, natoms, real, stride, repeats, warmup, seed, json) < 0;
        }
    }
    if (json)
        fclose(json);
    MPI_Finalize();
    return bad ? 1 : 0;
}
