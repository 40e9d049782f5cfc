# Core tests: pure C11, linked against the core object library only (no MPI, no CUDA).

halox_test(test_plan_reference SOURCES test_plan_reference.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 600)
halox_test(test_geometry_errors SOURCES test_geometry_errors.c CORE_ONLY LABELS unit)
halox_test(test_migrate_threads SOURCES test_migrate_threads.c LABELS threads TIMEOUT 120)
