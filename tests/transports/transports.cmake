# Tests of what the transports share (src/transports/): the automatic choice and the affinity.
# They need neither MPI nor CUDA.

# HALOX_CPU_AFFINITY=gpu binding on a PCI device of the machine (skips without sysfs)
halox_test(test_affinity SOURCES transports/test_affinity.c LABELS unit)
# the automatic choice of transport: the documented rule on the topologies that matter
halox_test(test_choose SOURCES transports/test_choose.c LABELS unit)
