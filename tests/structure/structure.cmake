# The layout rules (issue 16): no circles of files (from the objects of this build: what each
# file defines and calls), no transport name compared above src/transports/, no source file
# over 700 lines (tools/halox-md.c under 500); the engine and the tools clients of the public
# headers only
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME structure_file_cycles
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/file-cycles.py ${PROJECT_BINARY_DIR})
  add_test(NAME structure_rules
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure.py ${PROJECT_SOURCE_DIR})
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
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure_client.py
                   ${PROJECT_SOURCE_DIR} ${_client_nm} --include-dirs "${_client_dirs}")
  set_tests_properties(structure_file_cycles structure_rules structure_client PROPERTIES
                       LABELS "unit" TIMEOUT 120)
endif()
