# halox-bench (label bench): each subcommand end to end on the CPU transports, its JSON checked
# field by field (tests/tools/bench_check.py), a spoilt reference proving that a wrong exchange
# fails, GPU transports skipping cleanly without a GPU, and bad input exiting 2 with a message.
if(NOT TARGET halox-bench)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter QUIET)
set(_bench $<TARGET_FILE:halox-bench>)
set(_run ${PROJECT_SOURCE_DIR}/tests/tools/bench_run.sh)
set(_out ${CMAKE_CURRENT_BINARY_DIR}/bench-out)
file(MAKE_DIRECTORY ${_out})

# halox_bench_test(NAME [NP n] ARGS run.sh arguments -- halox-bench arguments): NP runs the tool
# under mpiexec with n processes.
function(halox_bench_test name)
  cmake_parse_arguments(T "" "NP" "ARGS;TOOL" ${ARGN})
  set(_cmd ${_bench})
  set(_procs 1)
  if(T_NP)
    halox_mpiexec(_cmd ${T_NP} ${_bench})
    set(_procs ${T_NP})
  endif()
  add_test(NAME ${name} COMMAND ${_run} ${T_ARGS} -- ${_cmd} ${T_TOOL})
  set_tests_properties(${name} PROPERTIES LABELS "bench" TIMEOUT 180 PROCESSORS ${_procs})
  if(T_NP)
    halox_mpi_leaks_off(${name})
  endif()
endfunction()

# bad input: exit status 2 and a message that says what is wrong
function(halox_bench_error name pattern)
  add_test(NAME ${name} COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_error.sh "${pattern}"
           ${_bench} ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "bench" TIMEOUT 60)
endfunction()
halox_bench_error(bench_err_subcommand "unknown subcommand 'frobnicate'" frobnicate)
halox_bench_error(bench_err_atoms_list "'abc' is not a count of atoms" halo --atoms 3000,abc)
halox_bench_error(bench_err_atoms_comma "give counts separated by commas" halo --atoms 3000,)
halox_bench_error(bench_err_size "give bytes >= 1" latency -b 8 -e 4Q)
halox_bench_error(bench_err_size_order "-b 4096 is above -e 8" latency -b 4096 -e 8)
halox_bench_error(bench_err_transport
                  "--transport 'carrier-pigeon' is not a transport of this build" halo
                  --transport carrier-pigeon)
halox_bench_error(bench_err_variant "unknown variant '\\+fast'" halo --transport threads+fast)
halox_bench_error(bench_err_option "option '--atoms' is not for this subcommand" latency
                  --atoms 5)
halox_bench_error(bench_err_grid "cannot read grid '2x2': expected NXxNYxNZ" halo --grid 2x2)
halox_bench_error(bench_err_grid_ranks "has 4 ranks but threads runs 2" halo --threads 2
                  --grid 2x2x1 --transport threads --atoms 3000)
halox_bench_error(bench_err_plan "no valid plan" halo --threads 2 --transport threads --atoms 500)
halox_bench_error(bench_err_overlap_graph "option '--graph' is not for this subcommand" overlap
                  --graph)
halox_bench_error(bench_err_overlap_repeats "--repeats '0': give a count >= 1" overlap -r 0)
halox_bench_error(bench_err_overlap_floor "overlap: 'threads\\+floor': \\+floor moves no atoms"
                  overlap --transport threads+floor)
halox_bench_error(bench_err_md_null "md: 'threads\\+null': \\+null moves no atoms"
                  md --transport threads+null)
halox_bench_error(bench_err_overlap_device
                  "--device cpu runs on threads or mpi|'mpi-staged' is not a transport of this build"
                  overlap --device cpu --transport mpi-staged)
halox_bench_error(bench_err_scaling_none "needs the JSON files" scaling)
# the launcher's variables without a launcher (every build): refused before anything starts
halox_bench_error(bench_launch_env_scaling "scaling reads the JSON files .* with 2 processes"
                  scaling none.jsonl)
set_tests_properties(bench_launch_env_scaling PROPERTIES ENVIRONMENT "OMPI_COMM_WORLD_SIZE=2")
if(HALOX_HAVE_MPI)
  halox_bench_error(bench_launch_env_threads
                    "--transport threads runs its ranks in one process.* with 2 processes \\(PMI_SIZE=2\\)"
                    halo --transport threads --atoms 3000)
  set_tests_properties(bench_launch_env_threads PROPERTIES ENVIRONMENT "PMI_SIZE=2")
