/* A code's own Cartesian communicator as halox's grid and rank order (halox_grid_from_cart):
 * - the Cartesian communicator is made over MPI_COMM_WORLD with its ranks reversed and z
 *   fastest (MPI's order), so its numbering is not halox's;
 * - through halox_grid_from_cart, an `mpi` endpoint's rank is the one whose grid coordinates
 *   (halox_grid_coords) are the process's Cartesian coordinates, on every process;
 * - the plan an endpoint builds there over the home atoms of that rank's domain is the serial
 *   reference's for that rank (counts, ids of the halo), and a coordinate exchange gives the
 *   reference's halo bit for bit: the renumbered ranks talk to the right neighbours;
 * - refusals: a communicator without a Cartesian topology, one of 2 dimensions, one not
 *   periodic, each named. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "harness.h"
#include "mpi_common.h"

static void check_refusals(int size)
{
    MPI_Comm world = MPI_COMM_WORLD, out = MPI_COMM_NULL;
    halox_grid_t g;
    CHECK_STATUS(halox_grid_from_cart(&world, &g, &out), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "no Cartesian topology") != NULL);
    int d2[2] = {0, 0}, p2[2] = {1, 1};
    MPI_Dims_create(size, 2, d2);
    MPI_Comm c2;
    MPI_Cart_create(MPI_COMM_WORLD, 2, d2, p2, 0, &c2);
    CHECK_STATUS(halox_grid_from_cart(&c2, &g, &out), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "2 dimensions") != NULL);
    MPI_Comm_free(&c2);
    int d3[3] = {0, 0, 0}, p3[3] = {1, 0, 1};
    MPI_Dims_create(size, 3, d3);
    MPI_Comm c3;
    MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 0, &c3);
    CHECK_STATUS(halox_grid_from_cart(&c3, &g, &out), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "dimension 1") != NULL);
    MPI_Comm_free(&c3);
}

int main(int argc, char **argv)
{
    int wrank, size;
    tm_mpi_init(&argc, &argv, &wrank, &size);
    /* world reversed, then a Cartesian topology without reordering: MPI's numbering */
    MPI_Comm rev, cart, hx;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - 1 - wrank, &rev);
    int dims[3] = {0, 0, 0}, periods[3] = {1, 1, 1}, cc[3];
    MPI_Dims_create(size, 3, dims);
    MPI_Cart_create(rev, 3, dims, periods, 0, &cart);
    int crank;
    MPI_Comm_rank(cart, &crank);
    MPI_Cart_coords(cart, crank, 3, cc);

    halox_grid_t grid;
    CHECK_OK(halox_grid_from_cart(&cart, &grid, &hx));
    CHECK(grid.n[0] == dims[0] && grid.n[1] == dims[1] && grid.n[2] == dims[2]);
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .mpi_comm = &hx};
    halox_comm_t *comm = NULL;
    CHECK_OK(halox_comm_create("mpi", &args, &comm));
    MPI_Comm_free(&hx); /* the endpoint keeps a duplicate */
    const int r = halox_comm_rank(comm);
    int c[3];
    halox_grid_coords(&grid, r, c);
    CHECK_MSG(c[0] == cc[0] && c[1] == cc[1] && c[2] == cc[2],
              "world rank %d: Cartesian coordinates %d,%d,%d but halox rank %d is at %d,%d,%d",
              wrank, cc[0], cc[1], cc[2], r, c[0], c[1], c[2]);

    /* the plan and a coordinate exchange on the renumbered ranks against the reference */
    halox_plan_params_t params = {grid, {{9.0, 10.0, 11.0}}, 2.0, 0.4, 0, 0};
    halox_atoms_t *ref = calloc((size_t)size, sizeof *ref), mine;
    CHECK(tm_make_ranks(&grid, &params.box, HALOX_DOUBLE, 3, 0, 1500, 17, r, ref, &mine) == 0);
    tm_reference_t t = {0};
    CHECK_OK(tm_reference_build(&t, &params, ref, size));
    halox_plan_t plan;
    halox_plan_init(&plan);
    CHECK_OK(halox_comm_build_plan(comm, &params, &mine, &plan));
    CHECK(plan.n_total == ref[r].n_total &&
          !memcmp(mine.id, ref[r].id, sizeof(int32_t) * (size_t)plan.n_total));
    double *f = calloc((size_t)plan.n_total + 1, 3 * sizeof(double));
    CHECK_OK(halox_comm_bind(comm, &plan, mine.x, f));
    for (int i = 0; i < 3 * mine.n_home; i++) /* moved alike here and in the reference */
        ((double *)mine.x)[i] = ((double *)ref[r].x)[i] += 0.01 * (i % 7);
    for (int q = 0; q < size; q++)
        for (int i = 0; i < 3 * ref[q].n_home; i++)
            if (q != r)
                ((double *)ref[q].x)[i] += 0.01 * (i % 7);
    CHECK_OK(halox_comm_coords(comm));
    tm_reference_coords(&t);
    CHECK(!memcmp(mine.x, ref[r].x, 3 * sizeof(double) * (size_t)plan.n_total));
    CHECK_OK(halox_comm_forces(comm));
    ROOT_PRINTF("grid %dx%dx%d from a Cartesian communicator: ranks, plan and halo as the "
                "reference\n",
                grid.n[0], grid.n[1], grid.n[2]);
    free(f);
    halox_plan_free(&plan);
    tm_reference_free(&t);
    tm_free_ranks(ref, size, &mine);
    free(ref);
    halox_comm_destroy(comm);
    check_refusals(size);
    MPI_Comm_free(&cart);
    MPI_Comm_free(&rev);
    return tm_mpi_finish();
}
