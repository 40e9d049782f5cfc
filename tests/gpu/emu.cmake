# GPU code on the CPU through the host emulation of tests/emu (its cuda_runtime*.h first, so the
# kernels and transports include it instead of CUDA's; round-to-nearest operations as the kernels
# state them: no contraction into fused ones): needs a C++14 compiler, no CUDA. The GPU runs of
# the same code: test_gpu_plan_device, test_gpu_migrate_device.
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  function(halox_emu_test name)
    add_executable(${name} ${ARGN} emu/emu_runtime.cpp emu/emu_fibres.cpp)
    target_include_directories(${name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emu)
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common
                               ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/md ${PROJECT_SOURCE_DIR}/include
                               ${PROJECT_BINARY_DIR}/include)
    set_target_properties(${name} PROPERTIES CXX_STANDARD 14 CXX_STANDARD_REQUIRED ON)
    target_compile_options(${name} PRIVATE -ffp-contract=off)
    target_link_libraries(${name} PRIVATE halox_core Threads::Threads m)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS emu TIMEOUT 300)
  endfunction()
  # the device-data rebuild's kernels (plan_select.cu, migrate_kernels.cu, compact.cuh) against
  # host references
  halox_emu_test(test_kernels_emu gpu/test_kernels_emu.cpp)
  # the GPU engine's pair-list search (md_cluster_search.cuh) against a brute force over boxes
  halox_emu_test(test_cluster_search_emu gpu/test_cluster_search_emu.cpp)
  # the GPU transports' device stores (plan_device.c, migrate_device.c, gpu_device.c and their
  # kernels) through test_device_threads' checks
  set(_src ${PROJECT_SOURCE_DIR}/src/transports)
  halox_emu_test(test_device_stores_emu transports/test_device_threads.c emu/emu_transport.c
                 emu/emu_kernels.cpp ${_src}/gpu/gpu_device.c ${_src}/gpu/plan_device.c
                 ${_src}/gpu/migrate_device.c ${_src}/host/threads.c ${_src}/host/threads_exchange.c
                 ${_src}/team.c ${_src}/team_run.c ${_src}/host/pulse_host.c)
  target_compile_definitions(test_device_stores_emu PRIVATE HALOX_TEST_EMU_GPU=1)
  # the GPU engine's cluster lists and step kernels (md_cluster_*.cu) through test_gpu_clusters'
  # checks against brute forces (the whole set; a smaller one in the sanitizer builds)
  halox_emu_test(test_clusters_emu gpu/test_gpu_clusters.c emu/emu_md_kernels.cpp)
  target_compile_definitions(test_clusters_emu PRIVATE HALOX_TEST_EMU_GPU=1)
  set_tests_properties(test_clusters_emu PROPERTIES TIMEOUT 900) # 100 s here, more sanitised
else()
  message(STATUS "halox tests: no C++ compiler, the emulation's tests (*_emu) not built")
endif()

# The GPU transports on the CPU (label emu): the GPU tests' checks built over the host emulation of
# tests/emu, whose NVSHMEM has the PEs as processes sharing one mapped file (emu_nvshmem.cpp),
# under mpirun, with the very sources of the transports (src/transports) and of their kernels
# (emu_exchange_kernels.cpp): the NVSHMEM signal protocol, binds, exchanges and the device
# rebuild's messages run in CI without a GPU. Needs MPI and C++.
if(NOT HALOX_HAVE_MPI OR NOT CMAKE_CXX_COMPILER)
  return()
