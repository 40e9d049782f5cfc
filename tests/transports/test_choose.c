/* The automatic choice of transport (halox_transport_choose): the documented rule on the
 * topologies that matter, adapted to the transports this build has; every answer is a transport
 * of the build, with a reason. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "halox/topology.h"
#include "halox/transport.h"
#include "harness.h"

/* load_store: 1 every pair of GPUs reaches each other by loads and stores, 2 some pairs do */
static const char *pick(int ranks, int mpi, int gpus, int per_gpu, int load_store)
{
    halox_topology_t t = {ranks, mpi, gpus, per_gpu, load_store == 1, load_store == 2};
    char why[384] = "";
    const char *name = halox_transport_choose(&t, 45000, why, sizeof why);
    printf("ranks %d mpi %d gpus %d per-gpu %d load/store %s -> %s\n", ranks, mpi, gpus, per_gpu,
           load_store == 1   ? "all"
           : load_store == 2 ? "some"
                             : "none",
           why);
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
    const int hyb = halox_transport_available("hybrid");
    const char *gpu_one = nccl ? "nccl" : staged ? "mpi-staged" : "threads";

    CHECK(!strcmp(halox_transport_choose(NULL, 0, NULL, 0), "threads"));
    /* the guess: CPU data has no GPUs; GPU data without a visible GPU: one GPU per rank */
    halox_topology_t t;
    halox_topology_guess(4, 0, 0, &t);
    CHECK(t.ranks == 4 && t.mpi && t.gpus == 0);
    halox_topology_guess(4, 2, 1, &t);
    if (halox_gpu_count() == 0)
        CHECK(t.gpus == 4 && t.ranks_per_gpu == 1 && !t.load_store);
    else /* two nodes: never every peer by loads and stores; the ranks of a node reach each
            other when its GPUs are peers */
        CHECK(t.gpus >= 2 && !t.load_store && t.load_store_some == halox_gpu_peer_access_all());
    if (halox_gpu_peer_access_all()) {
        /* one node: pairs declared unreachable make it "some" (or none, with all of them) */
        halox_topology_guess(4, 0, 1, &t);
        CHECK(t.load_store && !t.load_store_some);
        setenv("HALOX_HYBRID_UNREACHABLE", "0-1", 1);
        halox_topology_guess(4, 0, 1, &t);
        CHECK(!t.load_store && t.load_store_some);
        setenv("HALOX_HYBRID_UNREACHABLE", "all", 1);
        halox_topology_guess(4, 0, 1, &t);
        CHECK(!t.load_store && !t.load_store_some);
        unsetenv("HALOX_HYBRID_UNREACHABLE");
    }
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
        /* several nodes of several GPUs each (or declared pairs): GPU-initiated within a node,
         * MPI across */
        CHECK(!strcmp(pick(8, 1, 8, 1, 2), hyb ? "hybrid" : nccl ? "nccl" : "mpi-staged"));
        CHECK(!strcmp(pick(16, 1, 8, 2, 2), hyb ? "hybrid" : "mpi-staged"));
    }
    TEST_DONE();
}