else()
  halox_bench_error(bench_launch_env_nompi "with 2 processes \\(PMI_SIZE=2\\), but this build has no MPI"
                    halo --atoms 3000)
  set_tests_properties(bench_launch_env_nompi PROPERTIES ENVIRONMENT "PMI_SIZE=2")
endif()
halox_bench_error(bench_err_seed_negative
                  "--seed '-1': give an integer from 0 to 18446744073709551615" halo --seed -1)
halox_bench_error(bench_err_scaling_missing "cannot open the scaling input '/nonexistent.json'" scaling
                  /nonexistent.json)
halox_bench_error(bench_err_scaling_empty "no md records" scaling
                  ${PROJECT_SOURCE_DIR}/tests/tools/bench.cmake)
halox_bench_error(bench_err_md_device
                  "--device cpu runs on threads or mpi|'mpi-staged' is not a transport of this build"
                  md --device cpu --transport mpi-staged)
# outputs that are not regular files: refused before anything runs (exit 2)
halox_bench_error(bench_err_json_dir "the --json file '/' is a directory, not a regular file"
                  latency --transport threads -b 8 -e 64 -n 5 --json /)
halox_bench_error(bench_err_csv_device "the --csv file '/dev/null' is a character device" latency
                  --transport threads -b 8 -e 64 -n 5 --csv /dev/null)
# a record that cannot be written (a file size limit of 0, as a full disk) fails with exit 1
# and says so; SIGXFSZ at its default (it ends the process), whatever the shell inherited: the
# tool ignores it itself
foreach(_fmt json csv)
  add_test(NAME bench_write_fails_${_fmt}
           COMMAND ${_run} --rm ${_out}/full.${_fmt} --rc 1
                   --grep "writing the --${_fmt} file '.*full.${_fmt}' failed: File too large" --
                   sh -c "ulimit -f 0 && exec env --default-signal=XFSZ \"$@\"" sh ${_bench} latency
                   --transport threads -b 8 -e 64 -n 5 --${_fmt} ${_out}/full.${_fmt})
  set_tests_properties(bench_write_fails_${_fmt} PROPERTIES LABELS "bench" TIMEOUT 60)
endforeach()

if(NOT Python3_Interpreter_FOUND)
  message(STATUS "halox bench tests: no python3, JSON checks not registered")
  return()
endif()

# halo on 4 thread ranks: verified, JSON and CSV complete
halox_bench_test(bench_halo_threads
                 ARGS --rm ${_out}/halo_threads.csv --grep "^threads .* verified" --json ${_out}/halo_threads.jsonl halo
                      --count 2 --csv ${_out}/halo_threads.csv --
                 TOOL halo --threads 4 --transport threads --atoms 3000,6000 -r 50
                      --json ${_out}/halo_threads.jsonl --csv ${_out}/halo_threads.csv)
# exchanges enqueued back to back: verified, recorded in the JSON
halox_bench_test(bench_halo_back_to_back
                 ARGS --grep "^threads .* verified .* host$" --json ${_out}/halo_b2b.jsonl halo --count 1
                      --field mode host --
                 TOOL halo --threads 2 --transport threads --atoms 3000 -r 10 --back-to-back 8
                      --json ${_out}/halo_b2b.jsonl)
# a full-shell plan with two fields bound to the coordinates: verified, recorded in the JSON
halox_bench_test(bench_halo_full_fields
                 ARGS --grep "^threads .* verified .* host$" --json ${_out}/halo_full.jsonl halo --count 1
                      --field full_shell true --field fields 2 --
                 TOOL halo --threads 2 --transport threads --atoms 3000 -r 5 --full-shell --fields 2
                      --json ${_out}/halo_full.jsonl)
halox_bench_error(bench_err_fields "--fields '17': give a number of fields from 0 to 16" halo
                  --fields 17)
halox_bench_error(bench_err_back_to_back "--back-to-back '0': give a count" halo
                  --back-to-back 0)
halox_bench_error(bench_err_mode "--mode 'graph': use host .* or in-step" halo --mode graph)
# --mode in-step on a transport that cannot be captured in a CUDA graph: a record that says so
# (mode in-step, unavailable, what to use), exit 0
halox_bench_test(bench_halo_in_step_refused
                 ARGS --grep "^threads .* refused: --mode in-step captures the exchanges in a CUDA graph, and threads cannot be captured \\(it runs on the host\\): use a capturable GPU transport"
                 TOOL halo --threads 2 --transport threads --atoms 3000 -r 5 --mode in-step)
