#!/usr/bin/env bash
# The main job of halox: one command, works on a fresh Debian 12 machine.
#
#   ./scripts/run.sh                 build (if needed) and run the default job
#   ./scripts/run.sh ARGS...         the same tool with your own arguments instead
#
# Builds the tool in build/ (the same folder as ./scripts/test.sh's main suite) and runs
#   build/tools/halox-md --preset lammps-lj --grid 2x2x2 --transport threads
# (LAMMPS' bench/in.lj on 8 thread ranks: no GPU, no MPI needed). HALOX_RUN_TOOL=halox-check
# runs the checking tool instead. As root, missing Debian packages are installed first.
set -euo pipefail

# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$HALOX_ROOT"

TOOL="${HALOX_RUN_TOOL:-halox-md}"
if [ "$TOOL" = halox-md ]; then
    DEFAULT_ARGS=(--preset lammps-lj --grid 2x2x2 --transport threads)
else
    DEFAULT_ARGS=(--grid 2x2x2 --transport threads)
fi

halox_install_deps
halox_mpi_env
command -v cmake >/dev/null 2>&1 || halox_die "cmake is missing (apt-get install cmake)"

if [ ! -f build/CMakeCache.txt ]; then
    halox_log "configuring build/"
    halox_configure build -DCMAKE_BUILD_TYPE="${HALOX_BUILD_TYPE:-RelWithDebInfo}" \
        "$(halox_mpi_option)" >build-configure.log 2>&1 ||
        { cat build-configure.log >&2; halox_die "cmake configure failed (log above)"; }
    rm -f build-configure.log
fi
halox_log "building $TOOL in build/"
halox_build build "$TOOL" >/dev/null ||
    { halox_build build "$TOOL" >&2 || true; halox_die "building $TOOL failed"; }

if [ "$#" -eq 0 ]; then
    set -- "${DEFAULT_ARGS[@]}"
fi
halox_log "build/tools/$TOOL $*"
exec "build/tools/$TOOL" "$@"
