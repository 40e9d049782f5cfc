/* Internal: CPU affinity of a rank (src/transports/affinity.c). */
#ifndef HALOX_TRANSPORTS_AFFINITY_H
#define HALOX_TRANSPORTS_AFFINITY_H

#include "halox/status.h"

/* HALOX_CPU_AFFINITY=gpu: bind the calling thread (and the threads it starts later, such as
 * NVSHMEM's proxy) to the cores local to the GPU with PCI bus id `bus` (sysfs local_cpulist,
 * within the CPUs the launcher allows), rank `index` of the `count` ranks sharing that GPU
 * getting its own contiguous share. Unset or "off": nothing. `who` names the caller in errors. */
halox_status_t halox__bind_near_gpu(const char *bus, int index, int count, const char *who);

#endif
