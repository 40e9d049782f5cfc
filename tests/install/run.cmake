# Driver of the `install` test (cmake -P). Inputs (-D):
#   HALOX_BUILD_DIR     the build tree to install
#   HALOX_CONSUMER_DIR  this folder (CMakeLists.txt + main.c of the consumer)
#   HALOX_WORK_DIR      scratch folder, wiped first
#   HALOX_C_COMPILER    C compiler of the build (used for the consumer too)
#   HALOX_GENERATOR     CMake generator of the build
#   HALOX_BUILD_TYPE    configuration (may be empty)
# Steps: install into HALOX_WORK_DIR/prefix; check the installed files; build and run the
# consumer with find_package(halox); build and run it with pkg-config.
cmake_minimum_required(VERSION 3.16)

foreach(_v HALOX_BUILD_DIR HALOX_CONSUMER_DIR HALOX_WORK_DIR HALOX_C_COMPILER)
  if(NOT DEFINED ${_v} OR "${${_v}}" STREQUAL "")
    message(FATAL_ERROR "install test: ${_v} is not set")
  endif()
endforeach()

set(_prefix "${HALOX_WORK_DIR}/prefix")
set(_consumer_build "${HALOX_WORK_DIR}/consumer-cmake")

# run(<what> COMMAND ...): run a command, echo it, fail with its output when it fails.
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

file(REMOVE_RECURSE "${HALOX_WORK_DIR}")
file(MAKE_DIRECTORY "${HALOX_WORK_DIR}")

# ---- 1. install ------------------------------------------------------------------------------
set(_config_args "")
if(HALOX_BUILD_TYPE)
  set(_config_args --config "${HALOX_BUILD_TYPE}")
endif()
run("install" COMMAND "${CMAKE_COMMAND}" --install "${HALOX_BUILD_DIR}" --prefix "${_prefix}"
              ${_config_args})

# ---- 2. what was installed -------------------------------------------------------------------
foreach(_f include/halox/status.h include/halox/halox.h include/halox/endpoint.h include/halox/features.h)
  if(NOT EXISTS "${_prefix}/${_f}")
    message(FATAL_ERROR "install test: ${_f} was not installed")
  endif()
endforeach()
file(GLOB_RECURSE _libs "${_prefix}/*/libhalox.a" "${_prefix}/*/libhalox.so")
file(GLOB_RECURSE _configs "${_prefix}/*/haloxConfig.cmake")
file(GLOB_RECURSE _pcs "${_prefix}/*/halox.pc")
if(NOT _libs)
  message(FATAL_ERROR "install test: libhalox was not installed")
endif()
if(NOT _configs)
  message(FATAL_ERROR "install test: haloxConfig.cmake was not installed")
endif()
if(NOT _pcs)
  message(FATAL_ERROR "install test: halox.pc was not installed")
endif()
foreach(_tool halox-check halox-md halox-bench)
  if(EXISTS "${HALOX_BUILD_DIR}/tools/${_tool}" AND NOT EXISTS "${_prefix}/bin/${_tool}")
    message(FATAL_ERROR "install test: ${_tool} was built but not installed")
  endif()
endforeach()
file(GLOB _bins RELATIVE "${_prefix}/bin" "${_prefix}/bin/*")
message(STATUS "installed tools: ${_bins}")

# ---- 3. consumer with find_package(halox) ----------------------------------------------------
set(_gen_args "")
if(HALOX_GENERATOR)
  set(_gen_args -G "${HALOX_GENERATOR}")
endif()
set(_type_args "")
if(HALOX_BUILD_TYPE)
  set(_type_args "-DCMAKE_BUILD_TYPE=${HALOX_BUILD_TYPE}")
