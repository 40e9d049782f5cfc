/* Internal: Linux CPU lists (src/core/cpulist.c). */
#ifndef HALOX_CORE_CPULIST_H
#define HALOX_CORE_CPULIST_H

#include <stddef.h>

/* parse: "0-3,8" -> {0,1,2,3,8}; returns the count, or -1
 * on a syntax error or more than max CPUs. share: rank `index` of `count` sharing n CPUs gets
 * positions [lo, hi) (contiguous, nearly equal; round robin when count > n). format: the list
 * back in the short form; -1 when buf is too small. */
int halox__cpulist_parse(const char *s, int *cpus, int max);
void halox__cpulist_share(int n, int index, int count, int *lo, int *hi);
int halox__cpulist_format(const int *cpus, int n, char *buf, size_t len);

#endif
