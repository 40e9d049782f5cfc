/* The automatic choice of transport (halox_transport_choose): the documented rule on the
 * topologies that matter, adapted to the transports this build has; every answer is a transport
 * of the build, with a reason. */
#include <stdio.h>
#include <string.h>

#include "halox/comm.h"
#include "harness.h"

static const char *pick(int ranks, int mpi, int gpus, int per_gpu, int load_store)
{
    halox_topology_t t = {ranks, mpi, gpus, per_gpu, load_store};
    char why[384] = "";
    const char *name = halox_transport_choose(&t, 45000, why, sizeof why);
    printf("ranks %d mpi %d gpus %d per-gpu %d load/store %d -> %s\n", ranks, mpi, gpus, per_gpu,
           load_store, why);
    CHECK_MSG(name && halox_transport_available(name), "'%s' is not in this build", name);
    CHECK(why[0] && strncmp(why, name, strlen(name)) == 0);
    return name ? name : "";
}

int main(void)
{
    const int mpi = halox_transport_available("mpi");
    const int staged = halox_transport_available("mpi-staged");
    const int nccl = halox_transport_available("nccl");
    const int shm = halox_transport_available("nvshmem-fused");
    const char *gpu_one = nccl ? "nccl" : staged ? "mpi-staged" : "threads";

    CHECK(!strcmp(halox_transport_choose(NULL, 0, NULL, 0), "threads"));
    /* the guess: CPU data has no GPUs; GPU data without a visible GPU: one GPU per rank */
    halox_topology_t t;
    halox_topology_guess(4, 0, 0, &t);
    CHECK(t.ranks == 4 && t.mpi && t.gpus == 0);
    halox_topology_guess(4, 2, 1, &t);
    if (halox_gpu_count() == 0)
        CHECK(t.gpus == 4 && t.ranks_per_gpu == 1 && !t.load_store);
    else /* two nodes: never every peer by loads and stores */
        CHECK(t.gpus >= 2 && !t.load_store);
    CHECK(!strcmp(pick(1, 0, 0, 0, 0), "threads"));
    CHECK(!strcmp(pick(4, 1, 0, 0, 0), mpi ? "mpi" : "threads"));
    CHECK(!strcmp(pick(1, 0, 1, 1, 1), gpu_one));
    if (staged) {
        /* one node, NVLink: the fused GPU-initiated exchange, also with ranks sharing GPUs */
        CHECK(!strcmp(pick(2, 1, 2, 1, 1), shm ? "nvshmem-fused" : nccl ? "nccl" : "mpi-staged"));
        CHECK(!strcmp(pick(8, 1, 2, 4, 1), shm ? "nvshmem-fused" : "mpi-staged"));
        /* several nodes: no load/store to every peer */
        CHECK(!strcmp(pick(4, 1, 4, 1, 0), nccl ? "nccl" : "mpi-staged"));
        CHECK(!strcmp(pick(8, 1, 4, 2, 0), "mpi-staged"));
    }
    TEST_DONE();
}
