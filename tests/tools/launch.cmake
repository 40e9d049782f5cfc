# How the tools are launched (label faults, and mpi where MPI runs; tools/tool_launch.h,
# tools/tool_agree.h): a launcher's process count is bounded; the GPU engine asked for where no
# GPU is visible is refused, and auto says when it runs on the CPU for want of one; ranks given
# other options, files or halox variables than rank 0 stop at start-up, every one with exit 2,
# rank 0 naming the option and both values; a failure ends the job with the tool's message once
# and MPI finished cleanly: none of Open MPI's abort banners. mpiexec starts
# tests/tools/rank_args.sh, which gives rank 1 the arguments after --rank1.

# a launcher's process count beyond the bound (or no count), set by hand: refused at once naming
# the variable and the bound, before a grid or an array is sized by it
foreach(_tool halox-md halox-check halox-bench)
  set(_sub "")
  if(_tool STREQUAL "halox-bench")
    set(_sub halo)
  endif()
  halox_fault_test(launch_huge_${_tool}
                   "OMPI_COMM_WORLD_SIZE='1000000000' is not a process count from 1 to 16777216"
                   "OMPI_COMM_WORLD_SIZE=1000000000" ${_tool} ${_sub})
  halox_fault_test(launch_text_${_tool} "PMI_SIZE='2x' is not a process count"
                   "PMI_SIZE=2x" ${_tool} ${_sub})
endforeach()

# the GPU engine where no GPU is visible (CUDA_VISIBLE_DEVICES hides them on a GPU machine too):
# asked for by --device gpu, HALOX_DEVICE=gpu or a GPU transport, refused before MPI starts; left
# to auto, the run is on the CPU engine and says so once
if(HALOX_HAVE_CUDA AND HALOX_HAVE_MPI AND TARGET halox-md)
  set(_small --cells 3,3,3 --steps 2)
  set(_no_gpu "runs the GPU engine, but no GPU is visible to this process .*use --device cpu")
  halox_fault_test(launch_no_gpu_device "^halox-md: --device gpu ${_no_gpu}"
                   "CUDA_VISIBLE_DEVICES=" halox-md ${_small} --device gpu)
  halox_fault_test(launch_no_gpu_env "^halox-md: HALOX_DEVICE=gpu ${_no_gpu}"
                   "CUDA_VISIBLE_DEVICES=;HALOX_DEVICE=gpu" halox-md ${_small})
  halox_fault_test(launch_no_gpu_transport "^halox-md: --transport mpi-staged ${_no_gpu}"
                   "CUDA_VISIBLE_DEVICES=" halox-md ${_small} --transport mpi-staged)
  set(_note "^halox-md: no GPU is visible, so --device auto runs the CPU engine \\(--device cpu")
  add_test(NAME launch_no_gpu_auto_note
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --count 1 "${_note}" --grep
                   "device cpu$" -- $<TARGET_FILE:halox-md> ${_small})
  add_test(NAME launch_no_gpu_cpu_quiet
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --count 0
                   "no GPU is visible" -- $<TARGET_FILE:halox-md> ${_small} --device cpu)
  set_tests_properties(launch_no_gpu_auto_note launch_no_gpu_cpu_quiet PROPERTIES LABELS "faults"
                       TIMEOUT 30 ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
endif()

# seeded, bounded fuzzing of ranks that disagree (tests/tools/fuzz_ranks.py): 20 jobs of 2 ranks,
# rank 1 given another value of an option, a file or a variable; each must stop at once with
# exit 2, naming it; skipped (77) in a build without MPI
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND AND TARGET halox-md AND TARGET halox-check AND TARGET halox-bench)
  set(_fz_launch "")
  if(HALOX_HAVE_MPI)
    halox_mpiexec(_fz_launch 2 ${PROJECT_SOURCE_DIR}/tests/tools/rank_args.sh)
  endif()
  add_test(NAME fuzz_ranks
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/fuzz_ranks.py
                   $<TARGET_FILE_DIR:halox-md> --cases 20 --seed 2026 --limit 20 -- ${_fz_launch})
  set_tests_properties(fuzz_ranks PROPERTIES LABELS "faults;mpi" TIMEOUT 300 PROCESSORS 2
                       SKIP_RETURN_CODE 77)
  if(HALOX_HAVE_MPI)
    halox_mpi_leaks_off(fuzz_ranks)
  endif()
