/* A minimal GPU step whose halo exchange runs inside the caller's own kernels (transport
 * nvshmem-inline: halox/inline.h on the host, halox/inline_device.cuh in the kernels).
 *
 *   mpirun -np 2 ./gpu_inline      (one node: a GPU per rank, or ranks sharing one under MPS)
 *
 * Each rank puts random atoms of its domain (an N x 1 x 1 grid with periodic shifts in y and z,
 * so that no pulse forwards atoms, as a view needs) into device arrays of its own (x and f in
 * symmetric memory), builds its plan there on the GPU (halox_comm_build_plan_fixed) and binds.
 * Then each step is three kernels of its own on the endpoint's stream and nothing else:
 *
 *     drift   moves the home atoms and stores each into the peers' halos, every block signalling
 *     forces  waits inside itself for the halo, gives every local atom a force (1 along x) and
 *             stores the halo atoms' forces into their owners' buffers, every block signalling
 *     kick    waits for the returned forces and adds them to its home atoms' own
 *
 * The owners then hold one unit per image of each atom: the home forces summed over the ranks
 * equal the local atoms counted over the ranks. Exit status 0 when they do, 1 when not, 2 on
 * an error, 3 when this machine or plan has no in-kernel exchange (the reason is printed). */
#include <cuda_runtime.h>
#define OMPI_SKIP_MPICXX  1 /* MPI's C API only, also when compiled as C++ */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <halox/halox.h>
#include <halox/inline_device.cuh>

#define OK(call)   ok_or_abort((call), #call)
#define CUDA(call) ok_or_abort((call) == cudaSuccess ? HALOX_OK : HALOX_ERR_INTERNAL, #call)

static void ok_or_abort(halox_status_t st, const char *what)
{
    if (st != HALOX_OK) {
        fprintf(stderr, "%s: %s\n", what,
                st == HALOX_ERR_INTERNAL ? "CUDA error" : halox_last_error());
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Producer of the coordinates: any grid; every block adds its share of the signals. */
__global__ void drift(halox_inline_view_t v, float *x, int n_home, float dx)
{
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a < n_home) {
        x[3 * a] += dx;
        halox_inline_put_x(&v, a, x[3 * a], x[3 * a + 1], x[3 * a + 2]);
    }
    halox_inline_block_signal(&v, 0);
}

/* Consumer of the coordinates and producer of the halo forces: at most spin_blocks blocks,
 * every one waits before it reads the halo (a pair force would read x[n_home..n_total) here). */
__global__ void forces(halox_inline_view_t v, float *f, int n_home, int n_total)
{
    unsigned long long e = 0;
    const int ok = halox_inline_block_wait(&v, 0, &e);
    halox_inline_waited(&v, &v.ticket[1], 0, e, ok);
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n_total; i += gridDim.x * blockDim.x) {
        f[3 * i] = 1.0f, f[3 * i + 1] = 0.0f, f[3 * i + 2] = 0.0f;
        if (ok && i >= n_home)
            halox_inline_put_f(&v, i, 1.0f, 0.0f, 0.0f);
    }
    halox_inline_block_signal(&v, 1);
}

/* Consumer of the forces: at most spin_blocks blocks; adds the returned forces in the
 * reference exchange's order (an integrator would update velocities here). */
__global__ void kick(halox_inline_view_t v, float *f, int n_home)
{
    unsigned long long e = 0;
    const int ok = halox_inline_block_wait(&v, 1, &e);
    halox_inline_waited(&v, &v.ticket[3], 1, e, ok);
    for (int a = blockIdx.x * blockDim.x + threadIdx.x; ok && a < n_home;
         a += gridDim.x * blockDim.x)
        halox_inline_add_f(&v, a, &f[3 * a], &f[3 * a + 1], &f[3 * a + 2]);
}

static int blocks(int n, int most) /* 128 threads a block, at least one block, at most `most` */
{
    const int b = (n + 127) / 128;
    return b < 1 ? 1 : b > most ? most : b;
}

/* This rank's device arrays at capacity cap (0: freed), the n home atoms hx, hid copied in.
 * Collective: x and f are symmetric memory on the NVSHMEM transports. */
