/* CPU affinity: binding a rank near its GPU (HALOX_CPU_AFFINITY=gpu), and describing the
 * binding for the tools. Linux only (sched_setaffinity, sysfs); elsewhere binding is refused
 * with a message and the description is empty. */
#define _GNU_SOURCE
#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpulist.h"
#include "core/error.h"
#include "halox/env.h"
#include "halox/topology.h"
#include "transports/affinity.h"

enum { HALOX__MAX_CPUS = 4096 };

int halox_affinity_describe(char *buf, size_t len)
{
    if (!buf || !len)
        return -1;
    buf[0] = 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    int *cpus = malloc(sizeof(int) * CPU_SETSIZE), n = 0;
    if (!cpus)
        return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            cpus[n++] = c;
    int rc = halox__cpulist_format(cpus, n, buf, len);
    free(cpus);
    return rc;
}

halox_status_t halox__bind_near_gpu(const char *bus, int index, int count, const char *who)
{
    const char *mode = halox_env_string("HALOX_CPU_AFFINITY");
    if (!mode || !strcmp(mode, "off") || !strcmp(mode, "0"))
        return HALOX_OK;
    if (strcmp(mode, "gpu") != 0)
        return halox__error(HALOX_ERR_INVALID_ARG,
                            "%s: HALOX_CPU_AFFINITY='%s': use gpu (cores near the rank's GPU) or "
                            "off",
                            who, mode);
    char id[64], path[128];
    snprintf(id, sizeof id, "%s", bus);
    for (char *p = id; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", id);
    char line[8192] = "";
    FILE *f = fopen(path, "r");
    if (!f || !fgets(line, sizeof line, f)) {
        if (f)
            fclose(f);
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "%s: HALOX_CPU_AFFINITY=gpu: cannot read %s (not Linux, or no sysfs): "
                            "unset HALOX_CPU_AFFINITY and bind with the launcher "
                            "(mpirun --bind-to, srun --cpu-bind)",
                            who, path);
    }
    fclose(f);
    int *near = malloc(sizeof(int) * HALOX__MAX_CPUS);
    if (!near)
        return halox__error(HALOX_ERR_NO_MEMORY, "%s: no memory", who);
    int n = halox__cpulist_parse(line, near, HALOX__MAX_CPUS);
    /* only CPUs the launcher allows: its binding is the outer limit */
    cpu_set_t allowed, set;
    CPU_ZERO(&allowed);
    CPU_ZERO(&set);
    if (n > 0 && sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (near[i] < CPU_SETSIZE && CPU_ISSET(near[i], &allowed))
                near[k++] = near[i];
        n = k;
    }
    if (n <= 0) {
        free(near);
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "%s: HALOX_CPU_AFFINITY=gpu: no CPU near GPU %s is allowed to this "
                            "process (%s says '%.64s'): widen the launcher's binding "
                            "(mpirun --bind-to none) or unset HALOX_CPU_AFFINITY",
                            who, bus, path, line);
    }
    int lo = 0, hi = 0;
    halox__cpulist_share(n, index, count, &lo, &hi);
    for (int i = lo; i < hi; i++)
        CPU_SET(near[i], &set);
    free(near);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return halox__error(HALOX_ERR_UNAVAILABLE,
                            "%s: HALOX_CPU_AFFINITY=gpu: sched_setaffinity failed: unset "
                            "HALOX_CPU_AFFINITY and bind with the launcher",
                            who);
    return HALOX_OK;
}
