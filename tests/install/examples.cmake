# Driver of the `install_examples` test (cmake -P): examples/ built as a user builds them, from
# the INSTALLED package. Inputs (-D), besides common.cmake's:
#   HALOX_EXAMPLES_DIR     the examples folder (its CMakeLists.txt and Makefile)
#   HALOX_C_COMPILER       C compiler of the build (the examples' too)
#   HALOX_GENERATOR        CMake generator of the build
#   HALOX_MPIEXEC          the command that starts @PROGRAM@ on @NP@ processes, '|' between words
#   HALOX_CUDA_COMPILER    the build's nvcc when the installed halox has the NVSHMEM transports
#                          (gpu_inline must then be built; it is never run: CI has no GPU)
#   HALOX_CUDA_ARCHITECTURES  the build's CUDA architectures
# Steps: install into HALOX_WORK_DIR/prefix; configure examples/ with find_package(halox) and
# build the examples, warnings as errors; run cpu_exchange under MPI on 2 processes (it checks
# its halo against the reference exchange); run manybody on 1 process, then on 2 and 4 with the
# first run's output as its reference (every printed energy within a relative 1e-12, the energy
# drift bounded: the program judges both); build the CPU examples again with examples/Makefile
# (pkg-config) and run cpu_exchange from there too.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
halox_install_require(HALOX_BUILD_DIR HALOX_WORK_DIR HALOX_EXAMPLES_DIR HALOX_C_COMPILER
                      HALOX_MPIEXEC)

set(_prefix "${HALOX_WORK_DIR}/prefix")
set(_build "${HALOX_WORK_DIR}/examples-cmake")
halox_install_into("${_prefix}")

# mpiexec_command(VAR NP PROGRAM): the command that starts PROGRAM on NP processes
function(mpiexec_command var np program)
  string(REPLACE "|" ";" _cmd "${HALOX_MPIEXEC}")
  string(REPLACE "@NP@" "${np}" _cmd "${_cmd}")
  string(REPLACE "@PROGRAM@" "${program}" _cmd "${_cmd}")
  set(${var} ${_cmd} PARENT_SCOPE)
endfunction()

# cpu_exchange under MPI on 2 processes: its verdict line, and exit status 0
function(run_cpu_exchange how exe)
  mpiexec_command(_cmd 2 "${exe}")
  run("cpu_exchange (${how}) on 2 processes" COMMAND ${_cmd} OUTPUT_VARIABLE _out)
  message(STATUS "cpu_exchange (${how}) says:\n${_out}")
  if(NOT _out MATCHES "cpu_exchange: 2 ranks, grid 2x1x1: halo and forces match the reference")
    message(FATAL_ERROR "install test: cpu_exchange (${how}) did not report a matching halo")
  endif()
endfunction()

# manybody on 1 process, whose output is the reference of the runs on 2 and 4: each of them
# compares every printed step (potential, kinetic, total energy) with it and fails beyond a
# relative 1e-12; every run also fails when its total energy drifts (a wrong force)
function(run_manybody exe)
  set(_ref "${HALOX_WORK_DIR}/manybody-np1.txt")
  foreach(np 1 2 4)
    mpiexec_command(_cmd ${np} "${exe}")
    set(_args --steps 100)
    if(np GREATER 1)
      list(APPEND _args --reference "${_ref}" --tolerance 1e-12)
    endif()
    run("manybody on ${np} process(es)" COMMAND ${_cmd} ${_args} OUTPUT_VARIABLE _out)
    message(STATUS "manybody on ${np} process(es) says:\n${_out}")
    if(NOT _out MATCHES "manybody: passed" OR NOT _out MATCHES "step 100 pe ")
      message(FATAL_ERROR "install test: manybody on ${np} process(es) did not pass")
    endif()
    if(np GREATER 1 AND NOT _out MATCHES "largest relative difference from")
      message(FATAL_ERROR "install test: manybody on ${np} processes compared nothing")
    endif()
    if(np EQUAL 1)
      file(WRITE "${_ref}" "${_out}")
    endif()
  endforeach()
endfunction()

