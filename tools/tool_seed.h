/* The --seed of every halox tool: a decimal integer from 0 to 2^64 - 1, parsed strictly. strtoull
 * alone takes "-1" (and " -1") as 2^64 - 1 and wraps nothing back to an error, so the first
 * character must be a digit and an out-of-range value is refused, never wrapped. */
#ifndef HALOX_TOOLS_TOOL_SEED_H
#define HALOX_TOOLS_TOOL_SEED_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The range as the tools' messages state it. */
#define TOOL_SEED_RANGE "an integer from 0 to 18446744073709551615"

/* 1 and *seed_p set when s is a seed; 0 (nothing set) when not. */
static inline int tool_parse_seed(const char *s, uint64_t *seed_p)
{
    if (!s || *s < '0' || *s > '9')
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > UINT64_MAX)
        return 0;
    *seed_p = (uint64_t)v;
    return 1;
}

#endif