endif()
set(_t ${PROJECT_SOURCE_DIR}/src/transports)
set(HALOX_EMU_GPU_SOURCES
    emu/emu_exchange_kernels.cpp emu/emu_nvshmem.cpp emu/emu_runtime.cpp emu/emu_fibres.cpp
    ${_t}/registry.c ${_t}/affinity.c ${_t}/choose.c ${_t}/team.c ${_t}/team_run.c
    ${_t}/host/pulse_host.c ${_t}/host/threads.c ${_t}/host/threads_exchange.c ${_t}/host/mpi.c
    ${_t}/host/mpi_wait.c ${_t}/gpu/gpu_device.c ${_t}/gpu/gpu_fields.c ${_t}/gpu/pulse_gpu.c ${_t}/gpu/plan_device.c
    ${_t}/gpu/migrate_device.c ${_t}/gpu/gpu_endpoint.c ${_t}/gpu/gpu_staging.c ${_t}/gpu/gpu_mpi.c
    ${_t}/nvshmem/gpu_nvshmem.c ${_t}/nvshmem/gpu_nvshmem_alloc.c ${_t}/nvshmem/gpu_nvshmem_bind.c
    ${_t}/nvshmem/gpu_nvshmem_exchange.c ${_t}/nvshmem/gpu_nvshmem_inline.c
    ${_t}/nvshmem/gpu_nvshmem_msg.c ${_t}/nvshmem/gpu_hybrid.c)

# halox_emu_gpu_test(NAME SOURCE NP... [EXTRA sources...]): SOURCE as its GPU test builds it
# (HALOX_TEST_GPU), over the emulation, run by mpirun with each NP (gpu/ on the include path:
# emu_exchange_kernels.cpp compiles the GPU tests' inline_kernels.cu)
function(halox_emu_gpu_test name source)
  cmake_parse_arguments(E "" "" "EXTRA" ${ARGN})
  add_executable(${name} ${source} ${E_EXTRA} ${HALOX_EMU_GPU_SOURCES})
  target_include_directories(${name} BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emu)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/common
                             ${CMAKE_CURRENT_SOURCE_DIR}/gpu ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/md ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_BINARY_DIR}/include)
  target_compile_definitions(${name} PRIVATE HALOX_HAVE_MPI=1 HALOX_HAVE_CUDA=1
                             HALOX_HAVE_NVSHMEM=1 HALOX_TEST_GPU=1 HALOX_TEST_EMU_GPU=1)
  set_target_properties(${name} PROPERTIES CXX_STANDARD 14 CXX_STANDARD_REQUIRED ON)
  target_compile_options(${name} PRIVATE -ffp-contract=off)
  target_link_libraries(${name} PRIVATE halox_core Threads::Threads MPI::MPI_C m)
  foreach(np ${E_UNPARSED_ARGUMENTS})
    halox_mpiexec(_cmd ${np} $<TARGET_FILE:${name}>)
    add_test(NAME ${name}_np${np} COMMAND ${_cmd} --quick)
    set_tests_properties(${name}_np${np} PROPERTIES LABELS emu TIMEOUT 900
                         SKIP_RETURN_CODE 77 PROCESSORS ${np})
    halox_mpi_leaks_off(${name}_np${np})
  endforeach()
endfunction()

# every GPU transport's exchanges against the serial reference, bit for bit (test_gpu_exchange)
halox_emu_gpu_test(test_exchange_emu gpu/test_gpu_exchange.c 1 2 4)
# and with endpoints whose caller declared its kernels ordered behind the stream
# (halox_comm_set_stream_ordered), whose binds leave their uploads on the stream (the order of
# the calls, not the stream's, which the emulation cannot show)
halox_mpiexec(_cmd 2 $<TARGET_FILE:test_exchange_emu>)
add_test(NAME test_exchange_emu_np2_stream_ordered COMMAND ${_cmd} --quick --stream-ordered)
set_tests_properties(test_exchange_emu_np2_stream_ordered PROPERTIES LABELS emu TIMEOUT 900
                     SKIP_RETURN_CODE 77 PROCESSORS 2)
