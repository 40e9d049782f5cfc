# Core tests: pure C11, linked against the core object library only (no MPI, no CUDA).

halox_test(test_plan_reference SOURCES test_plan_reference.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 600)
# periodic shifts (no self-image pulses): pulses, images, pairs exactly once, forces, refusals
halox_test(test_plan_shifts SOURCES test_plan_shifts.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 600)
# values at and beyond the planner's and the checking library's ranges (a hang or crash fails)
halox_test(test_plan_ranges SOURCES test_plan_ranges.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 30)
halox_test(test_geometry_errors SOURCES test_geometry_errors.c CORE_ONLY LABELS unit)
# a bound plan's pulses checked and what each map waits for (the host transports' pulse loop):
# derived masks equal the planner's, corrupt plans refused with a message
halox_test(test_pulse_deps SOURCES test_pulse_deps.c LIBS halox_checksys CORE_ONLY LABELS unit)
# routes of the halo's legs (hybrid, threads): HALOX_HYBRID_UNREACHABLE, symmetric decisions
halox_test(test_route SOURCES test_route.c CORE_ONLY LABELS unit)
# halox-md --autotune's decision (pure C, in tools/)
halox_test(test_autotune_pick SOURCES test_autotune_pick.c ${PROJECT_SOURCE_DIR}/tools/autotune_pick.c
           CORE_ONLY LABELS unit)
# CPU lists for HALOX_CPU_AFFINITY: parse, share among a GPU's ranks, format
halox_test(test_cpulist SOURCES test_cpulist.c CORE_ONLY LABELS unit)
# HALOX_CPU_AFFINITY=gpu binding on a PCI device of the machine (skips without sysfs)
halox_test(test_affinity SOURCES test_affinity.c LABELS unit)
# the automatic choice of transport: the documented rule on the topologies that matter
halox_test(test_choose SOURCES test_choose.c LABELS unit)
halox_test(test_migrate_threads SOURCES test_migrate_threads.c LABELS threads TIMEOUT 120)
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
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
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
  halox_emu_test(test_kernels_emu test_kernels_emu.cpp)
  # the GPU engine's pair-list search (md_cluster_search.cuh) against a brute force over boxes
  halox_emu_test(test_cluster_search_emu test_cluster_search_emu.cpp)
  # the GPU transports' device stores (plan_device.c, migrate_device.c, gpu_device.c and their
  # kernels) through test_device_threads' checks
  set(_src ${PROJECT_SOURCE_DIR}/src/transports)
  halox_emu_test(test_device_stores_emu test_device_threads.c emu/emu_transport.c
                 emu/emu_kernels.cpp ${_src}/gpu/gpu_device.c ${_src}/gpu/plan_device.c
                 ${_src}/gpu/migrate_device.c ${_src}/host/threads.c ${_src}/host/threads_exchange.c
                 ${_src}/team.c ${_src}/team_run.c ${_src}/host/pulse_host.c)
  target_compile_definitions(test_device_stores_emu PRIVATE HALOX_TEST_EMU_GPU=1)
  # the GPU engine's cluster lists and step kernels (md_cluster_*.cu) through test_gpu_clusters'
  # checks against brute forces (the whole set; a smaller one in the sanitizer builds)
  halox_emu_test(test_clusters_emu test_gpu_clusters.c emu/emu_md_kernels.cpp)
  target_compile_definitions(test_clusters_emu PRIVATE HALOX_TEST_EMU_GPU=1)
  set_tests_properties(test_clusters_emu PROPERTIES TIMEOUT 900) # 100 s here, more sanitised
else()
  message(STATUS "halox tests: no C++ compiler, the emulation's tests (*_emu) not built")
endif()
