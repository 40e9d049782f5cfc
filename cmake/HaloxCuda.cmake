# CUDA, NCCL and NVSHMEM detection for halox (included from the top-level CMakeLists.txt).
#
#   HALOX_ENABLE_CUDA     AUTO / ON / OFF   nvcc (check_language), the CUDA runtime
#   HALOX_ENABLE_NVSHMEM  AUTO / ON / OFF   NVSHMEM from NVSHMEM_HOME or the python wheel
#                                           nvidia-nvshmem-cu13 (needs CUDA)
#   NCCL is used whenever CUDA is on and nccl.h + libnccl are found (NCCL_HOME, the CUDA toolkit's
#   folders, the system's); HALOX_ENABLE_NCCL=OFF skips it.
#
# Sets HALOX_HAVE_CUDA, HALOX_HAVE_NCCL, HALOX_HAVE_NVSHMEM and, when found:
#   HALOX_CUDA_LINK        what libhalox links for the CUDA runtime (the shared cudart)
#   HALOX_NCCL_LIBRARY, HALOX_NCCL_INCLUDE_DIR, HALOX_NCCL_VERSION
#   halox::nvshmem_host, halox::nvshmem_device   imported targets (NVSHMEM_LIB_DIR, _INCLUDE_DIR)
#
# GPU code is built for sm_90 (Hopper: H100/H200) only, unless CMAKE_CUDA_ARCHITECTURES is set:
# one architecture keeps the CUDA compile time small on 2-core CI machines.

set(HALOX_HAVE_CUDA OFF)
set(HALOX_HAVE_NCCL OFF)
set(HALOX_HAVE_NVSHMEM OFF)
set(HALOX_ENABLE_NCCL AUTO CACHE STRING "Build the nccl transport when CUDA is on (AUTO/ON/OFF)")
set(NVSHMEM_HOME "$ENV{NVSHMEM_HOME}" CACHE PATH
    "NVSHMEM installation (include/, lib/); empty: the python wheel nvidia-nvshmem-cu13")
set(NCCL_HOME "$ENV{NCCL_HOME}" CACHE PATH "NCCL installation (include/, lib/); empty: search")

foreach(_opt HALOX_ENABLE_CUDA HALOX_ENABLE_NVSHMEM HALOX_ENABLE_NCCL)
  if(NOT ${_opt} MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${_opt}=${${_opt}}: use AUTO, ON or OFF")
  endif()
endforeach()

# ---- CUDA ------------------------------------------------------------------------------------
set(_halox_cuda_why "HALOX_ENABLE_CUDA=OFF")
if(NOT HALOX_ENABLE_CUDA STREQUAL "OFF")
  # nvcc off the PATH but in the usual place (CI images): tell check_language where it is
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND
     EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_halox_nvcc_on_path nvcc)
    if(NOT _halox_nvcc_on_path)
      set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND)
      set(HALOX_HAVE_CUDA ON)
    else()
      set(_halox_cuda_why "nvcc found (${CMAKE_CUDA_COMPILER}) but not the CUDA toolkit's libraries")
    endif()
  else()
    set(_halox_cuda_why "no CUDA compiler (nvcc) found: put it on PATH or set CUDACXX")
  endif()
  if(NOT HALOX_HAVE_CUDA AND HALOX_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "HALOX_ENABLE_CUDA=ON but CUDA is not usable: ${_halox_cuda_why}")
  endif()
endif()

if(HALOX_HAVE_CUDA)
  # one CUDA runtime per process, shared: the C transports call it too, and MPS/NCCL/NVSHMEM
  # all expect a single runtime instance
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  # What libhalox links: the shared cudart by target in the build tree, by path once installed
  # (so the installed package needs no find_package(CUDAToolkit) of its own).
  set(HALOX_CUDA_LINK $<BUILD_INTERFACE:CUDA::cudart>)
  if(CUDA_cudart_LIBRARY)
    list(APPEND HALOX_CUDA_LINK "$<INSTALL_INTERFACE:${CUDA_cudart_LIBRARY}>")
  endif()
  message(STATUS "halox CUDA: nvcc ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}), "
                 "toolkit ${CUDAToolkit_VERSION} at ${CUDAToolkit_LIBRARY_DIR}, architectures "
                 "${CMAKE_CUDA_ARCHITECTURES}, runtime ${CUDA_cudart_LIBRARY}")
else()
  message(STATUS "halox CUDA: off (${_halox_cuda_why})")
endif()

