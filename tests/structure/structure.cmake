# The layout rules: no circles of files (from the objects of this build: what each
# file defines and calls), no transport name compared above src/transports/, no source file
# over 700 lines (tools/halox-md.c under 500), no source folder over 30 files; the engine and the
# tools clients of the public headers only; no call or issue numbers in the sources and docs;
# the environment tables against the sources and the README
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME structure_file_cycles
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/file_cycles.py
                   ${PROJECT_BINARY_DIR})
  add_test(NAME structure_rules
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/structure.py
                   ${PROJECT_SOURCE_DIR})
  # the engine and the tools are clients of include/halox/: no src/ header included or on their
  # include paths, no halox__ symbol in libhalox_md
  set(_client_dirs "$<TARGET_PROPERTY:halox_md,INCLUDE_DIRECTORIES>")
  foreach(_t halox_md_kernels halox-md halox-check halox-bench)
    if(TARGET ${_t})
      string(APPEND _client_dirs ";$<TARGET_PROPERTY:${_t},INCLUDE_DIRECTORIES>")
    endif()
  endforeach()
  set(_client_nm "")
  if(CMAKE_NM)
    set(_client_nm --nm ${CMAKE_NM} --lib $<TARGET_FILE:halox_md>)
  endif()
  add_test(NAME structure_client
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/structure_client.py
                   ${PROJECT_SOURCE_DIR} ${_client_nm} --include-dirs "${_client_dirs}")
  set_tests_properties(structure_file_cycles structure_rules structure_client PROPERTIES
                       LABELS "unit" TIMEOUT 120)
  # the environment table: what the sources read is in it, what is in it is in README.md
  if(TARGET halox-md)
    add_test(NAME env_docs
             COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/env_docs.py
                     $<TARGET_FILE:halox-md> ${PROJECT_SOURCE_DIR})
    set_tests_properties(env_docs PROPERTIES LABELS "unit" TIMEOUT 60)
    # the tables against the sources: at most 12 library variables, every row documented, every
    # read by name from the table its reader may read (tests/structure/env_tables.py)
    set(_env_tables ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure/env_tables.py
                    $<TARGET_FILE:halox-md> ${PROJECT_SOURCE_DIR})
    add_test(NAME env_tables COMMAND ${_env_tables})
    set_tests_properties(env_tables PROPERTIES LABELS "unit" TIMEOUT 60)
    # the test itself: planted reads of an undeclared variable, of the library's through the
    # tools' reader, of the tools' around their reader, of the tools' by the library's reader
    set(_planted tests/data/env_tables/reads.c)
    add_test(NAME env_tables_catches
             COMMAND ${PROJECT_SOURCE_DIR}/tests/common/expect_output.sh --rc 1
                     --grep "^error: ${_planted}:3: HALOX_NOT_DECLARED read by getenv, .* no table"
                     --grep "^error: ${_planted}:4: HALOX_TIMEOUT_S read by tool_env_string"
                     --grep "^error: ${_planted}:5: HALOX_COMMIT read by getenv, .*the tools'"
                     --grep "^error: ${_planted}:6: HALOX_LOG_LEVEL read by halox_env_\\*"
                     --count 4 "^error: .* read by "
                     -- ${_env_tables} --plant tools ${PROJECT_SOURCE_DIR}/${_planted})
    set_tests_properties(env_tables_catches PROPERTIES LABELS "unit" TIMEOUT 60)
  endif()
endif()
