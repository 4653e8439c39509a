#!/usr/bin/env bash
# The masked vector accesses in a built library, by instruction form: the
# static half of issue 28's guard-page tests (tests/test_guard_pages.c runs
# the kernels; this reads every instruction, whether a test reaches it or
# not). A kernel may rely on a mask to keep a vector access inside a
# tensor only through forms whose masked-off lanes are known not to fault
# at a page boundary. Measured on Cascade Lake (this project's CI machine)
# and Sapphire Rapids (issue 28): plain masked moves of every width
# (vmovups/vmovdqu*), masked broadcasts, gathers, scatters (gemm_1x1's
# transposed backward-data, test_guard_pages' "1x1 onto 257": 15 lanes of
# its last vector point past dx) and down-converting stores (vpmov*,
# vcvtps2ph) suppress the fault; masked expanding loads (vexpandps) read
# only popcount(k) consecutive elements (Intel SDM: the lanes masked off
# have no memory at all), and direct_avx512's copy of padded rows of up to
# 16 columns reads exactly the source row's with one; a masked VEXTRACT*X4/X8
# to memory does NOT -- it dies on a lane it was told not to write. GCC
# emits that form for `_mm_mask_storeu_ps(p, k, _mm512_extractf32x4_ps(v,
# i))` and even for a cast to __m128, so any 128- or 256-bit masked store
# of part of a zmm can turn into it.
#
# Prints a count per form and fails on a form outside the list below: a
# new one must first be shown not to fault (a test against a PROT_NONE
# page) and then added here. Operands addressed from %rsp are left out:
# they are the compiler's spill slots in the function's own stack frame,
# all of it mapped, never a tensor or workspace.
#   usage: tests/check_masked_access.sh LIBRARY
# Exit 77 (CTest's skip) without objdump.
set -euo pipefail
lib="$1"
command -v objdump >/dev/null || { echo "objdump not found: skipped"; exit 77; }

# Masked instructions with a memory operand, reduced to mnemonic, register
# widths and operand kinds: "vmovups zmm,MEM{k}".
forms=$(objdump -d --no-show-raw-insn "$lib" |
  awk -F'\t' 'NF >= 2 && $NF ~ /\{%k[1-7]\}/ && $NF ~ /\(/ && $NF !~ /\(%rsp\)/ { print $NF }' |
  sed -E 's/<[^>]*>//g; s/[[:space:]]+#.*$//; s/0x[0-9a-f]+//g; s/%([xyz])mm[0-9]+/\1mm/g;
          s/-?[0-9]*\(%[a-z0-9]+(,%[a-z0-9]+(,[0-9])?)?\)/MEM/g; s/\(,?[xyz]mm,[0-9]\)/MEM/g;
          s/%k[1-7]/k/g; s/\$//g; s/[[:space:]]+/ /g; s/^ //; s/ $//' |
  sort | uniq -c | sort -rn)

echo "masked memory accesses in $lib, by form:"
echo "$forms"

# Mnemonics whose masked memory forms do not fault on masked-off lanes.
allowed='^(vmov(ups|upd|aps|apd|dqu8|dqu16|dqu32|dqu64|dqa32|dqa64|ss|sd)|vbroadcast(ss|sd|f32x[248]|f64x[24]|i32x[248]|i64x[24])|vpbroadcast[bwdq]|v(p?)gather[dq](ps|pd|d|q)|v(p?)scatter[dq](ps|pd|d|q)|vpmov(u?s)?(db|dw|qb|qw|qd|wb)|vcvtps2ph|vcvtneps2bf16|vexpandp[sd])$'
bad=0
while read -r count form; do
  [ -n "$form" ] || continue
  mnemonic=${form%% *}
  [[ "$mnemonic" =~ $allowed ]] && continue
  if [[ "$mnemonic" == vextract* ]]; then
    echo "FORBIDDEN: $count x '$form': faults on its masked-off lanes at a page boundary" >&2
  else
    echo "UNCHECKED: $count x '$form': not yet shown to suppress faults on masked-off lanes" >&2
  fi
  bad=1
done <<< "$forms"
if [ "$bad" -ne 0 ]; then
  echo "check_masked_access: see the comment at the top of $0" >&2
  exit 1
fi
echo "check_masked_access: every masked memory form is one that does not fault"
