# What the install tests' drivers share (included by run.cmake and examples.cmake, cmake -P):
#   halox_install_require(VAR...): fail naming the first of the -D inputs that is not set
#   run(<what> COMMAND ... [OUTPUT_VARIABLE v]): run a command, echo it, fail with its output
#     when it fails
#   halox_install_into(<prefix>): wipe HALOX_WORK_DIR, install HALOX_BUILD_DIR into <prefix>
# Inputs (-D): HALOX_BUILD_DIR, HALOX_WORK_DIR, HALOX_BUILD_TYPE (may be empty).
cmake_minimum_required(VERSION 3.16)

function(halox_install_require)
  foreach(_v ${ARGN})
    if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
      message(FATAL_ERROR "install test: ${_v} is not set")
    endif()
  endforeach()
endfunction()

function(run what)
  cmake_parse_arguments(R "" "OUTPUT_VARIABLE" "COMMAND" ${ARGN})
  list(JOIN R_COMMAND " " _shown)
  message(STATUS "[${what}] ${_shown}")
  execute_process(COMMAND ${R_COMMAND}
                  RESULT_VARIABLE _rc
                  OUTPUT_VARIABLE _out
                  ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${_rc}):\n${_out}")
  endif()
  if(R_OUTPUT_VARIABLE)
    set(${R_OUTPUT_VARIABLE} "${_out}" PARENT_SCOPE)
  endif()
endfunction()

# --config for multi-config generators, nothing otherwise
set(HALOX_INSTALL_CONFIG_ARGS "")
if(HALOX_BUILD_TYPE)
  set(HALOX_INSTALL_CONFIG_ARGS --config "${HALOX_BUILD_TYPE}")
endif()

function(halox_install_into prefix)
  file(REMOVE_RECURSE "${HALOX_WORK_DIR}")
  file(MAKE_DIRECTORY "${HALOX_WORK_DIR}")
  run("install" COMMAND "${CMAKE_COMMAND}" --install "${HALOX_BUILD_DIR}"
                    --prefix "${prefix}" ${HALOX_INSTALL_CONFIG_ARGS})
endfunction()

# halox_install_configure(<source> <build> <prefix> [ARGS...]): configure the project <source>
# in <build> with the build's C compiler, generator and type (HALOX_C_COMPILER, HALOX_GENERATOR,
# HALOX_BUILD_TYPE) and ARGS, finding halox only in <prefix> (no package registries, no system
# copy first), and check that find_package(halox) took the package there.
function(halox_install_configure source build prefix)
  set(_args "")
  if(HALOX_GENERATOR)
    list(APPEND _args -G "${HALOX_GENERATOR}")
  endif()
  if(HALOX_BUILD_TYPE)
    list(APPEND _args "-DCMAKE_BUILD_TYPE=${HALOX_BUILD_TYPE}")
  endif()
  run("configure ${source}" COMMAND "${CMAKE_COMMAND}" -S "${source}" -B "${build}" ${_args}
      "-DCMAKE_C_COMPILER=${HALOX_C_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
      -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF ${ARGN})
  file(STRINGS "${build}/CMakeCache.txt" _dir REGEX "^halox_DIR:")
  string(REGEX REPLACE "^halox_DIR:[A-Z]*=" "" _dir "${_dir}")
  string(FIND "${_dir}" "${prefix}" _at)
  if(NOT _at EQUAL 0)
    message(FATAL_ERROR "install test: find_package(halox) found '${_dir}', not the installed "
                        "package under ${prefix}")
  endif()
endfunction()