# a wrong exchange (here: a spoilt reference) fails with exit status 1 and says so
halox_bench_test(bench_halo_wrong_fails ARGS --rc 1 --grep "WRONG"
                 TOOL halo --threads 2 --transport threads --atoms 3000 -r 5)
set_tests_properties(bench_halo_wrong_fails PROPERTIES ENVIRONMENT
                     "HALOX_BENCH_SPOIL_REFERENCE=1")
halox_bench_test(bench_latency_wrong_fails ARGS --rc 1 --grep "WRONG"
                 TOOL latency --transport threads -b 8 -e 64 -n 5)
set_tests_properties(bench_latency_wrong_fails PROPERTIES ENVIRONMENT
                     "HALOX_BENCH_SPOIL_REFERENCE=1")
halox_bench_test(bench_latency_threads
                 ARGS --json ${_out}/latency_threads.jsonl latency --count 9 --
                 TOOL latency --transport threads -b 8 -e 4K -n 20
                      --json ${_out}/latency_threads.jsonl)
# how the tool was built, in its first line and every record (build.*, checked by bench_check.py)
halox_bench_test(bench_build_stated
                 ARGS --rm ${_out}/latency_build.csv
                      --grep "^halox-bench [0-9.]+, commit [^ ]+, build ${HALOX_BUILD_TYPE_NAME} \\(C: "
                      --json ${_out}/latency_build.jsonl latency --count 1 --csv ${_out}/latency_build.csv --
                 TOOL latency --transport threads -b 8 -e 16 -n 5 --json ${_out}/latency_build.jsonl
                      --csv ${_out}/latency_build.csv)
halox_bench_test(bench_bandwidth_threads
                 ARGS --json ${_out}/bandwidth_threads.jsonl bandwidth --
                 TOOL bandwidth --transport threads -b 1K -e 1M -f 4 -n 10
                      --json ${_out}/bandwidth_threads.jsonl)
halox_bench_test(bench_md_threads
                 ARGS --grep "^threads .* ok" --json ${_out}/md_threads.jsonl md --count 1 --
                 TOOL md --device cpu --transport threads --threads 2 --atoms 1500 --steps 20
                      --json ${_out}/md_threads.jsonl)
# the halox variables set in the environment are in every record (env; the commit has its own)
halox_bench_test(bench_md_env
                 ARGS --json ${_out}/md_env.jsonl md --count 1 --field env HALOX_TIMEOUT_S=30 --
                 TOOL md --device cpu --transport threads --threads 2 --atoms 1500 --steps 5
                      --json ${_out}/md_env.jsonl)
set_tests_properties(bench_md_env PROPERTIES ENVIRONMENT
                     "HALOX_TIMEOUT_S=30;HALOX_COMMIT=abc1234")
# the engine's own settings pass through md (one table: halox-md's): applied, and in the record
halox_bench_test(bench_md_engine_options
                 ARGS --grep "preset water-density with --skin 0.6 --rebuild-every 5,"
                      --json ${_out}/md_engine.jsonl md --count 1 --field rebuilds 4 --
                 TOOL md --device cpu --transport threads --threads 2 --atoms 1500 --steps 20
                      --skin 0.6 --rebuild-every 5 --json ${_out}/md_engine.jsonl)
halox_bench_error(bench_err_engine_option "--skin '-1': give a number >= 0" md --skin -1)
halox_bench_error(bench_err_engine_option_halo "halo: unknown option '--skin'" halo --skin 0.5)
# overlap on 2 and 4 thread ranks: times positive, t_both sane, the percentage from the times
# (not its range: on shared cores the CPU engine's percentage is noise over a small t_halo)
foreach(np 2 4)
  halox_bench_test(bench_overlap_threads_np${np}
                   ARGS --rm ${_out}/overlap_threads_np${np}.csv --grep "^threads .* ok"
                        --json ${_out}/overlap_threads_np${np}.jsonl overlap --count 1
                        --csv ${_out}/overlap_threads_np${np}.csv --
                   TOOL overlap --device cpu --transport threads --threads ${np} --atoms 3000
                        --steps 10 -r 20 --json ${_out}/overlap_threads_np${np}.jsonl
                        --csv ${_out}/overlap_threads_np${np}.csv)
