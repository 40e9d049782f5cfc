# Tests of the `threads` transport (ranks as threads of one process). They need neither MPI nor
# CUDA, and must stay clean under ThreadSanitizer (-DHALOX_SANITIZE=thread).

halox_test(test_threads_collectives SOURCES test_threads_collectives.c
           LABELS threads TIMEOUT 120)
halox_test(test_threads_exchange SOURCES test_threads_exchange.c LIBS halox_checksys
           LABELS threads TIMEOUT 300)
halox_test(test_threads_timeout SOURCES test_threads_timeout.c LIBS halox_checksys
           LABELS threads TIMEOUT 120)
