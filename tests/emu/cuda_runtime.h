/* the host emulation's stand-in for the CUDA runtime header (tests/emu/halox_emu.h) */
#include "halox_emu.h"
