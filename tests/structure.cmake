# The layout rules (issue 16): no circles of files (from the objects of this build: what each
# file defines and calls), no transport name compared above src/transports/, no source file
# over 700 lines (tools/halox-md.c under 500)
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME structure_file_cycles
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/file-cycles.py ${PROJECT_BINARY_DIR})
  add_test(NAME structure_rules
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/structure.py ${PROJECT_SOURCE_DIR})
  set_tests_properties(structure_file_cycles structure_rules PROPERTIES LABELS "unit" TIMEOUT 120)
endif()
