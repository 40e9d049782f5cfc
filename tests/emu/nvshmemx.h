/* the host emulation: NVSHMEM extensions are in tests/emu/nvshmem.h */
#include "nvshmem.h"
