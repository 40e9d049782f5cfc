/* halox-check's command line: its options, their checks and the launch rules (under an MPI
 * launcher the ranks are the processes). */
#ifndef HALOX_TOOLS_CHECK_ARGS_H
#define HALOX_TOOLS_CHECK_ARGS_H

#include <stdint.h>

#include "check/checksys.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/plan.h"
#include "halox/topology.h"
#include "halox/transport.h"

typedef struct {
    halox_plan_params_t prm;
    int n;
    chk_dist_t dist;
    uint64_t seed;
    halox_real_t real;
    int stride;
    int steps;
    double timeout;
    const char *transport;
    int verbose;
    int set_grid, set_transport, transport_from_env; /* given, and where the transport came from */
    halox_transport_caps_t caps;                     /* of `transport` */
} chk_opts_t;

/* Returns 0 to run, 1 to exit 0 (help, version), 2 after a usage error (printed). */
int chk_parse_args(int argc, char **argv, chk_opts_t *o);

#endif
