# Tests of the `mpi` transport (label `mpi`): every rank runs the same program under mpiexec
# (halox_mpi_test: tests/CMakeLists.txt).
if(HALOX_HAVE_MPI)
  # against the serial reference: plans, coordinates, forces, collectives, migration
  halox_mpi_test(test_mpi_exchange SOURCES transports/test_mpi_exchange.c NP 1 2 4 8)
  # bounded waits: a peer that skips an exchange gives HALOX_ERR_TIMEOUT, not a hang
  halox_mpi_test(test_mpi_timeout SOURCES transports/test_mpi_timeout.c NP 2 TIMEOUT 60)
  # halox_comm_build_plan_fixed on host arrays (the CPU transports' store) against the reference
  halox_mpi_test(test_plan_device SOURCES transports/test_plan_device.c NP 1 2 4 8)
  # halox_comm_migrate_fixed on host arrays against halox_comm_migrate
  halox_mpi_test(test_migrate_device SOURCES transports/test_migrate_device.c NP 1 2 4 8)
  # a code's own Cartesian communicator as halox's grid and rank order (halox_grid_from_cart)
  halox_mpi_test(test_grid_cart SOURCES transports/test_grid_cart.c NP 1 2 4 8)
  # per-atom fields on MPI ranks (the same checks as test_fields on threads)
  halox_mpi_test(test_fields_mpi SOURCES transports/test_fields.c NP 1 2 4 8)
  target_compile_definitions(test_fields_mpi PRIVATE FIELDS_MPI)
endif()
