/* A code's own Cartesian communicator as halox's grid and rank order (halox_grid_from_cart,
 * endpoint.h): the processes renumbered by their Cartesian coordinates, x fastest. */
#include "core/error.h"
#include "halox/endpoint.h"

#ifdef HALOX_HAVE_MPI
#include <mpi.h>

halox_status_t halox_grid_from_cart(const void *cart_comm, halox_grid_t *grid_p, void *comm_out)
{
    if (!cart_comm || !grid_p || !comm_out)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "grid_from_cart: cart_comm, grid_p and comm_out are required");
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready)
        return halox__error(HALOX_ERR_STATE,
                            "grid_from_cart: MPI is not initialised: call MPI_Init first");
    MPI_Comm cart = *(const MPI_Comm *)cart_comm;
    int topo = MPI_UNDEFINED, nd = 0;
    if (cart == MPI_COMM_NULL || MPI_Topo_test(cart, &topo) != MPI_SUCCESS || topo != MPI_CART)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "grid_from_cart: the communicator has no Cartesian topology: make "
                            "it with MPI_Cart_create (3 dimensions, all periodic)");
    MPI_Cartdim_get(cart, &nd);
    if (nd != 3)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "grid_from_cart: the Cartesian communicator has %d dimensions: "
                            "give it 3 (a dimension of 1 where the code has none)",
                            nd);
    int dims[3], periods[3], coords[3];
    MPI_Cart_get(cart, 3, dims, periods, coords);
    for (int d = 0; d < 3; d++)
        if (!periods[d])
            return halox__error(HALOX_ERR_INVALID_ARG,
                                "grid_from_cart: dimension %d of the Cartesian communicator is "
                                "not periodic: halox's box is periodic in every dimension",
                                d);
    const int key = coords[0] + dims[0] * (coords[1] + dims[1] * coords[2]);
    MPI_Comm out = MPI_COMM_NULL;
    if (MPI_Comm_split(cart, 0, key, &out) != MPI_SUCCESS)
        return halox__error(HALOX_ERR_COMM, "grid_from_cart: MPI_Comm_split failed");
    *(MPI_Comm *)comm_out = out;
    for (int d = 0; d < 3; d++)
        grid_p->n[d] = dims[d];
    return HALOX_OK;
}

#else

halox_status_t halox_grid_from_cart(const void *cart_comm, halox_grid_t *grid_p, void *comm_out)
{
    (void)cart_comm, (void)grid_p, (void)comm_out;
    return halox__error(HALOX_ERR_UNAVAILABLE, "grid_from_cart: this halox was built without MPI");
}

#endif
