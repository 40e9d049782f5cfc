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
# the device-data rebuild's kernels (plan_select.cu, migrate_kernels.cu, compact.cuh) on the CPU
# through the host emulation of tests/emu, against host references: needs a C++14 compiler, no
# CUDA (the GPU runs of the same code: test_gpu_plan_device, test_gpu_migrate_device)
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  add_executable(test_kernels_emu test_kernels_emu.cpp emu/emu_runtime.cpp)
  # the emulation's cuda_runtime*.h first, so the kernels include it instead of CUDA's
  target_include_directories(test_kernels_emu BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emu)
  target_include_directories(test_kernels_emu PRIVATE ${PROJECT_SOURCE_DIR}/src
                             ${PROJECT_SOURCE_DIR}/include ${PROJECT_BINARY_DIR}/include)
  set_target_properties(test_kernels_emu PROPERTIES CXX_STANDARD 14 CXX_STANDARD_REQUIRED ON)
  # round-to-nearest operations as the kernels state them: no contraction into fused ones
  target_compile_options(test_kernels_emu PRIVATE -ffp-contract=off)
  target_link_libraries(test_kernels_emu PRIVATE halox_core Threads::Threads m)
  add_test(NAME test_kernels_emu COMMAND test_kernels_emu)
  set_tests_properties(test_kernels_emu PROPERTIES LABELS emu TIMEOUT 300)
else()
  message(STATUS "halox tests: no C++ compiler, test_kernels_emu not built")
endif()
# the GPU transports' device stores (plan_device.c, migrate_device.c, gpu_device.c and their
# kernels) on the CPU over the emulation, through test_device_threads' checks
if(CMAKE_CXX_COMPILER)
  set(_src ${PROJECT_SOURCE_DIR}/src/transports)
  add_executable(test_device_stores_emu test_device_threads.c emu/emu_transport.c
                 emu/emu_kernels.cpp emu/emu_runtime.cpp ${_src}/gpu_device.c
                 ${_src}/plan_device.c ${_src}/migrate_device.c ${_src}/threads.c
                 ${_src}/threads_exchange.c ${_src}/team.c ${_src}/team_run.c ${_src}/pulse_host.c)
  target_compile_definitions(test_device_stores_emu PRIVATE HALOX_TEST_EMU_GPU=1)
  target_include_directories(test_device_stores_emu BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/emu)
  target_include_directories(test_device_stores_emu PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                             ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include
                             ${PROJECT_BINARY_DIR}/include)
  set_target_properties(test_device_stores_emu PROPERTIES CXX_STANDARD 14 CXX_STANDARD_REQUIRED ON)
  target_compile_options(test_device_stores_emu PRIVATE -ffp-contract=off)
  target_link_libraries(test_device_stores_emu PRIVATE halox_core Threads::Threads m)
  add_test(NAME test_device_stores_emu COMMAND test_device_stores_emu)
  set_tests_properties(test_device_stores_emu PROPERTIES LABELS emu TIMEOUT 300)
endif()
