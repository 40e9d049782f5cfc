# GPU tests (label `gpu`): registered whenever CUDA is on, so CI (nvcc, no GPU) builds them; each
# exits 77 when no GPU is visible, which CTest reports as skipped. scripts/device/suite.sh runs
# them on the GPU machines. MPI-launched ones are registered as the `mpi` tests are
# (halox_mpi_test, tests/CMakeLists.txt), labelled gpu.
if(NOT HALOX_HAVE_CUDA)
  return()
endif()

# kernels and device plan against the CPU functions
halox_test(test_gpu_kernels SOURCES gpu/test_gpu_kernels.c LABELS gpu TIMEOUT 120)
# cluster pair lists and the cluster LJ kernel against a CPU brute force
halox_test(test_gpu_clusters SOURCES gpu/test_gpu_clusters.c LABELS gpu TIMEOUT 120)

if(HALOX_HAVE_MPI)
  # every GPU transport against the reference: 1, 2 (one per GPU on 2 GPUs), 4 and 8 ranks
  # (several ranks per GPU are fine: 4 and 8 ranks share 2 GPUs)
  # (nvshmem-inline also through kernels of the test's own, tests/gpu/inline_kernels.cu, that use
  # the public device API of the exchange inside a caller's kernels)
  halox_mpi_test(test_gpu_exchange SOURCES gpu/test_gpu_exchange.c gpu/inline_kernels.cu NP 1 2 4 8
                 LABELS gpu TIMEOUT 300)
  target_include_directories(test_gpu_exchange PRIVATE ${PROJECT_SOURCE_DIR}/include)
  # the plan build on device arrays (selection, packing, placement kernels) against the
  # reference, every GPU transport
  halox_mpi_test(test_gpu_plan_device SOURCES transports/test_plan_device.c NP 1 2 4 8 LABELS gpu
                 TIMEOUT 300)
  target_compile_definitions(test_gpu_plan_device PRIVATE HALOX_TEST_GPU=1)
  # the migration on device arrays (scan, pack, compaction, placement kernels) against the host
  # migration, every GPU transport
  halox_mpi_test(test_gpu_migrate_device SOURCES transports/test_migrate_device.c NP 1 2 4 8
                 LABELS gpu TIMEOUT 300)
  target_compile_definitions(test_gpu_migrate_device PRIVATE HALOX_TEST_GPU=1)
  # per-atom fields forward, reverse and bound to the exchanges, every GPU transport, against the
  # owners' rows by id and the reference
  halox_mpi_test(test_gpu_fields SOURCES transports/test_fields.c NP 1 2 4 LABELS gpu TIMEOUT 300)
  target_compile_definitions(test_gpu_fields PRIVATE HALOX_TEST_GPU=1 FIELDS_MPI)
  # bounded waits: a missing peer is a timeout naming rank, step, pulse and peer
  halox_mpi_test(test_gpu_timeout SOURCES gpu/test_gpu_timeout.c gpu/inline_kernels.cu NP 2
                 LABELS gpu TIMEOUT 120)
  target_include_directories(test_gpu_timeout PRIVATE ${PROJECT_SOURCE_DIR}/include)
  # NVSHMEM memory errors: heap too small (names NVSHMEM_SYMMETRIC_SIZE), non-symmetric arrays
  halox_mpi_test(test_gpu_nvshmem SOURCES gpu/test_gpu_nvshmem.c NP 2 LABELS gpu TIMEOUT 120)
endif()

if(HALOX_HAVE_NVSHMEM)
  # NVSHMEM linked and initialised (one PE, unique-ID bootstrap); skips without a GPU. The program
  # uses NVSHMEM alone, independent of halox.
  add_executable(halox_nvshmem_smoke ${CMAKE_CURRENT_SOURCE_DIR}/gpu/nvshmem_smoke.cu)
  set_target_properties(halox_nvshmem_smoke PROPERTIES CUDA_SEPARABLE_COMPILATION ON
                        CUDA_RESOLVE_DEVICE_SYMBOLS ON)
  target_link_libraries(halox_nvshmem_smoke PRIVATE halox::nvshmem_device halox::nvshmem_host)
  add_test(NAME nvshmem_smoke COMMAND halox_nvshmem_smoke --run)
  set_tests_properties(nvshmem_smoke PROPERTIES LABELS "gpu" TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()

# The GPU MD engine (tests/gpu/test_gpu_md.c): step 0 against LAMMPS, 100 steps against the CPU
# engine, on 1 rank and on 2 ranks (one per GPU on 2 GPUs), every GPU transport.
if(HALOX_HAVE_MPI)
  halox_mpi_test(test_gpu_md SOURCES gpu/test_gpu_md.c NP 1 2 LABELS gpu TIMEOUT 180)
endif()
if(TARGET halox-md)
  # the command line of the GPU engine (runs anywhere: these are usage errors, exit 2)
  add_test(NAME md_gpu_cli_graph COMMAND halox-md --graph --device cpu)
  set_tests_properties(md_gpu_cli_graph PROPERTIES LABELS "gpu" TIMEOUT 30
                       PASS_REGULAR_EXPRESSION "for the GPU engine")
  add_test(NAME md_gpu_cli_double COMMAND halox-md --device gpu --precision double)
  if(HALOX_HAVE_MPI)
    set_tests_properties(md_gpu_cli_double PROPERTIES LABELS "gpu" TIMEOUT 30
                         PASS_REGULAR_EXPRESSION "single precision")
  else()
    # no GPU transport without MPI: the GPU engine cannot run in this build, and says so
    set_tests_properties(md_gpu_cli_double PROPERTIES LABELS "gpu" TIMEOUT 30
                         PASS_REGULAR_EXPRESSION "needs a CUDA build with MPI")
  endif()
endif()

# the GPU engine's time split adds up (device times of parts that overlap: "concurrent"), with
# CUDA graphs (the default: the parts sampled on the steps outside them) and without
# (tests/md/md_split.py; skips without a GPU)
if(TARGET halox-md AND HALOX_HAVE_MPI)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    foreach(_g plain graph)
      set(_extra "")
      if(_g STREQUAL "plain")
        set(_extra --no-graph)
      endif()
      add_test(NAME md_split_gpu_${_g}
               COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/md/md_split.py
                       $<TARGET_FILE:halox-md> --preset water-density --atoms 20000 --steps 60
                       --device gpu --transport nccl ${_extra})
      set_tests_properties(md_split_gpu_${_g} PROPERTIES LABELS "gpu" TIMEOUT 240
                           SKIP_RETURN_CODE 77)
    endforeach()
  endif()
endif()
