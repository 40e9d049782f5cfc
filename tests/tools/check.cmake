# halox-check end to end: plan + exchange verified against brute force, per transport, and the
# errors it must give for bad input.
if(NOT TARGET halox-check)
  return()
endif()

# In the sanitizer builds (which multiply the cost of the thread ranks) each check takes half
# its atoms (of the default 8000 when none are given): the same grids, pulses and shifts.
function(halox_check_test name)
  set(_args ${ARGN})
  if(HALOX_SANITIZE)
    list(FIND _args --atoms _at)
    if(_at EQUAL -1)
      list(APPEND _args --atoms 4000)
    else()
      math(EXPR _at "${_at} + 1")
      list(GET _args ${_at} _n)
      math(EXPR _n "${_n} / 2")
      list(REMOVE_AT _args ${_at})
      list(INSERT _args ${_at} ${_n})
    endif()
  endif()
  add_test(NAME ${name} COMMAND $<TARGET_FILE:halox-check> ${_args})
  set_tests_properties(${name} PROPERTIES LABELS "check;threads" TIMEOUT 300
                       PASS_REGULAR_EXPRESSION "RESULT: PASS" FAIL_REGULAR_EXPRESSION "FAIL")
endfunction()

halox_check_test(check_threads_default)
# --transport auto: the automatic choice (threads in one process), also over HALOX_TRANSPORT
add_test(NAME check_transport_auto
         COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --count 1 "^RESULT: PASS$"
                 --grep "grid 2x1x1, .*transport threads$" -- $<TARGET_FILE:halox-check>
                 --grid 2x1x1 --box 10 --atoms 400 --cutoff 2 --steps 2 --transport auto)
set_tests_properties(check_transport_auto PROPERTIES LABELS "check;threads" TIMEOUT 60
                     ENVIRONMENT "HALOX_TRANSPORT=mpi")
halox_check_test(check_threads_1x1x1 --grid 1x1x1 --atoms 3000 --box 10)
halox_check_test(check_threads_5x1x1 --grid 5x1x1 --atoms 4000 --box 20,8,8 --cutoff 3.0)
halox_check_test(check_threads_4x3x2_2pulse --grid 4x3x2 --box 12,9,8 --atoms 5000 --cutoff 3.5
                 --buffer 0.4 --dist clustered --steps 4)
halox_check_test(check_threads_3x3x3_3pulse --grid 3x3x3 --box 9 --atoms 2000 --cutoff 4.4
                 --buffer 2.0 --precision double --stride 4)
halox_check_test(check_threads_6x1x1_3pulse --grid 6x1x1 --box 12,9,9 --atoms 3000 --cutoff 4.0
                 --buffer 0.5 --dist slab)
halox_check_test(check_threads_8x1x1_4pulse --grid 8x1x1 --box 16,14,14 --atoms 1500 --cutoff 6.5
                 --buffer 0.5)
# full-shell plans: ghosts from both neighbours, pairs by halox_full_pair; one-rank dimensions
# (self images both ways), 2-rank dimensions (both neighbours one rank), several pulses
halox_check_test(check_threads_full_1x1x1 --full-shell --grid 1x1x1 --atoms 2000 --box 10)
halox_check_test(check_threads_full_2x2x1 --full-shell --grid 2x2x1 --atoms 3000 --box 10
                 --precision double)
halox_check_test(check_threads_full_4x3x2_2pulse --full-shell --grid 4x3x2 --box 12,9,8
                 --atoms 4000 --cutoff 3.5 --buffer 0.4 --dist clustered)
halox_check_test(check_threads_full_8x1x1_4pulse --full-shell --grid 8x1x1 --box 16,14,14
                 --atoms 1500 --cutoff 6.5 --buffer 0.5 --stride 4)

