# Tests of the `mpi` transport (label `mpi`): every rank runs the same program under mpiexec,
# through CMake's MPIEXEC_* variables so that any MPI launcher works.
if(HALOX_HAVE_MPI)
  set(HALOX_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
  # Open MPI refuses more processes than cores, and refuses root (containers, CI) unless told.
  # FindMPI knows the library's vendor only when asked to compile a probe, so ask the launcher.
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _halox_mpiexec_version
                  ERROR_QUIET RESULT_VARIABLE _halox_mpiexec_rc TIMEOUT 30)
  if(_halox_mpiexec_version MATCHES "Open MPI|OpenRTE")
    list(APPEND HALOX_MPIEXEC_PREFLAGS --oversubscribe --allow-run-as-root)
  endif()

  # halox_mpi_test(NAME SOURCES a.c NP 1 2 4 [TIMEOUT s]): one executable, one test per count,
  # named NAME_npN.
  function(halox_mpi_test name)
    cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;NP;ARGS" ${ARGN})
    add_executable(${name} ${T_SOURCES})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${name} PRIVATE halox MPI::MPI_C)
    if(NOT T_TIMEOUT)
      set(T_TIMEOUT 120)
    endif()
    set(_env "")
    if(HALOX_SANITIZE MATCHES "address")
      # Open MPI keeps allocations until exit (reported from unloaded plug-ins, which no
      # suppression matches): leaks off, appended so that the caller's other options stay
      list(APPEND _env "ASAN_OPTIONS=string_append::detect_leaks=0")
    endif()
    foreach(np ${T_NP})
      add_test(NAME ${name}_np${np}
               COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${HALOX_MPIEXEC_PREFLAGS}
                       $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS} ${T_ARGS})
      set_tests_properties(${name}_np${np} PROPERTIES LABELS "mpi" TIMEOUT ${T_TIMEOUT}
                           SKIP_RETURN_CODE 77 PROCESSORS ${np})
      if(_env)
        set_tests_properties(${name}_np${np} PROPERTIES ENVIRONMENT_MODIFICATION "${_env}")
      endif()
    endforeach()
  endfunction()

  # against the serial reference: plans, coordinates, forces, collectives, migration
  halox_mpi_test(test_mpi_exchange SOURCES test_mpi_exchange.c NP 1 2 4 8)
  # bounded waits: a peer that skips an exchange gives HALOX_ERR_TIMEOUT, not a hang
  halox_mpi_test(test_mpi_timeout SOURCES test_mpi_timeout.c NP 2 TIMEOUT 60)
endif()
