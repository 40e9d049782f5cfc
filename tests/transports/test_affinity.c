/* HALOX_CPU_AFFINITY=gpu binding (src/transports/affinity.c) on any PCI device of this machine:
 * one rank gets all the device's allowed CPUs, two ranks split them, the description matches
 * sched_getaffinity, and bad settings or a missing device are errors that say what to do. The
 * original affinity is restored after each case. Exit 77 without sysfs PCI devices or when the
 * process may not change its affinity. */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpulist.h"
#include "halox/topology.h"
#include "harness.h"
#include "transports/affinity.h"

int main(void)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e = NULL;
    char bus[300] = "";
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(bus, sizeof bus, "%s", e->d_name);
            break;
        }
    if (d)
        closedir(d);
    if (!bus[0]) {
        printf("no PCI devices in sysfs: skipped\n");
        return HALOX_TEST_SKIP;
    }
    cpu_set_t orig;
    if (sched_getaffinity(0, sizeof orig, &orig) != 0 ||
        sched_setaffinity(0, sizeof orig, &orig) != 0) {
        printf("this process may not change its CPU affinity: skipped\n");
        return HALOX_TEST_SKIP;
    }
    char before[256], after[256];
    CHECK(halox_affinity_describe(before, sizeof before) == 0);

    /* unset: nothing happens */
    unsetenv("HALOX_CPU_AFFINITY");
    CHECK_OK(halox__bind_near_gpu(bus, 0, 1, "test"));
    CHECK(halox_affinity_describe(after, sizeof after) == 0 && !strcmp(before, after));

    /* one rank: the device's allowed CPUs (here: all allowed ones, or a subset) */
    setenv("HALOX_CPU_AFFINITY", "gpu", 1);
    CHECK_OK(halox__bind_near_gpu(bus, 0, 1, "test"));
    CHECK(halox_affinity_describe(after, sizeof after) == 0);
    printf("device %s, allowed %s: one rank -> %s\n", bus, before, after);
    int all[256], one[256], n_all = halox__cpulist_parse(before, all, 256);
    int n_one = halox__cpulist_parse(after, one, 256);
    CHECK(n_one >= 1 && n_one <= n_all);
    CHECK(sched_setaffinity(0, sizeof orig, &orig) == 0);

    /* two ranks on the device: disjoint shares, together the one-rank set (when >= 2 CPUs) */
    if (n_one >= 2) {
        int a[256], b[256];
        CHECK_OK(halox__bind_near_gpu(bus, 0, 2, "test"));
        halox_affinity_describe(after, sizeof after);
        int na = halox__cpulist_parse(after, a, 256);
        CHECK(sched_setaffinity(0, sizeof orig, &orig) == 0);
        CHECK_OK(halox__bind_near_gpu(bus, 1, 2, "test"));
        halox_affinity_describe(after, sizeof after);
        int nb = halox__cpulist_parse(after, b, 256);
        CHECK(sched_setaffinity(0, sizeof orig, &orig) == 0);
        printf("two ranks: %d + %d CPUs of %d\n", na, nb, n_one);
        CHECK(na + nb == n_one && na >= 1 && nb >= 1);
        for (int i = 0; i < na; i++)
            for (int j = 0; j < nb; j++)
                CHECK(a[i] != b[j]);
    }

    /* errors that say what to do */
    setenv("HALOX_CPU_AFFINITY", "numa", 1);
    CHECK_STATUS(halox__bind_near_gpu(bus, 0, 1, "test"), HALOX_ERR_INVALID_ARG);
    CHECK(strstr(halox_last_error(), "use gpu") != NULL);
    setenv("HALOX_CPU_AFFINITY", "gpu", 1);
    CHECK_STATUS(halox__bind_near_gpu("ffff:ff:ff.7", 0, 1, "test"), HALOX_ERR_UNAVAILABLE);
    CHECK(strstr(halox_last_error(), "bind with the launcher") != NULL);
    CHECK(halox_affinity_describe(after, sizeof after) == 0 && !strcmp(before, after));
    unsetenv("HALOX_CPU_AFFINITY");
    TEST_DONE();
}