if(HALOX_HAVE_MPI)
  function(halox_check_mpi name np)
    halox_mpiexec(_cmd ${np} $<TARGET_FILE:halox-check>)
    add_test(NAME ${name} COMMAND ${_cmd} --transport mpi ${ARGN})
    set_tests_properties(${name} PROPERTIES LABELS "check;mpi" TIMEOUT 300 PROCESSORS ${np}
                         PASS_REGULAR_EXPRESSION "RESULT: PASS" FAIL_REGULAR_EXPRESSION "FAIL")
  endfunction()
  halox_check_mpi(check_mpi_np1 1 --grid 1x1x1 --atoms 3000 --box 10)
  halox_check_mpi(check_mpi_np2 2 --grid 2x1x1 --atoms 3000 --box 8 --cutoff 2.9 --buffer 1.2)
  halox_check_mpi(check_mpi_np4 4 --grid 2x2x1 --atoms 4000 --box 10 --dist clustered)
  halox_check_mpi(check_mpi_np8 8 --grid 2x2x2 --atoms 6000 --box 12 --precision double)
  halox_check_mpi(check_mpi_full_np2 2 --full-shell --grid 2x1x1 --atoms 3000 --box 8 --cutoff 2.9
                  --buffer 1.2)
  halox_check_mpi(check_mpi_full_np4 4 --full-shell --grid 2x2x1 --atoms 4000 --box 10
                  --dist clustered --precision double)
  halox_mpiexec(_chk2 2 $<TARGET_FILE:halox-check>)
  add_test(NAME check_mpi_wrong_np COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_error.sh
           "has 4 ranks but 2 MPI processes" ${_chk2} --transport mpi --grid 2x2x1)
  set_tests_properties(check_mpi_wrong_np PROPERTIES LABELS "check;mpi" TIMEOUT 120)
  # Launched by mpiexec with P processes without --transport: one check on mpi and
  # the default grid of P (one RESULT line, not P copies); threads refused before MPI starts.
  # halox_check_launch(NAME NP ENV CHECKS... ARGS...): ENV "" or VAR=VALUE.
  function(halox_check_launch name np env)
    halox_mpi_expect(${name} ${np} $<TARGET_FILE:halox-check> LABELS check mpi ENV ${env} ${ARGN})
  endfunction()
  halox_check_launch(check_launch_default_np2 2 ""
                     CHECKS --count 1 "^RESULT: PASS$" --grep "grid 2x1x1, .*transport mpi$"
                     ARGS --atoms 2000)
  halox_check_launch(check_launch_default_np4 4 ""
                     CHECKS --count 1 "^RESULT: PASS$" --grep "grid 2x2x1, .*transport mpi$"
                     ARGS --atoms 2000)
  halox_check_launch(check_launch_threads_np2 2 ""
                     CHECKS --rc 2 --count 0 "^RESULT:"
                            --grep "--transport threads runs its ranks in one process, but halox-check was started by an MPI launcher with 2 processes.*Use --transport mpi"
                     ARGS --atoms 2000 --transport threads)
  # HALOX_TRANSPORT=auto: the automatic choice, as without it (mpi on the default grid of P)
  halox_check_launch(check_launch_env_auto_np2 2 "HALOX_TRANSPORT=auto"
                     CHECKS --count 1 "^RESULT: PASS$" --grep "grid 2x1x1, .*transport mpi$"
                     ARGS --atoms 2000)
  halox_check_launch(check_launch_threads_env_np4 4 "HALOX_TRANSPORT=threads"
                     CHECKS --rc 2 --count 0 "^RESULT:"
                            --grep "HALOX_TRANSPORT=threads runs its ranks in one process.* with 4 processes.*Unset HALOX_TRANSPORT or add --transport mpi"
                     ARGS --atoms 2000)
  # Open MPI leaks in MPI_Init when a run stops at once (ompi_op_base_op_select): not ours
  halox_mpi_leaks_off(check_mpi_wrong_np)
endif()

# bad input: exit status 2 and a message that says what is wrong
function(halox_check_error name pattern)
  add_test(NAME ${name} COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_error.sh "${pattern}"
           $<TARGET_FILE:halox-check> ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "check" TIMEOUT 60)
endfunction()
# the launcher's variables without a launcher: threads under "2 processes" refused before
# anything starts; a build without MPI refuses such a launch whatever the transport
if(HALOX_HAVE_MPI)
  halox_check_error(check_launch_env_threads
                    "--transport threads runs its ranks in one process.* with 2 processes \\(OMPI_COMM_WORLD_SIZE=2\\)"
                    --atoms 200 --transport threads)
  set_tests_properties(check_launch_env_threads PROPERTIES ENVIRONMENT "OMPI_COMM_WORLD_SIZE=2")
