# Install tests: each installs this build into a temporary prefix and builds against the
# installed package, as a user's project would, driven by a script of tests/install/ (cmake -P).

# halox_install_test(NAME SCRIPT [-DVAR=VALUE...]): the driver SCRIPT on this build (label
# install); reported as skipped, not failed, when it prints HALOX_TEST_SKIPPED (no pkg-config).
function(halox_install_test name script)
  add_test(NAME ${name}
           COMMAND ${CMAKE_COMMAND}
                   -DHALOX_BUILD_DIR=${PROJECT_BINARY_DIR}
                   -DHALOX_WORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/${name}-test
                   -DHALOX_C_COMPILER=${CMAKE_C_COMPILER}
                   -DHALOX_GENERATOR=${CMAKE_GENERATOR}
                   -DHALOX_BUILD_TYPE=$<CONFIG>
                   ${ARGN}
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/install/${script})
  set_tests_properties(${name} PROPERTIES LABELS "install" TIMEOUT 600
                       SKIP_REGULAR_EXPRESSION "HALOX_TEST_SKIPPED")
endfunction()

# A tiny consumer program (tests/install/main.c) built and run twice, with find_package(halox)
# and with pkg-config; every installed header compiled on its own.
halox_install_test(install run.cmake -DHALOX_CONSUMER_DIR=${CMAKE_CURRENT_SOURCE_DIR}/install)

# The examples (examples/), built with find_package(halox) and with pkg-config; cpu_exchange runs
# on 2 MPI processes and checks its halo against the reference exchange; manybody runs on 1, 2 and
# 4 and its energies must agree; the GPU one is built (with NVSHMEM) but not run.
if(HALOX_HAVE_MPI)
  halox_mpiexec(_halox_ex_cmd @NP@ @PROGRAM@)
  string(REPLACE ";" "|" _halox_ex_cmd "${_halox_ex_cmd}")
  set(_halox_ex_cuda "")
  if(HALOX_HAVE_NVSHMEM)
    set(_halox_ex_cuda -DHALOX_CUDA_COMPILER=${CMAKE_CUDA_COMPILER}
                       -DHALOX_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES})
  endif()
  halox_install_test(install_examples examples.cmake
                     -DHALOX_EXAMPLES_DIR=${PROJECT_SOURCE_DIR}/examples
                     -DHALOX_MPIEXEC=${_halox_ex_cmd} ${_halox_ex_cuda})
  set_tests_properties(install_examples PROPERTIES LABELS "install;mpi" TIMEOUT 300 PROCESSORS 4)
  halox_mpi_leaks_off(install_examples)
endif()
