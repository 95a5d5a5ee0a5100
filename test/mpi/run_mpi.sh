#!/usr/bin/env bash
# run_mpi.sh PROGRAM NP — PROGRAM under `mpirun -np NP` on this machine (loopback, shared
# memory between ranks), as root too (OpenMPI refuses root unless told). More ranks than
# cores are allowed (--oversubscribe): the 2-core CI machine runs 2 ranks.
set -u
prog=$1; np=${2:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
exec timeout 120 mpirun -np "$np" --oversubscribe "$prog"
