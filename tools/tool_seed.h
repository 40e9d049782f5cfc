/* The --seed of every halox tool: the library's strict parse (halox_parse_seed), so that every
 * tool takes and refuses the same values and says the same range. */
#ifndef HALOX_TOOLS_TOOL_SEED_H
#define HALOX_TOOLS_TOOL_SEED_H

#include <stdint.h>

#include "halox/md_options.h"

/* The range as the tools' messages state it. */
#define TOOL_SEED_RANGE HALOX_SEED_RANGE

/* 1 and *seed_p set when s is a seed; 0 (nothing set) when not. */
static inline int tool_parse_seed(const char *s, uint64_t *seed_p)
{
    return halox_parse_seed(s, seed_p);
}

#endif
