/* The emulated GPU transport of tests/emu/emu_transport.c. */
#ifndef HALOX_TESTS_EMU_TRANSPORT_H
#define HALOX_TESTS_EMU_TRANSPORT_H

#include "halox/build.h"
#include "halox/endpoint.h"
#include "halox/topology.h"

#ifdef __cplusplus
extern "C" {
#endif
/* an endpoint whose plan builds and migrations run the GPU transports' device stores on the
 * host; args as for `threads` (team, rank) */
halox_status_t emu_gpu_create(const halox_comm_args_t *args, halox_comm_t **comm_p);
#ifdef __cplusplus
}
#endif
#endif
