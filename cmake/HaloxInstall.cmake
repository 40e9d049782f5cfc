# Install rules and packages for halox: libhalox, public headers (plus the generated
# features.h), the tools that exist in this build, a CMake package (find_package(halox) ->
# halox::halox) and a pkg-config file (halox.pc).
#
# Included from the top-level CMakeLists.txt after src/, tools/ and tests/, so every target
# it names already exists. Tools are installed with if(TARGET ...) so that tools added by
# later issues (halox-md, halox-bench) are picked up without touching this file.

include(CMakePackageConfigHelpers)

set(HALOX_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/halox"
    CACHE STRING "Where the CMake package files of halox are installed (relative to the prefix)")
set(HALOX_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
    CACHE STRING "Where halox.pc is installed (relative to the prefix)")
mark_as_advanced(HALOX_INSTALL_CMAKEDIR HALOX_INSTALL_PKGCONFIGDIR)

# ---- sanitizers travel with the library ------------------------------------------------------
# A sanitized static libhalox references the sanitizer runtime, so whoever links it must link
# with the same -fsanitize flags. In the build tree add_link_options() does that; for installed
# consumers the flags go into the exported interface and into halox.pc.
set(_halox_san_flags "")
if(HALOX_SANITIZE)
  string(REPLACE ";" "," _halox_san "${HALOX_SANITIZE}")
  set(_halox_san_flags "-fsanitize=${_halox_san}")
  target_link_options(halox INTERFACE "$<INSTALL_INTERFACE:${_halox_san_flags}>")
endif()

# ---- library and headers ---------------------------------------------------------------------
install(TARGETS halox halox_md
        EXPORT haloxTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                NAMELINK_COMPONENT devel
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/halox
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT devel
        FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
install(FILES ${PROJECT_BINARY_DIR}/include/halox/features.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/halox
        COMPONENT devel)

# ---- tools -----------------------------------------------------------------------------------
set(HALOX_INSTALLED_TOOLS "")
foreach(_tool halox-check halox-md halox-bench)
  if(TARGET ${_tool})
    install(TARGETS ${_tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
    list(APPEND HALOX_INSTALLED_TOOLS ${_tool})
    # Installed tools keep the run path to libraries outside the system folders that they were
    # linked with (the CUDA runtime, NCCL, NVSHMEM's wheel), as the build-tree tools do.
    set_target_properties(${_tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
    get_target_property(_halox_lib_type halox TYPE)
    if(_halox_lib_type STREQUAL "SHARED_LIBRARY")
      # A shared libhalox: let the installed tools find it next to them.
      file(RELATIVE_PATH _rel "/prefix/${CMAKE_INSTALL_BINDIR}" "/prefix/${CMAKE_INSTALL_LIBDIR}")
      set_target_properties(${_tool} PROPERTIES INSTALL_RPATH "$ORIGIN/${_rel}")
    endif()
  endif()
endforeach()

# ---- CMake package ---------------------------------------------------------------------------
install(EXPORT haloxTargets
        NAMESPACE halox::
        FILE haloxTargets.cmake
        DESTINATION ${HALOX_INSTALL_CMAKEDIR}
        COMPONENT devel)

foreach(_f MPI CUDA NCCL NVSHMEM)
  if(NOT HALOX_HAVE_${_f})
    set(HALOX_HAVE_${_f} OFF)
  endif()
endforeach()
configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/haloxConfig.cmake.in
    ${PROJECT_BINARY_DIR}/haloxConfig.cmake
    INSTALL_DESTINATION ${HALOX_INSTALL_CMAKEDIR}
    PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: minor versions may break the interface, so only the same minor version is compatible.
write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/haloxConfigVersion.cmake
    VERSION ${PROJECT_VERSION}
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/haloxConfig.cmake
              ${PROJECT_BINARY_DIR}/haloxConfigVersion.cmake
        DESTINATION ${HALOX_INSTALL_CMAKEDIR}
        COMPONENT devel)

# ---- pkg-config ------------------------------------------------------------------------------
# The .pc file is relocatable: prefix is computed from ${pcfiledir}, so
# `cmake --install build --prefix /anywhere` (and DESTDIR) give a working file.
if(IS_ABSOLUTE "${HALOX_INSTALL_PKGCONFIGDIR}")
  set(HALOX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _rel "/prefix/${HALOX_INSTALL_PKGCONFIGDIR}" "/prefix")
  string(REGEX REPLACE "/$" "" _rel "${_rel}")
  set(HALOX_PC_PREFIX "\${pcfiledir}/${_rel}")
endif()
foreach(_dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_dir}}")
    set(HALOX_PC_${_dir} "${CMAKE_INSTALL_${_dir}}")
  else()
    set(HALOX_PC_${_dir} "\${prefix}/${CMAKE_INSTALL_${_dir}}")
  endif()
endforeach()

# Libs: libhalox is static by default, so everything it needs is listed in Libs (not only in
# Libs.private): -lm, -pthread and, when the build has MPI, the MPI link line.
set(HALOX_PC_LIBS "-L\${libdir} -lhalox -lm -pthread")
set(HALOX_PC_CFLAGS "-I\${includedir}")
if(HALOX_HAVE_MPI)
  set(_mpi_libs "")
  foreach(_lib IN LISTS MPI_C_LIBRARIES)
    if(_lib MATCHES "^(.*)/lib([^/]+)\\.(so|a|dylib)(\\.[0-9.]+)?$")
      list(APPEND _mpi_libs "-L${CMAKE_MATCH_1}" "-l${CMAKE_MATCH_2}")
    elseif(_lib MATCHES "^-")
      list(APPEND _mpi_libs "${_lib}")
    elseif(_lib)
      list(APPEND _mpi_libs "-l${_lib}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _mpi_libs)
  list(JOIN _mpi_libs " " _mpi_libs)
  string(STRIP "${MPI_C_LINK_FLAGS} ${_mpi_libs}" _mpi_link)
  string(APPEND HALOX_PC_LIBS " ${_mpi_link}")
  foreach(_inc IN LISTS MPI_C_INCLUDE_DIRS)
    string(APPEND HALOX_PC_CFLAGS " -I${_inc}")
  endforeach()
  if(MPI_C_COMPILE_OPTIONS)
    list(JOIN MPI_C_COMPILE_OPTIONS " " _mpi_opts)
    string(APPEND HALOX_PC_CFLAGS " ${_mpi_opts}")
  endif()
endif()
# Optional parts add what a static libhalox needs from them (cmake/HaloxCuda.cmake: the CUDA
# runtime and NCCL when the GPU transports are built in).
if(HALOX_PC_EXTRA_LIBS)
  string(APPEND HALOX_PC_LIBS " ${HALOX_PC_EXTRA_LIBS}")
endif()
if(_halox_san_flags)
  string(APPEND HALOX_PC_LIBS " ${_halox_san_flags}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/halox.pc.in ${PROJECT_BINARY_DIR}/halox.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/halox.pc
        DESTINATION ${HALOX_INSTALL_PKGCONFIGDIR}
        COMPONENT devel)

if(NOT HALOX_INSTALLED_TOOLS)
  set(HALOX_INSTALLED_TOOLS "none yet")
endif()
message(STATUS "halox install: library, headers, CMake package, halox.pc; tools: "
               "${HALOX_INSTALLED_TOOLS}")
