# Tests of the MD engine (label md): physics against independent references (LAMMPS' published
# values, closed forms, serial runs, statistics), restarts, migration, the command line.
halox_test(test_md_lattice SOURCES test_md_lattice.c LABELS md TIMEOUT 300)
halox_test(test_md_nve SOURCES test_md_nve.c LABELS md TIMEOUT 300)
halox_test(test_md_decomp SOURCES test_md_decomp.c LABELS md TIMEOUT 300)
halox_test(test_md_nvt SOURCES test_md_nvt.c LABELS md TIMEOUT 300)
halox_test(test_md_restart SOURCES test_md_restart.c LABELS md TIMEOUT 300)
halox_test(test_md_migrate SOURCES test_md_migrate.c LABELS md TIMEOUT 300)
halox_test(test_md_overlap SOURCES test_md_overlap.c LABELS md TIMEOUT 300)
# the command line, end to end (runs the tool as a child process)
if(TARGET halox-md)
  halox_test(test_md_cli SOURCES test_md_cli.c LABELS md TIMEOUT 300
             ARGS $<TARGET_FILE:halox-md>)
  add_dependencies(test_md_cli halox-md)
  # the CPU engine's command line, also on GPU machines (where auto would pick the GPU engine)
  set_tests_properties(test_md_cli PROPERTIES ENVIRONMENT "HALOX_DEVICE=cpu")
endif()

# The engine on the `mpi` transport (labels md and mpi): the same trajectory as 1 rank, and the
# same bits as the threads transport on the same grid, for the grids of the issue.
if(HALOX_HAVE_MPI)
  if(NOT DEFINED HALOX_MPIEXEC_PREFLAGS)
    # normally set by tests/mpi.cmake; Open MPI refuses root and more processes than cores
    set(HALOX_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
    execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _md_mpiexec_version
                    ERROR_QUIET TIMEOUT 30)
    if(_md_mpiexec_version MATCHES "Open MPI|OpenRTE")
      list(APPEND HALOX_MPIEXEC_PREFLAGS --oversubscribe --allow-run-as-root)
    endif()
  endif()
  add_executable(test_md_mpi test_md_mpi.c)
  target_include_directories(test_md_mpi PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(test_md_mpi PRIVATE halox MPI::MPI_C)
  set(_md_mpi_env "")
  if(HALOX_SANITIZE MATCHES "address")
    list(APPEND _md_mpi_env "ASAN_OPTIONS=string_append::detect_leaks=0")
  endif()
  foreach(_grid 2x2x2 3x2x1 4x1x1)
    string(REPLACE "x" ";" _dims ${_grid})
    list(GET _dims 0 _a)
    list(GET _dims 1 _b)
    list(GET _dims 2 _c)
    math(EXPR _np "${_a} * ${_b} * ${_c}")
    add_test(NAME test_md_mpi_${_grid}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${_np} ${HALOX_MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:test_md_mpi> ${MPIEXEC_POSTFLAGS} ${_grid})
    set_tests_properties(test_md_mpi_${_grid} PROPERTIES LABELS "md;mpi" TIMEOUT 300
                         SKIP_RETURN_CODE 77 PROCESSORS ${_np})
    if(_md_mpi_env)
      set_tests_properties(test_md_mpi_${_grid} PROPERTIES ENVIRONMENT_MODIFICATION "${_md_mpi_env}")
    endif()
  endforeach()
  # the tool under mpiexec: 2 processes, a short run, its summary printed by rank 0
  if(TARGET halox-md)
    add_test(NAME test_md_tool_mpi
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${HALOX_MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:halox-md> ${MPIEXEC_POSTFLAGS} --cells 6,6,6 --grid 2x1x1
                     --transport mpi --steps 40 --thermo-every 20)
    set_tests_properties(test_md_tool_mpi PROPERTIES LABELS "md;mpi" TIMEOUT 120 PROCESSORS 2
                         PASS_REGULAR_EXPRESSION "Summary.*transport mpi")
    if(_md_mpi_env)
      set_tests_properties(test_md_tool_mpi PROPERTIES ENVIRONMENT_MODIFICATION "${_md_mpi_env}")
    endif()
    # --autotune: the first run measures and caches (a fresh cache file), the second reads it
    set(_at_cache ${CMAKE_CURRENT_BINARY_DIR}/autotune-test.tsv)
    add_test(NAME test_md_autotune_reset COMMAND ${CMAKE_COMMAND} -E rm -f ${_at_cache})
    set_tests_properties(test_md_autotune_reset PROPERTIES LABELS "md;mpi" FIXTURES_SETUP md_at)
    foreach(_at measure cached)
      add_test(NAME test_md_autotune_${_at}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2 ${HALOX_MPIEXEC_PREFLAGS}
                       $<TARGET_FILE:halox-md> ${MPIEXEC_POSTFLAGS} --cells 4,4,4 --grid 2x1x1
                       --device cpu --autotune --autotune-steps 20 --steps 20)
      set_tests_properties(test_md_autotune_${_at} PROPERTIES LABELS "md;mpi" TIMEOUT 120
                           PROCESSORS 2 ENVIRONMENT "HALOX_AUTOTUNE_CACHE=${_at_cache}")
      if(_md_mpi_env)
        set_tests_properties(test_md_autotune_${_at} PROPERTIES
                             ENVIRONMENT_MODIFICATION "${_md_mpi_env}")
      endif()
    endforeach()
    set_tests_properties(test_md_autotune_measure PROPERTIES FIXTURES_REQUIRED md_at
                         FIXTURES_SETUP md_at_cached PASS_REGULAR_EXPRESSION
                         "  mpi +[0-9.]+ ms/step \\(median of 3.*autotune: mpi, the fastest measured.*Summary")
    set_tests_properties(test_md_autotune_cached PROPERTIES FIXTURES_REQUIRED md_at_cached
                         PASS_REGULAR_EXPRESSION "autotune: mpi, cached in .*Summary")
  endif()
endif()

# the environment table: what the sources read is in it, what is in it is in README.md
if(TARGET halox-md)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    add_test(NAME env_docs COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/env_docs.py
                                   $<TARGET_FILE:halox-md> ${PROJECT_SOURCE_DIR})
    set_tests_properties(env_docs PROPERTIES LABELS "unit" TIMEOUT 60)
  endif()
endif()
