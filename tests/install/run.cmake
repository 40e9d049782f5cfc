# Driver of the `install` test (cmake -P). Inputs (-D):
#   HALOX_BUILD_DIR     the build tree to install
#   HALOX_CONSUMER_DIR  this folder (CMakeLists.txt + main.c of the consumer)
#   HALOX_WORK_DIR      scratch folder, wiped first
#   HALOX_C_COMPILER    C compiler of the build (used for the consumer too)
#   HALOX_GENERATOR     CMake generator of the build
#   HALOX_BUILD_TYPE    configuration (may be empty)
# Steps: install into HALOX_WORK_DIR/prefix; check the installed files; build and run the
# consumer with find_package(halox); build and run it with pkg-config.
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
halox_install_require(HALOX_BUILD_DIR HALOX_CONSUMER_DIR HALOX_WORK_DIR HALOX_C_COMPILER)

set(_prefix "${HALOX_WORK_DIR}/prefix")
set(_consumer_build "${HALOX_WORK_DIR}/consumer-cmake")

# ---- 1. install ------------------------------------------------------------------------------
halox_install_into("${_prefix}")
set(_config_args ${HALOX_INSTALL_CONFIG_ARGS})

# ---- 2. what was installed -------------------------------------------------------------------
foreach(_f include/halox/status.h include/halox/halox.h include/halox/endpoint.h
           include/halox/features.h)
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
halox_install_configure("${HALOX_CONSUMER_DIR}" "${_consumer_build}" "${_prefix}")
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
