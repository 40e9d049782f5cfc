/* Transport labels of halox-bench: a transport's name, optionally +put, +tma, +floor or +null (the
 * NVSHMEM paths), and what the transport behind a label can do. */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"

void bench_base_name(const char *label, char *out, size_t cap)
{
    snprintf(out, cap, "%s", label);
    out[strcspn(out, "+")] = '\0';
}

int bench_label_floor(const char *label)
{
    const char *plus = strchr(label, '+');
    return plus && (!strcmp(plus, "+floor") || !strcmp(plus, "+null"));
}

halox_transport_caps_t bench_label_caps(const char *label)
{
    char base[64];
    bench_base_name(label, base, sizeof base);
    halox_transport_caps_t caps;
    (void)halox_transport_caps(base, &caps); /* zero when unknown */
    return caps;
}
