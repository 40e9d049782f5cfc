/* The transports compiled into this build, and endpoint creation by transport name. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/transport.h"
#include "halox/endpoint.h"
#include "halox/topology.h"
#include "halox/transport.h"
#include "transports/registry.h"

#ifdef HALOX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

const halox_transport_ops_t *const halox__transport_table[] = {
    &halox__threads_ops,
#ifdef HALOX_HAVE_MPI
    &halox__mpi_ops,
#endif
#if defined(HALOX_HAVE_CUDA) && defined(HALOX_HAVE_MPI)
    &halox__mpi_staged_ops,
    &halox__mpi_cuda_ops,
#endif
#if defined(HALOX_HAVE_CUDA) && defined(HALOX_HAVE_MPI) && defined(HALOX_HAVE_NCCL)
    &halox__nccl_ops,
#endif
#if defined(HALOX_HAVE_CUDA) && defined(HALOX_HAVE_MPI) && defined(HALOX_HAVE_NVSHMEM)
    &halox__nvshmem_stream_ops,
    &halox__nvshmem_pulse_ops,
    &halox__nvshmem_fused_ops,
    &halox__nvshmem_inline_ops,
    &halox__hybrid_ops,
#endif
    NULL,
};

#define HALOX__N_TRANSPORTS (sizeof halox__transport_table / sizeof halox__transport_table[0])

/* The names, filled once from the table (its entries are not constant expressions). */
static const char *halox__transport_name_list[HALOX__N_TRANSPORTS];
static pthread_once_t halox__transport_names_once = PTHREAD_ONCE_INIT;

static void halox__transport_names_fill(void)
{
    for (size_t i = 0; halox__transport_table[i]; i++)
        halox__transport_name_list[i] = halox__transport_table[i]->name;
    halox__transport_name_list[HALOX__N_TRANSPORTS - 1] = NULL;
}

const char *const *halox_transport_names(void)
{
    pthread_once(&halox__transport_names_once, halox__transport_names_fill);
    return halox__transport_name_list;
}

static const halox_transport_ops_t *halox__transport_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; halox__transport_table[i]; i++)
        if (strcmp(halox__transport_table[i]->name, name) == 0)
            return halox__transport_table[i];
    return NULL;
}

const char *halox_transport_description(const char *name)
{
    const halox_transport_ops_t *ops = halox__transport_find(name);
    return ops ? ops->description : NULL;
}

int halox_transport_available(const char *name) { return halox__transport_find(name) != NULL; }

int halox_transport_on_gpu(const char *name)
{
    const halox_transport_ops_t *ops = halox__transport_find(name);
    return ops ? ops->on_gpu != 0 : 0;
}

/* The transports this build has, as a list for messages: "threads, mpi". */
static const char *halox__transport_list(char *names, size_t len)
{
    size_t used = 0;
    names[0] = '\0';
    for (size_t i = 0; halox__transport_table[i] && used < len; i++) {
        int n = snprintf(names + used, len - used, "%s%s", i ? ", " : "",
                         halox__transport_table[i]->name);
        used += n > 0 ? (size_t)n : 0;
    }
    return names;
}

/* HALOX_ERR_UNKNOWN_TRANSPORT naming the transports this build has. */
static halox_status_t halox__transport_unknown(const char *name)
{
    char names[256];
    return halox__error(HALOX_ERR_UNKNOWN_TRANSPORT, "unknown transport '%s': this build has %s",
                        name ? name : "(null)", halox__transport_list(names, sizeof names));
}

halox_status_t halox_transport_check_name(const char *name, const char *source, const char *more)
{
    if (name && halox__transport_find(name))
        return HALOX_OK;
    char names[256];
    halox__transport_list(names, sizeof names);
    const char *src = source ? source : "transport";
    /* a variable reads as VAR='value', an option as --option 'value' */
    const int var = src[0] != '-';
    return halox__error(HALOX_ERR_UNKNOWN_TRANSPORT,
                        "%s%s'%s' is not a transport of this build: give one of %s%s%s%s", src,
                        var ? "=" : " ", name ? name : "(null)", names, more ? ", or " : "",
                        more ? more : "", var ? " (or unset it)" : "");
}

/* What a transport's table declares, as its callers ask it. */
static void halox__caps_of(const halox_transport_ops_t *ops, halox_transport_caps_t *caps)
{
    caps->threads = ops->threads != 0;
    caps->on_gpu = ops->on_gpu != 0;
    /* every GPU transport enqueues its exchanges on the endpoint's stream, also those that wait
     * on the host inside them (their copies back to the device stay enqueued) */
    caps->stream_ordered = ops->on_gpu != 0;
    caps->capturable = ops->capturable != 0;
    /* peers store into symmetric memory only from the GPU: NVSHMEM puts, stores and signals */
    caps->gpu_initiated = ops->symmetric != 0;
    caps->symmetric = ops->symmetric != 0;
    caps->gpu_shared = ops->on_gpu && !ops->gpu_alone;
    caps->inline_kernels = ops->inline_view != NULL;
    caps->graph_update = ops->capturable && ops->graph_updatable;
    caps->fields_in_kernel = ops->fields_in_kernel != NULL;
}

halox_status_t halox_transport_caps(const char *name, halox_transport_caps_t *caps)
{
    if (!caps)
        return halox__error(HALOX_ERR_INVALID_ARG, "transport_caps: caps is NULL");
    memset(caps, 0, sizeof *caps);
    const halox_transport_ops_t *ops = halox__transport_find(name);
    if (!ops)
        return halox__transport_unknown(name);
    halox__caps_of(ops, caps);
    return HALOX_OK;
}

halox_status_t halox_comm_caps(const halox_comm_t *comm, halox_transport_caps_t *caps)
{
    if (!caps)
        return halox__error(HALOX_ERR_INVALID_ARG, "comm_caps: caps is NULL");
    memset(caps, 0, sizeof *caps);
    if (!comm)
        return halox__error(HALOX_ERR_INVALID_ARG, "comm_caps: comm is NULL");
    halox__caps_of(comm->ops, caps);
    return HALOX_OK;
}

int halox_gpu_count(void)
{
#ifdef HALOX_HAVE_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) { /* no driver, no device: none */
        (void)cudaGetLastError();
        return 0;
    }
    return n;
#else
    return 0;
#endif
}

int halox_gpu_peer_access_all(void)
{
#ifdef HALOX_HAVE_CUDA
    int n = halox_gpu_count();
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int ok = 0;
            if (a != b && (cudaDeviceCanAccessPeer(&ok, a, b) != cudaSuccess || !ok)) {
                (void)cudaGetLastError();
                return 0;
            }
        }
    return n > 0;
#else
    return 0;
#endif
}

halox_status_t halox_comm_create(const char *transport, const halox_comm_args_t *args,
                                 halox_comm_t **comm_p)
{
    if (!comm_p)
        return halox__error(HALOX_ERR_INVALID_ARG, "comm_create: comm_p is NULL");
    *comm_p = NULL;
    if (!args)
        return halox__error(HALOX_ERR_INVALID_ARG, "comm_create: args is NULL");
    const halox_transport_ops_t *ops = halox__transport_find(transport);
    if (!ops)
        return halox__transport_unknown(transport);
    return halox__comm_create_ops(ops, args, comm_p);
}
