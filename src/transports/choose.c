/* The automatic choice of transport: a rule from the measured halo and step times
 * (docs/PERFORMANCE.md, docs/NVSHMEM.md#which-transport-runs-by-default), applied to what is
 * known at start-up.
 *
 *   CPU data                  -> threads (one process) or mpi (MPI processes)
 *   one GPU rank              -> nccl, else mpi-staged (every pulse is a local copy; nccl steps
 *                                can be captured in CUDA graphs)
 *   GPUs that reach each other by loads and stores (one node; NVLink or PCIe peer access),
 *   NVSHMEM built             -> nvshmem-fused: the fastest halo and the fastest MD steps at
 *                                every measured size; it also runs several ranks per GPU (under
 *                                MPS)
 *   some GPUs reach each other by loads and stores, others not (several nodes with several
 *   ranks each, or pairs declared in HALOX_HYBRID_UNREACHABLE), NVSHMEM built
 *                             -> hybrid: the GPU-initiated pulses where they can run, MPI through
 *                                the host for the others (on one node with declared pairs it is
 *                                checked bit for bit like the others)
 *   one rank per GPU          -> nccl (second fastest; NCCL refuses ranks that share a GPU)
 *   otherwise                 -> mpi-staged
 * There is no size threshold: the smallest system measured (45k atoms on 2 GPUs) already favours
 * the GPU-initiated exchange, and below it the rule extrapolates. */
#include <stdio.h>
#include <string.h>

#include "core/route.h"
#include "halox/topology.h"
#include "halox/transport.h"

static const char *halox__choose_msg(char *why, size_t len, const char *name, const char *msg)
{
    if (why && len)
        snprintf(why, len, "%s: %s", name, msg);
    return name;
}

void halox_topology_guess(int ranks, int local_ranks, int on_gpu, halox_topology_t *t)
{
    memset(t, 0, sizeof *t);
    t->ranks = ranks;
    t->mpi = ranks > 1;
    if (!on_gpu)
        return;
    const int g = halox_gpu_count();
    const int one_node = local_ranks <= 0 || local_ranks >= ranks;
    const int per_node = one_node ? ranks : local_ranks;
    if (g <= 0) {
        t->gpus = ranks;
        t->ranks_per_gpu = 1;
        return;
    }
    const int nodes = one_node ? 1 : (ranks + local_ranks - 1) / local_ranks;
    t->gpus = (per_node < g ? per_node : g) * nodes;
    t->ranks_per_gpu = (per_node + g - 1) / g;
    const int peers = halox_gpu_peer_access_all();
    t->load_store = one_node && peers;
    /* several nodes: the ranks of a node still reach each other */
    t->load_store_some = !one_node && per_node > 1 && peers;
    /* pairs declared unreachable count as such (a declaration that does not parse is reported
     * by the transports that read it) */
    halox__unreach_t u;
    int any = 0, all = 0;
    if (halox__unreach_from_env(ranks, &u) == HALOX_OK)
        halox__unreach_summary(&u, ranks, &any, &all);
    if (any) {
        t->load_store_some = !all && (t->load_store || t->load_store_some);
        t->load_store = 0;
    }
}

const char *halox_transport_choose(const halox_topology_t *t, long long atoms, char *why,
                                   size_t why_len)
{
    (void)atoms; /* no size threshold in the measurements yet (see above) */
    if (!t || t->ranks < 1)
        return halox__choose_msg(why, why_len, "threads", "no topology: one process");
    if (t->gpus <= 0)
        return t->ranks > 1 && t->mpi && halox_transport_available("mpi")
                   ? halox__choose_msg(why, why_len, "mpi", "CPU data, MPI processes")
                   : halox__choose_msg(why, why_len, "threads", "CPU data, one process");
    const int nccl = halox_transport_available("nccl"),
              staged = halox_transport_available("mpi-staged");
    if (!staged && !nccl)
        return halox__choose_msg(why, why_len, t->ranks > 1 ? "mpi" : "threads",
                                 "this build has no GPU transport (CUDA with MPI)");
    if (t->ranks == 1)
        return nccl ? halox__choose_msg(why, why_len, "nccl",
                                        "one rank: local copies, capturable in CUDA graphs")
                    : halox__choose_msg(why, why_len, "mpi-staged", "one rank: local copies");
    if (t->load_store && halox_transport_available("nvshmem-fused"))
        return halox__choose_msg(why, why_len, "nvshmem-fused",
                                 "every GPU reaches every other by loads and stores: the "
                                 "GPU-initiated fused exchange is the fastest measured "
                                 "(docs/PERFORMANCE.md)");
    if (t->load_store_some && halox_transport_available("hybrid"))
        return halox__choose_msg(why, why_len, "hybrid",
                                 "some GPUs reach each other by loads and stores and others do "
                                 "not (several nodes, or pairs in HALOX_HYBRID_UNREACHABLE): "
                                 "GPU-initiated pulses between the first, MPI through the host "
                                 "between the others");
    if (t->ranks_per_gpu <= 1 && nccl)
        return halox__choose_msg(why, why_len, "nccl",
                                 t->load_store ? "one rank per GPU; no NVSHMEM in this build"
                                               : "one rank per GPU; GPUs not all reachable by "
                                                 "loads and stores (several nodes, or pairs in "
                                                 "HALOX_HYBRID_UNREACHABLE)");
    return halox__choose_msg(why, why_len, staged ? "mpi-staged" : "nccl",
                             "ranks share GPUs and NVSHMEM cannot reach every peer "
                             "(NCCL refuses ranks that share a GPU)");
}
