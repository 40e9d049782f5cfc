/** @file
 * libhalox, everything public in one include: the halo exchange of a domain-decomposed particle
 * code. A first program: examples/cpu_exchange.c; the headers by concern:
 *
 *   status.h       status codes, halox_last_error()
 *   geometry.h     the periodic box and the grid of ranks
 *   atoms.h        a rank's atoms on the host (home first, then halo)
 *   plan.h         the halo plan, the pair rule, the serial reference exchange
 *   transport.h    the transports of this build and what each can do
 *   topology.h     teams of thread ranks, the machine, the automatic choice of transport
 *   endpoint.h     a rank's endpoint: create, bind, exchange coordinates and forces, destroy
 *   build.h        plan builds and migration through an endpoint, on host or device arrays
 *   fields.h       per-atom fields beside the coordinates: forward and reverse exchanges
 *   collectives.h  reductions, gathers and a barrier over an endpoint
 *   gpu.h          GPU endpoints: their stream, device memory, CUDA graphs
 *   inline.h       the exchange inside the caller's kernels: the host side
 *   env.h          every environment variable halox reads
 *   file.h         output and input files opened safely
 *   features.h     what this build has (generated)
 *
 * Not included: inline_device.cuh, the device side of the in-kernel exchange, which a .cu file
 * includes itself; md.h and md_options.h, the API of the engine libhalox_md, a separate
 * library built on this one. */
#ifndef HALOX_HALOX_H
#define HALOX_HALOX_H

#include "halox/atoms.h"
#include "halox/build.h"
#include "halox/collectives.h"
#include "halox/endpoint.h"
#include "halox/env.h"
#include "halox/features.h"
#include "halox/fields.h"
#include "halox/file.h"
#include "halox/geometry.h"
#include "halox/gpu.h"
#include "halox/inline.h"
#include "halox/plan.h"
#include "halox/status.h"
#include "halox/topology.h"
#include "halox/transport.h"

#endif