# ---- 1. find_package: every example ----------------------------------------------------------
set(_cuda_args "")
if(HALOX_CUDA_COMPILER)
  set(_cuda_args "-DCMAKE_CUDA_COMPILER=${HALOX_CUDA_COMPILER}"
                 "-DCMAKE_CUDA_ARCHITECTURES=${HALOX_CUDA_ARCHITECTURES}"
                 "-DCMAKE_CUDA_FLAGS=-Werror=all-warnings")
endif()
halox_install_configure("${HALOX_EXAMPLES_DIR}" "${_build}" "${_prefix}"
                        "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror" ${_cuda_args})
run("build examples" COMMAND "${CMAKE_COMMAND}" --build "${_build}" ${HALOX_INSTALL_CONFIG_ARGS})
file(GLOB_RECURSE _cpu "${_build}/cpu_exchange")
file(GLOB_RECURSE _gpu "${_build}/gpu_inline")
file(GLOB_RECURSE _manybody "${_build}/manybody")
if(NOT _cpu OR NOT _manybody)
  message(FATAL_ERROR "install test: cpu_exchange or manybody was not built")
endif()
if(HALOX_CUDA_COMPILER AND NOT _gpu)
  message(FATAL_ERROR "install test: gpu_inline was not built, though halox has NVSHMEM")
endif()
list(GET _cpu 0 _cpu)
run_cpu_exchange("find_package" "${_cpu}")
list(GET _manybody 0 _manybody)
run_manybody("${_manybody}")

# ---- 2. pkg-config: the CPU examples again -------------------------------------------------------
find_program(_pkg_config NAMES pkg-config pkgconf)
if(NOT _pkg_config)
  message("HALOX_TEST_SKIPPED: no pkg-config on this machine, the pkg-config build did not run")
  return()
endif()
file(GLOB_RECURSE _pcs "${_prefix}/*/halox.pc")
list(GET _pcs 0 _pc)
get_filename_component(_pcdir "${_pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${_pcdir}")
set(_pcbuild "${HALOX_WORK_DIR}/examples-pkg-config")
file(MAKE_DIRECTORY "${_pcbuild}")
find_program(_make NAMES make gmake)
if(_make)
  run("make -f examples/Makefile" COMMAND "${_make}" -C "${_pcbuild}"
      -f "${HALOX_EXAMPLES_DIR}/Makefile" "CC=${HALOX_C_COMPILER}" "PKG_CONFIG=${_pkg_config}"
      "CFLAGS=-std=c11 -O2 -Wall -Wextra -Werror")
else() # the Makefile's one command, as its comment gives it
  run("pkg-config" COMMAND "${_pkg_config}" --cflags --libs halox OUTPUT_VARIABLE _flags)
  separate_arguments(_flags UNIX_COMMAND "${_flags}")
  run("cc (pkg-config)" COMMAND "${HALOX_C_COMPILER}" -std=c11 -O2 -Wall -Wextra -Werror
      "${HALOX_EXAMPLES_DIR}/cpu_exchange.c" -o "${_pcbuild}/cpu_exchange" ${_flags})
  run("cc (pkg-config)" COMMAND "${HALOX_C_COMPILER}" -std=c11 -O2 -Wall -Wextra -Werror
      "${HALOX_EXAMPLES_DIR}/manybody.c" -o "${_pcbuild}/manybody" ${_flags} -lm)
endif()
if(NOT EXISTS "${_pcbuild}/manybody")
  message(FATAL_ERROR "install test: manybody was not built with pkg-config")
endif()
# a shared libhalox is found through LD_LIBRARY_PATH: pkg-config gives no run path
file(GLOB_RECURSE _libs "${_prefix}/*/libhalox.a" "${_prefix}/*/libhalox.so")
list(GET _libs 0 _lib)
get_filename_component(_libdir "${_lib}" DIRECTORY)
set(ENV{LD_LIBRARY_PATH} "${_libdir}:$ENV{LD_LIBRARY_PATH}")
run_cpu_exchange("pkg-config" "${_pcbuild}/cpu_exchange")

message(STATUS "install_examples passed: built from the installed package with find_package "
               "and pkg-config; cpu_exchange matches the reference on 2 processes; manybody's "
               "energies on 1, 2 and 4 processes agree")
