# The documentation's commands (label docs): every command block of README.md and docs/*.md runs
# as written from this build, shortened (tests/structure/doc_commands.py), or is marked as needing
# what a CI machine lacks (a GPU, several nodes, the device machine, ...). Not in the sanitizer
# builds: they would run the tools a few dozen times more under the sanitizers' cost, for no new
# code.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND AND NOT HALOX_SANITIZE AND TARGET halox-md AND TARGET halox-check
   AND TARGET halox-bench)
  set(_doc_args)
  if(NOT HALOX_HAVE_MPI)
    set(_doc_args --no-mpi) # commands under mpirun are listed as skipped
  endif()
  set(_doc_run ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/doc_commands.py
               ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${_doc_args})
  add_test(NAME doc_commands COMMAND ${_doc_run})
  # its mpirun commands start up to 8 processes: keep the machine's cores to itself
  set_tests_properties(doc_commands PROPERTIES LABELS "docs" TIMEOUT 300 PROCESSORS 2)
  # the test itself: a page with a command that is not found, a bad option, an unmarked build
  # and an unknown kind must fail, naming each by file and line
  add_test(NAME doc_commands_catches
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --rc 1
                   --grep "^ok +tests/data/doc_commands/sample.md:6: "
                   --grep "^FAILED tests/data/doc_commands/sample.md:13: halox-bench latency"
                   --grep "exit 127 \\(not found\\)"
                   --grep "^FAILED tests/data/doc_commands/sample.md:19: .*--frobnicate"
                   --grep "unknown option '--frobnicate'"
                   --grep "^FAILED tests/data/doc_commands/sample.md:38: cmake --build"
                   --grep "sample.md:43: unknown doc-test kind 'someday'"
                   --grep "^mark tests/data/doc_commands/sample.md:31: not run here \\(gpu\\)"
                   --count 0 "^(ok|fail) .*(--device gpu|Summary)"
                   -- ${_doc_run} --files ${PROJECT_SOURCE_DIR}/tests/data/doc_commands/sample.md)
  set_tests_properties(doc_commands_catches PROPERTIES LABELS "docs" TIMEOUT 60)
endif()
# The README's library example compiles against the public headers of this build (its generated
# features.h too), as C11 with warnings as errors: the excerpt a reader copies stays in step with
# the API (tests/structure/readme_example.py)
if(Python3_Interpreter_FOUND)
  set(_readme_run ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/readme_example.py
                  ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${CMAKE_C_COMPILER})
  add_test(NAME doc_readme_example COMMAND ${_readme_run})
  # the test itself: a stale example (a function and a field the library lacks) fails, naming
  # the page's lines
  set(_stale tests/data/readme_example/stale.md)
  add_test(NAME doc_readme_example_catches
           COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --rc 1
                   --grep "${_stale}:16:.*halox_comm_exchange"
                   --grep "${_stale}:18:.*no member named .{1,3}n_halo"
                   --grep "^FAIL: the example of ${_stale} \\(line 12, 8 lines\\)"
                   -- ${_readme_run} --page ${PROJECT_SOURCE_DIR}/${_stale})
  set_tests_properties(doc_readme_example doc_readme_example_catches PROPERTIES LABELS "docs"
                       TIMEOUT 60)
endif()

# The API reference (label docs): Doxygen over include/halox/ with docs/Doxyfile, run from the
# source tree with its output in build/docs/api/ (html/ to read, xml/ for the checks); any warning
# (an undocumented function, type, macro or field), an enum value without a comment or a header
# missing from the reference fails it (tests/structure/api_reference.py). Skipped (77) where
# doxygen is not installed; CI installs it (scripts/common.sh). api_reference_catches: a header
# with an undocumented function, field and enum value must fail, naming each. Not in the
# sanitizer builds: the headers are the same in every build.
if(Python3_Interpreter_FOUND AND NOT HALOX_SANITIZE)
  find_program(HALOX_DOXYGEN doxygen)
  set(_doxyfile ${PROJECT_BINARY_DIR}/docs/Doxyfile)
  file(WRITE ${_doxyfile} "@INCLUDE = \"${PROJECT_SOURCE_DIR}/docs/Doxyfile\"\n"
                          "OUTPUT_DIRECTORY = \"${PROJECT_BINARY_DIR}/docs/api\"\n")
  set(_api_run ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/api_reference.py
               ${PROJECT_SOURCE_DIR} ${_doxyfile})
  if(HALOX_DOXYGEN)
    list(APPEND _api_run --doxygen ${HALOX_DOXYGEN})
  endif()
  add_test(NAME api_reference COMMAND ${_api_run})
  add_test(NAME api_reference_catches COMMAND ${_api_run} --catches)
  set_tests_properties(api_reference api_reference_catches PROPERTIES LABELS "docs" TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endif()
