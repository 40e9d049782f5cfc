/* What a transport can do, asked by name (halox_transport_caps) and of an endpoint
 * (halox_comm_caps): every transport of the build answers consistently, the known ones as their
 * tables declare, and an endpoint answers as its transport. */
#include <string.h>

#include "halox/endpoint.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "harness.h"

/* What each transport declares: on_gpu, stream_ordered, capturable, gpu_initiated, symmetric,
 * gpu_shared, inline_kernels (threads: only `threads`). Transports not in this build are
 * skipped. */
static const struct {
    const char *name;
    int on_gpu, stream_ordered, capturable, gpu_initiated, symmetric, gpu_shared, inline_kernels;
} known[] = {
    {"threads", 0, 0, 0, 0, 0, 0, 0},        {"mpi", 0, 0, 0, 0, 0, 0, 0},
    {"mpi-staged", 1, 1, 0, 0, 0, 1, 0},     {"mpi-cuda", 1, 1, 0, 0, 0, 1, 0},
    {"nccl", 1, 1, 1, 0, 0, 0, 0},           {"nvshmem-stream", 1, 1, 1, 1, 1, 1, 0},
    {"nvshmem-pulse", 1, 1, 1, 1, 1, 1, 0},  {"nvshmem-fused", 1, 1, 1, 1, 1, 1, 0},
    {"nvshmem-inline", 1, 1, 1, 1, 1, 1, 1}, {"hybrid", 1, 1, 0, 1, 1, 1, 0},
};

/* The rules that hold between the answers of any transport. */
static void check_consistent(const char *name, const halox_transport_caps_t *c)
{
    CHECK_MSG(c->on_gpu == halox_transport_on_gpu(name), "%s: on_gpu", name);
    CHECK_MSG(c->stream_ordered == c->on_gpu, "%s: every GPU transport is stream-ordered", name);
    CHECK_MSG(!c->threads || !c->on_gpu, "%s: thread ranks move host memory", name);
    CHECK_MSG(!c->capturable || c->on_gpu, "%s: only GPU work is captured", name);
    CHECK_MSG(!c->gpu_initiated || c->on_gpu, "%s: GPU-initiated needs GPU data", name);
    CHECK_MSG(!c->symmetric || c->gpu_initiated, "%s: peers store into symmetric memory", name);
    CHECK_MSG(!c->gpu_shared || c->on_gpu, "%s: only GPU ranks share a GPU", name);
    CHECK_MSG(!c->inline_kernels || (c->symmetric && c->capturable), "%s: inline kernels", name);
    CHECK_MSG(!c->graph_update || c->capturable, "%s: graph update needs capture", name);
    CHECK_MSG(!c->fields_in_kernel || (c->symmetric && c->capturable), "%s: fields in kernels",
              name);
}

static void check_names(void)
{
    int n = 0;
    for (const char *const *p = halox_transport_names(); *p; p++, n++) {
        halox_transport_caps_t c;
        CHECK_STATUS(halox_transport_caps(*p, &c), HALOX_OK);
        check_consistent(*p, &c);
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
            if (strcmp(known[k].name, *p) != 0)
                continue;
            CHECK_MSG(c.threads == (k == 0), "%s: threads", *p);
            CHECK_MSG(c.on_gpu == known[k].on_gpu && c.stream_ordered == known[k].stream_ordered &&
                          c.capturable == known[k].capturable &&
                          c.gpu_initiated == known[k].gpu_initiated &&
                          c.symmetric == known[k].symmetric &&
                          c.gpu_shared == known[k].gpu_shared &&
                          c.inline_kernels == known[k].inline_kernels &&
                          c.fields_in_kernel == !strcmp(*p, "nvshmem-fused"),
                      "%s: capabilities differ from what its table declares", *p);
        }
    }
    CHECK(n >= 1);
    halox_transport_caps_t c;
    memset(&c, 0xff, sizeof c);
    CHECK_STATUS(halox_transport_caps("carrier-pigeon", &c), HALOX_ERR_UNKNOWN_TRANSPORT);
    CHECK(!c.on_gpu && !c.threads && !c.symmetric);
}

/* One `threads` rank: its endpoint answers as its transport does. */
static void check_endpoint(void)
{
    halox_team_t *team = NULL;
    CHECK_STATUS(halox_team_create(1, 10.0, &team), HALOX_OK);
    halox_comm_args_t args = {.real = HALOX_DOUBLE, .stride = 3, .team = team, .rank = 0};
    halox_comm_t *comm = NULL;
    CHECK_STATUS(halox_comm_create("threads", &args, &comm), HALOX_OK);
    halox_transport_caps_t byname, mine;
    CHECK_STATUS(halox_transport_caps("threads", &byname), HALOX_OK);
    CHECK_STATUS(halox_comm_caps(comm, &mine), HALOX_OK);
    CHECK(memcmp(&byname, &mine, sizeof mine) == 0);
    CHECK(mine.threads && !mine.on_gpu);

    memset(&mine, 0xff, sizeof mine);
    CHECK_STATUS(halox_comm_caps(NULL, &mine), HALOX_ERR_INVALID_ARG);
    CHECK(!mine.threads && !mine.on_gpu); /* zeroed, not left as it was */
    CHECK_STATUS(halox_comm_caps(comm, NULL), HALOX_ERR_INVALID_ARG);
    halox_comm_destroy(comm);
    halox_team_destroy(team);
}

int main(void)
{
    check_names();
    check_endpoint();
    if (halox_test_failures)
        return 1;
    printf("test_caps: OK\n");
    return 0;
}