endif()
# Only the temporary prefix may provide halox: no package registries, no system copy first.
run("configure consumer" COMMAND "${CMAKE_COMMAND}" -S "${HALOX_CONSUMER_DIR}"
    -B "${_consumer_build}" ${_gen_args} ${_type_args}
    "-DCMAKE_C_COMPILER=${HALOX_C_COMPILER}"
    "-DCMAKE_PREFIX_PATH=${_prefix}"
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
file(STRINGS "${_consumer_build}/CMakeCache.txt" _dir REGEX "^halox_DIR:")
string(REGEX REPLACE "^halox_DIR:[A-Z]*=" "" _dir "${_dir}")
string(FIND "${_dir}" "${_prefix}" _at)
if(NOT _at EQUAL 0)
  message(FATAL_ERROR "install test: find_package(halox) found '${_dir}', not the installed "
                      "package under ${_prefix}")
endif()
run("build consumer" COMMAND "${CMAKE_COMMAND}" --build "${_consumer_build}" ${_config_args})
file(GLOB_RECURSE _exe "${_consumer_build}/halox_consumer" "${_consumer_build}/halox_consumer.exe")
if(NOT _exe)
  message(FATAL_ERROR "install test: the consumer was not built")
endif()
list(GET _exe 0 _exe)
run("run consumer (find_package)" COMMAND "${_exe}" OUTPUT_VARIABLE _out)
message(STATUS "consumer (find_package) says:\n${_out}")
if(NOT _out MATCHES "HALOX_OK = \"success\"" OR NOT _out MATCHES "transports: [a-z]")
  message(FATAL_ERROR "install test: unexpected output of the find_package consumer")
endif()

# ---- 4. consumer with pkg-config -------------------------------------------------------------
find_program(_pkg_config NAMES pkg-config pkgconf)
if(NOT _pkg_config)
  message(STATUS "find_package consumer passed")
  message("HALOX_TEST_SKIPPED: no pkg-config on this machine, the pkg-config half did not run")
  return()
endif()
list(GET _pcs 0 _pc)
get_filename_component(_pcdir "${_pc}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${_pcdir}")
run("pkg-config" COMMAND "${_pkg_config}" --cflags --libs halox OUTPUT_VARIABLE _flags)
string(STRIP "${_flags}" _flags)
message(STATUS "pkg-config --cflags --libs halox: ${_flags}")
separate_arguments(_flags UNIX_COMMAND "${_flags}")
set(_pc_exe "${HALOX_WORK_DIR}/halox_consumer_pc")
# The same as: cc main.c -o halox_consumer_pc $(pkg-config --cflags --libs halox)
run("build consumer (pkg-config)" COMMAND "${HALOX_C_COMPILER}" "${HALOX_CONSUMER_DIR}/main.c"
    -o "${_pc_exe}" ${_flags})
# A shared libhalox (BUILD_SHARED_LIBS=ON) is found at run time through LD_LIBRARY_PATH, as
# pkg-config gives no run path.
list(GET _libs 0 _lib)
get_filename_component(_libdir "${_lib}" DIRECTORY)
set(ENV{LD_LIBRARY_PATH} "${_libdir}:$ENV{LD_LIBRARY_PATH}")
run("run consumer (pkg-config)" COMMAND "${_pc_exe}" OUTPUT_VARIABLE _out)
message(STATUS "consumer (pkg-config) says:\n${_out}")
if(NOT _out MATCHES "HALOX_OK = \"success\"" OR NOT _out MATCHES "transports: [a-z]")
  message(FATAL_ERROR "install test: unexpected output of the pkg-config consumer")
endif()

# ---- 5. every installed header stands alone (C11, and C++ where a C++ compiler exists) ------
# A public header that needs another include first, or reaches into src/, fails here.
run("pkg-config --cflags" COMMAND "${_pkg_config}" --cflags halox OUTPUT_VARIABLE _cflags)
string(STRIP "${_cflags}" _cflags)
separate_arguments(_cflags UNIX_COMMAND "${_cflags}")
file(GLOB _headers RELATIVE "${_prefix}/include" "${_prefix}/include/halox/*.h")
find_program(_cxx NAMES c++ g++ clang++)
foreach(_h IN LISTS _headers)
  string(MAKE_C_IDENTIFIER "${_h}" _id)
  set(_src "${HALOX_WORK_DIR}/header_${_id}.c")
  file(WRITE "${_src}" "#include <${_h}>\n#include <${_h}>\nint halox_header_check_${_id};\n")
  run("header ${_h} (C11)" COMMAND "${HALOX_C_COMPILER}" -std=c11 -Wall -Wextra -Wpedantic
      -Werror -fsyntax-only ${_cflags} "${_src}")
  if(_cxx)
    run("header ${_h} (C++)" COMMAND "${_cxx}" -x c++ -Wall -Wextra -Werror -fsyntax-only
        ${_cflags} "${_src}")
  endif()
endforeach()
list(LENGTH _headers _nh)
message(STATUS "${_nh} installed headers compile on their own")

message(STATUS "install test passed: find_package(halox) and pkg-config consumers both run")
