/* the host emulation's stand-in for the CUDA runtime header (tests/emu): the API, and for C++
 * (the kernels' sources) the launch machinery */
#include "cuda_runtime_api.h"
#ifdef __cplusplus
#include "halox_emu.h"
#endif