endforeach()

if(HALOX_HAVE_MPI)
  halox_bench_test(bench_halo_mpi_np2 NP 2
                   ARGS --grep "^mpi .* verified" --json ${_out}/halo_mpi.jsonl halo --count 1 --
                   TOOL halo --transport mpi --atoms 3000 -r 50 --json ${_out}/halo_mpi.jsonl)
  halox_bench_test(bench_latency_mpi_np2 NP 2
                   ARGS --json ${_out}/latency_mpi.jsonl latency --count 9 --
                   TOOL latency --transport mpi -b 8 -e 4096 --json ${_out}/latency_mpi.jsonl)
  halox_bench_test(bench_bandwidth_mpi_np2 NP 2
                   ARGS --json ${_out}/bandwidth_mpi.jsonl bandwidth --
                   TOOL bandwidth --transport mpi -b 1K -e 1M -f 4 -n 10
                        --json ${_out}/bandwidth_mpi.jsonl)
  halox_bench_test(bench_latency_np1_refused NP 1 ARGS --rc 2 --grep "runs on 2 ranks, not 1"
                   TOOL latency --transport mpi -b 8 -e 64)
  # md on 1 and 2 MPI ranks, then their strong scaling
  foreach(np 1 2)
    halox_bench_test(bench_md_mpi_np${np} NP ${np}
                     ARGS --grep "^mpi .* ok" --json ${_out}/md_mpi_np${np}.jsonl md --count 1 --
                     TOOL md --device cpu --transport mpi --atoms 1500 --steps 20
                          --json ${_out}/md_mpi_np${np}.jsonl)
    set_tests_properties(bench_md_mpi_np${np} PROPERTIES FIXTURES_SETUP bench_md_runs)
  endforeach()
  halox_bench_test(bench_overlap_mpi_np2 NP 2
                   ARGS --grep "^mpi .* ok" --json ${_out}/overlap_mpi.jsonl overlap --count 1 --
                   TOOL overlap --device cpu --transport mpi --atoms 3000 --steps 10 -r 20
                        --json ${_out}/overlap_mpi.jsonl)
  # its record's sanity check compares timings of 2 processes on a 2-core machine: alone, so
  # that another test's processes cannot stretch one of its three timings (a parallel test can
  # make the halo alone several times slower than halo and forces together)
  set_tests_properties(bench_overlap_mpi_np2 PROPERTIES RUN_SERIAL TRUE)
  halox_bench_test(bench_scaling
                   ARGS --grep "mpi +cpu +no +1500 +2 +1 " --json ${_out}/scaling.jsonl scaling
                        --count 2 --
                   TOOL scaling ${_out}/md_mpi_np1.jsonl ${_out}/md_mpi_np2.jsonl
                        --json ${_out}/scaling.jsonl)
  set_tests_properties(bench_scaling PROPERTIES FIXTURES_REQUIRED bench_md_runs)
  # Launched by mpiexec with P > 1 processes: thread ranks only, or scaling (which
  # reads files), would run once per process: refused before MPI starts, every process exit 2
  foreach(np 2 4)
    halox_bench_test(bench_launch_threads_np${np} NP ${np}
                     ARGS --rc 2 --grep "--transport threads runs its ranks in one process, but halox-bench was started by an MPI launcher with ${np} processes.*Use --transport mpi"
                     TOOL halo --transport threads --atoms 3000 -r 5)
  endforeach()
  halox_bench_test(bench_launch_scaling_np2 NP 2
                   ARGS --rc 2 --grep "scaling reads the JSON files of earlier runs in one process, but halox-bench was started by an MPI launcher with 2 processes .*: run it without mpirun"
                   TOOL scaling ${_out}/none.jsonl)
  # without -t under mpiexec: one process's table (one header), mpi measured
  halox_mpi_expect(bench_launch_default_np2 2 ${_bench} LABELS bench TIMEOUT 180
                   CHECKS --count 1 "^halox-bench halo: " --count 1 "^halox-bench [0-9.]+, commit "
                          --count 0 "^threads " --grep "^mpi .* verified"
                   ARGS halo --atoms 3000 -r 5 -w 1)
  # GPU transports without a GPU: a message and exit 0 (on GPU machines they run and verify)
  if(HALOX_HAVE_CUDA)
    halox_bench_test(bench_halo_gpu_skips NP 1
                     ARGS --grep "mpi-staged +skipped: no GPU visible|^mpi-staged .* verified"
                     TOOL halo --transport mpi-staged --atoms 3000 -r 5)
    # in-step: captured exchanges verified against the reference and timed (label gpu: the
    # device suite's GPU phase runs it on a GPU; here it skips)
    halox_bench_test(bench_halo_in_step_gpu NP 1
                     ARGS --grep "nccl +skipped: no GPU visible|^nccl .* verified .* in-step$"
                     TOOL halo --transport nccl --atoms 3000 -r 5 --mode in-step)
    set_tests_properties(bench_halo_in_step_gpu PROPERTIES LABELS "bench;gpu")
    if(HALOX_HAVE_NVSHMEM)
      halox_bench_test(bench_halo_in_step_nvshmem NP 1
                       ARGS --grep "nvshmem-fused +skipped: no GPU visible|^nvshmem-fused .* verified .* in-step$"
                       TOOL halo --transport nvshmem-fused,nvshmem-fused+floor --atoms 3000 -r 5
                            --mode in-step)
      set_tests_properties(bench_halo_in_step_nvshmem PROPERTIES LABELS "bench;gpu")
      # the launch floor: halox's kernels launched empty (pulse, fused, inline's own); refused,
      # naming the variable, where NVSHMEM's stream calls signal
      halox_bench_test(bench_halo_null_gpu NP 1
                       ARGS --grep "nvshmem-inline\\+null +skipped: no GPU visible|^nvshmem-inline\\+null .* floor .* in-step$"
                       TOOL halo --transport nvshmem-fused+null,nvshmem-pulse+null,nvshmem-inline+null
                            --atoms 3000 -r 5 --mode in-step)
      halox_bench_test(bench_halo_null_refused_gpu NP 1
                       ARGS --grep "nvshmem-stream\\+null +skipped: no GPU visible|nvshmem-stream\\+null .*refused: .*SIGNAL_ONLY=2"
                       TOOL halo --transport nvshmem-stream+null --atoms 3000 -r 5)
      set_tests_properties(bench_halo_null_gpu bench_halo_null_refused_gpu PROPERTIES
                           LABELS "bench;gpu")
    endif()
    # the GPU engine's probe: skipped here, measured and checked on a GPU machine
    halox_bench_test(bench_overlap_gpu NP 1
                     ARGS --grep "mpi-staged +skipped: no GPU visible|^mpi-staged .* ok"
                     TOOL overlap --transport mpi-staged --atoms 3000 --steps 10 -r 10)
  endif()
