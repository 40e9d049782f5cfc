# Install test: installs this build into a temporary prefix, then builds and runs a tiny consumer
# program against the installed package twice, once with find_package(halox) and once with
# pkg-config. Driven by tests/install/run.cmake (cmake -P).
add_test(NAME install
         COMMAND ${CMAKE_COMMAND}
                 -DHALOX_BUILD_DIR=${PROJECT_BINARY_DIR}
                 -DHALOX_CONSUMER_DIR=${CMAKE_CURRENT_SOURCE_DIR}/install
                 -DHALOX_WORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install-test
                 -DHALOX_C_COMPILER=${CMAKE_C_COMPILER}
                 -DHALOX_GENERATOR=${CMAKE_GENERATOR}
                 -DHALOX_BUILD_TYPE=$<CONFIG>
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/install/run.cmake)
# The pkg-config half is reported as skipped (not failed) when no pkg-config is installed.
set_tests_properties(install PROPERTIES LABELS "install" TIMEOUT 600
                     SKIP_REGULAR_EXPRESSION "HALOX_TEST_SKIPPED")