# ---- NCCL ------------------------------------------------------------------------------------
if(HALOX_HAVE_CUDA AND NOT HALOX_ENABLE_NCCL STREQUAL "OFF")
  set(_halox_nccl_hints ${NCCL_HOME} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR}
      /usr/local/cuda)
  find_path(HALOX_NCCL_INCLUDE_DIR nccl.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} PATHS ${_halox_nccl_hints} PATH_SUFFIXES include)
  find_library(HALOX_NCCL_LIBRARY NAMES nccl
               HINTS ${CUDAToolkit_LIBRARY_DIR} PATHS ${_halox_nccl_hints}
               PATH_SUFFIXES lib64 lib lib/x86_64-linux-gnu)
  if(HALOX_NCCL_INCLUDE_DIR AND HALOX_NCCL_LIBRARY)
    file(STRINGS ${HALOX_NCCL_INCLUDE_DIR}/nccl.h _v REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*" "\\1" _ma "${_v}")
    string(REGEX REPLACE ".*NCCL_MINOR ([0-9]+).*" "\\1" _mi "${_v}")
    string(REGEX REPLACE ".*NCCL_PATCH ([0-9]+).*" "\\1" _pa "${_v}")
    set(HALOX_NCCL_VERSION "${_ma}.${_mi}.${_pa}")
    set(HALOX_HAVE_NCCL ON)
    message(STATUS "halox NCCL: ${HALOX_NCCL_VERSION} (${HALOX_NCCL_LIBRARY})")
  else()
    message(STATUS "halox NCCL: not found (nccl.h: ${HALOX_NCCL_INCLUDE_DIR}, libnccl: "
                   "${HALOX_NCCL_LIBRARY}); set NCCL_HOME; the nccl transport is left out")
  endif()
  if(NOT HALOX_HAVE_NCCL AND HALOX_ENABLE_NCCL STREQUAL "ON")
    message(FATAL_ERROR "HALOX_ENABLE_NCCL=ON but nccl.h/libnccl were not found: set NCCL_HOME")
  endif()
elseif(NOT HALOX_HAVE_CUDA)
  message(STATUS "halox NCCL: off (needs CUDA)")
endif()

# What a static libhalox needs at link time from these, for halox.pc (cmake/HaloxInstall.cmake)
set(HALOX_PC_EXTRA_LIBS "")
if(HALOX_HAVE_CUDA AND CUDA_cudart_LIBRARY)
  get_filename_component(_d "${CUDA_cudart_LIBRARY}" DIRECTORY)
  set(HALOX_PC_EXTRA_LIBS "-L${_d} -Wl,-rpath,${_d} -lcudart")
  if(HALOX_HAVE_NCCL AND HALOX_HAVE_MPI)
    get_filename_component(_d "${HALOX_NCCL_LIBRARY}" DIRECTORY)
    string(APPEND HALOX_PC_EXTRA_LIBS " -L${_d} -Wl,-rpath,${_d} -lnccl")
  endif()
endif()

# ---- NVSHMEM ---------------------------------------------------------------------------------
# Found from NVSHMEM_HOME, else from the python wheel nvidia-nvshmem-cu13, whose lib/ holds
# libnvshmem_host.so.3 without an unversioned name: the build folder gets the links that
# `-lnvshmem_host -lnvshmem_device` need (see shared/design/gpu-machines.md).
set(_halox_nvshmem_why "HALOX_ENABLE_NVSHMEM=OFF")
if(NOT HALOX_ENABLE_NVSHMEM STREQUAL "OFF")
  if(NOT HALOX_HAVE_CUDA)
    set(_halox_nvshmem_why "needs CUDA")
  else()
    set(_root "")
    set(_from "")
    if(NVSHMEM_HOME)
      set(_root "${NVSHMEM_HOME}")
      set(_from "NVSHMEM_HOME")
    else()
      find_program(HALOX_PYTHON3 NAMES python3 python)
      if(HALOX_PYTHON3)
        execute_process(
          COMMAND ${HALOX_PYTHON3} -c
                  "import nvidia.nvshmem as m; print(list(m.__path__)[0])"
          OUTPUT_VARIABLE _root OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
          RESULT_VARIABLE _rc TIMEOUT 60)
        if(NOT _rc EQUAL 0)
          set(_root "")
        endif()
        set(_from "python wheel nvidia-nvshmem-cu13 of ${HALOX_PYTHON3}")
      endif()
    endif()
    if(NOT _root)
      # one string: two quoted arguments would make a list, printed with a ';' between them
      string(CONCAT _halox_nvshmem_why "not found: set NVSHMEM_HOME or `python3 -m pip install "
                    "nvidia-nvshmem-cu13`")
    else()
      find_path(NVSHMEM_INCLUDE_DIR nvshmem.h PATHS ${_root}/include NO_DEFAULT_PATH)
      file(GLOB _host ${_root}/lib/libnvshmem_host.so ${_root}/lib/libnvshmem_host.so.*)
      set(_dev ${_root}/lib/libnvshmem_device.a)
      if(NVSHMEM_INCLUDE_DIR AND _host AND EXISTS ${_dev})
        list(SORT _host)
        list(GET _host 0 _host) # libnvshmem_host.so, else the .so.N
        get_filename_component(_host "${_host}" REALPATH)
        set(NVSHMEM_LIB_DIR ${_root}/lib CACHE INTERNAL "")
        set(HALOX_NVSHMEM_HOST_LIBRARY ${_host} CACHE INTERNAL "")
        # unversioned names in the build folder, for tools that link with -l
        set(_links ${PROJECT_BINARY_DIR}/nvshmem-lib)
        file(MAKE_DIRECTORY ${_links})
        file(CREATE_LINK ${_host} ${_links}/libnvshmem_host.so SYMBOLIC)
        file(CREATE_LINK ${_dev} ${_links}/libnvshmem_device.a SYMBOLIC)
        set(NVSHMEM_LINK_DIR ${_links} CACHE INTERNAL "")
        if(NOT TARGET halox::nvshmem_host)
          add_library(halox::nvshmem_host SHARED IMPORTED)
          set_target_properties(halox::nvshmem_host PROPERTIES
              IMPORTED_LOCATION ${_host}
              INTERFACE_INCLUDE_DIRECTORIES ${NVSHMEM_INCLUDE_DIR})
          # NVSHMEM's host library loads the driver (libcuda) itself at run time. Programs must
          # not link libcuda directly (not even the stub): they would then fail to start, rather
          # than skip, on machines without a driver, such as CI's.
          target_link_libraries(halox::nvshmem_host INTERFACE CUDA::cudart)
          add_library(halox::nvshmem_device STATIC IMPORTED)
          set_target_properties(halox::nvshmem_device PROPERTIES
              IMPORTED_LOCATION ${_links}/libnvshmem_device.a
              INTERFACE_INCLUDE_DIRECTORIES ${NVSHMEM_INCLUDE_DIR})
        endif()
        file(STRINGS ${NVSHMEM_INCLUDE_DIR}/non_abi/nvshmem_version.h _v
             REGEX "^#define NVSHMEM_VENDOR_(MAJOR|MINOR|PATCH)_VERSION ")
        string(REGEX REPLACE ".*MAJOR_VERSION ([0-9]+).*" "\\1" _ma "${_v}")
        string(REGEX REPLACE ".*MINOR_VERSION ([0-9]+).*" "\\1" _mi "${_v}")
        string(REGEX REPLACE ".*PATCH_VERSION ([0-9]+).*" "\\1" _pa "${_v}")
        set(HALOX_NVSHMEM_VERSION "${_ma}.${_mi}.${_pa}")
        set(HALOX_HAVE_NVSHMEM ON)
        message(STATUS "halox NVSHMEM: ${HALOX_NVSHMEM_VERSION} from ${_from}: ${_root} "
                       "(host ${_host}, links in ${_links})")
      else()
        string(CONCAT _halox_nvshmem_why "incomplete at ${_root} (${_from}): need "
                      "include/nvshmem.h, lib/libnvshmem_host.so[.N] and lib/libnvshmem_device.a")
      endif()
    endif()
  endif()
  if(NOT HALOX_HAVE_NVSHMEM AND HALOX_ENABLE_NVSHMEM STREQUAL "ON")
    message(FATAL_ERROR "HALOX_ENABLE_NVSHMEM=ON but NVSHMEM is not usable: ${_halox_nvshmem_why}")
  endif()
endif()
if(NOT HALOX_HAVE_NVSHMEM)
  message(STATUS "halox NVSHMEM: off (${_halox_nvshmem_why})")
elseif(HALOX_HAVE_MPI)
  # a static libhalox with the NVSHMEM transports: their library, NVSHMEM's device library (its
  # host part initialises the device state), the host library by its versioned name, C++ runtime
  get_filename_component(_hname "${HALOX_NVSHMEM_HOST_LIBRARY}" NAME)
  string(APPEND HALOX_PC_EXTRA_LIBS " -lhalox_nvshmem ${NVSHMEM_LIB_DIR}/libnvshmem_device.a"
         " -L${NVSHMEM_LIB_DIR} -Wl,-rpath,${NVSHMEM_LIB_DIR} -l:${_hname} -lstdc++")
endif()
