# Core tests: pure C11, linked against the core object library only (no MPI, no CUDA).

halox_test(test_plan_reference SOURCES core/test_plan_reference.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 600)
# periodic shifts (no self-image pulses): pulses, images, pairs exactly once, forces, refusals
halox_test(test_plan_shifts SOURCES core/test_plan_shifts.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 600)
# values at and beyond the planner's and the checking library's ranges (a hang or crash fails)
halox_test(test_plan_ranges SOURCES core/test_plan_ranges.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 30)
halox_test(test_geometry_errors SOURCES core/test_geometry_errors.c CORE_ONLY LABELS unit)
# a bound plan's pulses checked and what each map waits for (the host transports' pulse loop):
# derived masks equal the planner's, corrupt plans refused with a message
halox_test(test_pulse_deps SOURCES core/test_pulse_deps.c LIBS halox_checksys CORE_ONLY LABELS unit)
# routes of the halo's legs (hybrid, threads): HALOX_HYBRID_UNREACHABLE, symmetric decisions
halox_test(test_route SOURCES core/test_route.c CORE_ONLY LABELS unit)
# CPU lists for HALOX_CPU_AFFINITY: parse, share among a GPU's ranks, format
halox_test(test_cpulist SOURCES core/test_cpulist.c CORE_ONLY LABELS unit)
# files changed under a writer or a reader (a target become a FIFO, a folder swapped for a link
# before the rename, a size limit), FIFOs to read or write, the same file by several spellings
halox_test(test_file_races SOURCES core/test_file_races.c CORE_ONLY LABELS faults TIMEOUT 30)
# full-shell plans: pulses both ways, images in [lo - halo, hi + halo), the pair rule
# halox_full_pair exactly once, forces newton on (reverse exchange) and off, copies and shifts
halox_test(test_plan_full SOURCES core/test_plan_full.c LIBS halox_checksys CORE_ONLY LABELS unit TIMEOUT 600)