static void device_arrays(halox_comm_t *comm, halox_fixed_atoms_t *a, float **f, int cap,
                          const float *hx, const int32_t *hid, int n)
{
    if (a->x) {
        OK(halox_comm_device_free(comm, *f));
        OK(halox_comm_device_free(comm, a->x));
        CUDA(cudaFree(a->id));
        CUDA(cudaFree(a->zone));
    }
    *a = halox_fixed_atoms_t{};
    *f = NULL;
    if (cap == 0)
        return;
    OK(halox_comm_device_alloc(comm, sizeof(float) * 3 * (size_t)cap, &a->x));
    OK(halox_comm_device_alloc(comm, sizeof(float) * 3 * (size_t)cap, (void **)f));
    CUDA(cudaMalloc((void **)&a->id, sizeof(int32_t) * (size_t)cap));
    CUDA(cudaMalloc((void **)&a->zone, (size_t)cap));
    CUDA(cudaMemcpy(a->x, hx, sizeof(float) * 3 * (size_t)n, cudaMemcpyHostToDevice));
    CUDA(cudaMemcpy(a->id, hid, sizeof(int32_t) * (size_t)n, cudaMemcpyHostToDevice));
    a->n_home = n;
    a->capacity = cap;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    halox_plan_params_t params = {};
    params.grid.n[0] = size, params.grid.n[1] = params.grid.n[2] = 1;
    params.box.len[0] = 4.0 * size, params.box.len[1] = params.box.len[2] = 8.0;
    params.cutoff = 1.2, params.buffer = 0.2, params.periodic_shifts = 1;

    halox_comm_args_t args = {};
    args.real = HALOX_FLOAT, args.stride = 3; /* what the view serves */
    halox_comm_t *comm = NULL;
    OK(halox_comm_create(argc > 1 ? argv[1] : "nvshmem-inline", &args, &comm));

    /* The atoms live in device arrays of this rank's own, at a capacity it chose: x (and f) in
     * symmetric memory, where peers store the halo. The plan build selects, packs and places the
     * halo there with kernels; when the arrays are too small, every rank gets
     * HALOX_ERR_NO_MEMORY and the short ones' `need`, and every rank reallocates (symmetric memory
     * is collective) and builds again. */
    const int n = 2000;
    float *hx = (float *)malloc(sizeof(float) * 3 * n);
    int32_t *hid = (int32_t *)malloc(sizeof(int32_t) * n);
    double lo[3], hi[3];
    halox_domain_bounds(&params.grid, &params.box, rank, lo, hi);
    srand(rank + 1);
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < 3; d++)
            hx[3 * i + d] = (float)(lo[d] + (hi[d] - lo[d]) * (0.001 + 0.998 * rand() / RAND_MAX));
        hid[i] = rank * n + i;
    }
    halox_fixed_atoms_t a = {};
    float *f = NULL;
    halox_plan_t plan;
    halox_plan_init(&plan);
    halox_status_t st = HALOX_ERR_NO_MEMORY;
    for (int cap = n + n / 2; st == HALOX_ERR_NO_MEMORY;) {
        device_arrays(comm, &a, &f, cap, hx, hid, n);
        st = halox_comm_build_plan_fixed(comm, &params, &a, &plan);
        cap = a.need > cap ? a.need + a.need / 4 : cap;
    }
    ok_or_abort(st, "halox_comm_build_plan_fixed");
    float *x = (float *)a.x;
    const size_t bytes = sizeof(float) * 3 * (size_t)a.n_total;
    OK(halox_comm_bind(comm, &plan, x, f));

    /* the view of the bound plan, on every rank or on none */
    halox_inline_view_t v;
    int have = halox_comm_inline_view(comm, &v) == HALOX_OK, all = 0;
    if (!have)
        fprintf(stderr, "rank %d: no in-kernel exchange: %s\n", rank, halox_last_error());
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);

    int bad = 0;
    if (all) {
        cudaStream_t s = (cudaStream_t)halox_comm_stream(comm); /* the bind's uploads are on it */
        const int nh = plan.n_home, nt = plan.n_total;
        for (int step = 0; step < 10; step++) {
            drift<<<blocks(nh, 1 << 20), 128, 0, s>>>(v, x, nh, 1e-3f);
            forces<<<blocks(nt, v.spin_blocks), 128, 0, s>>>(v, f, nh, nt);
            kick<<<blocks(nh, v.spin_blocks), 128, 0, s>>>(v, f, nh);
            CUDA(cudaGetLastError());
            OK(halox_comm_inline_enqueued(comm, 1)); /* steps, statistics, failed waits */
        }
        CUDA(cudaStreamSynchronize(s));
        float *hf = (float *)malloc(bytes);
        CUDA(cudaMemcpy(hf, f, bytes, cudaMemcpyDeviceToHost));
        double sum[2] = {0.0, (double)nt};
        for (int a = 0; a < nh; a++)
            sum[0] += hf[3 * a];
        free(hf);
        OK(halox_comm_allreduce_sum(comm, sum, 2));
        bad = sum[0] != sum[1];
        if (rank == 0)
            printf("gpu_inline: %d ranks: %.0f units returned for %.0f local atoms: %s\n", size,
                   sum[0], sum[1], bad ? "WRONG" : "ok");
    }
    device_arrays(comm, &a, &f, 0, NULL, NULL, 0);
    halox_comm_destroy(comm);
    halox_plan_free(&plan);
    free(hx), free(hid);
    MPI_Finalize();
    return !all ? 3 : bad ? 1 : 0;
}