else()
  halox_check_error(check_launch_env_nompi "with 2 processes \\(PMI_SIZE=2\\), but this build has no MPI"
                    --atoms 200)
  set_tests_properties(check_launch_env_nompi PROPERTIES ENVIRONMENT "PMI_SIZE=2")
endif()
# a GPU transport is refused (halox-check binds host arrays; it once checked threads instead)
if(HALOX_HAVE_CUDA AND HALOX_HAVE_MPI)
  halox_check_error(check_err_gpu_transport "--transport mpi-staged keeps its data on the GPU"
                    --atoms 200 --transport mpi-staged)
endif()
halox_check_error(check_err_grid_zero "at least 1 rank" --grid 0x2x2)
halox_check_error(check_err_grid_negative "at least 1 rank" --grid 2x-1x2)
halox_check_error(check_err_grid_text "expected NXxNYxNZ" --grid 2x2)
halox_check_error(check_err_box_negative "must be finite and > 0" --box -5)
halox_check_error(check_err_box_zero "must be finite and > 0" --box 10,0,10)
halox_check_error(check_err_box_nan "not a finite number|must be finite" --box nan)
halox_check_error(check_err_cutoff_negative "must be finite and > 0" --cutoff -1)
halox_check_error(check_err_cutoff_nan "not a finite number" --cutoff nan)
halox_check_error(check_err_cutoff_half_box "not below half the box" --box 8 --cutoff 4.5)
halox_check_error(check_err_pulses "needs 5 pulses in x" --grid 10x1x1 --box 10 --cutoff 4.5)
halox_check_error(check_err_transport "--transport 'carrier-pigeon' is not a transport of this build"
                  --transport carrier-pigeon)
halox_check_error(check_err_option "unknown option '--frobnicate'" --frobnicate)
halox_check_error(check_err_missing_value "needs a value" --atoms)
halox_check_error(check_err_atoms "give a count" --atoms -5)
# values beyond a range: refused with the numbers, never a crash or a wrapped value
halox_check_error(check_err_box_float_range
                  "box edge x 1e\\+39 plus the halo distance 2.8 .*largest single-precision number"
                  --box 1e39 --atoms 10)
halox_check_test(check_threads_box_double_range --box 1e39 --atoms 10 --precision double)
halox_check_error(check_err_buffer_pulses "needs 8.33e\\+18 pulses in x even with 1 rank" --atoms 200
                  --buffer 1e20)
halox_check_error(check_err_timeout_zero "--timeout '0': give seconds > 0 and at most 1e\\+06"
                  --timeout 0 --atoms 200)
halox_check_error(check_err_timeout_negative "--timeout '-1': give seconds > 0 and at most"
                  --timeout -1 --atoms 200)
halox_check_error(check_err_timeout_huge "--timeout '1e7': give seconds > 0 and at most"
                  --timeout 1e7 --atoms 200)
halox_check_error(check_err_env_timeout "HALOX_TIMEOUT_S='inf'" --atoms 200)
set_tests_properties(check_err_env_timeout PROPERTIES ENVIRONMENT "HALOX_TIMEOUT_S=inf")
halox_check_error(check_err_seed_negative
                  "--seed '-1': give an integer from 0 to 18446744073709551615" --seed -1)
halox_check_error(check_err_seed_huge "--seed '99999999999999999999': give an integer"
                  --seed 99999999999999999999)
halox_check_test(check_threads_seed_max --atoms 500 --seed 18446744073709551615)

# halox-hostprof (tools/hostprof): a probe with known ranges and calls, its report checked
if(TARGET halox-hostprof)
  add_test(NAME hostprof COMMAND ${PROJECT_SOURCE_DIR}/tests/tools/hostprof_check.sh
           $<TARGET_FILE:halox-hostprof> $<TARGET_FILE:halox-hostprof-probe>)
  set_tests_properties(hostprof PROPERTIES LABELS "unit" TIMEOUT 60)
endif()
