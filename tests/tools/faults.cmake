# Hostile input to the tools (label faults): every case must end at once with exit 2 and a
# message naming the value, never hang (the TIMEOUT catches a hang), crash or exit 0.
set(_fault_run ${PROJECT_SOURCE_DIR}/tests/common/expect_error.sh)

# halox_fault_test(NAME PATTERN ENV TOOL ARGS...): ENV is "" or "VAR=value;VAR2=value"
function(halox_fault_test name pattern env tool)
  if(NOT TARGET ${tool})
    return()
  endif()
  add_test(NAME ${name} COMMAND ${_fault_run} "${pattern}" $<TARGET_FILE:${tool}> ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "faults" TIMEOUT 30)
  if(env)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
endfunction()

# wait bounds (a bound of 1e20 s overflowed the deadline: the run spun forever, deaf to SIGTERM)
set(_lj --preset lammps-lj --cells 3,3,3 --steps 2 --grid 2x1x1 --device cpu)
halox_fault_test(fault_md_timeout_huge "--timeout '1e20'.*at most" "" halox-md ${_lj} --timeout 1e20)
halox_fault_test(fault_md_timeout_zero "--timeout '0'" "" halox-md ${_lj} --timeout 0)
foreach(_v inf abc -5 0 1e7)
  halox_fault_test(fault_md_env_timeout_${_v} "HALOX_TIMEOUT_S='${_v}'"
                   "HALOX_TIMEOUT_S=${_v}" halox-md ${_lj})
endforeach()
halox_fault_test(fault_bench_env_timeout "HALOX_TIMEOUT_S='inf'" "HALOX_TIMEOUT_S=inf"
                 halox-bench halo --atoms 2000 --transport threads)
halox_fault_test(fault_bench_timeout_huge "--timeout '1e308'" "" halox-bench halo --atoms 2000
                 --transport threads --timeout 1e308)
# a refused value names where it came from: the variable or the option, and what to give
halox_fault_test(fault_md_env_transport
                 "HALOX_TRANSPORT='bogus' is not a transport of this build: give one of threads.*auto"
                 "HALOX_TRANSPORT=bogus" halox-md ${_lj})
halox_fault_test(fault_md_transport "--transport 'bogus' is not a transport of this build: give one"
                 "" halox-md ${_lj} --transport bogus)
halox_fault_test(fault_check_env_transport
                 "HALOX_TRANSPORT='bogus' is not a transport of this build: give one of threads"
                 "HALOX_TRANSPORT=bogus" halox-check --grid 2x1x1 --atoms 200 --box 10)
halox_fault_test(fault_md_env_device "HALOX_DEVICE='bogus' is not an engine: give gpu, cpu or auto"
                 "HALOX_DEVICE=bogus" halox-md ${_lj})
halox_fault_test(fault_bench_transport "--transport 'bogus' is not a transport of this build"
                 "" halox-bench halo --atoms 2000 --transport threads,bogus)
# --grid: NXxNYxNZ or NX,NY,NZ, one separator (every tool reads it with halox_grid_parse)
halox_fault_test(fault_md_grid_mixed "--grid: cannot read grid '2x2,2': expected NXxNYxNZ \\(or NX,NY,NZ\\)"
                 "" halox-md --cells 3,3,3 --steps 2 --device cpu --grid 2x2,2)
halox_fault_test(fault_check_grid_mixed "cannot read grid '2,2x2': expected NXxNYxNZ" ""
                 halox-check --grid 2,2x2 --atoms 200 --box 10)
halox_fault_test(fault_bench_grid_mixed "cannot read grid '2x1,1': expected NXxNYxNZ" ""
                 halox-bench halo --atoms 2000 --transport threads --grid 2x1,1)
# a list above its bound says the bound
string(REPEAT "threads," 64 _many)
halox_fault_test(fault_bench_transports_many "--transport: more than 64 transports: give at most 64"
                 "" halox-bench halo --atoms 2000 --transport ${_many}threads)
