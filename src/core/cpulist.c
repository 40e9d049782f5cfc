/* Linux CPU lists ("0-15,32-47", as in /sys/.../local_cpulist) and their sharing among the ranks
 * that use one GPU. Pure parsing: the transports do the binding (sched_setaffinity). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cpulist.h"

int halox__cpulist_parse(const char *s, int *cpus, int max)
{
    int n = 0;
    if (!s)
        return -1;
    while (*s && isspace((unsigned char)*s))
        s++;
    while (*s && *s != '\n') {
        char *end = NULL;
        long a = strtol(s, &end, 10), b;
        if (end == s || a < 0)
            return -1;
        s = end;
        b = a;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            if (end == s + 1 || b < a)
                return -1;
            s = end;
        }
        for (long c = a; c <= b; c++) {
            if (n == max)
                return -1;
            cpus[n++] = (int)c;
        }
        if (*s == ',')
            s++;
        else if (*s && *s != '\n' && !isspace((unsigned char)*s))
            return -1;
        while (*s && isspace((unsigned char)*s) && *s != '\n')
            s++;
    }
    return n;
}

void halox__cpulist_share(int n, int index, int count, int *lo, int *hi)
{
    if (n <= 0 || count <= 0 || index < 0 || index >= count) {
        *lo = *hi = 0;
        return;
    }
    if (count >= n) { /* more ranks than cores: one core each, round robin */
        *lo = index % n;
        *hi = *lo + 1;
        return;
    }
    /* contiguous shares, the first n % count ranks one core more */
    int base = n / count, extra = n % count;
    *lo = index * base + (index < extra ? index : extra);
    *hi = *lo + base + (index < extra);
}

int halox__cpulist_format(const int *cpus, int n, char *buf, size_t len)
{
    size_t used = 0;
    if (len)
        buf[0] = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && cpus[j + 1] == cpus[j] + 1)
            j++;
        int k = j > i
                    ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", cpus[i], cpus[j])
                    : snprintf(buf + used, len - used, "%s%d", used ? "," : "", cpus[i]);
        if (k < 0 || (size_t)k >= len - used)
            return -1;
        used += (size_t)k;
        i = j + 1;
    }
    return 0;
}
