/** @file
 * The transports compiled into this build: their names, what each is, and what each can do.
 * Callers ask these capabilities instead of comparing transport names.
 *
 * Every call here is local, reads only tables fixed at build time and may be made from any
 * thread, before MPI_Init or without any endpoint. */
#ifndef HALOX_TRANSPORT_H
#define HALOX_TRANSPORT_H

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Names of the transports compiled into this build, NULL-terminated (static storage). */
const char *const *halox_transport_names(void);

/** One-line description of a transport (static storage), or NULL when unknown. */
const char *halox_transport_description(const char *name);

/** Whether a transport is compiled in. */
int halox_transport_available(const char *name);

/** A transport named by a user through `source`: an option ("--transport") or an environment
 *  variable ("HALOX_TRANSPORT"). HALOX_OK when this build has it; else
 *  HALOX_ERR_UNKNOWN_TRANSPORT with a message that names the source and the value, lists the
 *  transports of this build and adds `more` (NULL: nothing), another value the caller takes,
 *  such as "auto (the automatic choice)". */
halox_status_t halox_transport_check_name(const char *name, const char *source, const char *more);

/** Whether the transport moves data in GPU memory (bind then takes device pointers). */
int halox_transport_on_gpu(const char *name);

/** What a transport needs from the launch and offers its caller: ask these instead of comparing
 *  transport names. Of a transport by name: halox_transport_caps(); of an endpoint:
 *  halox_comm_caps() (halox/endpoint.h). */
typedef struct halox_transport_caps {
    int threads; /**< ranks are threads of one process (a halox_team_t); else MPI processes */
    int on_gpu;  /**< data in GPU memory: x and f of halox_comm_bind() are device pointers,
                      halox_comm_device_alloc() serves them; 0: host memory */
    int stream_ordered;   /**< halox_comm_coords()/forces() order their work on
                               halox_comm_stream() and may return before it completes (synchronise
                               that stream before reading the results on the host); 0: they return
                               with the exchange complete. Every GPU transport */
    int capturable;       /**< halox_comm_coords()/forces() only enqueue work, with no host wait
                               inside: a CUDA graph can capture them (halox_comm_graph_mode) */
    int gpu_initiated;    /**< the GPU starts the transfers itself (NVSHMEM: puts and stores
                               from kernels or on the stream, signals waited for on the GPU); the
                               host only enqueues. `hybrid`: towards the peers its GPU reaches by
                               loads and stores, through the host's MPI towards the others */
    int symmetric;        /**< x and f must come from halox_comm_device_alloc(): NVSHMEM
                               symmetric memory (its heap, NVSHMEM_SYMMETRIC_SIZE), into which the
                               peers store */
    int gpu_shared;       /**< several ranks may share one GPU (under MPS); 0 for CPU transports */
    int inline_kernels;   /**< the exchange can run inside the caller's kernels
                               (halox_comm_inline_view, halox/inline.h) when the plan allows it */
    int graph_update;     /**< a graph that captured the exchanges may be moved to a new capture's
                               arguments with cudaGraphExecUpdate (the capture owns no resources
                               in the graph); 0: instantiate each new capture */
    int fields_in_kernel; /**< bound fields travel inside the exchange's kernels, under its
                               signals (forward ones in symmetric memory with the coordinates,
                               reverse ones with the forces; halox/fields.h; no host step,
                               capturable); 0: field exchanges go through the host (GPU
                               transports) or are host copies (CPU transports) */
} halox_transport_caps_t;

/** The capabilities of a transport of this build in *caps. HALOX_ERR_UNKNOWN_TRANSPORT, naming
 *  the transports this build has, when `name` is not one of them (*caps is then all zero). */
halox_status_t halox_transport_caps(const char *name, halox_transport_caps_t *caps);

#ifdef __cplusplus
}
#endif
#endif
