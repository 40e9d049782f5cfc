/* Decomposition invariance on the `mpi` transport (run under mpiexec with as many processes as
 * the grid has ranks; the grid is the first argument): 4000 atoms of LJ liquid, 100 steps, in
 * double and single precision, NVE and NVT.
 *   - against 1 rank (threads transport, in process 0): positions, velocities and energies within
 *     the tolerances of test_md_decomp (double 1e-11 / 1e-12 relative; float 5e-4 / 5e-3 / 2e-5);
 *   - against the same grid on the threads transport (threads of process 0): bit-identical, since
 *     transports move the same bits and reductions sum in rank order. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>

#include "test_md_common.h"

static void one(const halox_grid_t *grid, halox_real_t real, halox_md_ensemble_t ens, int rank)
{
    halox_md_config_t cfg;
    md_test_decomp_config(&cfg, real, ens);
    cfg.timeout_s = 120;
    halox_md_result_t ref, same, got;
    memset(&ref, 0, sizeof ref);
    memset(&same, 0, sizeof same);
    if (rank == 0) {
        /* references first, while the other processes wait in their first collective */
        md_test_run(&cfg, NULL, 1, &ref);
        halox_md_config_t c2 = cfg;
        c2.grid = *grid;
        md_test_run(&c2, NULL, 1, &same);
    }
    halox_md_config_t cm = cfg;
    cm.grid = *grid;
    cm.transport = "mpi";
    halox_comm_args_t args = {.real = real, .stride = 3, .timeout_s = 120};
    halox_comm_t *comm = NULL;
    CHECK_OK(halox_comm_create("mpi", &args, &comm));
    memset(&got, 0, sizeof got);
    got.want_state = 1;
    halox_status_t st = halox_md_rank_run(&cm, comm, NULL, NULL, &got);
    if (st != HALOX_OK) {
        fprintf(stderr, "%s\n", got.error);
        halox_test_failures++;
    }
    halox_comm_destroy(comm);
    if (rank == 0 && st == HALOX_OK && ref.x && same.x) {
        double tol_x, tol_v, tol_e, box[3], dx, dv, de = 0;
        md_test_decomp_tolerances(real, &tol_x, &tol_v, &tol_e);
        md_test_fcc_box(&cfg, box);
        md_test_compare(&ref, &got, box, &dx, &dv);
        for (int k = 0; k < got.n_thermo && k < ref.n_thermo; k++) {
            de = fmax(de, md_rel(got.thermo[k].pe, ref.thermo[k].pe));
            de = fmax(de, md_rel(got.thermo[k].etotal, ref.thermo[k].etotal));
        }
        size_t bytes = sizeof(double) * 3 * (size_t)got.natoms;
        int bits = !memcmp(got.x, same.x, bytes) && !memcmp(got.v, same.v, bytes) &&
                   got.n_thermo == same.n_thermo &&
                   !memcmp(got.thermo, same.thermo, sizeof *got.thermo * (size_t)got.n_thermo);
        printf("mpi %dx%dx%d %s %s after 100 steps: vs 1 rank max |dx| %.3e |dv| %.3e energy "
               "%.3e; vs threads on the same grid: %s\n",
               grid->n[0], grid->n[1], grid->n[2], test_real_name(real),
               ens == HALOX_MD_NVT ? "NVT" : "NVE", dx, dv, de,
               bits ? "bit-identical" : "DIFFERENT");
        CHECK(got.n_thermo == ref.n_thermo);
        CHECK_MSG(dx <= tol_x && dv <= tol_v && de <= tol_e, "beyond tolerance");
        CHECK_MSG(bits, "mpi and threads differ on the same grid");
    }
    halox_md_result_free(&ref);
    halox_md_result_free(&same);
    halox_md_result_free(&got);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    halox_grid_t grid;
    if (argc < 2 || halox_grid_parse(argv[1], &grid) != HALOX_OK ||
        halox_grid_size(&grid) != size) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -np P test_md_mpi NXxNYxNZ (P = NX*NY*NZ)\n");
        MPI_Finalize();
        return 2;
    }
    one(&grid, HALOX_DOUBLE, HALOX_MD_NVE, rank);
    one(&grid, HALOX_FLOAT, HALOX_MD_NVE, rank);
    one(&grid, HALOX_DOUBLE, HALOX_MD_NVT, rank);
    /* every process reports; the test fails if any check failed anywhere */
    int mine = halox_test_failures, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank != 0)
        return mine ? 1 : 0;
    halox_test_failures = all;
    TEST_DONE();
}
