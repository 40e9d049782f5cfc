#!/bin/bash
# Start one rank of an MPI job (mpiexec runs this script): rank 1 runs the command after --rank1,
# every other rank the one before it, so that a test gives one rank other options than the rest.
# usage: mpiexec -np P rank_args.sh COMMAND... --rank1 RANK1_COMMAND...
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-${PMIX_RANK:-0}}}
others=()
while [ "$#" -gt 0 ] && [ "$1" != --rank1 ]; do
    others+=("$1")
    shift
done
[ "$#" -gt 0 ] && shift
if [ "$rank" = 1 ] && [ "$#" -gt 0 ]; then
    exec "$@"
fi
exec "${others[@]}"