endif()

if(NOT HALOX_HAVE_MPI OR NOT TARGET halox-md OR NOT TARGET halox-check OR NOT TARGET halox-bench)
  return()
endif()
set(_banner "MPI_ABORT|ORTE_ERROR_LOG|mpirun has exited")

# halox_ranks_test(NAME NP RC PATTERN COUNT PROGRAM ARGS... [--rank1 ARGS1...]): PROGRAM (a
# target, or a command such as env) with ARGS on NP processes, rank 1 with ARGS1 when given, must
# exit with RC, print COUNT lines matching PATTERN and no banner.
function(halox_ranks_test name np rc pattern count program)
  set(_run ${program})
  if(TARGET ${program})
    set(_run $<TARGET_FILE:${program}>)
  endif()
  set(_args ${_run})
  foreach(_a ${ARGN})
    if(_a STREQUAL "--rank1")
      list(APPEND _args --rank1 ${_run})
    else()
      list(APPEND _args ${_a})
    endif()
  endforeach()
  halox_mpiexec(_cmd ${np} ${PROJECT_SOURCE_DIR}/tests/tools/rank_args.sh)
  add_test(NAME ${name}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --rc ${rc} --count ${count}
                   "${pattern}" --count 0 "${_banner}" -- ${_cmd} ${_args})
  set_tests_properties(${name} PROPERTIES LABELS "faults;mpi" TIMEOUT 60 PROCESSORS ${np}
                       ENVIRONMENT "HALOX_DEVICE=cpu")
  halox_mpi_leaks_off(${name})
endfunction()

# options that differ: named with both values, whatever the spelling of a number
set(_md --cells 4,4,4 --steps 5 --grid 2x1x1 --transport mpi)
halox_ranks_test(ranks_md_dt 2 2 "^halox-md: rank 1 was given --dt 0.004 but rank 0 --dt 0.005: every rank must get the same options$" 1
                 halox-md ${_md} --dt 0.005 --rank1 ${_md} --dt 0.004)
halox_ranks_test(ranks_md_seed 2 2 "^halox-md: rank 1 was given --seed 7 but rank 0 no --seed: every rank must get the same options$" 1
                 halox-md ${_md} --rank1 ${_md} --seed 7)
halox_ranks_test(ranks_md_cutoff 2 2 "^halox-md: rank 1 was given --cutoff 2.4 but rank 0 --cutoff 2.5:" 1
                 halox-md ${_md} --cutoff 2.5 --rank1 ${_md} --cutoff 2.4)
halox_ranks_test(ranks_md_same_number 2 0 "^Summary$" 1
                 halox-md ${_md} --dt 0.005 --cutoff 2.5 --rank1 ${_md} --cutoff 25e-1 --dt 5e-3)
# --read: two files of 32 atoms that differ in one coordinate, and one reached by another path
set(_xyz_a ${CMAKE_CURRENT_BINARY_DIR}/ranks_a.xyz)
set(_xyz_b ${CMAKE_CURRENT_BINARY_DIR}/ranks_b.xyz)
set(_atoms "")
foreach(_i RANGE 31)
  math(EXPR _x "(${_i} % 4) * 2 + 1")
  math(EXPR _y "((${_i} / 4) % 4) * 2 + 1")
  math(EXPR _z "(${_i} / 16) * 4 + 1")
  string(APPEND _atoms "Ar ${_x}.0 ${_y}.0 ${_z}.0\n")
endforeach()
set(_head "32\nLattice=\"8 0 0 0 8 0 0 0 8\" Properties=species:S:1:pos:R:3\n")
file(WRITE ${_xyz_a} "${_head}${_atoms}")
string(REPLACE "Ar 1.0 1.0 1.0" "Ar 1.5 1.0 1.0" _atoms_b "${_atoms}")
file(WRITE ${_xyz_b} "${_head}${_atoms_b}")
set(_rd --steps 5 --grid 2x1x1 --transport mpi --temp 0.5)
halox_ranks_test(ranks_md_read 2 2 "^halox-md: rank 1 was given --read '.*ranks_b.xyz' \\(.* bytes\\) but rank 0 --read '.*ranks_a.xyz' \\(.* bytes\\): every rank must read the same file" 1
                 halox-md ${_rd} --read ${_xyz_a} --rank1 ${_rd} --read ${_xyz_b})
