# Tests of the `threads` transport (ranks as threads of one process). They need neither MPI nor
# CUDA, and must stay clean under ThreadSanitizer (-DHALOX_SANITIZE=thread).

# halox_team_run: threads started, joined and judged in one place (the MD driver, halox-check
# and halox-bench use it)
halox_test(test_team_run SOURCES transports/test_team_run.c LABELS threads unit TIMEOUT 60)
# what a transport can do, by name and of an endpoint (halox_transport_caps, halox_comm_caps)
halox_test(test_caps SOURCES transports/test_caps.c LABELS threads unit TIMEOUT 30)
halox_test(test_threads_collectives SOURCES transports/test_threads_collectives.c
           LABELS threads TIMEOUT 120)
halox_test(test_threads_exchange SOURCES transports/test_threads_exchange.c LIBS halox_checksys
           LABELS threads TIMEOUT 300)
halox_test(test_threads_timeout SOURCES transports/test_threads_timeout.c LIBS halox_checksys
           LABELS threads TIMEOUT 120)
# wait bounds and numeric environment variables refused where they are read (a bound of 1e20 s
# would spin forever): the timeout catches a hang
halox_test(test_bounds_env SOURCES transports/test_bounds_env.c LABELS threads unit TIMEOUT 30)
# plans that do not mirror each other (another halo width on one rank) refused at bind on every
# rank, naming pulse, ranks and counts
halox_test(test_threads_bind_mismatch SOURCES transports/test_threads_bind_mismatch.c
           LIBS halox_checksys LABELS threads TIMEOUT 60)
# the plan build and the migration over the caller's fixed arrays (halox_comm_build_plan_fixed,
# halox_comm_migrate_fixed) on thread ranks: as the host versions, bit for bit
halox_test(test_device_threads SOURCES transports/test_device_threads.c LABELS threads TIMEOUT 120)
# a rank's own failure carried into the next migration, plan build or bind
# (halox_comm_defer_failure): every rank stops there in one agreement; the collectives a healthy
# plan build, migration and bind cost
halox_test(test_defer_failure SOURCES transports/test_defer_failure.c LABELS threads TIMEOUT 60)
# migration: atoms scattered far outside their domains end at their owner; bad input refused
halox_test(test_migrate_threads SOURCES transports/test_migrate_threads.c LABELS threads
           TIMEOUT 120)
# per-atom fields (halox/fields.h) forward, reverse and bound to the exchanges, by global id and
# against the serial reference; refusals agreed on every rank
halox_test(test_fields SOURCES transports/test_fields.c LABELS threads TIMEOUT 120)