# a temperature beyond HALOX_MD_MAX_TEMP (1e30 blew the run up at its first step)
halox_fault_test(fault_md_temp_huge "--temp '1e30': give a temperature from 0 to 1e\\+06" ""
                 halox-md --cells 3,3,3 --steps 2 --temp 1e30)
# halox-bench scaling trusted its input: /dev/zero filled the memory, a rank count of 1e300 was
# converted to an int (undefined) and overflowed the sort's comparator
halox_fault_test(fault_bench_scaling_dev_zero
                 "scaling input '/dev/zero' is a character device, not a regular file" ""
                 halox-bench scaling /dev/zero)
set(_scaling_bad ${CMAKE_CURRENT_BINARY_DIR}/scaling-inputs/ranks.jsonl)
file(WRITE ${_scaling_bad}
     "{\"bench\":\"md\",\"transport\":\"mpi\",\"atoms\":1500,\"ranks\":1,\"ms_per_step\":2}\n"
     "{\"bench\":\"md\",\"transport\":\"mpi\",\"atoms\":1500,\"ranks\":1e300,\"ms_per_step\":1}\n")
halox_fault_test(fault_bench_scaling_ranks
                 "ranks.jsonl: line 2: an md record with atoms 1500, ranks 1e\\+300.*from 1 to 2147483647"
                 "" halox-bench scaling ${_scaling_bad})
# --graph where no GPU is visible: the advice must be one that can work here
halox_fault_test(fault_md_graph_no_gpu "no GPU is visible.*run without --graph"
                 "CUDA_VISIBLE_DEVICES=" halox-md --graph --cells 3,3,3 --steps 2)

# a few hundred hostile argument lists and environment values for the three tools, fixed seed
# (tests/tools/fuzz_tools.py): no crash, no sanitizer report, no hang, no exit 0 on a malformed
# value
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND AND TARGET halox-md AND TARGET halox-check AND TARGET halox-bench)
  add_test(NAME fuzz_tools
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/fuzz_tools.py
                   $<TARGET_FILE_DIR:halox-md> --cases 300 --seed 2026 --limit 10)
  # the sanitizer builds run it too; leaks of a refused run are reports like any other
  set_tests_properties(fuzz_tools PROPERTIES LABELS "faults" TIMEOUT 900)
endif()

# the files of a run (tests/tools/test_files.py): two outputs or an output and an input that are one
# file refused before any output is touched, outputs in missing folders, the system cache's
# planted links, FIFOs and forged files
if(Python3_Interpreter_FOUND AND TARGET halox-md AND TARGET halox-bench)
  foreach(_group md_same md_input md_folder cache bench)
    add_test(NAME files_${_group}
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/test_files.py
                     $<TARGET_FILE_DIR:halox-md> ${_group})
    set_tests_properties(files_${_group} PROPERTIES LABELS "faults" TIMEOUT 60)
  endforeach()
  # the same surfaces fuzzed (tests/tools/fuzz_files.py): outputs spelled as one file or as an
  # input, forged cache files, FIFOs, links and folders where files are read, fixed seed
  add_test(NAME fuzz_files
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/fuzz_files.py
                   $<TARGET_FILE_DIR:halox-md> --cases 120 --seed 2026 --limit 10)
  set_tests_properties(fuzz_files PROPERTIES LABELS "faults" TIMEOUT 300)
endif()

# hostile files for the readers, fixed seed (tests/tools/fuzz_readers.py): LAMMPS dumps for --read
# (truncations, byte flips, forged items and columns, long lines and values, CRLF), checkpoints
# for --restart (re-sealed forged fields and atoms), halox-bench scaling inputs (forged numbers,
# too many records, devices, files too large): no crash, no sanitizer report, no hang, a forged
# field refused, what is only written differently read
if(Python3_Interpreter_FOUND AND TARGET halox-md AND TARGET halox-bench)
  add_test(NAME fuzz_readers
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/tools/fuzz_readers.py
                   $<TARGET_FILE_DIR:halox-md> --cases 100 --seed 2026 --limit 20)
  set_tests_properties(fuzz_readers PROPERTIES LABELS "faults" TIMEOUT 240)
endif()