halox_ranks_test(ranks_md_read_same 2 0 "^Summary$" 1
                 halox-md ${_rd} --read ${_xyz_a}
                 --rank1 ${_rd} --read ${CMAKE_CURRENT_BINARY_DIR}/../tests/ranks_a.xyz)
# the halox variables: HALOX_TIMEOUT_S for rank 1 only
halox_ranks_test(ranks_md_env 2 2 "^halox-md: rank 1 has HALOX_TIMEOUT_S=30 but rank 0 HALOX_TIMEOUT_S unset: every rank must get the same halox environment" 1
                 env -u HALOX_TIMEOUT_S $<TARGET_FILE:halox-md> ${_md}
                 --rank1 HALOX_TIMEOUT_S=30 $<TARGET_FILE:halox-md> ${_md})
# and the tools' own (tools/tool_env.h): HALOX_AUTOTUNE_CACHE for rank 1 only
halox_ranks_test(ranks_md_env_tools 2 2 "^halox-md: rank 1 has HALOX_AUTOTUNE_CACHE=/nonexistent/cache.tsv but rank 0 HALOX_AUTOTUNE_CACHE unset: every rank must get the same halox environment" 1
                 env -u HALOX_AUTOTUNE_CACHE $<TARGET_FILE:halox-md> ${_md}
                 --rank1 HALOX_AUTOTUNE_CACHE=/nonexistent/cache.tsv $<TARGET_FILE:halox-md> ${_md})
# halox-check and halox-bench
set(_chk --grid 2x1x1 --atoms 2000 --box 8 --transport mpi)
halox_ranks_test(ranks_check_cutoff 2 2 "^halox-check: rank 1 was given --cutoff 2.0 but rank 0 no --cutoff:" 1
                 halox-check ${_chk} --rank1 ${_chk} --cutoff 2.0)
set(_bench halo -t mpi --atoms 2000 -r 3 -w 1)
halox_ranks_test(ranks_bench_seed 2 2 "^halox-bench: rank 1 was given --seed 5 but rank 0 --seed 6:" 1
                 halox-bench ${_bench} --seed 6 --rank1 ${_bench} --seed 5)
halox_ranks_test(ranks_bench_subcommand 2 2 "^halox-bench: rank 1 was given halox-bench latency but rank 0 halox-bench bandwidth:" 1
                 halox-bench bandwidth -t mpi -n 2 -e 64 --rank1 latency -t mpi -n 2 -e 64)

# a run that fails on every rank (too large a time step: the system blows up at step 21): the
# message once, exit 1, MPI finished cleanly, with one process and with two
set(_blow --cells 4,4,4 --steps 100 --dt 0.1 --transport mpi)
halox_ranks_test(ranks_md_fail_np1 1 1 "^halox-md: rank 0: step 21: the system blew up" 1
                 halox-md ${_blow})
halox_ranks_test(ranks_md_fail_np2 2 1 "^halox-md: rank [01]: step 21: the system blew up" 1
                 halox-md ${_blow} --grid 2x1x1)
set(_bblow md -t mpi --atoms 2000 --steps 100 --dt 0.1)
halox_ranks_test(ranks_bench_fail_np1 1 1 "^halox-bench: rank 0: mpi: step -73: the system blew up" 1
                 halox-bench ${_bblow})
halox_ranks_test(ranks_bench_fail_np2 2 1 "^halox-bench: rank [01]: mpi: step -73: the system blew up" 1
                 halox-bench ${_bblow})
# one process without mpirun (MPI started alone): the same
add_test(NAME ranks_md_fail_alone
         COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --rc 1 --count 1
                 "^halox-md: rank 0: step 21: the system blew up" --count 0 "${_banner}" --
                 $<TARGET_FILE:halox-md> ${_blow})
set_tests_properties(ranks_md_fail_alone PROPERTIES LABELS "faults;mpi" TIMEOUT 60
                     ENVIRONMENT "HALOX_DEVICE=cpu")
halox_mpi_leaks_off(ranks_md_fail_alone)
