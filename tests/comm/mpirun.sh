#!/bin/sh
# Runs an MPI test program under mpirun for ctest:  mpirun.sh MPIEXEC NP PROGRAM [ARGS...]
# --oversubscribe: more ranks than cores is fine (the tests are small);
# --allow-run-as-root only when running as root (CI containers).
# The environment suits containers: no rsh/ssh agent is needed for local
# ranks, and shared memory without the CMA single-copy mechanism (ptrace is
# often not allowed in containers).
set -eu
mpiexec="$1"; np="$2"; shift 2
root_flags=""
[ "$(id -u)" = 0 ] && root_flags="--allow-run-as-root"
export OMPI_MCA_plm_rsh_agent="${OMPI_MCA_plm_rsh_agent-}"
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism-none}"
export OMPI_MCA_rmaps_base_oversubscribe=1
exec "$mpiexec" $root_flags --oversubscribe -np "$np" "$@"