halox_mpi_leaks_off(test_exchange_emu_np2_stream_ordered)
# the device rebuild through the GPU transports (their messages device to device on NVSHMEM)
# against the reference plan and the host migration (test_gpu_plan_device, _migrate_device);
# half and full shell, on 2 ranks and on the 2x2x1 and 1x2x2 grids of 4
halox_emu_gpu_test(test_plan_device_emu transports/test_plan_device.c 2 4)
halox_emu_gpu_test(test_migrate_device_emu transports/test_migrate_device.c 2 4)
# per-atom fields through every GPU transport's field exchange (test_gpu_fields)
halox_emu_gpu_test(test_fields_emu transports/test_fields.c 1 2 4)
target_compile_definitions(test_fields_emu PRIVATE FIELDS_MPI)
# and with the messages copied under host agreements (HALOX_NVSHMEM_DIRECT_MESSAGES=1) instead of
# sent by the message kernels (2, the default)
foreach(_t test_plan_device_emu test_migrate_device_emu)
  halox_mpiexec(_cmd 2 $<TARGET_FILE:${_t}>)
  add_test(NAME ${_t}_np2_agreed COMMAND ${_cmd} --quick)
  set_tests_properties(${_t}_np2_agreed PROPERTIES LABELS emu TIMEOUT 900 SKIP_RETURN_CODE 77
                       PROCESSORS 2 ENVIRONMENT HALOX_NVSHMEM_DIRECT_MESSAGES=1)
  halox_mpi_leaks_off(${_t}_np2_agreed)
endforeach()
# the host's calls of a settled device rebuild (migration, plan build, bind) against a budget per
# phase and kind, counted by the emulation (no GPU test: only the emulation counts calls), with
# each way of sending the rebuild's messages (HALOX_NVSHMEM_DIRECT_MESSAGES 1 and 2)
halox_emu_gpu_test(test_rebuild_calls_emu gpu/test_rebuild_calls.c 2)
halox_mpiexec(_cmd 2 $<TARGET_FILE:test_rebuild_calls_emu>)
add_test(NAME test_rebuild_calls_emu_np2_agreed COMMAND ${_cmd} --quick)
set_tests_properties(test_rebuild_calls_emu_np2_agreed PROPERTIES LABELS emu TIMEOUT 900
                     SKIP_RETURN_CODE 77 PROCESSORS 2 ENVIRONMENT HALOX_NVSHMEM_DIRECT_MESSAGES=1)
halox_mpi_leaks_off(test_rebuild_calls_emu_np2_agreed)
# bounded waits: a peer that stops signalling ends every rank with a timeout naming rank, pulse,
# peer and step (test_gpu_timeout)
halox_emu_gpu_test(test_timeout_emu gpu/test_gpu_timeout.c 2)
# the NVSHMEM transports' memory errors: a heap too small (named with the size to set), arrays
# not from device_alloc (test_gpu_nvshmem)
halox_emu_gpu_test(test_nvshmem_emu gpu/test_gpu_nvshmem.c 2)
# the GPU engine (md/, its CUDA platform included) on the GPU transports against the CPU engine
# (test_gpu_md, 30 steps per part), on 2 ranks: every GPU transport of the build in the plain
# build, the engine's own path (nvshmem-inline: the exchange inside its kernels) in the sanitizer
# builds; e.g. `mpirun -np 2 tests/test_md_emu --transport nvshmem-inline` tries a change of the
# engine's GPU code on the CPU before a GPU runs it
file(GLOB_RECURSE _md ${PROJECT_SOURCE_DIR}/md/*.c)
halox_emu_gpu_test(test_md_emu gpu/test_gpu_md.c EXTRA emu/emu_engine_kernels.cpp ${_md})
set(_which "")
if(HALOX_SANITIZE)
  set(_which --transport nvshmem-inline)
endif()
halox_mpiexec(_cmd 2 $<TARGET_FILE:test_md_emu>)
add_test(NAME test_md_emu_np2 COMMAND ${_cmd} --quick ${_which})
set_tests_properties(test_md_emu_np2 PROPERTIES LABELS emu TIMEOUT 900 SKIP_RETURN_CODE 77
                     PROCESSORS 2)
halox_mpi_leaks_off(test_md_emu_np2)
# one rank (no exchange): plain stretches run as one launch of the multi-step graph
if(NOT HALOX_SANITIZE)
  halox_mpiexec(_cmd 1 $<TARGET_FILE:test_md_emu>)
  add_test(NAME test_md_emu_np1 COMMAND ${_cmd} --transport nvshmem-fused)
  set_tests_properties(test_md_emu_np1 PROPERTIES LABELS emu TIMEOUT 900 SKIP_RETURN_CODE 77)
  halox_mpi_leaks_off(test_md_emu_np1)
endif()
