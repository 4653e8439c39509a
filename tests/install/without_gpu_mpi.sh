#!/usr/bin/env bash
# without_gpu_mpi.sh COMMAND [ARG...]
#
# Runs COMMAND on this machine as it would run on one without the CUDA
# driver and runtime, cuDNN, NCCL and MPI: in a private mount namespace
# (unshare -m; unshare -rm when not root) every directory that holds one of
# those libraries -- found through ld.so's cache, LD_LIBRARY_PATH,
# /usr/local/cuda* and CONV_HIDE_DIRS -- is covered by a read-only overlay
# whose top layer has a whiteout for each of them, so that they do not exist
# there (dlopen: "No such file or directory") while the directory's other
# files (libc, OpenBLAS...) stay. Nothing outside the namespace changes.
#
# Exit status: COMMAND's; 77 (skipped) where no mount namespace can be made.
set -euo pipefail

# The libraries a CUDA/cuDNN/NCCL/MPI user's machine has and a CPU-only one
# lacks.
hidden_re='^lib(cudnn[a-z_]*|cuda|cudart|nccl|mpi|mpi_[a-z0-9_-]+|open-pal|open-rte|pmix|ucp|ucs)\.so'

if [ -z "${CONV_IN_HIDING_NAMESPACE:-}" ]; then
  if [ "$(id -u)" -eq 0 ]; then ns=(unshare -m); else ns=(unshare -rm); fi
  if ! "${ns[@]}" true 2>/dev/null; then
    echo "without_gpu_mpi.sh: skipped: '${ns[*]}' is not permitted here" >&2
    exit 77
  fi
  CONV_IN_HIDING_NAMESPACE=1 exec "${ns[@]}" bash "$0" "$@"
fi

# ------------------------------------------------ inside the new namespace
mount --make-rprivate /
scratch="$(mktemp -d)"
mount -t tmpfs conv-hide "$scratch"

candidates() {
  ldconfig -p 2>/dev/null | awk -F' => ' 'NF == 2 { print $2 }'
  local d
  for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} ${CONV_HIDE_DIRS:-} /usr/local/cuda*/lib* \
           /usr/local/cuda*/targets/*/lib; do
    [ -d "$d" ] && find "$d" -maxdepth 1 -name 'lib*.so*'
  done
}

declare -A layer=()  # real directory -> its whiteout layer
n=0
while read -r f; do
  base="${f##*/}"
  [[ "$base" =~ $hidden_re ]] || continue
  dir="$(readlink -f "$(dirname "$f")")"
  if [ -z "${layer[$dir]:-}" ]; then
    n=$((n + 1))
    layer[$dir]="$scratch/$n"
    mkdir "${layer[$dir]}"
  fi
  # Both the name looked for and, for a symbolic link, the file it names.
  for name in "$base" "$(basename "$(readlink -f "$f")")"; do
    [ -e "${layer[$dir]}/$name" ] || mknod "${layer[$dir]}/$name" c 0 0
  done
done < <(candidates | sort -u)

for dir in "${!layer[@]}"; do
  mount -t overlay conv-hide -o "lowerdir=${layer[$dir]}:$dir" "$dir"
  echo "without_gpu_mpi.sh: hidden in $dir: $(ls "${layer[$dir]}" | tr '\n' ' ')" >&2
done

exec "$@"