endif()

# the published set's tables come from its records (scripts/plot/set-tables.py): every section, the
# fused/floor ratio of 45k atoms on 2 GPUs (43.9 / 30.6 us) and the auto column
add_test(NAME bench_set_tables
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/plot/set-tables.py
                 ${PROJECT_SOURCE_DIR}/bench/results/h200x2/2026-11-30-set)
set_tests_properties(bench_set_tables PROPERTIES LABELS bench PASS_REGULAR_EXPRESSION
                     "Halo exchange alone, 2 ranks.*\\| 45,000 \\| 107.3 \\| 71.7 .* \\| 1.43 \\| 1.63 \\| 2.44 \\|.*MD, 2 GPUs.*nvshmem-fused \\| nvshmem-fused \\|.*Overlap.*Bandwidth use.*Latency")

# the plots (scripts/plot/bench-plot.py) of a small record set cut from the published one
# (tests/data/bench-plot), checked on matplotlib's objects: titles, labels, legends, colours,
# series on each other, floor, link peak, provenance, error bars; 77 (skipped) without matplotlib
add_test(NAME bench_plot
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/bench_plot_test.py)
set_tests_properties(bench_plot PROPERTIES LABELS bench SKIP_RETURN_CODE 77 TIMEOUT 120
                     ENVIRONMENT "MPLBACKEND=Agg")

# the strong-scaling sweep's table (scripts/plot/floor-sweep.py) of a hand-made sweep whose
# medians and ratios the test works out: pooled runs, failed runs left out, columns of parts
# that only failed; the PNG where matplotlib is there
add_test(NAME floor_sweep_table
         COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/floor_sweep_test.py)
set_tests_properties(floor_sweep_table PROPERTIES LABELS bench TIMEOUT 120
                     ENVIRONMENT "MPLBACKEND=Agg")
